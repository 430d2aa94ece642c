"""The SQL of `ducklake query`: find DuckLake table references, rewrite them to Spark temp views, lift filters."""

from __future__ import annotations

import datetime as dt
import difflib
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from ducklake_cli.catalog.names import shown_path
from ducklake_cli.engine.planning.dialect import DIALECT, one_line, quiet_sqlglot, sql_text, syntax_message
from ducklake_cli.engine.planning.feed_sql import FeedRef, feed_nodes, feed_ref
from ducklake_cli.engine.planning.predicates import Op, Predicate
from ducklake_cli.errors import QueryError

_WRITES = (exp.DML, exp.DDL, exp.Alter, exp.Drop, exp.TruncateTable, exp.Comment, exp.LoadData, exp.Grant)
_COMPARISONS: dict[type[exp.Expr], Op] = {exp.EQ: "=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_FLIPPED: dict[Op, Op] = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_T = exp.DataType.Type
_INTEGERS = (_T.TINYINT, _T.SMALLINT, _T.INT, _T.BIGINT)
_TIMESTAMPS = (_T.TIMESTAMP, _T.TIMESTAMPTZ, _T.TIMESTAMPLTZ, _T.TIMESTAMPNTZ)
# DuckDB types sqlglot passes through (or maps lossily) that Spark cannot represent faithfully.
_NO_SPARK_TYPE = (_T.INT128, _T.UINT128, _T.UBIGINT, _T.UINT, _T.USMALLINT, _T.BIT, _T.TIME, _T.TIMETZ,
                  _T.TIMESTAMP_S, _T.TIMESTAMP_MS, _T.TIMESTAMP_NS, _T.ENUM, _T.UNION, _T.BIGNUM, _T.INTERVAL,
                  _T.USERDEFINED)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?)?(Z|[+-]\d{2}:\d{2})?")
_PLACEHOLDER = "{DUCKLAKE_CATALOG}"
_LAKE = "__ducklake_catalog__"
ROWID_NAME = "rowid"


@dataclass(frozen=True)
class TableRef:
    """One table a statement reads, as written, with its per-table time travel (if any)."""

    catalog: str | None
    schema: str | None
    name: str
    version: int | None = None
    timestamp: str | None = None
    # every part as written (catalog included; DuckLake 1.1 nests schemas); past three parts `schema` holds them all
    parts: tuple[str, ...] = field(default=(), compare=False)

    @property
    def qualified(self) -> str:
        """`schema.name`, unqualified names resolving in schema `main`; the catalog part is ignored."""
        return f"{self.schema or 'main'}.{self.name}"

    @property
    def dotted(self) -> str:
        """Every part as written (`main.` added to a bare name), quoted where a part holds a dot or a quote: what
        `MetadataReader.find_table` resolves, nested schemas included."""
        path = self.parts or (*((self.catalog,) if self.catalog else ()), self.schema or "main", self.name)
        return shown_path(path if len(path) > 1 else ("main", *path), quote=True)

    @property
    def path(self) -> tuple[str, ...]:
        """Every part as written."""
        return self.parts or (*((self.catalog,) if self.catalog else ()), *((self.schema,) if self.schema else ()),
                              self.name)

    @property
    def key(self) -> tuple[str, str, int | None, str | None]:
        """Case-folded `(schema, name)` plus time travel, catalog ignored (what `bind_tables` is given)."""
        return ((self.schema or "main").lower(), self.name.lower(), self.version, self.timestamp)

    @property
    def ident(self) -> tuple[tuple[str, ...], int | None, str | None]:
        """Identity of the scan behind one temp view: every case-folded part plus time travel (`a.b.t` on 1.1 is
        not `b.t`)."""
        return tuple(p.lower() for p in self.path), self.version, self.timestamp


