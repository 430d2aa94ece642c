"""DDL statements (Spark SQL spelling, DuckDB's where Spark has none) parsed into typed statements; their types,
defaults, sort keys and view bodies are rendered by ddl_render. Spark-free: DDL never starts Spark."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal

from sqlglot.tokens import TokenType

from ducklake_cli.catalog.names import shown_path
from ducklake_cli.catalog.partitions import PartitionRequest, parse_partition_by
from ducklake_cli.engine.planning.ddl_render import (
    DefaultSpec,
    SortSpec,
    TypeSpec,
    default_spec,
    parse_type,
    pending_default,
    sort_spec,
    view_reads,
    view_sql,
    view_width,
)
from ducklake_cli.engine.planning.dialect import tokens
from ducklake_cli.errors import QueryError, UsageError

# ----- statements ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    """`schema.name` as written (schema None: the default schema `main`); on DuckLake 1.1 the schema may have
    several parts (`a.b.name`: schema `b` nested in `a`)."""

    schema: str | None
    name: str
    outer: tuple[str, ...] = ()  # the schemas the schema is nested in, outermost first (DuckLake 1.1)

    @classmethod
    def of(cls, schema_path: tuple[str, ...], name: str) -> Name:
        """The name of `name` in the schema whose full name is `schema_path`."""
        return cls(schema_path[-1] if schema_path else None, name, tuple(schema_path[:-1]))

    @property
    def schema_path(self) -> tuple[str, ...]:
        """The schema's full name, `("main",)` when none was given."""
        return (*self.outer, self.schema) if self.schema is not None else ("main",)

    @property
    def schema_name(self) -> str:
        """The schema as printed, `main` when none was given."""
        return shown_path(self.schema_path, quote=len(self.schema_path) > 1)

    def __str__(self) -> str:
        return f"{self.schema_name}.{self.name}"


@dataclass(frozen=True)
class ColumnSpec:
    """One column of CREATE TABLE or ADD COLUMN."""

    name: str
    type: TypeSpec
    not_null: bool = False
    default: DefaultSpec | None = None
    comment: str | None = None


class _SchemaPath:
    """A schema statement's full name: `outer` holds the schemas it is nested in (DuckLake 1.1)."""

    name: str
    outer: tuple[str, ...]

    @property
    def path(self) -> tuple[str, ...]:
        """The full name, outermost first."""
        return (*self.outer, self.name)

    @property
    def shown(self) -> str:
        """The full name as printed."""
        return shown_path(self.path, quote=len(self.path) > 1)


@dataclass(frozen=True)
class CreateSchema(_SchemaPath):
    """CREATE SCHEMA [IF NOT EXISTS]."""

    name: str
    if_not_exists: bool = False
    outer: tuple[str, ...] = ()


@dataclass(frozen=True)
class DropSchema(_SchemaPath):
    """DROP SCHEMA [IF EXISTS] [CASCADE]."""

    name: str
    if_exists: bool = False
    cascade: bool = False
    outer: tuple[str, ...] = ()


@dataclass(frozen=True)
class CreateTable:
    """CREATE [OR REPLACE] TABLE [IF NOT EXISTS] t (columns) [PARTITIONED BY (…)] [COMMENT '…']."""

    table: Name
    columns: tuple[ColumnSpec, ...]
    partition: tuple[PartitionRequest, ...] = ()
    if_not_exists: bool = False
    comment: str | None = None
    or_replace: bool = False


@dataclass(frozen=True)
class DropTable:
    """DROP TABLE [IF EXISTS]."""

    table: Name
    if_exists: bool = False


@dataclass(frozen=True)
class RenameTable:
    """ALTER TABLE … RENAME TO."""

    table: Name
    new_name: str


@dataclass(frozen=True)
class AddColumn:
    """ALTER TABLE … ADD COLUMN [IF NOT EXISTS] [parent.]name type [DEFAULT …]."""

    table: Name
    parent: tuple[str, ...]
    column: ColumnSpec
    if_not_exists: bool = False


