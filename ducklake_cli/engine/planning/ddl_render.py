"""DDL text rendered as DuckDB records it: column types, defaults, sort expressions and view bodies (Spark SQL in)."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import SqlglotError
from sqlglot.generators.duckdb import DuckDBGenerator
from sqlglot.tokens import TokenType

from ducklake_cli.catalog.types import DUCKDB_TYPES, decimal_parts
from ducklake_cli.engine.planning.dialect import DIALECT, quiet_sqlglot, syntax_message, tokens
from ducklake_cli.engine.planning.sql_rewrite import parse_query
from ducklake_cli.errors import QueryError


@dataclass(frozen=True)
class TypeSpec:
    """A DuckLake column type: a type name and, for struct/list/map, named children."""

    name: str
    fields: tuple[tuple[str, TypeSpec], ...] = ()

    def text(self) -> str:
        """`struct(a int32, b list(varchar))`, as `ColumnInfo.type_text` renders it."""
        if self.name == "struct":
            return "struct(" + ", ".join(f"{n} {t.text()}" for n, t in self.fields) + ")"
        if self.fields:
            return f"{self.name}(" + ", ".join(t.text() for _, t in self.fields) + ")"
        return self.name


@dataclass(frozen=True)
class DefaultSpec:
    """A column default as DuckDB records it: the text, what old rows read (`initial`), and literal/expression."""

    value: str
    initial: str | None
    kind: str


@dataclass(frozen=True)
class SortSpec:
    """One SET SORTED BY key: DuckDB's expression text, `ASC|DESC`, `NULLS_FIRST|NULLS_LAST`, and its columns."""

    expression: str
    direction: str
    null_order: str
    columns: tuple[str, ...]


@functools.cache
def _duck() -> Any:
    import duckdb

    return duckdb.connect(":memory:")


def _duck_sql(select_sql: str, what: str) -> tuple[str, dict[str, Any]]:
    """DuckDB's own text of a SELECT (its parser's rendering, as it records views and expressions) and its
    serialized tree (to tell constants from expressions); nothing is bound or run."""
    con = _duck()
    try:
        tree = con.execute("SELECT json_serialize_sql(?)", [select_sql]).fetchone()[0]
        text = con.execute("SELECT json_deserialize_sql(?)", [tree]).fetchone()[0]
    except Exception as exc:  # DuckDB parser errors: one line naming what was being read
        raise QueryError(f"{what}: {str(exc).splitlines()[0]}") from None
    parsed = json.loads(tree)
    if parsed.get("error"):
        raise QueryError(f"{what}: {parsed.get('error_message', 'not valid SQL')}")
    return str(text), parsed


_PLAIN = re.compile(r"[a-z_][a-z0-9_]*")


class _DuckDBText(DuckDB):
    """DuckDB's dialect, writing `x IS NOT NULL` as DuckDB itself renders it (sqlglot writes `NOT x IS NULL`)."""

    class Generator(DuckDBGenerator):
        """DuckDB's generator with DuckDB's IS NOT NULL."""

        def not_sql(self, expression: exp.Not) -> str:
            """`x IS NOT NULL` for NOT (x IS NULL)."""
            inner = expression.this
            if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
                return f"{self.sql(inner, 'this')} IS NOT NULL"
            return super().not_sql(expression)


def _to_duckdb(sql: str, what: str) -> str:
    """Our SQL text (`dialect.DIALECT`) as DuckDB SQL."""
    try:
        with quiet_sqlglot():
            return str(sqlglot.transpile(sql, read=DIALECT, write=_DuckDBText)[0])
    except SqlglotError as exc:
        raise QueryError(f"{what}: {syntax_message(exc)}") from None


def duckdb_type(t: TypeSpec) -> str:
    """The DuckDB spelling of a type (casts of defaults)."""
    if t.name == "struct":
        return "STRUCT(" + ", ".join(f'"{n}" {duckdb_type(c)}' for n, c in t.fields) + ")"
    if t.name == "list":
        return f"{duckdb_type(t.fields[0][1])}[]"
    if t.name == "map":
        return f"MAP({duckdb_type(t.fields[0][1])}, {duckdb_type(t.fields[1][1])})"
    dec = decimal_parts(t.name)
    return f"DECIMAL({dec[0]},{dec[1]})" if dec else DUCKDB_TYPES.get(t.name, t.name.upper())


@functools.cache
def _aggregates() -> frozenset[str]:
    """Names of DuckDB's aggregate functions (a default cannot call them where DuckDB binds it)."""
    rows = _duck().execute("SELECT DISTINCT lower(function_name) FROM duckdb_functions() "
                           "WHERE function_type = 'aggregate'").fetchall()
    return frozenset(r[0] for r in rows)


