"""Row-level changes in Spark SQL (DELETE, UPDATE, MERGE INTO, INSERT [OVERWRITE], CREATE TABLE AS), parsed from
the statement text alone: the target table and the SELECTs that find the affected rows and their new values.

The target is read through a temp view (`TARGET_VIEW`) that carries each row's location (data file id, position,
row id: `engine/scan.py`, `with_location`); every other table a statement names is planned like a query's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ducklake_cli.catalog.names import shown_path
from ducklake_cli.catalog.partitions import EPOCH
from ducklake_cli.engine.planning.dialect import DIALECT, quiet_sqlglot, sql_text, syntax_message
from ducklake_cli.engine.planning.predicates import Predicate
from ducklake_cli.engine.planning.sql_rewrite import parse_query
from ducklake_cli.errors import QueryError

# The target's temp view; each statement gets its own (`TARGET_VIEW_<n>`): Spark Connect resolves a view's name
# again whenever a frame built on it runs, so a reused name would make earlier statements read later ones' rows.
TARGET_VIEW = "__ducklake_target"
SOURCE_MARK = "__ducklake_src"
ACTION = "__ducklake_action"
# The location columns of the target view (engine/scan.py names them the same).
LOCATION = ("__ducklake_file_id", "__ducklake_pos", "__ducklake_rowid")
KINDS = ("delete", "update", "merge", "insert", "overwrite", "create")


@dataclass(frozen=True)
class MergeClause:
    """One `WHEN [NOT] MATCHED [BY SOURCE] [AND cond] THEN …` of a MERGE, in statement order."""

    match: str  # "matched", "not_matched" (by target) or "not_matched_by_source"
    action: str  # "update", "delete" or "insert"
    condition: str | None = None
    assignments: tuple[tuple[str, str], ...] = ()  # update: (column, value); insert: (column, value)
    star: bool = False  # `UPDATE SET *` / `INSERT *`: every column by name from the source


@dataclass(frozen=True)
class Statement:
    """A parsed row-level change."""

    kind: str
    schema: str | None
    table: str
    sql: str
    alias: str | None = None
    where: str | None = None
    assignments: tuple[tuple[str, str], ...] = ()  # UPDATE SET column = value
    source: str | None = None  # MERGE USING (table or subquery, with alias); INSERT/CTAS: the query
    source_alias: str | None = None
    on: str | None = None
    clauses: tuple[MergeClause, ...] = ()
    columns: tuple[str, ...] = ()  # INSERT column list
    partition_by: tuple[str, ...] = ()  # CTAS `PARTITIONED BY`, in `--partition-by` form
    reads: tuple[str, ...] = field(default=(), repr=False)
    or_replace: bool = False  # CREATE OR REPLACE TABLE … AS: an existing table ends in the same snapshot
    path: tuple[str, ...] = ()  # every name part before the table (a catalog, nested schemas on DuckLake 1.1)

    @property
    def qualified(self) -> str:
        """`schema.table` (schema `main` when unqualified), or every part of a longer name, as the catalog reader
        resolves it (a part holding a dot is quoted)."""
        return shown_path((*(self.path if len(self.path) > 1 else (self.schema or "main",)), self.table), quote=True)

    @property
    def target_alias(self) -> str:
        """The name the target's columns are qualified with in the statement."""
        return self.alias or self.table


def change_statements(statements: Sequence[str]) -> list[str]:
    """A script's statements (`dialect.split_statements`) without the `BEGIN`/`COMMIT` around them, which is what
    a script means anyway; a `ROLLBACK` is refused."""
    out = []
    for sql in statements:
        tree = _one(sql)
        if isinstance(tree, exp.Rollback):
            raise QueryError("the script has a ROLLBACK; a script commits all its statements or none")
        if not isinstance(tree, (exp.Transaction, exp.Commit, exp.EndStatement)):
            out.append(sql)
    if not out:
        raise QueryError("the script has no SQL statements")
    return out


def is_change(sql: str) -> bool:
    """Whether a statement changes a table (else it is a query)."""
    head = sql.lstrip().split(None, 2)
    words = [w.upper() for w in head[:2]]
    if not words:
        return False
    if words[0] in ("DELETE", "UPDATE", "MERGE", "INSERT", "TRUNCATE"):
        return True
    return words[0] == "CREATE" and len(words) > 1 and words[1] in ("TABLE", "OR")