@dataclass(frozen=True)
class AddColumns:
    """Spark's ALTER TABLE … ADD COLUMNS (a type, b type …): the columns added in one snapshot."""

    table: Name
    columns: tuple[AddColumn, ...]


@dataclass(frozen=True)
class DropColumn:
    """ALTER TABLE … DROP COLUMN [IF EXISTS] a[.b]."""

    table: Name
    path: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class RenameColumn:
    """ALTER TABLE … RENAME COLUMN a[.b] TO c."""

    table: Name
    path: tuple[str, ...]
    new_name: str


@dataclass(frozen=True)
class AlterColumnType:
    """ALTER TABLE … ALTER COLUMN a[.b] [SET DATA] TYPE t."""

    table: Name
    path: tuple[str, ...]
    type: TypeSpec


@dataclass(frozen=True)
class SetNotNull:
    """ALTER TABLE … ALTER COLUMN a SET NOT NULL (`not_null`) / DROP NOT NULL."""

    table: Name
    path: tuple[str, ...]
    not_null: bool


@dataclass(frozen=True)
class SetDefault:
    """ALTER TABLE … ALTER COLUMN a SET DEFAULT … / DROP DEFAULT (`default` None)."""

    table: Name
    path: tuple[str, ...]
    default: DefaultSpec | None


@dataclass(frozen=True)
class SetPartition:
    """ALTER TABLE … SET PARTITIONED BY (…) / RESET PARTITIONED BY (empty `keys`)."""

    table: Name
    keys: tuple[PartitionRequest, ...]


@dataclass(frozen=True)
class SetSort:
    """ALTER TABLE … SET SORTED BY (…) / RESET SORTED BY (empty `keys`)."""

    table: Name
    keys: tuple[SortSpec, ...]


@dataclass(frozen=True)
class Comment:
    """COMMENT ON TABLE|VIEW|COLUMN … IS '…' | NULL (and Spark's ALTER COLUMN … COMMENT)."""

    kind: str  # "table", "view" or "column"
    target: Name
    path: tuple[str, ...]
    text: str | None


@dataclass(frozen=True)
class CreateView:
    """CREATE [OR REPLACE] VIEW [IF NOT EXISTS] v [(aliases)] AS query: the body as DuckDB records it."""

    view: Name
    sql: str
    aliases: tuple[str, ...] = ()
    or_replace: bool = False
    if_not_exists: bool = False
    reads: tuple[tuple[str | None, str], ...] = ()  # (schema or None, name) of the tables and views it reads
    read_paths: tuple[tuple[str, ...], ...] = field(default=(), compare=False)  # the same, every part as written


@dataclass(frozen=True)
class DropView:
    """DROP VIEW [IF EXISTS]."""

    view: Name
    if_exists: bool = False


@dataclass(frozen=True)
class RenameView:
    """ALTER VIEW … RENAME TO."""

    view: Name
    new_name: str


Statement = (CreateSchema | DropSchema | CreateTable | DropTable | RenameTable | AddColumn | AddColumns | DropColumn
             | RenameColumn | AlterColumnType | SetNotNull | SetDefault | SetPartition | SetSort | Comment
             | CreateView | DropView | RenameView)

# ----- the parser ------------------------------------------------------------------------------------------------

_NAME_TOKENS = frozenset({TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING})