def _nodes(node: Any, *, lambdas: bool = False) -> list[tuple[str, str, bool]]:
    """(class, lower-cased function name, inside a lambda) of every expression in a serialized tree, subqueries
    not entered."""
    out: list[tuple[str, str, bool]] = []
    if isinstance(node, list):
        for item in node:
            out += _nodes(item, lambdas=lambdas)
    elif isinstance(node, dict):
        cls = node.get("class")
        if isinstance(cls, str):
            out.append((cls, str(node.get("function_name", "")).lower(), lambdas))
            if cls == "SUBQUERY":
                return out
            lambdas = lambdas or cls == "LAMBDA"
        for value in node.values():
            out += _nodes(value, lambdas=lambdas)
    return out


def _default_refusal(tree: dict[str, Any], body: str, *, binds: bool) -> str | None:
    """Why DuckDB refuses this default expression, or None: never a subquery, a window or a parameter; where it
    binds the default (CREATE TABLE) no column names, aggregates, or functions and sequences it cannot find."""
    nodes = _nodes(tree["statements"][0]["node"]["select_list"])
    classes = {cls for cls, _, _ in nodes}
    if "SUBQUERY" in classes:
        return "a default cannot contain a subquery"
    if "WINDOW" in classes:
        return "a default cannot contain a window function"
    if "PARAMETER" in classes:
        return "a default cannot contain a parameter"
    if not binds:
        return None
    if any(cls == "FUNCTION" and name in _aggregates() for cls, name, _ in nodes):
        return "a default cannot contain an aggregate"
    try:
        _duck().execute(f"DESCRIBE SELECT {body}")  # binds names (columns, functions, sequences), runs nothing
    except Exception as exc:
        if any(cls == "COLUMN_REF" and not in_lambda for cls, _, in_lambda in nodes):
            return "a default cannot contain column names"
        return str(exc).splitlines()[0]
    return None


def default_spec(sql: str, column_type: TypeSpec, *, binds: bool = False) -> DefaultSpec:
    """A DEFAULT as DuckDB records it: a constant is a literal (its text, and old rows read it cast to the
    column's type); anything else (typed literals, `true`, functions) is an expression, kept as DuckDB writes it.
    What DuckDB refuses is refused: `binds` where DuckDB binds the expression (CREATE TABLE)."""
    what = f"DEFAULT {sql}"
    toks = [t for t in tokens(sql) if t.token_type is not TokenType.SEMICOLON]
    if len(toks) == 1 and toks[0].token_type is TokenType.STRING:
        duck = "'" + toks[0].text.replace("'", "''") + "'"
    else:
        duck = _to_duckdb(sql, what)
    text, tree = _duck_sql("SELECT " + duck, what)
    node = tree["statements"][0]["node"]["select_list"][0]
    if node.get("class") != "CONSTANT":
        body = text.removeprefix("SELECT ")
        why = _default_refusal(tree, body, binds=binds)
        if why is not None:
            raise QueryError(f"{what}: {why}")
        return DefaultSpec(body, None, "expression")
    con = _duck()
    body = text.removeprefix("SELECT ")
    value = con.execute(f"SELECT CAST(({body}) AS VARCHAR)").fetchone()[0]
    if value is None:
        return DefaultSpec("NULL", None, "literal")
    try:
        initial = con.execute(f"SELECT CAST(CAST(({body}) AS {duckdb_type(column_type)}) AS VARCHAR)").fetchone()[0]
    except Exception as exc:
        raise QueryError(f"{what} is not a valid {column_type.text()}: {str(exc).splitlines()[0]}") from None
    return DefaultSpec(str(value), initial, "literal")


def pending_default(text: str) -> DefaultSpec:
    """SET DEFAULT before the column's type is known: resolved against it by the op (`typed_default`)."""
    return DefaultSpec(text, None, "pending")


def typed_default(spec: DefaultSpec, column_type: TypeSpec) -> DefaultSpec:
    """A SET DEFAULT's text rendered for the column's type."""
    return default_spec(spec.value, column_type) if spec.kind == "pending" else spec


def view_sql(sql: str, name: str) -> str:
    """A view body (Spark SQL) as DuckDB records it in `ducklake_view.sql`."""
    what = f"view {name}"
    duck, long_names = _hide_long_names(_to_duckdb(sql, what))
    text, tree = _duck_sql(duck, what)
    if len(tree.get("statements", [])) != 1:
        raise QueryError(f"{what}: the body must be one query")
    for stand_in, real in long_names.items():
        text = text.replace(stand_in, real)
    return text