@dataclass(frozen=True)
class ParsedQuery:
    """One parsed read-only Spark SQL statement."""

    sql: str
    tree: exp.Expr
    bound: frozenset[str] = frozenset()  # names of temp views the caller registers itself (not lake tables)

    def table_refs(self) -> list[TableRef]:
        """Distinct lake tables read (by `key`), in order of appearance; CTEs, functions and subqueries excluded."""
        seen: dict[tuple[tuple[str, ...], int | None, str | None], TableRef] = {}
        for ref in map(_ref, _table_nodes(self.tree, self.bound)):
            seen.setdefault(ref.ident, ref)
        return list(seen.values())

    def feed_refs(self) -> list[FeedRef]:
        """Distinct change-feed table functions read, in order of appearance."""
        return list(dict.fromkeys(feed_ref(node) for node in feed_nodes(self.tree)))

    def rewrite(self, views: Mapping[TableRef, str], rowid_views: frozenset[str] = frozenset(),
                feed_views: Mapping[FeedRef, str] | None = None) -> str:
        """Spark SQL reading each table from its temp view, keeping (or adding) the table's alias; `*` leaves out
        the virtual `rowid` of the views in `rowid_views`, as DuckDB's `*` does. Change-feed functions read the
        temp views in `feed_views`."""
        tree = self.tree.copy()
        feeds = list(feed_nodes(tree))
        by_ident = {ref.ident: name for ref, name in views.items()}
        _retarget(tree, lambda ref: by_ident.get(ref.ident), self.bound, every=True)
        for node in feeds:  # after the tables: a feed node renamed to its view looks like a table
            feed = feed_ref(node)
            if not feed_views or feed not in feed_views:
                raise ValueError(f"no temp view given for {feed.kind} of {feed.table}")
            node.set("this", exp.to_identifier(feed_views[feed]))
        if rowid_views:
            _hide_rowid(tree, rowid_views)
        _plain_likes(tree)
        return tree.sql(dialect="spark")

    def predicates_for(self, ref: TableRef) -> list[Predicate]:
        """Filters that hold for every row any reading of `ref` keeps; the caller ignores unknown columns."""
        common: list[Predicate] | None = None
        for node in _table_nodes(self.tree, self.bound):
            if _ref(node).ident != ref.ident:
                continue
            found = _predicates(node)
            common = found if common is None else [p for p in common if p in found]
        return common or []

    def plain_count(self) -> TableRef | None:
        """The table of a bare `SELECT count(*) FROM t [LIMIT n]`, answerable from metadata; else None."""
        s = self.tree
        if not isinstance(s, exp.Select) or len(s.expressions) != 1 or _used(s) - {"expressions", "from_", "limit"}:
            return None
        limit = s.args.get("limit")
        if limit is not None and (_used(limit) != {"expression"} or not isinstance(n := _value(limit.expression), int)
                                  or isinstance(n, bool) or n < 1):
            return None
        count, table = s.expressions[0].unalias(), s.args.get("from_") and s.args["from_"].this
        if not isinstance(count, exp.Count) or _used(count) - {"this", "big_int"}:
            return None
        if not (isinstance(count.this, exp.Star) or count.this == exp.Literal.number(1)):
            return None
        if not isinstance(table, exp.Table) or not isinstance(table.this, (exp.Identifier, exp.Dot)):
            return None
        return _ref(table) if not _used(table) - {"this", "db", "catalog", "alias", "version"} else None

    def plain_count_alias(self) -> str:
        """Column name Spark gives a plain count: its alias, else `count(1)` (also for `count(*)`, Spark 4)."""
        if isinstance(self.tree, exp.Select) and self.tree.expressions:
            alias = self.tree.expressions[0].alias
            if alias:
                return alias
        return "count(1)"

    def uses_rowid(self) -> bool:
        """Whether the statement names DuckLake's virtual `rowid` column anywhere."""
        return any(col.name.lower() == ROWID_NAME for col in self.tree.find_all(exp.Column))


def bind_tables(sql: str, views: Mapping[tuple[str, str], str], *, bound: frozenset[str] = frozenset()) -> str:
    """`sql` (one query, this dialect) with its references to the tables in `views` (`(schema, table)` in lower case;
    references without time travel) reading those temp views instead; other tables stay lake tables. The views carry
    the virtual `rowid`, which `*` leaves out."""
    parsed = parse_query(sql, bound=bound)
    tree = parsed.tree.copy()
    by_key: dict[tuple[str, str, int | None, str | None], str] = {
        (schema, name, None, None): view for (schema, name), view in views.items()}
    _retarget(tree, lambda ref: by_key.get(ref.key) if len(ref.path) <= 3 else None, bound, every=False)
    _hide_rowid(tree, frozenset(views.values()))
    return tree.sql(dialect=DIALECT)


