"""DDL through `query`: each statement resolved against the latest snapshot inside its own commit and written as
one snapshot, as DuckDB writes the same statement. Metadata only: Spark never starts."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog import columns, ddl, options
from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.columns import NO_DEFAULT, Default
from ducklake_cli.catalog.models import ColumnInfo, SchemaInfo, SortKey, TableInfo, ViewInfo
from ducklake_cli.catalog.names import inlining_reserved, pick_entry, reserved_v11, shown_path
from ducklake_cli.catalog.partitions import PartitionRequest, refuse_epoch, resolve_partition
from ducklake_cli.catalog.reader import pick_schema
from ducklake_cli.catalog.versions import v11_only
from ducklake_cli.catalog.writes import create_table, ensure_schema
from ducklake_cli.engine.planning import ddl_plan as p
from ducklake_cli.engine.planning.ddl_render import (
    DefaultSpec,
    TypeSpec,
    expression_columns,
    rename_in_expression,
    typed_default,
)
from ducklake_cli.errors import DuckLakeError, NotFoundError, QueryError, ScriptStoppedError, UsageError
from ducklake_cli.ops.results import Section
from ducklake_cli.ops.tables import view_query_columns

if TYPE_CHECKING:
    from ducklake_cli.catalog.transaction import Transaction
    from ducklake_cli.lake import Lake


@dataclass(frozen=True)
class DdlResult:
    """What a DDL statement (or script of them) did: one snapshot per statement run, None where nothing changed;
    when the script stopped part-way, the error of the statement that failed (the ones after it did not run)."""

    statements: tuple[str, ...]
    snapshots: tuple[int | None, ...]
    error: str | None = None

    def status(self, i: int) -> str:
        """`committed`, `unchanged` (nothing to do), `failed` or `not run`."""
        if i < len(self.snapshots):
            return "unchanged" if self.snapshots[i] is None else "committed"
        return "failed" if i == len(self.snapshots) and self.error is not None else "not run"

    def sections(self) -> list[Section]:
        """One row per statement for the table renderer."""
        rows = tuple((st, self.status(i) if self.status(i) != "committed" else self.snapshots[i])
                     for i, st in enumerate(self.statements))
        return [Section("ddl", ("statement", "snapshot"), rows)]

    def to_json(self) -> dict[str, Any]:
        """Stable JSON (`query --format json` of DDL)."""
        out: dict[str, Any] = {"statements": [
            {"statement": st, "snapshot_id": self.snapshots[i] if i < len(self.snapshots) else None,
             "status": self.status(i)} for i, st in enumerate(self.statements)]}
        if self.error is not None:
            out["error"] = self.error
        return out


def run_ddl(lake: Lake, statements: Sequence[str], *, message: str | None = None,
            author: str | None = None) -> DdlResult:
    """Parse every statement first (a bad one changes nothing), then commit each as its own snapshot. A statement
    that fails stops the script: `ScriptStoppedError` carries what the ones before it committed."""
    lake.refuse_writes()  # an older catalog: refused before any work
    parsed = [p.parse_ddl(sql) for sql in statements]
    with lake.reader() as r:
        meta = r.metadata()
        if not r.v11:
            views = None
            for st in parsed:
                _refuse_v11(st, where=lake.target.display())
                if isinstance(st, p.Comment) and st.kind == "column":
                    views = r.views(r.latest_snapshot().snapshot_id) if views is None else views
                    if pick_entry(views, (*st.target.schema_path, st.target.name), nested=False) is not None:
                        raise v11_only(f"COMMENT ON COLUMN of view {st.target}", where=lake.target.display())
    options.require_message(meta, message)
    summaries = tuple(_summary(st) for st in parsed)
    done: list[int | None] = []
    for i, st in enumerate(parsed):
        try:
            done.append(lake.commit(functools.partial(_apply, lake, st), author=author, message=message))
        except DuckLakeError as exc:
            if i == 0:
                raise
            result = DdlResult(summaries, tuple(done), exc.message)
            raise ScriptStoppedError(_stopped(result, i, exc), cause=exc, done=result) from exc
    return DdlResult(summaries, tuple(done))


def _refuse_v11(st: p.Statement, *, where: str) -> None:
    """On a 1.0 catalog, refuse what needs 1.1 before anything is written: a nested schema's name (CREATE SCHEMA
    a.b: `versions.v11_only`; other names: 1.0's own "too many parts" refusals) and comments on view columns."""
    if isinstance(st, p.CreateTable | p.SetPartition):  # epoch_* transforms are 1.1's (spec versions §3.7)
        refuse_epoch([k.transform for k in (st.partition if isinstance(st, p.CreateTable) else st.keys)],
                     v11=False, where=where)
    nested = p.nested_names(st)
    if nested is not None:
        if isinstance(st, p.CreateSchema):
            raise v11_only(f"CREATE SCHEMA {st.shown} (a nested schema)", where=where)
        if isinstance(st, p.DropSchema):
            raise QueryError(f"schema name {'.'.join(st.path)!r} has too many parts")
        if isinstance(st, p.Comment) and st.kind == "column":
            raise QueryError("COMMENT ON COLUMN needs [schema.]table.column")
        raise QueryError(f"name {nested!r} has too many parts (use schema.name)")