def _hide_long_names(duck: str) -> tuple[str, dict[str, str]]:
    """Table names of four parts or more (DuckLake 1.1's nested schemas), which DuckDB 1.5's parser cannot render,
    replaced by stand-ins; the text is unchanged when there are none."""
    if duck.count(".") < 3:
        return duck, {}
    try:
        with quiet_sqlglot():
            tree = sqlglot.parse_one(duck, read="duckdb")
    except SqlglotError:
        return duck, {}
    found: dict[str, str] = {}
    for node in list(tree.find_all(exp.Table)):
        if isinstance(node.this, exp.Dot):
            stand_in = f"__ducklake_name_{len(found)}__"
            found[stand_in] = ".".join(p if _PLAIN.fullmatch(p) else '"' + p.replace('"', '""') + '"'
                                       for p in (i.name for i in node.parts))
            for arg in ("db", "catalog"):
                node.set(arg, None)
            node.set("this", exp.to_identifier(stand_in))
    return (tree.sql(dialect=_DuckDBText), found) if found else (duck, {})


def view_width(duckdb_sql: str) -> int | None:
    """How many columns a view body (DuckDB text) gives, when its select list tells (None with a `*`,
    `COLUMNS(…)` or `unnest`, which only binding resolves)."""
    _, tree = _duck_sql(_hide_long_names(duckdb_sql)[0], "view")
    node = tree["statements"][0]["node"]
    while node.get("type") == "SET_OPERATION_NODE":
        node = node.get("left") or node.get("children", [{}])[0]
    items = node.get("select_list")
    if not isinstance(items, list) or any(cls == "STAR" or name in ("unnest", "unpack")
                                          for cls, name, _ in _nodes(items)):
        return None
    return len(items)


def view_reads(duckdb_sql: str) -> tuple[tuple[str, ...], ...]:
    """The name parts (as written) of each lake table or view a view body (DuckDB text) reads, as the query planner
    resolves them (CTEs and table functions excluded); empty when the planner cannot read the body."""
    try:
        with quiet_sqlglot():
            ours = sqlglot.transpile(duckdb_sql, read="duckdb", write=DIALECT)[0]
        refs = parse_query(ours).table_refs()
    except (SqlglotError, QueryError):
        return ()  # DuckDB's parser accepted the body: leave binding to the readers rather than refuse it
    return tuple(r.path for r in refs if r.version is None and r.timestamp is None)


def sort_spec(sql: str, direction: str, nulls: str | None) -> SortSpec:
    """One sort key as DuckDB records it (`NULLS_LAST` unless told), with the columns it reads."""
    what = f"SET SORTED BY {sql}"
    duck = _to_duckdb(sql, what)
    text, _ = _duck_sql("SELECT " + duck, what)
    with quiet_sqlglot():
        tree = sqlglot.parse_one(duck, read="duckdb")
    cols = []
    for col in tree.find_all(exp.Column):
        if col.table:
            raise QueryError(f"{what}: only unqualified columns can be sort keys (no struct fields or table "
                             "prefixes)")
        cols.append(col.name)
    if not cols:
        raise QueryError(f"{what}: a sort key must reference a column")
    null_order = nulls or "NULLS_LAST"
    return SortSpec(text.removeprefix("SELECT "), direction, null_order, tuple(cols))


def expression_columns(duckdb_sql: str) -> set[str]:
    """Lower-cased column names a stored (DuckDB) sort expression reads."""
    try:
        with quiet_sqlglot():
            tree = sqlglot.parse_one(duckdb_sql, read="duckdb")
    except SqlglotError:
        return set()
    return {c.name.lower() for c in tree.find_all(exp.Column)}


def rename_in_expression(duckdb_sql: str, old: str, new: str) -> str:
    """A stored (DuckDB) sort expression with column `old` (any case, as DuckDB binds it) renamed to `new`, in
    DuckDB's rendering (`(c + 1)` → `(d + 1)`)."""
    what = f"sort expression {duckdb_sql}"
    try:
        with quiet_sqlglot():
            tree = sqlglot.parse_one(duckdb_sql, read="duckdb")
    except SqlglotError as exc:
        raise QueryError(f"{what}: {syntax_message(exc)}") from None
    for col in tree.find_all(exp.Column):
        if not col.table and col.name.lower() == old.lower():
            col.set("this", exp.to_identifier(new, quoted=True))
    text, _ = _duck_sql("SELECT " + tree.sql(dialect="duckdb"), what)
    return text.removeprefix("SELECT ")


# ----- types -----------------------------------------------------------------------------------------------------