def _retarget(tree: exp.Expr, lookup: Callable[[TableRef], str | None], bound: frozenset[str], *,
              every: bool) -> None:
    """Table references `lookup` gives a temp view read that view instead, keeping (or adding) the table's alias,
    and columns qualified `main.t.x` follow; with `every`, a table without a view is an error."""
    bare: dict[tuple[str, str], exp.Identifier] = {}  # written name of an unaliased table -> its new name
    for node in list(_table_nodes(tree, bound)):
        ref = _ref(node)
        found = lookup(ref)
        if found is None:
            if every:
                raise ValueError(f"no temp view given for table {ref.dotted}")
            continue
        view = exp.to_identifier(found)
        own = node.this if isinstance(node.this, exp.Identifier) else node.this.expression  # `a.b.c.t`: a Dot
        if node.args.get("alias") is None and not isinstance(node.parent, exp.Describe):
            if _name_taken(node):  # e.g. `main.t` next to a CTE `t`: keep the view's own name
                bare.setdefault(_parts(node), view.copy())
            else:
                bare.setdefault(_parts(node), own.copy())
                node.set("alias", exp.TableAlias(this=own.copy()))
        for arg in ("db", "catalog", "version"):
            node.set(arg, None)
        node.set("this", view)
    for col in list(tree.find_all(exp.Column)):  # `main.t.x` -> `t.x`, as `main.t` is now a view named `t`
        parts = _col_parts(col)
        if len(parts) == 2 and (new := bare.get((parts[0], parts[1]))) is not None:
            col.set("table", new.copy())
            col.set("db", None)
            col.set("catalog", None)


def _plain_likes(tree: exp.Expr) -> None:
    """`LIKE`/`ILIKE` without `ESCAPE` get an escape character the pattern does not hold: DuckDB's (and SQL's) LIKE
    has no escape character unless one is named, Spark's takes a backslash (`'a\\%'` would match `a%` only)."""
    for node in list(tree.find_all(exp.Like, exp.ILike)):
        pattern = node.expression
        if isinstance(node.parent, exp.Escape) or isinstance(pattern, (exp.Any, exp.All)):
            continue
        held = str(pattern.this) if isinstance(pattern, exp.Literal) and pattern.is_string else ""
        char = next(c for c in "\x00\x01\x02\x03" if c not in held)
        node.replace(exp.Escape(this=node.copy(), expression=exp.Literal.string(char)))


def _hide_rowid(tree: exp.Expr, rowid_views: frozenset[str]) -> None:
    """`*` and `t.*` over a temp view carrying the virtual `rowid` become `* EXCEPT (t.rowid)`: DuckDB's star
    never expands to it."""
    for select in tree.find_all(exp.Select):
        from_ = select.args.get("from_")
        sources = [from_.this if from_ else None, *(j.this for j in select.args.get("joins") or [])]
        names = [s.args["alias"].this if s.args.get("alias") else s.this for s in sources
                 if isinstance(s, exp.Table) and s.name in rowid_views]
        if not names:
            continue
        for item in select.expressions:
            if isinstance(item, exp.Star):
                hidden = names
            elif isinstance(item, exp.Column) and isinstance(item.this, exp.Star) and item.table:
                hidden = [n for n in names if n.name.lower() == item.table.lower()]
                item = item.this
            else:
                continue
            if hidden:
                item.set("except_", [*(item.args.get("except_") or []),
                                     *(exp.Column(this=exp.to_identifier(ROWID_NAME), table=n.copy())
                                       for n in hidden)])