def _stopped(result: DdlResult, failed: int, exc: DuckLakeError) -> str:
    """One line: which statement failed and why, what the ones before it committed, how many did not run."""
    committed = [f"{i + 1}" + (f" (snapshot {sid})" if sid is not None else " (nothing to do)")
                 for i, sid in enumerate(result.snapshots)]
    left = len(result.statements) - failed - 1
    return (f"statement {failed + 1} of {len(result.statements)} ({result.statements[failed]}) failed: "
            f"{exc.message}; committed before it: {', '.join(committed)}"
            + (f"; not run: {left} statement(s) after it" if left else ""))


def _summary(st: p.Statement) -> str:
    words = {p.CreateSchema: "create schema", p.DropSchema: "drop schema", p.CreateTable: "create table",
             p.DropTable: "drop table", p.RenameTable: "rename table", p.AddColumn: "add column",
             p.AddColumns: "add columns",
             p.DropColumn: "drop column", p.RenameColumn: "rename column", p.AlterColumnType: "alter column type",
             p.SetNotNull: "alter column nullability", p.SetDefault: "alter column default",
             p.SetPartition: "set partitioning", p.SetSort: "set sort order", p.Comment: "comment",
             p.CreateView: "create view", p.DropView: "drop view", p.RenameView: "rename view"}
    target = getattr(st, "table", None) or getattr(st, "view", None) or getattr(st, "target", None)
    return f"{words[type(st)]} {target if target is not None else getattr(st, 'shown', '')}"


# ----- resolving names at the commit's snapshot ------------------------------------------------------------------

def _pick(items: Sequence[Any], name: str, attr: str = "name") -> Any:
    """Exact name, else the one case-insensitive match (identifiers are case-insensitive in DuckDB and Spark)."""
    for it in items:
        if getattr(it, attr) == name:
            return it
    folded = [it for it in items if getattr(it, attr).lower() == name.lower()]
    return folded[0] if len(folded) == 1 else None