class _Cursor:
    """Tokens of one statement (Spark's tokenizer) with the original text for slices."""

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.toks = [t for t in tokens(sql) if t.token_type is not TokenType.SEMICOLON]
        self.i = 0

    def _words(self, j: int) -> list[str]:
        tok = self.toks[j]
        if tok.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
            return ["\0"]  # quoted text is never a keyword
        return tok.text.upper().split() or [""]

    def peek(self, k: int = 0) -> str:
        """The first keyword of the token `k` ahead ('' at the end)."""
        j = self.i + k
        return self._words(j)[0] if j < len(self.toks) else ""

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def accept(self, *words: str) -> bool:
        """Consume the keywords if they come next (Spark tokenizes `PARTITIONED BY` as one token)."""
        j, k = self.i, 0
        while k < len(words):
            if j >= len(self.toks):
                return False
            got = self._words(j)
            if got != list(words[k:k + len(got)]):
                return False
            k, j = k + len(got), j + 1
        self.i = j
        return True

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            got = repr(self.toks[self.i].text) if not self.at_end() else "the end of the statement"
            raise QueryError(f"expected {' '.join(repr(w) if w in ',()' else w for w in words)}, got {got}")

    def ident(self) -> str:
        if self.at_end():
            raise QueryError("expected a name, got the end of the statement")
        tok = self.toks[self.i]
        if tok.token_type in (TokenType.NUMBER, TokenType.L_PAREN, TokenType.R_PAREN, TokenType.COMMA,
                              TokenType.DOT):
            raise QueryError(f"expected a name, got {tok.text!r}")
        if not tok.text:  # DuckDB cannot read a table or column with an empty name
            raise QueryError("a name cannot be empty")
        self.i += 1
        return tok.text

    def path(self) -> tuple[str, ...]:
        parts = [self.ident()]
        while self.accept("."):
            parts.append(self.ident())
        return tuple(parts)

    def name(self) -> Name:
        """A table or view name; more than two parts (nested schemas) only on 1.1 catalogs (`nested_names`)."""
        parts = self.path()
        return Name.of(parts[:-1], parts[-1])

    def string_or_null(self) -> str | None:
        if self.accept("NULL"):
            return None
        if self.at_end() or self.toks[self.i].token_type is not TokenType.STRING:
            raise QueryError("expected a quoted string or NULL")
        self.i += 1
        return self.toks[self.i - 1].text

    def until(self, stop: Callable[[_Cursor], bool]) -> str:
        """Raw text up to (not including) the first top-level token where `stop` holds."""
        start, depth = self.i, 0
        while not self.at_end():
            tt = self.toks[self.i].token_type
            if depth == 0 and stop(self):
                break
            if tt in (TokenType.L_PAREN, TokenType.LT, TokenType.L_BRACKET):
                depth += 1
            elif tt in (TokenType.R_PAREN, TokenType.GT, TokenType.R_BRACKET):
                depth -= 1
            self.i += 1
        if self.i == start:
            got = self.toks[self.i].text if not self.at_end() else "the end of the statement"
            raise QueryError(f"expected more before {got!r}")
        return self.sql[self.toks[start].start:self.toks[self.i - 1].end + 1]

    def rest(self) -> str:
        if self.at_end():
            raise QueryError("unexpected end of the statement")
        start, self.i = self.toks[self.i].start, len(self.toks)
        return self.sql[start:].rstrip().rstrip(";")

    def done(self) -> None:
        if not self.at_end():
            raise QueryError(f"unexpected {self.toks[self.i].text!r}")

    def items(self) -> Iterator[str]:
        """Comma-separated raw items inside `( … )`."""
        self.expect("(")
        while True:
            yield self.until(lambda c: c.peek() in (",", ")"))
            if self.accept(")"):
                return
            if self.at_end():
                raise QueryError("missing ')'")
            self.expect(",")


_STARTS = {"CREATE", "DROP", "ALTER", "COMMENT"}
# Words that end a column's type: its constraints and clauses (DuckDB's and Spark's).
_CONSTRAINTS = frozenset({"PRIMARY", "UNIQUE", "CHECK", "REFERENCES", "FOREIGN"})
_COLUMN_STOP = frozenset({"NOT", "NULL", "DEFAULT", "COMMENT", ",", ")", "CONSTRAINT", "COLLATE", "USING", "AS",
                          "GENERATED", *_CONSTRAINTS})