def constant_values(source: str, types: Sequence[tuple[str, str, bool]]) -> str | None:
    """DuckDB's SQL for an INSERT's `VALUES` of constants, each value cast to its target column as DuckDB casts it
    (`2.5` into INTEGER is 3, `'7'` is 7, `MAP {'1': 'a'}` into MAP(INTEGER, …) has key 1): `types` per position
    (the column's DuckDB type, the type Spark reads it as, whether it is a date or timestamp), infinite dates and
    timestamps refused (Spark has none). None when the source is anything else (a query, a column, DEFAULT)."""
    import sqlglot

    try:
        with quiet_sqlglot():
            tree = sqlglot.parse_one(source, read=DIALECT)
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Values) or tree.args.get("alias"):
        return None
    rows = []
    for row in tree.expressions:
        cells = row.expressions if isinstance(row, exp.Tuple) else [row]
        if len(cells) != len(types) or any(c.find(exp.Column, exp.Query, exp.Var, exp.Placeholder) for c in cells):
            return None
        values = []
        for cell, (duck, spark, temporal) in zip(cells, types, strict=True):
            value = f"CAST(({cell.sql(dialect='duckdb')}) AS {duck})"
            if temporal:
                value = (f"CASE WHEN isinf({value}) THEN error('an infinite date or timestamp cannot be written "
                         f"through Spark, which has none: write it with DuckDB, or use NULL') ELSE {value} END")
            values.append(f"CAST({value} AS {spark})")
        rows.append("(" + ", ".join(values) + ")")
    return f"SELECT * FROM (VALUES {', '.join(rows)})"


def _one(sql: str) -> exp.Expr:
    try:
        with quiet_sqlglot():
            trees = [t for t in sqlglot.parse(sql, read=DIALECT) if t is not None]
    except SqlglotError as exc:
        raise QueryError(syntax_message(exc)) from None
    if len(trees) != 1:
        raise QueryError(f"expected one SQL statement, got {len(trees)}")
    return trees[0]


def _text(node: exp.Expr | None) -> str | None:
    return None if node is None else sql_text(node)


def _parts(t: exp.Table) -> list[str]:
    """Every part of a table name: `a.b.c.t` (nested schemas) parses as catalog `a`, db `b`, `c.t` as a dot."""
    tail: list[str] = []
    node: exp.Expr = t.this
    while isinstance(node, exp.Dot):
        tail.insert(0, node.expression.name)
        node = node.this
    return [p for p in (t.catalog, t.db) if p] + [node.name, *tail]


def _schema(t: exp.Table) -> str | None:
    parts = _parts(t)
    return parts[-2] if len(parts) > 1 else None


def _name(t: exp.Table) -> str:
    return _parts(t)[-1]


def _path(t: exp.Table) -> tuple[str, ...]:
    return tuple(_parts(t)[:-1])


def _target(node: exp.Expr, verb: str) -> exp.Table:
    if isinstance(node, exp.Schema):
        node = node.this
    inner = node.this if isinstance(node, exp.Table) else None
    while isinstance(inner, exp.Dot):
        inner = inner.this
    if not isinstance(node, exp.Table) or not isinstance(inner, exp.Identifier):
        raise QueryError(f"{verb} needs a table name")
    if node.args.get("version") is not None:
        raise QueryError(f"{verb} changes the latest snapshot; time travel (AS OF) is only for tables it reads")
    return node


def _assignments(items: list[exp.Expr], verb: str) -> tuple[tuple[str, str], ...]:
    out = []
    for item in items:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise QueryError(f"{verb} SET needs `column = value` items")
        col = item.this
        if col.table and len(col.parts) > 2:
            raise QueryError(f"{verb} SET {sql_text(col)}: only top-level columns can be assigned")
        out.append((col.name, _text(item.expression) or "NULL"))
    return tuple(out)


def _partition_item(node: exp.Expr) -> str:
    if isinstance(node, (exp.Identifier, exp.Column)):
        return node.name
    if isinstance(node, exp.PartitionedByBucket):
        return f"bucket({node.expression.name}, {node.this.name})"
    col = node.find(exp.Column)
    name = str(node.this).lower() if isinstance(node, exp.Anonymous) else type(node).__name__.lower()
    if col is None or name not in ("year", "month", "day", "hour", *EPOCH):  # epoch_*: DuckLake 1.1 only
        raise QueryError(f"PARTITIONED BY {sql_text(node)} is not a column, year|month|day|hour(col), "
                         "epoch_year|epoch_month|epoch_day|epoch_hour(col) or bucket(N, col)")
    return f"{name}({col.name})"