class _State:
    """The catalog at the latest snapshot, as seen inside the commit."""

    def __init__(self, lake: Lake, tx: Transaction) -> None:
        self.lake = lake
        self.tx = tx
        self.sid = tx.latest.snapshot_id
        self.schemas = tx.reader.schemas(self.sid)
        self._tables: list[TableInfo] | None = None
        self._views: list[ViewInfo] | None = None

    @property
    def tables(self) -> list[TableInfo]:
        if self._tables is None:
            self._tables = self.tx.reader.tables(self.sid)
        return self._tables

    @property
    def views(self) -> list[ViewInfo]:
        if self._views is None:
            self._views = self.tx.reader.views(self.sid)
        return self._views

    def find_schema(self, path: Sequence[str]) -> SchemaInfo | None:
        return pick_schema(self.schemas, path)

    def schema(self, path: Sequence[str]) -> SchemaInfo:
        found = self.find_schema(path)
        if found is None:
            raise NotFoundError(f"schema {shown_path(path, quote=len(path) > 1)} does not exist")
        return found

    def _entry(self, items: Sequence[Any], name: p.Name, kind: str, *, missing_ok: bool) -> Any:
        """The table or view `name` among `items` (None when missing and `missing_ok`)."""
        sch = self.find_schema(name.schema_path) if missing_ok else self.schema(name.schema_path)
        found = None if sch is None else _pick([i for i in items if i.schema_id == sch.schema_id], name.name)
        if found is None and not missing_ok:
            raise NotFoundError(f"{kind} {name} does not exist")
        return found

    def children(self, schema: SchemaInfo) -> list[SchemaInfo]:
        """The schemas nested directly in `schema` (DuckLake 1.1)."""
        return [sc for sc in self.schemas if sc.parent_schema_id == schema.schema_id]

    def find_table(self, name: p.Name) -> TableInfo | None:
        return self._entry(self.tables, name, "table", missing_ok=True)

    def table(self, name: p.Name) -> TableInfo:
        return self._entry(self.tables, name, "table", missing_ok=False)

    def find_view(self, name: p.Name) -> ViewInfo | None:
        return self._entry(self.views, name, "view", missing_ok=True)

    def view(self, name: p.Name) -> ViewInfo:
        return self._entry(self.views, name, "view", missing_ok=False)

    def column(self, name: p.Name, path: Sequence[str]) -> tuple[TableInfo, ColumnInfo]:
        """The table and its column (or nested field) at `path`."""
        table = self.table(name)
        col = _column(table, path)
        assert col is not None
        return table, col

    def taken(self, schema: SchemaInfo, name: str, *, but: int | None = None) -> str | None:
        """`table`/`view` when an entry of that name exists in the schema (other than id `but`)."""
        for t in self.tables:
            if t.schema_id == schema.schema_id and t.name.lower() == name.lower() and t.table_id != but:
                return "table"
        for v in self.views:
            if v.schema_id == schema.schema_id and v.name.lower() == name.lower() and v.view_id != but:
                return "view"
        return None

    def check_rename(self, what: str, schema: tuple[str, ...], shown: str, old: str, new: str, own_id: int) -> None:
        """Refuse renaming a table or view onto the name of another entry of its schema."""
        kind = self.taken(self.schema(schema), new, but=own_id)
        if kind is not None:
            raise QueryError(f"cannot rename {what} {shown}.{old} to {new}: a {kind} of that name exists")

    def refuse_other_kind(self, name: p.Name, kind: str) -> None:
        """DROP TABLE naming a view, or DROP VIEW naming a table, is refused (IF EXISTS or not), as DuckDB does."""
        other = "view" if kind == "table" else "table"
        if (self.find_view(name) if other == "view" else self.find_table(name)) is not None:
            raise QueryError(f"{name} is a {other}, not a {kind}", hint=f"DROP {other.upper()} drops it")

    def refuse_reserved(self, names: Sequence[str], *, schema_id: int, table_id: int | None) -> None:
        """Refuse a top-level column named like an inlined-data table's own columns while the table inlines
        (`data_inlining_row_limit` > 0 where it lives), as DuckDB does: its inlined rows could not be stored."""
        from ducklake_cli.catalog.writes import RESERVED_INLINE_NAMES

        if self.tx.v11:  # 1.1: the `_ducklake_` prefix, always; plain row_id & co are ordinary names
            prefixed = next((n for n in names if n.lower().startswith(s.RESERVED_PREFIX_V11)), None)
            if prefixed is not None:
                raise QueryError(reserved_v11(prefixed))
            return
        reserved = next((n for n in names if n.lower() in RESERVED_INLINE_NAMES), None)
        if reserved is None:
            return
        meta = self.tx.reader.metadata()
        if options.count(meta, "data_inlining_row_limit", table_id=table_id, schema_id=schema_id) > 0:
            raise QueryError(inlining_reserved(reserved),
                             hint="rename it, or set the option data_inlining_row_limit to 0 first "
                                  "(ducklake options CATALOG --set data_inlining_row_limit=0)")

    def inlines(self, table: TableInfo, columns: Sequence[ColumnInfo] | None = None) -> bool:
        """Whether a new definition of the table (its top-level `columns` after the change, when they differ) gets
        an inlined-data table: DuckDB makes one when the option where the table lives inlines and its columns
        can be inlined, whether or not the table had one."""
        from ducklake_cli.ops.write import inline_limit  # the write path's modules: only when a table changes

        cols = table.columns if columns is None else columns
        return inline_limit(self.lake, self.tx.reader.metadata(), cols, table_id=table.table_id,
                            schema_id=table.schema_id) > 0