def parse_query(sql: str, *, bound: frozenset[str] = frozenset()) -> ParsedQuery:
    """Parse one read-only Spark SQL statement; writes, several statements or bad syntax raise `QueryError`.
    Unqualified names in `bound` are temp views the caller registers, not lake tables."""
    try:
        with quiet_sqlglot():
            statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except SqlglotError as exc:
        raise QueryError(syntax_message(exc)) from None
    if len(statements) != 1:
        raise QueryError(f"expected one SQL statement, got {len(statements)}")
    tree = statements[0]
    if isinstance(tree, exp.Command):
        raise QueryError(f"{tree.name.upper()} is not supported; write a SELECT, WITH, VALUES or DESCRIBE query")
    if isinstance(tree, _WRITES):
        verb = tree.key.upper().replace("TRUNCATETABLE", "TRUNCATE")
        raise QueryError(f"{verb} is not supported here: query runs reads and the row changes DELETE, UPDATE, "
                         "MERGE INTO, INSERT and CREATE TABLE … AS")
    if isinstance(tree, exp.Describe) and (tree.args.get("kind") or not isinstance(tree.this, exp.Table)):
        raise QueryError("only DESCRIBE of a table is supported")
    if isinstance(tree, (exp.Alias, exp.Column, exp.Identifier, exp.Literal)):
        # e.g. `SELEC x FROM t` parses as an aliased expression: to the user that is a syntax error.
        start = sql.strip().split(None, 1)[0] if sql.strip() else ""
        raise QueryError(f"SQL syntax error near {start!r}: expected a SELECT, WITH, VALUES or DESCRIBE query")
    if not isinstance(tree, (exp.Query, exp.Values, exp.Describe)):
        raise QueryError(f"{tree.key.upper()} is not supported; write a SELECT, WITH, VALUES or DESCRIBE query")
    for node in _table_nodes(tree, bound):
        _ref(node)  # time-travel clauses are checked once, here
    return ParsedQuery(sql=sql, tree=tree, bound=bound)


def transpile_view(sql: str, *, catalog_name: str = "lake", schema: str | tuple[str, ...] = "main",
                   view: str | None = None, nested: bool = False) -> str:
    """A DuckLake view's DuckDB SQL as Spark SQL; unqualified tables resolve in the view's `schema` (a tuple: the
    full name of a DuckLake 1.1 nested schema), as in DuckDB. With `nested` (a 1.1 catalog) a name of three parts
    or more is a schema path, not another catalog's table.

    What Spark cannot express fails here with one line naming the construct (raised as `QueryError`).
    """
    fail = f"view {view} cannot be translated to Spark SQL: " if view else "view cannot be translated to Spark SQL: "
    try:
        with quiet_sqlglot():
            statements = [s for s in sqlglot.parse(_duckdb_text(sql.replace(_PLACEHOLDER, _LAKE)), read="duckdb") if s]
    except SqlglotError as exc:
        raise QueryError(fail + syntax_message(exc)) from None
    if len(statements) != 1 or not isinstance(tree := statements[0], exp.Query):
        raise QueryError(fail + "not a single SELECT")
    path = (schema,) if isinstance(schema, str) else schema
    for node in list(_table_nodes(tree)):
        if node.catalog and node.catalog != _LAKE and not nested:
            raise QueryError(fail + f"it reads catalog {node.catalog}, outside the lake")
        if node.db == _LAKE and not node.catalog:  # DuckDB's `catalog.table` means the catalog's `main`
            node.set("db", exp.to_identifier("main"))
            node.set("catalog", exp.to_identifier(catalog_name))
        elif node.catalog == _LAKE:
            node.set("catalog", exp.to_identifier(catalog_name))
        elif not node.db:
            _qualify(node, path)
        _time_travel(node, fail)
    for col in tree.find_all(exp.Column):  # `{DUCKLAKE_CATALOG}.t.x` -> `t.x`
        if _LAKE in (col.text("db"), col.text("catalog")):
            col.set("db", None)
            col.set("catalog", None)
    for fn in list(tree.find_all(exp.Anonymous)):  # DuckDB stores `count(*)` in view SQL as `count_star()`
        if fn.name.lower() == "count_star" and not fn.expressions:
            fn.replace(exp.Count(this=exp.Star()))
    _lambdas(tree)
    for fn in list(tree.find_all(exp.Anonymous)):  # list_transform's aliases, which sqlglot leaves unknown
        if fn.name.lower() in ("list_apply", "array_apply", "apply", "array_transform") and len(fn.expressions) == 2:
            fn.replace(exp.Transform(this=fn.expressions[0], expression=fn.expressions[1]))
    _order_by_all(tree)
    _subscripts(tree)
    for part in tree.walk():
        if (what := _unsupported(part)) is not None:
            raise QueryError(fail + what)
    try:
        tree.sql(dialect="spark", unsupported_level=ErrorLevel.RAISE)  # what Spark cannot say fails here
        return tree.sql(dialect=DIALECT)
    except SqlglotError as exc:
        raise QueryError(fail + one_line(str(exc))) from None