_T = exp.DataType.Type
_SIMPLE: dict[Any, str] = {
    _T.BOOLEAN: "boolean", _T.TINYINT: "int8", _T.SMALLINT: "int16", _T.INT: "int32", _T.BIGINT: "int64",
    _T.UTINYINT: "uint8", _T.USMALLINT: "uint16", _T.UINT: "uint32", _T.UBIGINT: "uint64", _T.INT128: "int128",
    _T.UINT128: "uint128", _T.FLOAT: "float32", _T.DOUBLE: "float64", _T.DATE: "date", _T.TIME: "time",
    _T.TIMETZ: "timetz", _T.TIME_NS: "time_ns", _T.TIMESTAMPNTZ: "timestamp", _T.TIMESTAMP: "timestamp",
    _T.DATETIME: "timestamp",
    _T.TIMESTAMPTZ: "timestamptz", _T.TIMESTAMPLTZ: "timestamptz", _T.TIMESTAMP_S: "timestamp_s",
    _T.TIMESTAMP_MS: "timestamp_ms", _T.TIMESTAMP_NS: "timestamp_ns", _T.INTERVAL: "interval",
    _T.TEXT: "varchar", _T.VARCHAR: "varchar", _T.CHAR: "varchar", _T.NVARCHAR: "varchar", _T.NCHAR: "varchar",
    _T.BINARY: "blob", _T.VARBINARY: "blob", _T.BLOB: "blob", _T.UUID: "uuid", _T.JSON: "json",
}


def parse_type(text: str) -> TypeSpec:
    """A Spark type (`INT`, `STRING`, `DECIMAL(10,2)`, `ARRAY<…>`, `STRUCT<a: …>`, `MAP<…>`, `TIMESTAMP` = with
    time zone, `TIMESTAMP_NTZ`), or DuckDB's spelling where Spark has none (`UINTEGER`, `INT[]`, `STRUCT(a …)`)."""
    node = None
    for dialect in (DIALECT, "duckdb"):
        try:
            with quiet_sqlglot():
                node = exp.DataType.build(text, dialect=dialect)
            if node.this is not _T.USERDEFINED:
                break
        except (SqlglotError, ValueError):
            continue
    if node is None:
        raise QueryError(f"unknown type {text.strip()!r}")
    return _type_of(node, text)


def _type_of(node: exp.DataType, text: str) -> TypeSpec:
    t = node.this
    kids = list(node.expressions)
    if t in (_T.STRUCT, _T.OBJECT):
        fields = []
        for k in kids:
            if not isinstance(k, exp.ColumnDef) or not isinstance(k.args.get("kind"), exp.DataType):
                raise QueryError(f"type {text.strip()!r}: struct fields need a name and a type")
            fields.append((k.name, _type_of(k.args["kind"], text)))
        if not fields:
            raise QueryError(f"type {text.strip()!r}: a struct needs at least one field")
        return TypeSpec("struct", tuple(fields))
    if t is _T.LIST:  # DuckDB's parser refuses LIST(…) as a type, and Spark has none
        raise QueryError(f"type {text.strip()!r}: write a list as INT[] or ARRAY<INT>")
    if t is _T.ARRAY:
        if node.args.get("values"):  # DuckDB's ARRAY type (INT[3]) has no DuckLake type
            raise QueryError(f"type {text.strip()!r}: fixed-size arrays are not DuckLake types (use a list, "
                             "INT[])")
        if len(kids) != 1 or not isinstance(kids[0], exp.DataType):
            raise QueryError(f"type {text.strip()!r}: an array needs one element type")
        return TypeSpec("list", (("element", _type_of(kids[0], text)),))
    if t is _T.MAP:
        if len(kids) != 2 or not all(isinstance(k, exp.DataType) for k in kids):
            raise QueryError(f"type {text.strip()!r}: a map needs a key and a value type")
        return TypeSpec("map", (("key", _type_of(kids[0], text)), ("value", _type_of(kids[1], text))))
    if t is _T.DECIMAL:
        params = [int(p.name) for p in kids]
        if len(params) != 2:
            raise QueryError(f"type {text.strip()!r}: give DECIMAL(precision, scale) (Spark and DuckDB default "
                             "them differently)")
        if not 1 <= params[0] <= 38 or not 0 <= params[1] <= params[0]:
            raise QueryError(f"type {text.strip()!r}: precision must be 1-38 and scale 0-precision")
        return TypeSpec(f"decimal({params[0]},{params[1]})")
    if t in _SIMPLE:
        return TypeSpec(_SIMPLE[t])
    raise QueryError(f"type {text.strip()!r} is not a DuckLake type")


def view_columns(duckdb_sql: str) -> list[str] | None:
    """The column names a view body's query gives (DuckDB text), before the view's column aliases: each item's
    alias or column name, `*` for a star, '' where only binding names it; None when the body cannot be read."""
    try:
        with quiet_sqlglot():
            tree = sqlglot.parse_one(duckdb_sql, read="duckdb")
    except SqlglotError:
        return None
    while isinstance(tree, exp.SetOperation):  # a UNION's columns are named by its first query
        tree = tree.left
    if not isinstance(tree, exp.Query):
        return None
    return ["*" if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
            else e.output_name for e in tree.selects]