def _column(table: TableInfo, path: Sequence[str], *, missing_ok: bool = False) -> ColumnInfo | None:
    cols: Sequence[ColumnInfo] = table.columns
    found: ColumnInfo | None = None
    for part in path:
        found = _pick(cols, part)
        if found is None:
            if missing_ok:
                return None
            raise QueryError(f"table {table.qualified_name} has no column {'.'.join(path)}")
        cols = found.children
    return found


def _columns(specs: Sequence[tuple[str, TypeSpec]], first: int, parent: int | None) -> tuple[list[ColumnInfo], int]:
    """Column trees with ids in pre-order from `first`, as DuckDB numbers a new table's columns."""
    out, nxt = [], first
    for name, typ in specs:
        cid = nxt
        kids, nxt = _columns(typ.fields, cid + 1, cid)
        out.append(ColumnInfo(column_id=cid, name=name, type=typ.name, nulls_allowed=True, initial_default=None,
                              default_value="NULL", default_value_type="" if kids else "literal",
                              parent_column=parent, column_order=cid, begin_snapshot=0, children=tuple(kids)))
    return out, nxt


def _type_spec(col: ColumnInfo) -> TypeSpec:
    return TypeSpec(col.type, tuple((c.name, _type_spec(c)) for c in col.children))


def _default(spec: DefaultSpec | None) -> Default:
    return NO_DEFAULT if spec is None else Default(spec.initial, spec.value, spec.kind)


def _partition(cols: Sequence[ColumnInfo], keys: Sequence[PartitionRequest], clause: str) -> list[tuple[int, str]]:
    """Partition keys resolved against the columns (errors name the SQL clause, not the CLI flag)."""
    try:
        return resolve_partition(cols, keys)
    except UsageError as exc:
        raise QueryError(exc.message.replace("--partition-by", clause)) from None


# ----- statements ------------------------------------------------------------------------------------------------

def _apply(lake: Lake, st: p.Statement, tx: Transaction) -> None:
    _HANDLERS[type(st)](_State(lake, tx), st)


def _create_schema(state: _State, st: p.CreateSchema) -> None:
    if state.find_schema(st.path) is not None:
        if st.if_not_exists:
            return
        raise QueryError(f"schema {st.shown} already exists")
    if len(st.path) == 1:
        ensure_schema(state.tx, st.path[0])
        return
    parent = state.find_schema(st.path[:-1])  # DuckLake 1.1: parents are created first
    if parent is None:
        raise NotFoundError(f"cannot create schema {st.shown}: its parent schema "
                            f"{shown_path(st.outer, quote=True)} does not exist", hint="create the parent first")
    ddl.create_schema(state.tx, parent, st.path[-1])


def _drop_schema(state: _State, st: p.DropSchema) -> None:
    sch = state.find_schema(st.path) if st.if_exists else state.schema(st.path)
    if sch is None:
        return
    if sch.qualified_parts == ("main",):
        raise QueryError("schema main cannot be dropped")
    subtree = [sch]  # the schema and (DuckLake 1.1) every schema nested in it, parents first
    for one in subtree:
        subtree.extend(state.children(one))
    ids = {sc.schema_id for sc in subtree}
    tables = [t for t in state.tables if t.schema_id in ids]
    views = [v for v in state.views if v.schema_id in ids]
    if (tables or views or len(subtree) > 1) and not st.cascade:
        nested = f", {len(subtree) - 1} schema(s)" if len(subtree) > 1 else ""
        raise QueryError(f"schema {sch.shown} still holds {len(tables)} table(s) and {len(views)} view(s){nested}",
                         hint="DROP SCHEMA … CASCADE drops them too")
    for t in tables:
        ddl.drop_table(state.tx, t)
    for v in views:
        ddl.drop_view(state.tx, v)
    for one in reversed(subtree):  # the deepest first
        ddl.drop_schema(state.tx, one)