_DEFAULT_STOP = _COLUMN_STOP - {"NULL"}


def is_ddl(sql: str) -> bool:
    """Whether a statement is DDL (everything CREATE/DROP/ALTER/COMMENT but CREATE TABLE … AS)."""
    words = sql.lstrip().split(None, 1)
    if not words or words[0].upper() not in _STARTS:
        return False
    if words[0].upper() != "CREATE":
        return True
    try:
        cur = _Cursor(sql)
    except QueryError:
        return True  # parse_ddl reports it
    cur.accept("CREATE")
    cur.accept("OR", "REPLACE")
    if not cur.accept("TABLE"):
        return True
    depth = 0
    for tok in cur.toks[cur.i:]:  # CREATE TABLE … AS SELECT goes to the data-change path
        if tok.token_type is TokenType.L_PAREN:
            depth += 1
        elif tok.token_type is TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and tok.text.upper() in ("AS", "SELECT", "LIKE"):
            return False
    return True


def parse_ddl(sql: str) -> Statement:
    """One DDL statement as a typed statement (every error is one line)."""
    cur = _Cursor(sql)
    if cur.accept("CREATE"):
        st: Statement = _create(cur)
    elif cur.accept("DROP"):
        st = _drop(cur)
    elif cur.accept("ALTER", "TABLE"):
        st = _alter_table(cur)
    elif cur.accept("ALTER", "VIEW"):
        view = cur.name()
        cur.expect("RENAME", "TO")
        st = RenameView(view, cur.ident())
    elif cur.accept("COMMENT", "ON"):
        st = _comment(cur)
    else:
        raise QueryError(f"not a DDL statement: {sql.strip()[:60]!r}")
    cur.done()
    return st


def _schema_name(cur: _Cursor) -> tuple[str, ...]:
    """A schema name: several parts name a nested schema (1.1 catalogs only, `nested_names`)."""
    return cur.path()


def nested_names(st: Statement) -> str | None:
    """What of a statement needs DuckLake 1.1's nested schemas ('CREATE SCHEMA a.b'), None when nothing does."""
    if isinstance(st, (CreateSchema, DropSchema)):
        return f"schema {st.shown}" if st.outer else None
    names = [n for n in (getattr(st, "table", None), getattr(st, "view", None), getattr(st, "target", None))
             if isinstance(n, Name)]
    return next((".".join((*n.schema_path, n.name)) for n in names if n.outer), None)


def _create(cur: _Cursor) -> Statement:
    or_replace = cur.accept("OR", "REPLACE")
    if cur.peek() in ("TEMP", "TEMPORARY", "GLOBAL"):
        raise QueryError("temporary views and tables live in one Spark session, not in the lake; use CREATE VIEW "
                         "or CREATE TABLE")
    if cur.accept("SCHEMA") or cur.accept("DATABASE"):
        if or_replace:
            raise QueryError("CREATE OR REPLACE SCHEMA is not supported")
        exists = cur.accept("IF", "NOT", "EXISTS")
        path = _schema_name(cur)
        return CreateSchema(path[-1], exists, path[:-1])
    if cur.accept("VIEW"):
        exists = cur.accept("IF", "NOT", "EXISTS")
        view = cur.name()
        aliases: tuple[str, ...] = ()
        if cur.peek() == "(":
            aliases = tuple(_Cursor(item).ident() for item in cur.items())
        cur.expect("AS")
        body = view_sql(cur.rest(), str(view))
        width = view_width(body) if aliases else None
        if width is not None and len(aliases) > width:  # DuckDB binds the body and refuses
            raise QueryError(f"view {view}: {len(aliases)} column aliases for a query of {width} column(s)")
        paths = view_reads(body)
        reads = tuple((p[-2] if len(p) > 1 else None, p[-1]) for p in paths)
        return CreateView(view, body, aliases, or_replace, exists, reads, paths)
    cur.expect("TABLE")
    exists = cur.accept("IF", "NOT", "EXISTS")
    if or_replace and exists:  # DuckDB's parser refuses the pair
        raise QueryError("CREATE OR REPLACE TABLE and IF NOT EXISTS cannot be used together")
    table = cur.name()
    cols = tuple(_column_spec(_Cursor(item), create=True) for item in cur.items())
    partition: tuple[PartitionRequest, ...] = ()
    comment = None
    while not cur.at_end():
        if cur.accept("PARTITIONED", "BY"):
            partition = _partition_keys(cur)
        elif cur.accept("COMMENT"):
            comment = cur.string_or_null()
        elif cur.accept("USING"):
            fmt = cur.ident()
            if fmt.lower() != "parquet":
                raise QueryError(f"USING {fmt}: DuckLake tables are Parquet")
        else:
            raise QueryError(f"unexpected {cur.toks[cur.i].text!r} after the column list")
    names = [c.name.lower() for c in cols]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise QueryError(f"column {dup!r} is given twice")
    return CreateTable(table, cols, partition, exists, comment, or_replace)