def _qualify(node: exp.Table, schema: tuple[str, ...]) -> None:
    """An unqualified table reference placed in the (possibly nested) schema `schema`."""
    if len(schema) == 1:
        node.set("db", exp.to_identifier(schema[0]))
        return
    rest: list[exp.Expr] = [exp.to_identifier(p) for p in schema[2:]]
    if rest:  # `a.b.c.t`: sqlglot keeps the parts past the third in a Dot
        node.set("this", _dot_chain([*rest, node.this]))
    node.set("db", exp.to_identifier(schema[1]))
    node.set("catalog", exp.to_identifier(schema[0]))


def _dot_chain(parts: list[exp.Expr]) -> exp.Expr:
    """`Dot(Dot(a, b), c)` of the parts, as sqlglot parses `a.b.c` past a table's catalog and schema."""
    out = parts[0]
    for part in parts[1:]:
        out = exp.Dot(this=out, expression=part)
    return out


def view_column_aliases(text: str | None) -> list[str]:
    """The column names `CREATE VIEW v(a, b)` stores in `ducklake_view.column_aliases` (`"a","b"`), in order."""
    if not text:
        return []
    names = re.findall(r'"((?:[^"]|"")*)"|([^,\s"][^,]*)', text)
    return [quoted.replace('""', '"') if quoted or not bare else bare.strip() for quoted, bare in names]


# DuckDB's `lambda x, y: body` (1.3+, how it stores list comprehensions) as the arrow form sqlglot parses.
_LAMBDA = re.compile(r'\blambda\s+((?:"(?:[^"]|"")*"|\w+)(?:\s*,\s*(?:"(?:[^"]|"")*"|\w+))*)\s*:(?![:=])',
                     re.IGNORECASE)
# DuckDB qualifies some functions it stores in view SQL: `main.list_value(…)`, `main."map"(…)`.
_QUALIFIED_FN = re.compile(r'\b(?:system\.)?(?:main|pg_catalog)\.(?:"(\w+)"|(\w+))\s*\(', re.IGNORECASE)
_STRING = re.compile(r"'(?:[^']|'')*'")


def _duckdb_text(sql: str) -> str:
    """View SQL with the two DuckDB spellings sqlglot cannot read rewritten, string literals left alone."""
    def fix(part: str) -> str:
        part = _LAMBDA.sub(lambda m: f"({m[1]}) ->" if "," in m[1] else f"{m[1]} ->", part)
        return _QUALIFIED_FN.sub(lambda m: f"{m[1] or m[2]}(", part)

    out, last = [], 0
    for lit in _STRING.finditer(sql):
        out += [fix(sql[last:lit.start()]), lit[0]]
        last = lit.end()
    return "".join([*out, fix(sql[last:])])


def _time_travel(node: exp.Table, fail: str) -> None:
    """DuckDB's `t AT (VERSION => n)` / `AT (TIMESTAMP => '…')` as Spark's `VERSION AS OF` / `TIMESTAMP AS OF`."""
    when = node.args.get("when")
    if not isinstance(when, exp.HistoricalData):
        return
    kind, given = str(when.args.get("kind", "")).upper(), when.expression.unnest()
    if isinstance(given, exp.Cast) and given.to.this in _TIMESTAMPS:
        given = given.this.unnest()
    if kind not in ("VERSION", "TIMESTAMP") or not isinstance(given, exp.Literal):
        raise QueryError(fail + f"AT ({kind} => {when.expression.sql('duckdb')}) needs a literal version or time")
    node.set("when", None)
    node.set("version", exp.Version(this=kind, kind="AS OF", expression=given.copy()))


def _lambdas(tree: exp.Expr) -> None:
    """DuckDB's `(x -> body)` inside a function call is a lambda; sqlglot reads `->` there as JSON extraction."""
    for node in list(tree.find_all(exp.JSONExtract)):
        params = node.this.expressions if isinstance(node.this, exp.Tuple) else [node.this]
        body = node.expression.unnest()
        inside_call = isinstance(node.parent, exp.Func) or (
            isinstance(node.parent, exp.Paren) and isinstance(node.parent.parent, exp.Func))
        bare = all(isinstance(p, exp.Column) and not p.table for p in params)
        if not (inside_call and bare) or (isinstance(body, exp.Literal) and body.is_string):
            continue
        lam = exp.Lambda(this=body.copy(), expressions=[exp.to_identifier(p.name) for p in params])
        (node.parent if isinstance(node.parent, exp.Paren) else node).replace(lam)