def _create_table(state: _State, st: p.CreateTable) -> None:
    from ducklake_cli.ops.write import inline_limit  # the write path's modules: only when a table is made

    sch = state.schema(st.table.schema_path)
    kind = state.taken(sch, st.table.name)
    if kind is not None and st.if_not_exists:
        return  # DuckDB: nothing, whether a table or a view has the name
    if kind == "view" and st.or_replace:
        raise QueryError(f"{st.table} is a view; CREATE OR REPLACE TABLE cannot replace it", hint="DROP VIEW first")
    if kind is not None and not st.or_replace:
        raise QueryError(f"a {kind} named {st.table} already exists",
                         hint="CREATE OR REPLACE TABLE replaces a table" if kind == "table" else None)
    state.refuse_reserved([c.name for c in st.columns], schema_id=sch.schema_id, table_id=None)
    if kind == "table":  # OR REPLACE: the old table ends and a new one (new id) begins, in one snapshot
        ddl.drop_table(state.tx, state.table(st.table))
    cols, _ = _columns([(c.name, c.type) for c in st.columns], 1, None)
    cols = [replace(c, nulls_allowed=not spec.not_null, initial_default=d.initial, default_value=d.value,
                    default_value_type=c.default_value_type if c.children else d.kind)
            for c, spec in zip(cols, st.columns, strict=True) for d in (_default(spec.default),)]
    partition = _partition(cols, st.partition, "PARTITIONED BY")
    limit = inline_limit(state.lake, state.tx.reader.metadata(), cols, table_id=None, schema_id=sch.schema_id)
    table = create_table(state.tx, sch, st.table.name, cols, partition, inline=limit > 0)
    if partition or st.comment is not None or any(c.comment is not None for c in st.columns):
        state.tx.change("altered_table", table.table_id)  # DuckDB: CREATE, then ALTER/COMMENT, one transaction
    if st.comment is not None:
        ddl.comment_table(state.tx, table, st.comment)
    for c, spec in zip(cols, st.columns, strict=True):
        if spec.comment is not None:
            ddl.comment_column(state.tx, table, c.column_id, spec.comment)


def _drop_table(state: _State, st: p.DropTable) -> None:
    table = state.find_table(st.table)
    if table is None:
        state.refuse_other_kind(st.table, "table")
    if table is None and not st.if_exists:
        state.table(st.table)  # raises: it does not exist
    if table is not None:
        ddl.drop_table(state.tx, table)


def _rename_table(state: _State, st: p.RenameTable) -> None:
    table = state.table(st.table)
    state.check_rename("table", table.schema_path, table.schema_name, table.name, st.new_name, table.table_id)
    ddl.rename_table(state.tx, table, st.new_name, inline=state.inlines(table))


def _add_column(state: _State, st: p.AddColumn) -> None:
    _add_one(state, state.table(st.table), st)


def _add_columns(state: _State, st: p.AddColumns) -> None:
    """Several columns in one snapshot (DuckDB: the ADDs in one transaction)."""
    table = state.table(st.table)
    for one in st.columns:
        table = _add_one(state, table, one)


def _add_one(state: _State, table: TableInfo, st: p.AddColumn) -> TableInfo:
    if not st.parent:
        state.refuse_reserved([st.column.name], schema_id=table.schema_id, table_id=table.table_id)
    parent = _column(table, st.parent) if st.parent else None
    siblings = parent.children if parent is not None else table.columns
    if _pick(siblings, st.column.name) is not None and st.if_not_exists:
        return table
    if st.column.not_null:
        raise QueryError("ADD COLUMN … NOT NULL is not supported (DuckDB's rule); add it, then SET NOT NULL")
    if st.column.default is not None and st.column.default.kind == "expression":
        # old rows read a literal default (initial_default); an expression has none, so they would read NULL
        raise QueryError(f"ADD COLUMN {st.column.name} … DEFAULT {st.column.default.value}: an added column's "
                         "default must be a constant (DuckDB's rule)", hint="add it, then SET DEFAULT")
    (col,), _ = _columns([(st.column.name, st.column.type)], 0, None)
    # a field's type counts for inlining, its name does not
    after = [*table.columns, col if parent is None else replace(col, name="")]
    table = columns.add_column(state.tx, table, col, parent_id=parent.column_id if parent else None,
                               default=_default(st.column.default), inline=state.inlines(table, after))
    if st.column.comment is not None:
        added = _column(table, (*st.parent, st.column.name))
        assert added is not None
        ddl.comment_column(state.tx, table, added.column_id, st.column.comment)
    return table