def _column_spec(cur: _Cursor, *, name: str | None = None, create: bool = False) -> ColumnSpec:
    """A column definition of CREATE TABLE (`create`) or ADD COLUMN; what DuckLake cannot store is refused as
    DuckDB refuses it."""
    if name is None and cur.peek() in (*_CONSTRAINTS, "CONSTRAINT"):  # a table constraint, not a column
        raise QueryError(_constraint_refusal(cur.peek(), "table", create=True))
    col = name if name is not None else cur.ident()
    typ = parse_type(cur.until(lambda c: c.peek() in _COLUMN_STOP))
    not_null, default, comment = False, None, None
    while not cur.at_end():
        if cur.accept("CONSTRAINT"):  # a named constraint: DuckDB takes `CONSTRAINT c NOT NULL`
            cur.ident()
            if cur.at_end():
                raise QueryError(f"column {col}: CONSTRAINT needs a constraint after its name")
        if cur.accept("NOT", "NULL"):
            not_null = True
        elif cur.accept("NULL"):
            pass  # DuckDB ignores a NULL constraint: `NOT NULL NULL` stays NOT NULL
        elif cur.accept("DEFAULT"):
            default = default_spec(cur.until(lambda c: c.peek() in _DEFAULT_STOP), typ, binds=create)
        elif cur.accept("COMMENT"):
            comment = cur.string_or_null()
        elif cur.peek() in _COLUMN_STOP - {"NOT", "NULL", "DEFAULT", "COMMENT", ",", ")"}:
            raise QueryError(f"column {col}: {_constraint_refusal(cur.peek(), 'column', create=create)}")
        else:
            raise QueryError(f"column {col}: unexpected {cur.toks[cur.i].text!r}")
    return ColumnSpec(col, typ, not_null, default, comment)


_GENERATED = "DuckLake does not support generated columns"
_KEYS = "PRIMARY KEY/UNIQUE constraints are not supported in DuckLake"
_FOREIGN = "FOREIGN KEY constraints are not supported in DuckLake"
# DuckDB's refusal of each column or table clause DuckLake cannot store.
_REFUSALS = {"COLLATE": "collations are not supported in DuckLake storage",
             "USING": "a column's compression cannot be set in DuckLake (the parquet_compression option sets it)",
             "AS": _GENERATED, "GENERATED": _GENERATED, "PRIMARY": _KEYS, "UNIQUE": _KEYS,
             "CHECK": "CHECK constraints are not supported in DuckLake", "REFERENCES": _FOREIGN, "FOREIGN": _FOREIGN,
             "CONSTRAINT": "constraints other than NOT NULL are not supported in DuckLake"}