def _subscripts(tree: exp.Expr) -> None:
    """DuckDB's `l[i]` (1-based; NULL out of range; also map lookup) as Spark's `try_element_at(l, i)`."""
    for node in list(tree.find_all(exp.Bracket)):
        if len(node.expressions) != 1 or isinstance(index := node.expressions[0], exp.Slice):
            continue
        if isinstance(index, exp.Literal) and index.is_string:
            continue  # `s['field']` on a struct, or a map key: Spark's brackets read both the same way
        if isinstance(index, exp.Literal) or (isinstance(index, exp.Neg) and isinstance(index.this, exp.Literal)):
            value = _value(index)  # sqlglot already moved literal indexes to 0-based: move them back
            index = exp.Literal.number(int(value) + 1) if isinstance(value, int | Decimal) else index
        node.replace(exp.Anonymous(this="try_element_at", expressions=[node.this.copy(), index.copy()]))


def _order_by_all(tree: exp.Expr) -> None:
    """DuckDB stores `ORDER BY ALL` as `ORDER BY COLUMNS(*)`: every column left to right, NULLs last."""
    for ordered in list(tree.find_all(exp.Ordered)):
        target = ordered.this
        if isinstance(target, exp.Columns) and isinstance(target.this, exp.Star):
            ordered.set("this", exp.column("ALL"))


_UNSUPPORTED_FUNCS = {"list_reduce", "array_reduce", "reduce"}  # Spark's reduce needs a start value


def _unsupported(part: exp.Expr) -> str | None:
    """The name of a DuckDB construct in `part` that has no Spark translation, or None."""
    if isinstance(part, exp.DataType) and part.this in _NO_SPARK_TYPE:
        return f"type {part.sql('duckdb')} has no Spark equivalent"
    if isinstance(part, exp.Join) and (odd := {part.kind.upper(), part.method.upper()} & {"ASOF", "POSITIONAL"}):
        return f"{odd.pop()} JOIN has no Spark equivalent"
    if isinstance(part, exp.Columns):
        return "COLUMNS(...) is not supported"
    if isinstance(part, exp.Star) and any(part.args.get(k) for k in ("replace", "rename")):
        return "SELECT * REPLACE/RENAME is not supported"  # `* EXCLUDE` is Spark's `* EXCEPT`
    if isinstance(part, exp.SetOperation) and part.args.get("by_name"):
        return "UNION/INTERSECT/EXCEPT BY NAME is not supported"
    if isinstance(part, exp.HistoricalData):
        return f"AT ({part.args.get('kind')} => …) is supported only on a lake table"
    if isinstance(part, exp.Anonymous) and part.name.lower() in _UNSUPPORTED_FUNCS:
        return f"function {part.name.lower()} is not supported"
    if isinstance(part, exp.Slice) and isinstance(part.parent, exp.Bracket):
        return "list slices l[a:b] are not supported"
    if isinstance(part, exp.JSONExtract) and isinstance(part.this, exp.Tuple):
        return "a lambda here is not supported"
    return None


def suggest(name: str, known: Iterable[str]) -> list[str]:
    """Up to three known names close to `name` (case-insensitive), for 'unknown table' hints."""
    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    return [by_lower[m] for m in difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.75)]


# -- table references ---------------------------------------------------------------------------------------


def _table_nodes(root: exp.Expr, bound: frozenset[str] = frozenset()) -> Iterator[exp.Table]:
    """Every `exp.Table` naming a real table, in source order; CTE names (and `bound` names) are scoped as Spark
    scopes them."""
    stack: list[tuple[exp.Expr, frozenset[str]]] = [(root, bound)]
    while stack:
        node, ctes = stack.pop()
        with_ = node.args.get("with_")
        pending: list[tuple[exp.Expr, frozenset[str]]] = []
        if isinstance(with_, exp.With):
            names = set(ctes)
            for cte in with_.expressions:  # each CTE sees the ones before it (and itself only if RECURSIVE)
                name = cte.alias.lower()
                pending.append((cte.this, frozenset(names | {name}) if with_.recursive else frozenset(names)))
                names.add(name)
            ctes = frozenset(names)
        if isinstance(node, exp.Table) and isinstance(node.this, (exp.Identifier, exp.Dot)) and (
                node.args.get("db") is not None or node.name.lower() not in ctes):
            yield node
        pending += [(c, ctes) for c in node.iter_expressions() if c is not with_ and not isinstance(c, exp.Hint)]
        stack.extend(reversed(pending))