def parse_change(sql: str) -> Statement:
    """Parse one row-level change; anything else raises `QueryError`."""
    tree = _one(sql)
    if isinstance(tree, exp.Delete):
        t = _target(tree.this, "DELETE")
        if tree.args.get("using"):
            raise QueryError("DELETE … USING is not supported; use a subquery in WHERE or MERGE")
        return Statement("delete", _schema(t), _name(t), sql, path=_path(t), alias=t.alias or None,
                         where=_text(tree.args["where"].this) if tree.args.get("where") else None)
    if isinstance(tree, exp.TruncateTable):
        (t,) = tree.expressions
        t = _target(t, "TRUNCATE")
        return Statement("delete", _schema(t), _name(t), sql, path=_path(t))
    if isinstance(tree, exp.Update):
        t = _target(tree.this, "UPDATE")
        if tree.args.get("from_"):
            raise QueryError("UPDATE … FROM is not supported; use MERGE INTO")
        return Statement("update", _schema(t), _name(t), sql, path=_path(t), alias=t.alias or None,
                         where=_text(tree.args["where"].this) if tree.args.get("where") else None,
                         assignments=_assignments(tree.expressions, "UPDATE"))
    if isinstance(tree, exp.Merge):
        return _merge(tree, sql)
    if isinstance(tree, exp.Insert):
        target = tree.this
        columns = tuple(i.name for i in target.expressions) if isinstance(target, exp.Schema) else ()
        t = _target(target, "INSERT")
        if tree.args.get("partition") or tree.args.get("by_name"):
            raise QueryError("INSERT … PARTITION/BY NAME is not supported; name the columns instead")
        query = tree.expression
        if not isinstance(query, (exp.Query, exp.Values)):
            raise QueryError("INSERT needs a SELECT or VALUES")
        return Statement("overwrite" if tree.args.get("overwrite") else "insert", _schema(t), _name(t), sql,
                         path=_path(t), source=_text(query), columns=columns)
    if isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "TABLE":
        t = _target(tree.this, "CREATE TABLE")
        if tree.args.get("replace") and tree.args.get("exists"):  # DuckDB's parser refuses the pair
            raise QueryError("CREATE OR REPLACE TABLE and IF NOT EXISTS cannot be used together")
        if not isinstance(tree.expression, (exp.Query, exp.Values)):
            raise QueryError("CREATE TABLE needs AS SELECT (column definitions come with `ducklake write`)")
        parts: tuple[str, ...] = ()
        for prop in (tree.args.get("properties") or exp.Properties(expressions=[])).expressions:
            if isinstance(prop, exp.PartitionedByProperty):
                schema = prop.this
                items = schema.expressions if isinstance(schema, exp.Schema) else [schema]
                parts = tuple(_partition_item(i) for i in items)
            elif not isinstance(prop, exp.FileFormatProperty):
                raise QueryError(f"CREATE TABLE option {sql_text(prop)} is not supported")
        return Statement("create", _schema(t), _name(t), sql, path=_path(t), source=_text(tree.expression),
                         partition_by=parts, or_replace=bool(tree.args.get("replace")))
    raise QueryError(f"{tree.key.upper()} is not a row-level change")


