"""Live row counts from metadata alone (spec §3.5, §3.7, §4): what `count(*)` returns at a snapshot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ducklake_cli.catalog.models import SchemaInfo, TableInfo
from ducklake_cli.catalog.paths import table_dir
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.catalog.types import SNAPSHOT_ID_COLUMN
from ducklake_cli.errors import StorageError
from ducklake_cli.storage.files import filesystem, read_int_column


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
    return sum(1 for v in read_int_column(path, SNAPSHOT_ID_COLUMN, storage_options) if v <= snapshot_id)


def _deleted_at(path: str, snapshot_id: int, storage_options: Mapping[str, Any]) -> int:
    """Positions of a delete file written after S that count at S: all of them, unless each carries a snapshot."""
    import pyarrow.parquet as pq

    if path.endswith(".puffin"):  # a 1.1 multi-snapshot container: its blob as of S
        from ducklake_cli.storage.deletion_vector import read_deletion_vector

        return len(read_deletion_vector(path, storage_options, snapshot=snapshot_id))
    try:
        with filesystem(path, storage_options).open(path, "rb") as fh:
            pf = pq.ParquetFile(fh)
            if SNAPSHOT_ID_COLUMN not in pf.schema_arrow.names:
                return int(pf.metadata.num_rows)
            values = pf.read(columns=[SNAPSHOT_ID_COLUMN]).column(0).to_pylist()
    except (OSError, KeyError, ValueError) as exc:
        raise StorageError(f"cannot read delete file {path}: {exc}") from exc
    return sum(1 for v in values if v is not None and v <= snapshot_id)


def table_counts(
    reader: MetadataReader,
    *,
    snapshot_id: int,
    data_path: str,
    tables: Sequence[TableInfo],
    schemas: Sequence[SchemaInfo],
    storage_options: Mapping[str, Any] | None = None,
) -> dict[int, TableCounts]:
    """Counts for many tables from grouped queries; files are read only for partial files newer than S."""
    opts = storage_options or {}
    by_schema = {sc.schema_id: sc for sc in schemas}
    totals = reader.file_totals(snapshot_id, [t.table_id for t in tables])
    out: dict[int, TableCounts] = {}
    for table in tables:
        tot = totals[table.table_id]
        tdir = table_dir(data_path, by_schema[table.schema_id], table)

        def full(path: str, relative: bool, tdir: str = tdir) -> str:
            return tdir + path if relative else path

        physical = tot.records + sum(_rows_at(full(p, rel), snapshot_id, opts) for p, rel in tot.partial_data)
        deleted = tot.deleted + sum(_deleted_at(full(p, rel), snapshot_id, opts) for p, rel in tot.partial_deletes)
        inlined = sum(reader.inlined_row_count(snapshot_id, it) for it in table.inlined_tables)
        out[table.table_id] = TableCounts(
            live_rows=physical - deleted + inlined, data_files=tot.data_files, delete_files=tot.delete_files,
            data_bytes=tot.data_bytes, delete_bytes=tot.delete_bytes, inlined_rows=inlined, deleted_rows=deleted,
        )
    return out