def _ref(node: exp.Table) -> TableRef:
    version: int | None = None
    timestamp: str | None = None
    clause = node.args.get("version")
    if isinstance(clause, exp.Version):
        if str(clause.args.get("kind", "")).upper() != "AS OF":
            raise QueryError(f"only VERSION AS OF / TIMESTAMP AS OF are supported (table {node.name})")
        given = clause.expression.unnest()
        if clause.name.upper() == "VERSION":
            text = given.this if isinstance(given, exp.Literal) else ""
            if not (isinstance(text, str) and text.strip().isdigit()):
                raise QueryError(f"VERSION AS OF needs a snapshot id, got {sql_text(given)}")
            version = int(text)
        else:
            if isinstance(given, exp.Cast) and given.to.this in _TIMESTAMPS:  # TIMESTAMP '...'
                given = given.this.unnest()
            if not (isinstance(given, exp.Literal) and given.is_string):
                raise QueryError(f"TIMESTAMP AS OF needs a literal like '2026-01-01 00:00:00', "
                                 f"got {sql_text(clause.expression)}")
            timestamp = str(given.this)
    parts = tuple(i.name for i in node.parts)
    schema = shown_path(parts[1:-1], quote=True) if len(parts) > 3 else node.db or None  # `a.b.c.t`: `b.c`
    return TableRef(catalog=node.catalog or None, schema=schema, name=node.name, version=version,
                    timestamp=timestamp, parts=parts)


def _name_taken(node: exp.Table) -> bool:
    """Whether another source of the SELECT reading `node` already goes by `node`'s bare name."""
    select = node.parent.parent if isinstance(node.parent, (exp.From, exp.Join)) else None
    if not isinstance(select, exp.Select) or select.args.get("from_") is None:
        return False
    sources = [select.args["from_"].this, *(j.this for j in select.args.get("joins") or [])]
    return any(s is not node and s.alias_or_name.lower() == node.name.lower() for s in sources)


def _used(node: exp.Expr) -> set[str]:
    return {k for k, v in node.args.items() if v}


def _parts(node: exp.Table) -> tuple[str, str]:
    """`(schema, name)` as a column may qualify with them; like table names, the catalog part is ignored."""
    return (node.db or "main").lower(), node.name.lower()


def _col_parts(col: exp.Column) -> tuple[str, ...]:
    return tuple(p.lower() for p in (col.text("db"), col.table) if p)


# -- predicates ---------------------------------------------------------------------------------------------


def _predicates(node: exp.Table) -> list[Predicate]:
    """WHERE conjuncts of the SELECT whose FROM directly holds `node` that constrain one of its columns."""
    holder = node.parent
    select = holder.parent if isinstance(holder, (exp.From, exp.Join)) else None
    if not isinstance(select, exp.Select) or any(node.args.get(k) for k in ("sample", "pivots", "joins")):
        return []
    where = select.args.get("where")
    if where is None:
        return []
    joins: list[exp.Join] = select.args.get("joins") or []
    sides = [(j.side or "").upper() for j in joins]
    if isinstance(holder, exp.Join):
        i = next(n for n, j in enumerate(joins) if j is holder)
        if (holder.kind or "").upper() in ("SEMI", "ANTI"):
            return []
        nullable = sides[i] in ("LEFT", "FULL") or any(s in ("RIGHT", "FULL") for s in sides[i + 1:])
    else:
        nullable = any(s in ("RIGHT", "FULL") for s in sides)
    single = not joins and not select.args.get("laterals")
    alias = node.alias
    names: set[tuple[str, ...]] = {(alias.lower(),)} if alias else {_parts(node), _parts(node)[1:]}
    out: list[Predicate] = []
    for conjunct in _conjuncts(where.this):
        pred = _predicate(conjunct, names, single)
        if pred is not None and not (nullable and pred.op == "is_null"):  # IS NULL is true on NULL-extended rows
            out.append(pred)
    return out


