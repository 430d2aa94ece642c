"""The SQL of `ducklake query`: find DuckLake table references, rewrite them to Spark temp views, lift filters."""

from __future__ import annotations

import datetime as dt
import difflib
import logging
import re
import struct
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, SqlglotError

from ducklake_cli.engine.predicates import Op, Predicate
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
_TOKEN = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: \d+, col: \d+.*?>")
_PLACEHOLDER = "{DUCKLAKE_CATALOG}"
_LAKE = "__ducklake_catalog__"


@dataclass(frozen=True)
class TableRef:
    """One table a statement reads, as written, with its per-table time travel (if any)."""

    catalog: str | None
    schema: str | None
    name: str
    version: int | None = None
    timestamp: str | None = None

    @property
    def qualified(self) -> str:
        """`schema.name`, unqualified names resolving in schema `main`; the catalog part is ignored."""
        return f"{self.schema or 'main'}.{self.name}"

    @property
    def key(self) -> tuple[str, str, int | None, str | None]:
        """Identity of the scan behind one temp view: case-folded name plus time travel, catalog ignored."""
        return ((self.schema or "main").lower(), self.name.lower(), self.version, self.timestamp)


@dataclass(frozen=True)
class ParsedQuery:
    """One parsed read-only Spark SQL statement."""

    sql: str
    tree: exp.Expr

    def table_refs(self) -> list[TableRef]:
        """Distinct lake tables read (by `key`), in order of appearance; CTEs, functions and subqueries excluded."""
        seen: dict[tuple[str, str, int | None, str | None], TableRef] = {}
        for ref in map(_ref, _table_nodes(self.tree)):
            seen.setdefault(ref.key, ref)
        return list(seen.values())

    def rewrite(self, views: Mapping[TableRef, str]) -> str:
        """Spark SQL reading each table from its temp view, keeping (or adding) the table's alias."""
        by_key = {ref.key: name for ref, name in views.items()}
        tree = self.tree.copy()
        bare: dict[tuple[str, str], exp.Identifier] = {}  # written name of an unaliased table -> its new name
        for node in list(_table_nodes(tree)):
            ref = _ref(node)
            if ref.key not in by_key:
                raise ValueError(f"no temp view given for table {ref.qualified}")
            view = exp.to_identifier(by_key[ref.key])
            if node.args.get("alias") is None and not isinstance(node.parent, exp.Describe):
                if _name_taken(node):  # e.g. `main.t` next to a CTE `t`: keep the view's own name
                    bare.setdefault(_parts(node), view.copy())
                else:
                    bare.setdefault(_parts(node), node.this.copy())
                    node.set("alias", exp.TableAlias(this=node.this.copy()))
            for arg in ("db", "catalog", "version"):
                node.set(arg, None)
            node.set("this", view)
        for col in list(tree.find_all(exp.Column)):  # `main.t.x` -> `t.x`, as `main.t` is now a view named `t`
            parts = _col_parts(col)
            if len(parts) == 2 and (new := bare.get((parts[0], parts[1]))) is not None:
                col.set("table", new.copy())
                col.set("db", None)
                col.set("catalog", None)
        return tree.sql(dialect="spark")

    def predicates_for(self, ref: TableRef) -> list[Predicate]:
        """Filters that hold for every row any reading of `ref` keeps; the caller ignores unknown columns."""
        common: list[Predicate] | None = None
        for node in _table_nodes(self.tree):
            if _ref(node).key != ref.key:
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
        if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
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
        return any(col.name.lower() == "rowid" for col in self.tree.find_all(exp.Column))


def parse_query(sql: str) -> ParsedQuery:
    """Parse one read-only Spark SQL statement; writes, several statements or bad syntax raise `QueryError`."""
    try:
        with _quiet_sqlglot():
            statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except SqlglotError as exc:
        raise QueryError(_syntax_message(exc)) from None
    if len(statements) != 1:
        raise QueryError(f"expected one SQL statement, got {len(statements)}")
    tree = statements[0]
    if isinstance(tree, exp.Command):
        raise QueryError(f"{tree.name.upper()} is not supported; write a SELECT, WITH, VALUES or DESCRIBE query")
    if isinstance(tree, _WRITES):
        verb = tree.key.upper().replace("TRUNCATETABLE", "TRUNCATE")
        raise QueryError(f"query only reads; use `ducklake write` to change tables (got {verb})")
    if isinstance(tree, exp.Describe) and (tree.args.get("kind") or not isinstance(tree.this, exp.Table)):
        raise QueryError("only DESCRIBE of a table is supported")
    if isinstance(tree, (exp.Alias, exp.Column, exp.Identifier, exp.Literal)):
        # e.g. `SELEC x FROM t` parses as an aliased expression: to the user that is a syntax error.
        start = sql.strip().split(None, 1)[0] if sql.strip() else ""
        raise QueryError(f"SQL syntax error near {start!r}: expected a SELECT, WITH, VALUES or DESCRIBE query")
    if not isinstance(tree, (exp.Query, exp.Values, exp.Describe)):
        raise QueryError(f"{tree.key.upper()} is not supported; write a SELECT, WITH, VALUES or DESCRIBE query")
    for node in _table_nodes(tree):
        _ref(node)  # time-travel clauses are checked once, here
    return ParsedQuery(sql=sql, tree=tree)


