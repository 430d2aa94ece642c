"""What several ops share about a lake's tables: naming one, picking the ones a maintenance verb works on, the
context it plans against, and how their data files are written (Parquet options, sizes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ducklake_cli.catalog import options
from ducklake_cli.catalog.models import ColumnInfo, LakeMetadata, TableInfo, ViewInfo
from ducklake_cli.catalog.names import pick_entry
from ducklake_cli.errors import UsageError

if TYPE_CHECKING:
    from ducklake_cli.engine.parquet_files import FileSpec, PartitionKey
    from ducklake_cli.lake import Lake, LakeReader

def split_table_name(name: str) -> tuple[str, str]:
    """`schema.table` or `table` (schema main); double-quoted parts may hold dots and `""` quotes."""
    from ducklake_cli.catalog.names import split_qualified

    parts = split_qualified(name.strip())
    if len(parts) == 1 and parts[0]:
        return "main", parts[0]
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1]
    raise UsageError(f"table name {name!r} must be TABLE or SCHEMA.TABLE")


def split_table_path(name: str) -> tuple[tuple[str, ...], str]:
    """`table` (schema main), `schema.table` or `a.b.table` (a DuckLake 1.1 nested schema: the caller refuses it on
    1.0 with `split_table_name`'s words); double-quoted parts may hold dots and `""` quotes."""
    from ducklake_cli.catalog.names import split_qualified

    parts = split_qualified(name.strip())
    if not all(parts):
        raise UsageError(f"table name {name!r} must be TABLE or SCHEMA.TABLE")
    return (tuple(parts[:-1]) or ("main",)), parts[-1]


def view_query_columns(view: ViewInfo, tables: Sequence[TableInfo], *, nested: bool) -> list[str]:
    """The column names a view's query gives, before its column aliases (what 1.1's view column comments are
    stored under): from its select list, a lone `*` over one lake table read as that table's columns; [] when the
    text cannot tell."""
    from ducklake_cli.engine.planning.ddl_render import view_columns, view_reads

    query = view_columns(view.sql or "") or []
    if "*" in query:
        reads = view_reads(view.sql or "")
        source = pick_entry(tables, reads[0], nested=nested) if len(reads) == 1 and query == ["*"] else None
        query = [c.name for c in source.columns] if source is not None else []
    return query


def parse_size(text: str) -> int:
    """A size typed on the command line (`536870912`, `10MB` = 10**7, `512MiB` = 2**29), as `options` reads it."""
    try:
        return options.parse_size(text)
    except ValueError:
        raise UsageError(f"cannot read the size {text!r}", hint="use bytes or a unit: 512MB, 1GiB") from None


def file_spec(lake: Lake, meta: LakeMetadata, *, table_dir: str, columns: Sequence[ColumnInfo],
              keys: tuple[PartitionKey, ...] = (), table_id: int | None = None, schema_id: int | None = None,
              lineage: bool = False, row_ids: bool = False, snapshot_ids: bool = False, subdir: str = "",
              table: str = "") -> FileSpec:
    """How executors write a table's files: Arrow schema with field ids, partition keys and the catalog's Parquet
    options (table scope first). `lineage` adds the embedded row-id and snapshot-id columns of rewritten files,
    `row_ids` only the row-id column (files of updated rows, as DuckDB writes them), `snapshot_ids` only the
    snapshot-id column (merged files whose row ids follow on); `table`: its qualified name, for the executors'
    messages."""
    import pyarrow as pa

    from ducklake_cli.engine.parquet_files import FileSpec
    from ducklake_cli.engine.writer import arrow_field, leaves, lineage_fields

    where = {"table_id": table_id, "schema_id": schema_id}
    # Not applied: parquet_version (pyarrow writes 2.6 footers), parquet_row_group_size_bytes (pyarrow cuts row
    # groups by rows only) and per_thread_output (one writer per Spark task anyway).
    fields = [arrow_field(c) for c in columns] + (lineage_fields() if lineage else lineage_fields()[:1] if row_ids
                                                  else lineage_fields()[1:] if snapshot_ids else [])
    return FileSpec(
        table_dir=table_dir, schema=pa.schema(fields), leaves=leaves(columns),
        keys=keys, table=table,
        compression=options.text(meta, "parquet_compression", **where).lower(),
        compression_level=options.uint(meta, "parquet_compression_level", **where),
        row_group_size=options.count(meta, "parquet_row_group_size", **where),
        target_file_size=options.count(meta, "target_file_size", **where),
        hive=options.flag(meta, "hive_file_pattern", **where), subdir=subdir,
        storage_options=dict(lake.storage_options))


@dataclass(frozen=True)
class MaintenanceContext:
    """What a maintenance verb plans against: the data path, the catalog's metadata, the snapshot it read and the
    catalog's display name."""

    data_path: str
    meta: LakeMetadata
    base_snapshot: int
    catalog: str


def pick_tables(reader: LakeReader, snapshot_id: int, table: str | None, meta: LakeMetadata) -> list[TableInfo]:
    """The tables a maintenance verb works on: the one named, or every table whose auto_compact option is on."""
    tables = reader.tables(snapshot_id)
    if table is None:  # like DuckDB: only tables with auto_compact on (the default) when none is named
        return [t for t in tables if options.flag(meta, "auto_compact", table_id=t.table_id, schema_id=t.schema_id)]
    if len(split_table_path(table)[0]) > 1:  # a DuckLake 1.1 nested schema (refused on 1.0 as before)
        if not reader.v11:
            split_table_name(table)
        return [reader.find_table(snapshot_id, table)]
    schema_name, name = split_table_name(table)
    chosen = [t for t in tables if t.schema_name == schema_name and t.name == name]
    if not chosen:
        return [reader.find_table(snapshot_id, table)]  # raises the usual not-found error with suggestions
    return chosen


def maintenance_context(lake: Lake, reader: LakeReader) -> MaintenanceContext:
    """The context of a maintenance plan, read from one reader."""
    return MaintenanceContext(reader.data_path, reader.metadata(), reader.latest_snapshot().snapshot_id,
                              lake.target.display())