def _drop_column(state: _State, st: p.DropColumn) -> None:
    table = state.table(st.table)
    col = _column(table, st.path, missing_ok=st.if_exists)
    if col is None:
        return
    if table.partition and any(f.column_id == col.column_id for f in table.partition.fields):
        raise QueryError(f"cannot drop {'.'.join(st.path)}: it is a partition key of {table.qualified_name}",
                         hint="change the partitioning first (SET/RESET PARTITIONED BY)")
    if col.parent_column is None and any(col.name.lower() in expression_columns(k.expression)
                                         for k in table.sort_keys):
        raise QueryError(f"cannot drop {col.name}: {table.qualified_name} is sorted by it",
                         hint="change the sort order first (SET/RESET SORTED BY)")
    columns.drop_column(state.tx, table, col.column_id,
                        inline=state.inlines(table, [c for c in table.columns if c.column_id != col.column_id]))


def _rename_column(state: _State, st: p.RenameColumn) -> None:
    if len(st.path) == 1:
        table = state.table(st.table)
        state.refuse_reserved([st.new_name], schema_id=table.schema_id, table_id=table.table_id)
    table, col = state.column(st.table, st.path)
    if col.parent_column is not None and col.name.lower() == st.new_name.lower():
        # DuckDB: a field of that name already exists (itself); a top-level column renamed to itself re-versions
        raise QueryError(f"cannot rename field {col.name!r} of {'.'.join(st.path[:-1])} to {st.new_name!r}: a field "
                         "with this name already exists")
    after = [replace(c, name=st.new_name) if c.column_id == col.column_id else c for c in table.columns]
    renamed = columns.rename_column(state.tx, table, col.column_id, st.new_name, inline=state.inlines(table, after))
    if col.parent_column is None and table.sort_keys:
        # sort expressions name columns (partitions use ids): DuckDB writes a new spec when an expression's text
        # changes, and spends a catalog id on any top-level rename of a sorted table even when none does (a
        # column renamed to itself)
        keys = [replace(k, expression=rename_in_expression(k.expression, col.name, st.new_name))
                if col.name.lower() in expression_columns(k.expression) else k for k in table.sort_keys]
        if keys != list(table.sort_keys):
            ddl.set_sort(state.tx, renamed, keys)
        else:
            state.tx.catalog_id()


def _alter_type(state: _State, st: p.AlterColumnType) -> None:
    table, col = state.column(st.table, st.path)
    (new,), _ = _columns([(col.name, st.type)], 0, col.parent_column)
    after = [replace(new, name=c.name) if c.column_id == col.column_id else c for c in table.columns]
    columns.set_column_type(state.tx, table, col.column_id, new, inline=state.inlines(table, after))


def _set_not_null(state: _State, st: p.SetNotNull) -> None:
    table, col = state.column(st.table, st.path)
    if col.nulls_allowed != st.not_null:  # DuckDB refuses a change to what already holds
        raise QueryError(f"cannot SET NOT NULL on {col.name}: it is already NOT NULL" if st.not_null else
                         f"cannot DROP NOT NULL on {col.name}: it has no NOT NULL constraint")
    columns.set_nulls_allowed(state.tx, table, col.column_id, not st.not_null)


def _set_default(state: _State, st: p.SetDefault) -> None:
    table, col = state.column(st.table, st.path)
    spec = None if st.default is None else typed_default(st.default, _type_spec(col))
    if spec is not None and spec.kind == "expression" and not ddl.column_created_with_table(
            state.tx, table.name, col.name):
        # DuckDB 1.5.5 counts a column whose live row did not begin with the table's row as an added column, and
        # an added column's default must be a constant
        raise QueryError(f"SET DEFAULT {spec.value} on {col.name}: DuckDB takes only a constant default for a "
                         "column added or changed since the table was created (or renamed)",
                         hint="use a constant default")
    columns.set_default(state.tx, table, col.column_id, _default(spec))


def _set_partition(state: _State, st: p.SetPartition) -> None:
    table = state.table(st.table)
    fields = _partition(table.columns, st.keys, "SET PARTITIONED BY")
    ddl.set_partition(state.tx, table, fields, inline=state.inlines(table))


def _set_sort(state: _State, st: p.SetSort) -> None:
    table = state.table(st.table)
    missing = sorted({c for k in st.keys for c in k.columns if _pick(table.columns, c) is None})
    if missing:
        raise QueryError(f"SET SORTED BY: table {table.qualified_name} has no column {', '.join(missing)}")
    keys = [SortKey(i, k.expression, k.direction, k.null_order) for i, k in enumerate(st.keys)]
    ddl.set_sort(state.tx, table, keys)