def _constraint_refusal(word: str, where: str, *, create: bool) -> str:
    """DuckDB's refusal of a clause (one line); ADD COLUMN words some of them its own way."""
    if not create and word in ("AS", "GENERATED"):
        return "a generated column cannot be added to an existing table"
    if not create and word in (*_CONSTRAINTS, "CONSTRAINT"):
        return "ADD COLUMN cannot add constraints (DuckDB's rule)"
    return f"{where} {_REFUSALS[word]}" if word == "CONSTRAINT" else _REFUSALS[word]


_BUCKET_ITEM = re.compile(r"(?i)bucket\s*\(\s*('?)\s*([+-]?\d+(?:\.\d*)?)\s*\1\s*,(.+)\)")


def _partition_keys(cur: _Cursor) -> tuple[PartitionRequest, ...]:
    items = []
    for item in cur.items():
        low = item.strip()
        for spark, duck in (("years(", "year("), ("months(", "month("), ("days(", "day("), ("hours(", "hour(")):
            if low.lower().startswith(spark):  # Spark's plural transform names
                low = duck + low[len(spark):]
        bucket = _BUCKET_ITEM.fullmatch(low)
        if bucket:  # DuckDB casts the count to an integer: bucket(4.0, c) and bucket('4', c) are bucket(4, c)
            count = Decimal(bucket.group(2))
            if count != count.to_integral_value():
                raise QueryError(f"PARTITIONED BY {low}: the bucket count must be a whole number")
            if count <= 0:
                raise QueryError(f"PARTITIONED BY {low}: the bucket count must be positive")
            low = f"bucket({int(count)}, {bucket.group(3).strip()})"
        if "." in low.replace("`", "").split("(")[-1].split(",")[-1] and not low.startswith(('"', "`")):
            raise QueryError(f"PARTITIONED BY {item.strip()}: nested fields cannot be partition keys")
        items.append(low)
    try:
        return tuple(parse_partition_by(items))
    except UsageError as exc:  # worded for write's --partition-by option; here it is bad DDL (exit 1)
        raise QueryError(f"PARTITIONED BY {str(exc).removeprefix('--partition-by ')}") from None


def _drop(cur: _Cursor) -> Statement:
    if cur.accept("SCHEMA") or cur.accept("DATABASE"):
        exists = cur.accept("IF", "EXISTS")
        path = _schema_name(cur)
        cascade = cur.accept("CASCADE")
        cur.accept("RESTRICT")
        return DropSchema(path[-1], exists, cascade, path[:-1])
    if cur.accept("TABLE"):
        exists = cur.accept("IF", "EXISTS")
        return DropTable(cur.name(), exists)
    if cur.accept("VIEW"):
        exists = cur.accept("IF", "EXISTS")
        return DropView(cur.name(), exists)
    raise QueryError(f"DROP {cur.peek()}: only DROP SCHEMA, DROP TABLE and DROP VIEW are supported")


def _alter_table(cur: _Cursor) -> Statement:
    table = cur.name()
    if cur.accept("RENAME", "TO"):
        target = cur.name()
        if target.schema is not None and target.schema_path != table.schema_path:
            raise QueryError(f"RENAME TO {target}: a table cannot move to another schema")
        return RenameTable(table, target.name)
    if cur.accept("RENAME", "COLUMN"):
        path = cur.path()
        cur.expect("TO")
        return RenameColumn(table, path, cur.ident())
    if cur.accept("ADD", "COLUMNS"):
        added = []
        for item in cur.items():
            sub = _Cursor(item)
            path = sub.path()
            added.append(AddColumn(table, path[:-1], _column_spec(sub, name=path[-1])))
        return AddColumns(table, tuple(added))
    if cur.accept("ADD"):
        cur.accept("COLUMN")
        exists = cur.accept("IF", "NOT", "EXISTS")
        path = cur.path()
        return AddColumn(table, path[:-1], _column_spec(cur, name=path[-1]), exists)
    if cur.accept("DROP"):
        cur.accept("COLUMN")
        exists = cur.accept("IF", "EXISTS")
        return DropColumn(table, cur.path(), exists)
    if cur.accept("ALTER") or cur.accept("CHANGE"):
        cur.accept("COLUMN")
        return _alter_column(cur, table, cur.path())
    if cur.accept("SET", "PARTITIONED", "BY"):
        return SetPartition(table, _partition_keys(cur))
    if cur.accept("RESET", "PARTITIONED", "BY"):
        return SetPartition(table, ())
    if cur.accept("SET", "SORTED", "BY"):
        return SetSort(table, tuple(_sort_item(item) for item in cur.items()))
    if cur.accept("RESET", "SORTED", "BY"):
        return SetSort(table, ())
    raise QueryError(f"ALTER TABLE {table}: unsupported change {cur.peek() or 'nothing'}")