def _conjuncts(node: exp.Expr) -> Iterator[exp.Expr]:
    node = node.unnest()
    if isinstance(node, exp.And):
        yield from _conjuncts(node.this)
        yield from _conjuncts(node.expression)
    else:
        yield node


def _predicate(node: exp.Expr, names: set[tuple[str, ...]], single: bool) -> Predicate | None:
    def column(e: exp.Expr) -> str | None:
        e = e.unnest()
        if not isinstance(e, exp.Column) or not isinstance(e.this, exp.Identifier):
            return None
        parts = _col_parts(e)
        return e.name.lower() if (parts in names if parts else single) else None

    if type(node) in _COMPARISONS:
        op = _COMPARISONS[type(node)]
        left, right = node.this, node.expression
        if (name := column(left)) is not None and (value := _value(right)) is not None:
            return Predicate(name, op, (value,))
        if (name := column(right)) is not None and (value := _value(left)) is not None:
            return Predicate(name, _FLIPPED[op], (value,))
        return None
    if isinstance(node, exp.Between) and not node.args.get("symmetric") and (name := column(node.this)):
        low, high = _value(node.args["low"]), _value(node.args["high"])
        return Predicate(name, "between", (low, high)) if low is not None and high is not None else None
    if isinstance(node, exp.In) and _used(node) == {"this", "expressions"}:
        values = [_value(v) for v in node.expressions]
        name = column(node.this)
        return Predicate(name, "in", tuple(values)) if name and None not in values else None
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null) and (name := column(node.this)):
        return Predicate(name, "is_null")
    if isinstance(node, exp.Not):
        inner = node.this.unnest()
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null) and (name := column(inner.this)):
            return Predicate(name, "is_not_null")
    return None


def _value(node: exp.Expr) -> object | None:
    """The Python value of a literal expression, or None when it is not one (or is NULL)."""
    node = node.unnest()
    if isinstance(node, exp.Neg):
        inner = _value(node.this)
        return -inner if isinstance(inner, (int, float, Decimal)) and not isinstance(inner, bool) else None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this)
        text = str(node.this)
        try:
            return int(text) if text.isdigit() else float(text) if "e" in text.lower() else Decimal(text)
        except (ValueError, InvalidOperation):
            return None
    if isinstance(node, exp.Cast):  # Spark's CAST parses as TryCast, a Cast subclass
        inner = _value(node.this)
        return None if inner is None else _cast(inner, node.to)
    return None


def _cast(value: object, to: exp.DataType) -> object | None:
    """`value` cast to `to` as Spark would, when that is certain; None otherwise."""
    kind, text = to.this, value.strip() if isinstance(value, str) else None
    if kind in (_T.TEXT, _T.VARCHAR, _T.CHAR):
        return value if isinstance(value, str) else str(value) if type(value) is int else None
    if kind == _T.BOOLEAN:
        return value if isinstance(value, bool) else {"true": True, "false": False}.get((text or "").lower())
    if kind == _T.DATE:
        return dt.date.fromisoformat(text) if text and _DATE.fullmatch(text) else None
    if kind in _TIMESTAMPS:
        ts = dt.datetime.fromisoformat(text) if text and _TIMESTAMP.fullmatch(text) else None
        return None if ts and ts.tzinfo and kind == _T.TIMESTAMPNTZ else ts
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal, str)):
        return None
    try:
        num = Decimal(repr(value) if isinstance(value, float) else text if text is not None else value)
    except InvalidOperation:
        return None
    if not num.is_finite():
        return None
    if kind in _INTEGERS:
        return int(num) if num == num.to_integral_value() else None
    if kind == _T.DECIMAL:  # Spark rounds half up to the target scale; DECIMAL alone is DECIMAL(10, 0)
        params = [int(p.this.this) for p in to.expressions if isinstance(p.this, exp.Literal)]
        return num.quantize(Decimal(1).scaleb(-(params[1] if len(params) > 1 else 0)), rounding=ROUND_HALF_UP)
    if kind == _T.DOUBLE:
        return float(num)
    if kind == _T.FLOAT:  # the float32 Spark compares with, not the float64 Python would keep
        return struct.unpack("f", struct.pack("f", float(num)))[0]
    return None
