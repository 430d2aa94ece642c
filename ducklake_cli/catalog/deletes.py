"""Catalog rows of row-level deletes (spec §4, §5.4 DELETE): inlined file deletions (and reading them back for a
flush), delete files (new, or replacing a file's old one), and ended inlined rows. Every function that writes
stages rows on a `Transaction`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import and_, delete, select

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.queries import CHUNK, data_file
from ducklake_cli.catalog.transaction import Transaction
from ducklake_cli.catalog.versions import v11_only
from ducklake_cli.catalog.writes import schedule_for_deletion

if TYPE_CHECKING:
    from ducklake_cli.catalog.models import DataFile
    from ducklake_cli.catalog.reader import MetadataReader


def add_inlined_file_deletes(tx: Transaction, table_id: int, positions: Sequence[tuple[int, int]]) -> None:
    """`(data file id, position)` deletions kept in `ducklake_inlined_delete_<table_id>` (created on demand,
    registered nowhere: readers probe for it)."""
    if not positions:
        return
    name = tx.backend.qualify(s.inlined_delete_table_name(table_id))
    tx.execute_text(f"CREATE TABLE IF NOT EXISTS {name}(file_id BIGINT, row_id BIGINT, begin_snapshot BIGINT)")
    tx.execute_text(f"INSERT INTO {name} (file_id, row_id, begin_snapshot) VALUES (:f, :p, :s)",
                    [{"f": f, "p": p, "s": tx.snapshot_id} for f, p in positions])
    tx.change("inlined_delete", table_id)


def inlined_file_deletions(reader: MetadataReader, table_id: int) -> list[tuple[int, int, int]]:
    """Every inlined file deletion of the table, whatever its snapshot: `(data file id, position, begin
    snapshot)` (the table is created on demand, so probe)."""
    name = s.inlined_delete_table_name(table_id)
    if name not in reader.table_names():
        return []
    rows = reader.conn.exec_driver_sql(f"SELECT file_id, row_id, begin_snapshot FROM {reader.backend.qualify(name)}")
    return [(int(f), int(p), int(b)) for f, p, b in rows]


def clear_inlined_file_deletes(tx: Transaction, table_id: int) -> int:
    """Remove every row of `ducklake_inlined_delete_<table_id>` (flushed into delete files); the table stays, as
    DuckDB's flush leaves it. Returns how many rows went."""
    name = s.inlined_delete_table_name(table_id)
    return int(tx.execute_text(f"DELETE FROM {tx.backend.qualify(name)}").rowcount)


def data_files_by_id(reader: MetadataReader, table_id: int, data_file_ids: Sequence[int]) -> dict[int, DataFile]:
    """The table's data file rows with these ids, live or ended (DuckDB flushes inlined deletions of either)."""
    t = s.data_file_t
    ids = list(data_file_ids)
    out: dict[int, DataFile] = {}
    for i in range(0, len(ids), CHUNK):
        for r in reader.conn.execute(select(t).where(t.c.table_id == table_id,
                                                     t.c.data_file_id.in_(ids[i:i + CHUNK]))):
            out[int(r.data_file_id)] = data_file(r)
    return out


def add_delete_file(tx: Transaction, table_id: int, data_file_id: int, *, path: str, count: int, size: int,
                    footer: int, begin_snapshot: int, partial_max: int | None, fmt: str = "parquet",
                    row_groups: int | None = None) -> int:
    """Register a delete file (path relative to the table directory); `row_groups` (a Parquet file's, None for a
    Puffin one) is recorded only in a 1.1 catalog, whose `row_group_count` column 1.0 does not have."""
    if fmt == "puffin" and not tx.v11 and partial_max is not None:
        raise v11_only("a multi-snapshot Puffin delete file", where="the catalog")
    fid = tx.file_id()
    row = {
        "delete_file_id": fid, "table_id": table_id, "begin_snapshot": begin_snapshot, "end_snapshot": None,
        "data_file_id": data_file_id, "path": path, "path_is_relative": True, "format": fmt,
        "delete_count": count, "file_size_bytes": size, "footer_size": footer, "encryption_key": None,
        "partial_max": partial_max}
    if tx.v11:
        row["row_group_count"] = row_groups if fmt == "parquet" else None
    tx.insert(s.table("ducklake_delete_file", tx.v11), [row])
    return fid


def drop_delete_file(tx: Transaction, table_id: int, delete_file_id: int, root_path: tuple[str, bool]) -> None:
    """A delete file superseded by one holding its positions too: its row goes (the new file answers time travel
    to earlier snapshots from its snapshot column) and the file is scheduled for cleanup (`root_path`: relative
    to the data path, or absolute)."""
    dl = s.delete_file_t
    tx.execute(delete(dl).where(and_(dl.c.table_id == table_id, dl.c.delete_file_id == delete_file_id)))
    schedule_for_deletion(tx, [(delete_file_id, *root_path)])


def end_inlined_rows(tx: Transaction, table_names: Sequence[str], row_ids: Sequence[int]) -> int:
    """End inlined rows (by row id) in this snapshot; returns how many were live."""
    ended = 0
    ids = sorted(set(row_ids))
    for name in table_names:
        row_id, begin, end = tx.reader.inlined_system(name)  # 1.1: `_ducklake_` names (spec versions §3.3)
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ", ".join(f":r{j}" for j in range(len(chunk)))
            params = {f"r{j}": rid for j, rid in enumerate(chunk)} | {"s": tx.snapshot_id}
            ended += int(tx.execute_text(
                f"UPDATE {tx.backend.qualify(name)} SET {end} = :s WHERE {end} IS NULL "
                f"AND {begin} <> :s AND {row_id} IN ({marks})", params).rowcount)
    return ended
