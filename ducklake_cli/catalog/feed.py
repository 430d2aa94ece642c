"""Catalog reads for the change feed (spec §9): every data and delete file a table ever had, inlined file deletions
and inlined rows inserted or deleted within a snapshot range."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.models import ColumnInfo, DataFile, DeleteFile, InlinedTable, Snapshot
from ducklake_cli.catalog.queries import as_bool
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.errors import NotFoundError


def table_data_files(reader: MetadataReader, table_id: int, *, upto: int) -> list[DataFile]:
    """Every data file of the table that begins at or before `upto`, live or ended."""
    t = s.data_file_t
    rows = reader.conn.execute(select(t).where(t.c.table_id == table_id, t.c.begin_snapshot <= upto)
                               .order_by(t.c.data_file_id)).all()
    return [
        DataFile(
            data_file_id=r.data_file_id, table_id=r.table_id, begin_snapshot=r.begin_snapshot,
            end_snapshot=r.end_snapshot, path=r.path, path_is_relative=bool(as_bool(r.path_is_relative)),
            file_format=r.file_format, record_count=r.record_count or 0, file_size_bytes=r.file_size_bytes or 0,
            footer_size=r.footer_size, row_id_start=r.row_id_start, partition_id=r.partition_id,
            encryption_key=r.encryption_key, mapping_id=r.mapping_id, partial_max=r.partial_max,
        )
        for r in rows
    ]


def table_delete_files(reader: MetadataReader, table_id: int, *, upto: int) -> list[DeleteFile]:
    """Every delete file of the table that begins at or before `upto`, live or ended."""
    t = s.delete_file_t
    rows = reader.conn.execute(select(t).where(t.c.table_id == table_id, t.c.begin_snapshot <= upto)
                               .order_by(t.c.delete_file_id)).all()
    return [
        DeleteFile(
            delete_file_id=r.delete_file_id, table_id=r.table_id, begin_snapshot=r.begin_snapshot,
            end_snapshot=r.end_snapshot, data_file_id=r.data_file_id, path=r.path,
            path_is_relative=bool(as_bool(r.path_is_relative)), format=r.format, delete_count=r.delete_count or 0,
            file_size_bytes=r.file_size_bytes or 0, footer_size=r.footer_size, encryption_key=r.encryption_key,
            partial_max=r.partial_max,
        )
        for r in rows
    ]


def inlined_file_deletions(reader: MetadataReader, table_id: int, start: int, end: int) -> list[tuple[int, int, int]]:
    """Inlined file deletions committed in [start, end]: `(data file id, position, snapshot)`."""
    name = s.inlined_delete_table_name(table_id)
    if name not in reader.table_names():
        return []
    rows = reader.conn.exec_driver_sql(
        f"SELECT file_id, row_id, begin_snapshot FROM {reader.backend.qualify(name)} "
        f"WHERE begin_snapshot >= {int(start)} AND begin_snapshot <= {int(end)}")
    return [(int(f), int(p), int(b)) for f, p, b in rows]


def inlined_rows_changed(
    reader: MetadataReader, inlined: InlinedTable, columns: Sequence[ColumnInfo], start: int, end: int, *,
    deleted: bool,
) -> list[tuple[Any, ...]]:
    """Rows of an inlined-data table inserted (or, `deleted`, deleted) in [start, end]: `(row_id, snapshot, value
    per column)`, values in storage form."""
    if inlined.table_name not in reader.table_names():
        return []
    names = reader.inlined_column_names(inlined.table_name, columns)
    exprs = ", ".join(reader.backend.inlined_value_sql(reader.backend.quote(n), c)
                      for n, c in zip(names, columns, strict=True))
    marker = "end_snapshot" if deleted else "begin_snapshot"
    sql = (f"SELECT row_id, {marker}{', ' + exprs if exprs else ''} "
           f"FROM {reader.backend.qualify(inlined.table_name)} "
           f"WHERE {marker} >= {int(start)} AND {marker} <= {int(end)} ORDER BY row_id")
    return [tuple(r) for r in reader.conn.exec_driver_sql(sql)]


def first_snapshot_from(reader: MetadataReader, when: dt.datetime) -> Snapshot:
    """The oldest snapshot committed at or after a time (where a change feed starting then begins)."""
    when_utc = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
    sn = s.snapshot_t
    best: tuple[dt.datetime, int] | None = None
    for sid, raw in reader.conn.execute(select(sn.c.snapshot_id, sn.c.snapshot_time)):
        t = reader.backend.decode_timestamp(raw)
        if t is not None and t >= when_utc and (best is None or (t, sid) < best):
            best = (t, sid)
    if best is None:
        raise NotFoundError(f"no snapshot at or after {when_utc.isoformat()}: the lake's history ends earlier",
                            hint="list snapshots and their times with `inspect --snapshots`")
    return reader.snapshot(best[1])
