"""Catalog reads for the change feed (spec §9): every data and delete file a table ever had, inlined file deletions
and inlined rows inserted or deleted within a snapshot range."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.models import ColumnInfo, DataFile, DeleteFile, InlinedTable, Snapshot
from ducklake_cli.catalog.queries import data_file, delete_file
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.errors import NotFoundError


def table_data_files(reader: MetadataReader, table_id: int, *, upto: int) -> list[DataFile]:
    """Every data file of the table that begins at or before `upto`, live or ended."""
    t = s.data_file_t
    rows = reader.conn.execute(select(t).where(t.c.table_id == table_id, t.c.begin_snapshot <= upto)
                               .order_by(t.c.data_file_id)).all()
    return [data_file(r) for r in rows]


def table_delete_files(reader: MetadataReader, table_id: int, *, upto: int) -> list[DeleteFile]:
    """Every delete file of the table that begins at or before `upto`, live or ended."""
    t = s.delete_file_t
    rows = reader.conn.execute(select(t).where(t.c.table_id == table_id, t.c.begin_snapshot <= upto)
                               .order_by(t.c.delete_file_id)).all()
    return [delete_file(r) for r in rows]


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
    row_id, begin, ended = reader.inlined_system(inlined.table_name)
    marker = ended if deleted else begin
    sql = (f"SELECT {row_id}, {marker}{', ' + exprs if exprs else ''} "
           f"FROM {reader.backend.qualify(inlined.table_name)} "
           f"WHERE {marker} >= {int(start)} AND {marker} <= {int(end)} ORDER BY {row_id}")
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