def _merge(tree: exp.Merge, sql: str) -> Statement:
    t = _target(tree.this, "MERGE")
    using = tree.args.get("using")
    if isinstance(using, exp.Table):
        source_alias = using.alias or using.name
    elif isinstance(using, exp.Subquery):
        source_alias = using.alias
        if not source_alias:
            raise QueryError("MERGE … USING (subquery) needs an alias, e.g. USING (SELECT …) AS s")
    else:
        raise QueryError("MERGE needs USING <table> or USING (<subquery>) AS <alias>")
    clauses = []
    for when in tree.args["whens"].expressions:
        matched, by_source = bool(when.args.get("matched")), bool(when.args.get("source"))
        match = "matched" if matched else "not_matched_by_source" if by_source else "not_matched"
        then = when.args["then"]
        cond = _text(when.args.get("condition"))
        if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
            if match == "not_matched":
                raise QueryError("WHEN NOT MATCHED can only INSERT")
            clauses.append(MergeClause(match, "delete", cond))
        elif isinstance(then, exp.Update):
            if match == "not_matched":
                raise QueryError("WHEN NOT MATCHED can only INSERT")
            if not then.expressions:  # DuckDB's bare UPDATE: every column by position
                raise QueryError("MERGE … THEN UPDATE without SET (DuckDB: every column, by position) is not "
                                 "supported; write UPDATE SET * (every column, by name) or UPDATE SET col = …")
            star = len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star)
            clauses.append(MergeClause(match, "update", cond, () if star else _assignments(then.expressions,
                                                                                           "MERGE UPDATE"), star))
        elif isinstance(then, exp.Insert):
            if match != "not_matched":
                raise QueryError("only WHEN NOT MATCHED can INSERT")
            if isinstance(then.this, exp.Star) or _by_name(then):
                clauses.append(MergeClause(match, "insert", cond, star=True))
                continue
            if then.this is None and not then.expression:  # DuckDB's bare INSERT: every column by position
                raise QueryError("MERGE … THEN INSERT without values (DuckDB: every column, by position) is not "
                                 "supported; write INSERT * or INSERT BY NAME (by name), or INSERT (cols) VALUES (…)")
            cols = [c.name for c in then.this.expressions] if isinstance(then.this, exp.Tuple) else []
            values = then.expression.expressions if isinstance(then.expression, exp.Tuple) else []
            if not values or (cols and len(cols) != len(values)):
                raise QueryError("MERGE INSERT needs (columns) VALUES (values) of the same length, or INSERT *")
            clauses.append(MergeClause(match, "insert", cond,
                                       tuple(zip(cols or [""] * len(values), [_text(v) or "NULL" for v in values],
                                                 strict=True))))
        else:
            raise QueryError(f"unsupported MERGE action {sql_text(then)}")
    if not clauses:
        raise QueryError("MERGE needs at least one WHEN clause")
    on = tree.args.get("on")
    if not isinstance(on, exp.Expr):  # DuckDB's `USING (a, b)`: the columns of both sides equal
        keys = tree.args.get("using_cond") or []
        if not keys:
            raise QueryError("MERGE needs ON <condition> or USING (<columns>)")
        target = exp.to_identifier(t.alias or t.name)
        on = exp.and_(*(exp.EQ(this=exp.column(k.name, table=target.copy()),
                               expression=exp.column(k.name, table=exp.to_identifier(source_alias))) for k in keys))
    return Statement("merge", _schema(t), _name(t), sql, path=_path(t), alias=t.alias or None, source=_text(using),
                     source_alias=source_alias, on=_text(on), clauses=tuple(clauses))


def _by_name(then: exp.Insert) -> bool:
    """DuckDB's `INSERT BY NAME` in a MERGE (which sqlglot reads as a column `BY` aliased `NAME`)."""
    row = then.this
    if not isinstance(row, exp.Tuple) or len(row.expressions) != 1 or then.expression:
        return False
    item = row.expressions[0]
    return isinstance(item, exp.Alias) and item.alias.upper() == "NAME" and isinstance(item.this, exp.Column) \
        and item.this.name.upper() == "BY"


# ----- the SELECTs that find affected rows -----------------------------------------------------------------

def quote_name(name: str) -> str:
    """An identifier Spark SQL reads literally."""
    return "`" + name.replace("`", "``") + "`"


def _target_from(st: Statement, view: str) -> str:
    return f"{view} AS {quote_name(st.target_alias)}"


def _loc(st: Statement) -> list[str]:
    a = quote_name(st.target_alias)
    return [f"{a}.{n}" for n in LOCATION]


def qualify_target(st: Statement, sql: str) -> str:
    """`schema.table.col` references to the target, rewritten to its alias (the target is a temp view), and the
    target's `rowid` to its row-id column (unqualified only where the target is the statement's one table)."""
    tree = sqlglot.parse_one(sql, read=DIALECT)
    schema = (st.schema or "main").lower()
    names = {st.target_alias.lower(), st.table.lower()}
    for col in list(tree.find_all(exp.Column)):
        if not st.alias and col.table.lower() == st.table.lower() and col.text("db").lower() == schema:
            col.set("db", None)
            col.set("catalog", None)
        if col.name.lower() == "rowid" and (col.table.lower() in names if col.table else st.kind != "merge"):
            col.set("this", exp.to_identifier(LOCATION[2]))
    return sql_text(tree)


