"""Catalog rows of DDL (spec §5.3, §5.4): schemas, tables, views, partition and sort specs, comments — each as
DuckDB 1.5.5 writes them for the same statement (facts established by experiment; see the tests' twin lakes).

Every function stages rows on the open `Transaction`; nothing here commits. Column changes live in
catalog/columns.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from sqlalchemy import and_, select, update

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.changes import quote_name
from ducklake_cli.catalog.columns import table_altered
from ducklake_cli.catalog.models import PartitionField, PartitionSpec, SchemaInfo, SortKey, TableInfo, ViewInfo
from ducklake_cli.catalog.names import shown_path
from ducklake_cli.catalog.partitions import refuse_epoch
from ducklake_cli.catalog.paths import uuid7
from ducklake_cli.catalog.transaction import Transaction

if TYPE_CHECKING:
    from sqlalchemy import Table

COMMENT_KEY = "comment"


def _end_live(tx: Transaction, table: Table, *where: object) -> int:
    """End the live rows matching `where` at this snapshot."""
    return int(tx.execute(update(table).where(and_(*where, table.c.end_snapshot.is_(None)))  # type: ignore[arg-type]
                          .values(end_snapshot=tx.snapshot_id)).rowcount)


def create_schema(tx: Transaction, parent: SchemaInfo, name: str) -> SchemaInfo:
    """A schema nested in `parent` (DuckLake 1.1): its directory `<schema_uuid>/` relative to the data path (spec
    versions §3.4), recorded as `created_schema` of its full name."""
    sid, uuid = tx.catalog_id(), uuid7()
    parts = (*parent.qualified_parts, name)
    schema = SchemaInfo(schema_id=sid, schema_uuid=uuid, name=name, path=f"{uuid}/", path_is_relative=True,
                        begin_snapshot=tx.snapshot_id, parent_schema_id=parent.schema_id, parts=parts,
                        full_name=shown_path(parts, quote=True))
    tx.insert(s.table("ducklake_schema", True), [{
        "schema_id": sid, "schema_uuid": uuid, "begin_snapshot": tx.snapshot_id, "end_snapshot": None,
        "schema_name": name, "path": schema.path, "path_is_relative": True, "parent_schema_id": parent.schema_id}])
    tx.change("created_schema", quote_name(*parts))
    tx.schema_changed = True
    return schema


def drop_schema(tx: Transaction, schema: SchemaInfo) -> None:
    """End an (emptied) schema."""
    _end_live(tx, s.schema_t, s.schema_t.c.schema_id == schema.schema_id)
    tx.schema_changed = True
    tx.change("dropped_schema", schema.schema_id)


def drop_table(tx: Transaction, table: TableInfo) -> None:
    """End a table with its columns, specs, comments, data and delete files (rows stay for time travel; DuckDB
    leaves its inlined rows and stats as they are)."""
    tid = table.table_id
    for t in (s.table_t, s.column_t, s.partition_info_t, s.sort_info_t, s.column_tag_t, s.data_file_t,
              s.delete_file_t):
        _end_live(tx, t, t.c.table_id == tid)
    _end_live(tx, s.tag_t, s.tag_t.c.object_id == tid)
    tx.schema_changed = True
    tx.change("dropped_table", tid)


def rename_table(tx: Transaction, table: TableInfo, new_name: str, *, inline: bool) -> TableInfo:
    """A new row for the table under its new name (same id, uuid and directory): DuckDB records it as
    `created_table` of the new name, with a new schema version of the table."""
    _end_live(tx, s.table_t, s.table_t.c.table_id == table.table_id)
    tx.insert(s.table_t, [{"table_id": table.table_id, "table_uuid": table.table_uuid,
                           "begin_snapshot": tx.snapshot_id, "end_snapshot": None, "schema_id": table.schema_id,
                           "table_name": new_name, "path": table.path, "path_is_relative": table.path_is_relative}])
    tx.schema_changed = True
    renamed = replace(table, name=new_name)
    table_altered(tx, renamed, new_inlined=inline, altered=False)
    tx.change("created_table", quote_name(*table.schema_path, new_name))
    return renamed


def set_partition(tx: Transaction, table: TableInfo, fields: Sequence[tuple[int, str]], *,
                  inline: bool) -> TableInfo:
    """SET PARTITIONED BY (`fields`) / RESET PARTITIONED BY (none): a new spec id (an empty spec on reset) and a
    new table version; the keys the table already has (none, for a reset of a table never or no longer
    partitioned) change nothing, as in DuckDB (no snapshot)."""
    current = [(f.column_id, f.transform) for f in table.partition.fields] if table.partition else []
    if current == list(fields):
        return table
    refuse_epoch([tr for _, tr in fields], v11=tx.v11, where="the catalog")  # never a 1.1 transform into 1.0
    _end_live(tx, s.partition_info_t, s.partition_info_t.c.table_id == table.table_id)
    pid = tx.catalog_id()
    tx.insert(s.partition_info_t, [{"partition_id": pid, "table_id": table.table_id,
                                    "begin_snapshot": tx.snapshot_id, "end_snapshot": None}])
    tx.insert(s.partition_column_t, [{"partition_id": pid, "table_id": table.table_id, "partition_key_index": i,
                                      "column_id": cid, "transform": transform}
                                     for i, (cid, transform) in enumerate(fields)])
    spec = PartitionSpec(pid, tuple(PartitionField(i, cid, tr) for i, (cid, tr) in enumerate(fields))) \
        if fields else None
    table = replace(table, partition=spec)
    table_altered(tx, table, new_inlined=inline)
    return table


def set_sort(tx: Transaction, table: TableInfo, keys: Sequence[SortKey]) -> TableInfo:
    """SET SORTED BY (`keys`, DuckDB expression text) / RESET SORTED BY (none): the table is altered every time,
    even to the keys it has or with none to reset (DuckDB writes a snapshot for each)."""
    _end_live(tx, s.sort_info_t, s.sort_info_t.c.table_id == table.table_id)
    if keys:
        sid = tx.catalog_id()
        tx.insert(s.sort_info_t, [{"sort_id": sid, "table_id": table.table_id, "begin_snapshot": tx.snapshot_id,
                                   "end_snapshot": None}])
        tx.insert(s.sort_expression_t, [{"sort_id": sid, "table_id": table.table_id, "sort_key_index": i,
                                         "expression": k.expression, "dialect": "duckdb",
                                         "sort_direction": k.direction, "null_order": k.null_order}
                                        for i, k in enumerate(keys)])
    table_altered(tx, table, versioned=False, new_inlined=False)
    return replace(table, sort_keys=tuple(keys))


def _set_tag(tx: Transaction, table: Table, match: Sequence[object], row: dict[str, object], key: str,
             value: str | None) -> None:
    _end_live(tx, table, *match, table.c.key == key)
    tx.insert(table, [{**row, "begin_snapshot": tx.snapshot_id, "end_snapshot": None, "key": key,
                       "value": value}])


def comment_table(tx: Transaction, table: TableInfo, text: str | None) -> None:
    """COMMENT ON TABLE (NULL clears it: DuckDB writes a new tag row with a NULL value)."""
    t = s.tag_t
    _set_tag(tx, t, [t.c.object_id == table.table_id], {"object_id": table.table_id}, COMMENT_KEY, text)
    table_altered(tx, table, versioned=False, new_inlined=False)


def comment_column(tx: Transaction, table: TableInfo, column_id: int, text: str | None) -> None:
    """COMMENT ON COLUMN."""
    t = s.column_tag_t
    _set_tag(tx, t, [t.c.table_id == table.table_id, t.c.column_id == column_id],
             {"table_id": table.table_id, "column_id": column_id}, COMMENT_KEY, text)
    table_altered(tx, table, versioned=False, new_inlined=False)


def comment_view(tx: Transaction, view: ViewInfo, text: str | None) -> None:
    """COMMENT ON VIEW: a tag on the view id, recorded as `altered_view`."""
    t = s.tag_t
    _set_tag(tx, t, [t.c.object_id == view.view_id], {"object_id": view.view_id}, COMMENT_KEY, text)
    tx.schema_changed = True
    tx.change("altered_view", view.view_id)


def create_view(tx: Transaction, schema: SchemaInfo, name: str, sql: str, aliases: Sequence[str]) -> int:
    """A new view (DuckDB's SQL text; aliases as DuckDB lists them: `"x","y"`, or '' for none)."""
    vid = tx.catalog_id()
    tx.insert(s.view_t, [{"view_id": vid, "view_uuid": uuid7(), "begin_snapshot": tx.snapshot_id,
                          "end_snapshot": None, "schema_id": schema.schema_id, "view_name": name,
                          "dialect": "duckdb", "sql": sql,
                          "column_aliases": ",".join(quote_name(a) for a in aliases)}])
    tx.schema_changed = True
    tx.change("created_view", quote_name(*schema.qualified_parts, name))
    return vid


def drop_view(tx: Transaction, view: ViewInfo) -> None:
    """End a view and its comments (on 1.1 its column comments too)."""
    _end_live(tx, s.view_t, s.view_t.c.view_id == view.view_id)
    _end_live(tx, s.tag_t, s.tag_t.c.object_id == view.view_id)
    if tx.v11:  # the table does not exist on 1.0
        _end_live(tx, s.view_column_tag_t, s.view_column_tag_t.c.view_id == view.view_id)
    tx.schema_changed = True
    tx.change("dropped_view", view.view_id)


def rename_view(tx: Transaction, view: ViewInfo, new_name: str) -> None:
    """A new row for the view under its new name (same id and uuid), recorded as `created_view` of it; on 1.1 its
    column comments are written again in the same snapshot, as DuckDB re-emits them."""
    _end_live(tx, s.view_t, s.view_t.c.view_id == view.view_id)
    tx.insert(s.view_t, [{"view_id": view.view_id, "view_uuid": view.view_uuid, "begin_snapshot": tx.snapshot_id,
                          "end_snapshot": None, "schema_id": view.schema_id, "view_name": new_name,
                          "dialect": view.dialect, "sql": view.sql, "column_aliases": view.column_aliases}])
    if tx.v11 and view.column_tags:  # the live comments (a removed one, NULL, is not written again)
        t = s.view_column_tag_t
        _end_live(tx, t, t.c.view_id == view.view_id)
        again = [{"view_id": view.view_id, "column_name": name, "begin_snapshot": tx.snapshot_id, "end_snapshot": None,
                  "key": key, "value": value} for name, key, value in view.column_tags if value is not None]
        if again:
            tx.insert(t, again)
    tx.schema_changed = True
    tx.change("created_view", quote_name(*view.schema_path, new_name))


def comment_view_column(tx: Transaction, view: ViewInfo, column_name: str, text: str | None) -> None:
    """COMMENT ON COLUMN of a view (DuckLake 1.1's `ducklake_view_column_tag`): the live row of the column's
    comment ends, a new one (NULL: removed) begins; `column_name` is the view query's own name for the column."""
    t = s.view_column_tag_t
    _set_tag(tx, t, [t.c.view_id == view.view_id, t.c.column_name == column_name],
             {"view_id": view.view_id, "column_name": column_name}, COMMENT_KEY, text)
    tx.schema_changed = True  # as COMMENT ON VIEW: an ALTER of the view entry
    tx.change("altered_view", view.view_id)


def column_created_with_table(tx: Transaction, table_name: str, column_name: str) -> bool:
    """DuckDB 1.5.5's `IsColumnCreatedWithTable`, as it asks it: whether a live column row of this name began with
    a row of a table of this name (any schema, any snapshot). SET DEFAULT takes only a constant otherwise."""
    t, c = s.table_t, s.column_t
    query = (select(c.c.column_id).select_from(t.join(c, c.c.table_id == t.c.table_id))
             .where(c.c.column_name == column_name, t.c.table_name == table_name,
                    c.c.begin_snapshot == t.c.begin_snapshot, c.c.end_snapshot.is_(None)).limit(1))
    return tx.execute(query).first() is not None