def _alter_column(cur: _Cursor, table: Name, path: tuple[str, ...]) -> Statement:
    shown = ".".join(path)
    if cur.accept("SET", "DATA", "TYPE") or cur.accept("TYPE"):
        typ = parse_type(cur.until(lambda c: c.peek() in ("USING", "COLLATE")))
        if cur.accept("USING"):
            raise QueryError(f"ALTER COLUMN {shown} TYPE … USING: a column's type cannot be changed with an "
                             "expression in DuckLake (only widening promotions, which keep every value)")
        if cur.peek() == "COLLATE":
            raise QueryError(f"ALTER COLUMN {shown}: {_constraint_refusal('COLLATE', 'column', create=False)}")
        return AlterColumnType(table, path, typ)
    if len(path) > 1 and cur.peek() in ("SET", "DROP"):
        # DuckDB cannot name a struct field here: NOT NULL and defaults belong to top-level columns
        raise QueryError(f"ALTER COLUMN {shown}: NOT NULL and DEFAULT can only be changed on a top-level column")
    if cur.accept("SET", "NOT", "NULL"):
        return SetNotNull(table, path, True)
    if cur.accept("DROP", "NOT", "NULL"):
        return SetNotNull(table, path, False)
    if cur.accept("DROP", "DEFAULT"):
        return SetDefault(table, path, None)
    if cur.accept("SET", "DEFAULT"):
        return SetDefault(table, path, pending_default(cur.rest()))
    if cur.accept("COMMENT"):
        return Comment("column", table, path, cur.string_or_null())
    raise QueryError(f"ALTER COLUMN {shown}: unsupported change {cur.peek() or 'nothing'}")


def _sort_item(item: str) -> SortSpec:
    cur = _Cursor(item)
    body = cur.until(lambda c: c.peek() in ("ASC", "DESC", "NULLS"))
    direction = "DESC" if cur.accept("DESC") else "ASC"
    cur.accept("ASC")
    nulls = None
    if cur.accept("NULLS", "FIRST"):
        nulls = "NULLS_FIRST"
    elif cur.accept("NULLS", "LAST"):
        nulls = "NULLS_LAST"
    cur.done()
    return sort_spec(body, direction, nulls)


def _comment(cur: _Cursor) -> Statement:
    if cur.accept("TABLE") or cur.accept("VIEW"):
        kind = cur.toks[cur.i - 1].text.lower()
        target = cur.name()
        cur.expect("IS")
        return Comment(kind, target, (), cur.string_or_null())
    if cur.accept("COLUMN"):
        parts = cur.path()
        if len(parts) < 2:
            raise QueryError("COMMENT ON COLUMN needs [schema.]table.column")
        # `t.c`, `s.t.c`, on 1.1 `a.b.t.c` (DuckDB's reading; nested fields cannot be named here)
        table = Name.of(parts[:-2], parts[-2])
        cur.expect("IS")
        return Comment("column", table, (parts[-1],), cur.string_or_null())
    raise QueryError("COMMENT ON supports TABLE, VIEW and COLUMN")