def target_predicates(st: Statement) -> list[Predicate]:
    """Filters of a DELETE's or UPDATE's WHERE on the target's own columns: files that cannot match are not read."""
    if not st.where or st.kind not in ("delete", "update"):
        return []
    table = f"{quote_name(st.schema or 'main')}.{quote_name(st.table)}"
    probe = parse_query(f"SELECT * FROM {table} AS {quote_name(st.target_alias)} WHERE {st.where}")
    refs = [r for r in probe.table_refs() if r.key[:2] == ((st.schema or "main").lower(), st.table.lower())]
    return probe.predicates_for(refs[0]) if refs else []


def delete_select(st: Statement, view: str = TARGET_VIEW) -> str:
    """DELETE: the location of every row the WHERE keeps (all rows without WHERE); the target is temp view `view`."""
    where = f" WHERE {qualify_target(st, st.where)}" if st.where else ""
    return f"SELECT {', '.join(_loc(st))} FROM {_target_from(st, view)}{where}"


def _known(st: Statement, assigned: tuple[tuple[str, str], ...], columns: list[str]) -> None:
    names = {c.lower() for c in columns}
    for col, _ in assigned:
        if col and col.lower() not in names:
            raise QueryError(f"table {st.qualified} has no column {col}")


def update_select(st: Statement, columns: list[str], view: str = TARGET_VIEW) -> str:
    """UPDATE: the location and new values (every top-level column, by name) of every row the WHERE keeps."""
    _known(st, st.assignments, columns)
    given = {c.lower(): v for c, v in st.assignments}
    a = quote_name(st.target_alias)
    values = [f"{qualify_target(st, given[c.lower()])} AS {quote_name(c)}" if c.lower() in given
              else f"{a}.{quote_name(c)}" for c in columns]
    where = f" WHERE {qualify_target(st, st.where)}" if st.where else ""
    return f"SELECT {', '.join(_loc(st) + values)} FROM {_target_from(st, view)}{where}"


def merge_select(st: Statement, columns: list[str], view: str = TARGET_VIEW) -> str:
    """MERGE: per affected pair, the target row's location, the index of the clause that applies (`ACTION`) and
    the new values: the first clause whose condition holds wins, as in Spark, Delta and DuckDB."""
    for clause in st.clauses:
        _known(st, clause.assignments, columns)
        if clause.action == "insert" and clause.assignments and not clause.assignments[0][0] \
                and len(clause.assignments) != len(columns):
            raise QueryError(f"MERGE INSERT VALUES gives {len(clause.assignments)} values for the "
                             f"{len(columns)} columns of {st.qualified}; name the columns")
    a, s = quote_name(st.target_alias), quote_name(st.source_alias or "")
    matched = f"{a}.{LOCATION[2]} IS NOT NULL AND {s}.{SOURCE_MARK} IS NOT NULL"
    kinds = {"matched": matched, "not_matched": f"{a}.{LOCATION[2]} IS NULL",
             "not_matched_by_source": f"{s}.{SOURCE_MARK} IS NULL"}
    conds = [f"({kinds[c.match]}){f' AND ({c.condition})' if c.condition else ''}" for c in st.clauses]
    action = "CASE " + " ".join(f"WHEN {cond} THEN {i}" for i, cond in enumerate(conds)) + " END"
    values = []
    for col in columns:
        arms = []
        for cond, c in zip(conds, st.clauses, strict=True):
            given = {(k or columns[i]).lower(): v for i, (k, v) in enumerate(c.assignments)}
            if c.action == "update":
                v = f"{s}.{quote_name(col)}" if c.star else given.get(col.lower(), f"{a}.{quote_name(col)}")
            elif c.action == "insert":
                v = f"{s}.{quote_name(col)}" if c.star else given.get(col.lower(), "NULL")
            else:
                v = "NULL"
            arms.append(f"WHEN {cond} THEN {v}")
        values.append(f"CASE {' '.join(arms)} END AS {quote_name(col)}")
    by_source = any(c.match == "not_matched_by_source" for c in st.clauses)
    inserts = any(c.match == "not_matched" for c in st.clauses)
    join = "FULL OUTER JOIN" if by_source and inserts else "RIGHT OUTER JOIN" if by_source else \
        "LEFT OUTER JOIN" if inserts else "JOIN"
    source = f"(SELECT *, true AS {SOURCE_MARK} FROM {st.source}) AS {s}"
    return (f"SELECT {', '.join(_loc(st))}, {action} AS {ACTION}, {', '.join(values)} "
            f"FROM {source} {join} {_target_from(st, view)} ON {qualify_target(st, st.on or 'true')}")