def _comment(state: _State, st: p.Comment) -> None:
    if st.kind == "view":
        ddl.comment_view(state.tx, state.view(st.target), st.text)
    elif st.kind == "table":
        ddl.comment_table(state.tx, state.table(st.target), st.text)
    else:
        view = state.find_view(st.target) if state.find_table(st.target) is None else None
        if view is not None:
            if not state.tx.v11:
                raise v11_only(f"COMMENT ON COLUMN of view {st.target}", where=state.lake.target.display())
            ddl.comment_view_column(state.tx, view, _view_column(state, view, st.path[0]), st.text)
            return
        table, col = state.column(st.target, st.path)
        ddl.comment_column(state.tx, table, col.column_id, st.text)


def _view_column(state: _State, view: ViewInfo, name: str) -> str:
    """The view query's own name for the column `name` names (spec versions §3.2): an alias maps to the query
    column at its position; a name the view's columns cannot tell (a `*` over several tables) is kept as given."""
    from ducklake_cli.engine.planning.sql_rewrite import view_column_aliases

    aliases = view_column_aliases(view.column_aliases)
    query = view_query_columns(view, state.tables, nested=state.tx.v11)
    shown = [*aliases, *query[len(aliases):]] if query else list(aliases)
    at = next((i for i, n in enumerate(shown) if n == name), None)
    if at is None:
        folded = [i for i, n in enumerate(shown) if n.lower() == name.lower()]
        at = folded[0] if len(folded) == 1 else None
    if at is None:
        if query:
            raise QueryError(f"view {view.schema_name}.{view.name} has no column {name}")
        return name
    return query[at] if at < len(query) and query[at] else shown[at]


def _create_view(state: _State, st: p.CreateView) -> None:
    sch = state.schema(st.view.schema_path)
    kind = state.taken(sch, st.view.name)
    if kind is not None and st.if_not_exists:
        return  # DuckDB: nothing, whether a view or a table has the name
    if kind == "table":
        raise QueryError(f"a table named {st.view} already exists")
    if kind == "view":
        if not st.or_replace:
            raise QueryError(f"view {st.view} already exists", hint="CREATE OR REPLACE VIEW replaces it")
        ddl.drop_view(state.tx, state.view(st.view))
    nested = state.tx.v11
    for parts in st.read_paths:  # DuckDB binds the body on CREATE: a missing table is refused, not stored
        if len(parts) == 1:  # unqualified: the view's own schema or main (how DuckDB resolves a stored view's names)
            where = list(dict.fromkeys([st.view.schema_path, ("main",)]))
            found = any(state.find_table(p.Name.of(w, parts[0])) or state.find_view(p.Name.of(w, parts[0]))
                        for w in where)
        else:
            found = (pick_entry(state.tables, parts, nested=nested) or pick_entry(state.views, parts, nested=nested)
                     ) is not None
        if not found:
            raise QueryError(f"view {st.view}: table or view {'.'.join(parts if nested else parts[-2:])} does not "
                             "exist")
    ddl.create_view(state.tx, sch, st.view.name, st.sql, st.aliases)


def _drop_view(state: _State, st: p.DropView) -> None:
    view = state.find_view(st.view)
    if view is None:
        state.refuse_other_kind(st.view, "view")
    if view is None and not st.if_exists:
        state.view(st.view)  # raises: it does not exist
    if view is not None:
        ddl.drop_view(state.tx, view)


def _rename_view(state: _State, st: p.RenameView) -> None:
    view = state.view(st.view)
    state.check_rename("view", view.schema_path, view.schema_name, view.name, st.new_name, view.view_id)
    ddl.rename_view(state.tx, view, st.new_name)


_HANDLERS: dict[type, Any] = {
    p.CreateSchema: _create_schema, p.DropSchema: _drop_schema, p.CreateTable: _create_table,
    p.DropTable: _drop_table, p.RenameTable: _rename_table, p.AddColumn: _add_column, p.AddColumns: _add_columns,
    p.DropColumn: _drop_column, p.RenameColumn: _rename_column, p.AlterColumnType: _alter_type,
    p.SetNotNull: _set_not_null, p.SetDefault: _set_default, p.SetPartition: _set_partition, p.SetSort: _set_sort,
    p.Comment: _comment, p.CreateView: _create_view, p.DropView: _drop_view, p.RenameView: _rename_view,
}