def transpile_view(sql: str, *, catalog_name: str = "lake", schema: str = "main", view: str | None = None) -> str:
    """A DuckLake view's DuckDB SQL as Spark SQL; unqualified tables resolve in the view's `schema`, as in DuckDB."""
    fail = f"view {view} cannot be translated to Spark SQL: " if view else "view cannot be translated to Spark SQL: "
    try:
        with _quiet_sqlglot():
            statements = [s for s in sqlglot.parse(sql.replace(_PLACEHOLDER, _LAKE), read="duckdb") if s]
    except SqlglotError as exc:
        raise QueryError(fail + _syntax_message(exc)) from None
    if len(statements) != 1 or not isinstance(tree := statements[0], exp.Query):
        raise QueryError(fail + "not a single SELECT")
    for node in list(_table_nodes(tree)):
        if node.catalog and node.catalog != _LAKE:
            raise QueryError(fail + f"it reads catalog {node.catalog}, outside the lake")
        if node.db == _LAKE and not node.catalog:  # DuckDB's `catalog.table` means the catalog's `main`
            node.set("db", exp.to_identifier("main"))
            node.set("catalog", exp.to_identifier(catalog_name))
        elif node.catalog:
            node.set("catalog", exp.to_identifier(catalog_name))
        elif not node.db:
            node.set("db", exp.to_identifier(schema))
    for col in tree.find_all(exp.Column):  # `{DUCKLAKE_CATALOG}.t.x` -> `t.x`
        if _LAKE in (col.text("db"), col.text("catalog")):
            col.set("db", None)
            col.set("catalog", None)
    for fn in list(tree.find_all(exp.Anonymous)):  # DuckDB stores `count(*)` in view SQL as `count_star()`
        if fn.name.lower() == "count_star" and not fn.expressions:
            fn.replace(exp.Count(this=exp.Star()))
    for part in tree.walk():
        if isinstance(part, exp.DataType) and part.this in _NO_SPARK_TYPE:
            raise QueryError(fail + f"type {part.sql('duckdb')} has no Spark equivalent")
        if isinstance(part, exp.Join) and (odd := {part.kind.upper(), part.method.upper()} & {"ASOF", "POSITIONAL"}):
            raise QueryError(fail + f"{odd.pop()} JOIN has no Spark equivalent")
    try:
        return tree.sql(dialect="spark", unsupported_level=ErrorLevel.RAISE)
    except SqlglotError as exc:
        raise QueryError(fail + _one_line(str(exc))) from None


def suggest(name: str, known: Iterable[str]) -> list[str]:
    """Up to three known names close to `name` (case-insensitive), for 'unknown table' hints."""
    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    return [by_lower[m] for m in difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.75)]


# -- table references ---------------------------------------------------------------------------------------


def _table_nodes(root: exp.Expr) -> Iterator[exp.Table]:
    """Every `exp.Table` naming a real table, in source order; CTE names are scoped as Spark scopes them."""
    stack: list[tuple[exp.Expr, frozenset[str]]] = [(root, frozenset())]
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
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and (
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
                raise QueryError(f"VERSION AS OF needs a snapshot id, got {given.sql('spark')}")
            version = int(text)
        else:
            if isinstance(given, exp.Cast) and given.to.this in _TIMESTAMPS:  # TIMESTAMP '...'
                given = given.this.unnest()
            if not (isinstance(given, exp.Literal) and given.is_string):
                raise QueryError(f"TIMESTAMP AS OF needs a literal like '2026-01-01 00:00:00', "
                                 f"got {clause.expression.sql('spark')}")
            timestamp = str(given.this)
    return TableRef(catalog=node.catalog or None, schema=node.db or None, name=node.name,
                    version=version, timestamp=timestamp)


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


# -- errors ---------------------------------------------------------------------------------------------------


def _syntax_message(exc: SqlglotError) -> str:
    errors = exc.errors if isinstance(exc, ParseError) else []
    if not errors:
        return f"SQL syntax error: {_one_line(str(exc))}"
    first = errors[0]
    what = _TOKEN.sub(lambda m: "end of input" if m[1] == "SENTINEL" else repr(m[2]), first["description"])
    return f"SQL syntax error at line {first['line']}, column {first['col']}: {_one_line(what)}"


def _one_line(text: str) -> str:
    return (re.sub(r"\x1b\[\d+m", "", text).strip().splitlines() or [""])[0]


@contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    """sqlglot logs a warning when it falls back to `Command`; we raise a clean error instead."""
    log = logging.getLogger("sqlglot")
    log.addFilter(hush := logging.Filter("\0"))  # matches no logger name, so drops every record
    try:
        yield
    finally:
        log.removeFilter(hush)
