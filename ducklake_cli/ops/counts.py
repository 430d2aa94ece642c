"""Live row counts from metadata alone (spec §3.5, §3.7, §4): what `count(*)` returns at a snapshot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ducklake_cli.catalog.models import DataFile, DeleteFile, SchemaInfo, TableInfo
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.storage.files import read_int_column
from ducklake_cli.storage.paths import file_path, table_dir

SNAPSHOT_COLUMN = "_ducklake_internal_snapshot_id"


@dataclass(frozen=True)
class TableCounts:
    """Row and file counts of one table at one snapshot."""

    live_rows: int
    data_files: int
    delete_files: int
    data_bytes: int
    delete_bytes: int
    inlined_rows: int
    deleted_rows: int


def _rows_at(path: str, snapshot_id: int, storage_options: Mapping[str, Any]) -> int:
    """Rows of a multi-snapshot (partial) file whose own snapshot is <= S."""
    return sum(1 for v in read_int_column(path, SNAPSHOT_COLUMN, storage_options) if v <= snapshot_id)


def table_counts(
    reader: MetadataReader,
    *,
    snapshot_id: int,
    data_path: str,
    tables: Sequence[TableInfo],
    schemas: Sequence[SchemaInfo],
    storage_options: Mapping[str, Any] | None = None,
) -> dict[int, TableCounts]:
    """Counts for many tables with one query per file kind; files are read only for partial files newer than S."""
    opts = storage_options or {}
    by_schema = {sc.schema_id: sc for sc in schemas}
    ids = [t.table_id for t in tables]
    data = reader.data_files(snapshot_id, ids)
    deletes = reader.delete_files(snapshot_id, ids)
    files_by_table: dict[int, list[DataFile]] = {}
    for f in data:
        files_by_table.setdefault(f.table_id, []).append(f)
    deletes_by_table: dict[int, list[DeleteFile]] = {}
    for d in deletes:
        deletes_by_table.setdefault(d.table_id, []).append(d)

    out: dict[int, TableCounts] = {}
    for table in tables:
        tdir = table_dir(data_path, by_schema[table.schema_id], table)
        tfiles = files_by_table.get(table.table_id, [])
        live_ids = {f.data_file_id for f in tfiles}
        physical = 0
        for f in tfiles:
            if f.partial_max is not None and f.partial_max > snapshot_id:
                physical += _rows_at(file_path(tdir, f), snapshot_id, opts)
            else:
                physical += f.record_count
        deleted = 0
        tdeletes = [d for d in deletes_by_table.get(table.table_id, []) if d.data_file_id in live_ids]
        for d in tdeletes:
            if d.partial_max is not None and d.partial_max > snapshot_id:
                deleted += _rows_at(file_path(tdir, d), snapshot_id, opts)
            else:
                deleted += d.delete_count
        inlined_deletes = reader.inlined_deletes(snapshot_id, table.table_id)
        deleted += sum(n for fid, n in inlined_deletes.items() if fid in live_ids)
        inlined = sum(reader.inlined_row_count(snapshot_id, it) for it in table.inlined_tables)
        out[table.table_id] = TableCounts(
            live_rows=physical - deleted + inlined,
            data_files=len(tfiles),
            delete_files=len(tdeletes),
            data_bytes=sum(f.file_size_bytes for f in tfiles),
            delete_bytes=sum(d.file_size_bytes for d in tdeletes),
            inlined_rows=inlined,
            deleted_rows=deleted,
        )
    return out
