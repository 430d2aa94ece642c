"""Catalog SQL for expire and cleanup (spec §7): a few set-based statements, as DuckDB's `DeleteSnapshots` runs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, exists, insert, literal, not_, or_, select

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import Backend
from ducklake_cli.catalog.paths import file_path, table_dir
from ducklake_cli.catalog.queries import as_bool, batches
from ducklake_cli.storage.files import ensure_dir

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection

CHUNK = 2000  # ids per IN list: far below every backend's bind-parameter limit
MAX_RANGES = 200  # beyond this many id ranges an IN list is shorter (and SQLite's expression depth stays small)

# Rows keyed by table id that DuckDB removes when every version of a table is gone (a1cb6b21 / 1.5.5 list).
TABLE_KEYED = (
    "ducklake_table", "ducklake_table_stats", "ducklake_table_column_stats", "ducklake_partition_info",
    "ducklake_partition_column", "ducklake_column", "ducklake_column_tag", "ducklake_sort_info",
    "ducklake_sort_expression", "ducklake_schema_versions", "ducklake_inlined_data_tables", "ducklake_column_mapping",
)
FILE_KEYED = ("ducklake_file_column_stats", "ducklake_file_variant_stats", "ducklake_file_partition_value")
VERSIONED_OBJECTS = ("ducklake_schema", "ducklake_view", "ducklake_tag", "ducklake_macro")
VERSIONED_OBJECTS_V11 = ("ducklake_view_column_tag",)  # 1.1 only: the table does not exist on 1.0


@dataclass(frozen=True)
class SnapshotTime:
    """A snapshot id and its commit time (UTC)."""

    snapshot_id: int
    snapshot_time: dt.datetime


@dataclass(frozen=True)
class CatalogFile:
    """A data or delete file row, with the location fields needed to resolve its full path."""

    file_id: int
    table_id: int
    path: str
    path_is_relative: bool
    size: int
    kind: str  # "data" | "delete"


@dataclass(frozen=True)
class DirRow:
    """The path fields of a schema or table row."""

    object_id: int
    parent_id: int | None
    name: str
    path: str | None
    path_is_relative: bool


@dataclass(frozen=True)
class Freed:
    """What expiring a set of snapshots frees: purged table ids and the data/delete files to schedule."""

    table_ids: tuple[int, ...]
    files: tuple[CatalogFile, ...]


@dataclass(frozen=True)
class ScheduledRow:
    """A row of `ducklake_files_scheduled_for_deletion`."""

    file_id: int
    path: str
    path_is_relative: bool
    schedule_start: dt.datetime | None


def _bool(value: Any) -> bool:
    return bool(as_bool(value))


def _chunks(ids: Sequence[int]) -> Iterable[list[int]]:
    for i in range(0, len(ids), CHUNK):
        yield list(ids[i:i + CHUNK])


def snapshot_times(conn: Connection, backend: Backend) -> list[SnapshotTime]:
    """Every snapshot id with its time, oldest first (times compared in Python: SQLite keeps them as text)."""
    sn = s.snapshot_t
    out = []
    for sid, raw in conn.execute(select(sn.c.snapshot_id, sn.c.snapshot_time).order_by(sn.c.snapshot_id)):
        when = backend.decode_timestamp(raw) or dt.datetime.fromtimestamp(0, dt.UTC)
        out.append(SnapshotTime(int(sid), when))
    return out


def snapshot_ids(conn: Connection) -> list[int]:
    """Every snapshot id, ascending."""
    sn = s.snapshot_t
    return [int(r[0]) for r in conn.execute(select(sn.c.snapshot_id).order_by(sn.c.snapshot_id))]


@dataclass(frozen=True)
class SnapshotSet:
    """Snapshot ids chosen among the existing ones; `matches(column)` is their SQL predicate."""

    ids: tuple[int, ...]
    existing: tuple[int, ...]

    def ranges(self) -> list[tuple[int, int]]:
        """Runs of chosen ids, consecutive among the existing ones (ids that no longer exist may lie inside)."""
        chosen = set(self.ids)
        ranges: list[tuple[int, int]] = []
        start: int | None = None
        prev = 0
        for i in sorted(self.existing):
            if i in chosen:
                start = i if start is None else start
                prev = i
            elif start is not None:
                ranges.append((start, prev))
                start = None
        if start is not None:
            ranges.append((start, prev))
        return ranges

    def matches(self, column: Any) -> ColumnElement[bool]:
        """`column` is a chosen id: a few BETWEEN ranges (an IN list when the choice is scattered)."""
        ranges = self.ranges()
        if not ranges:
            return literal(False)
        if len(ranges) > MAX_RANGES:
            return column.in_(sorted(self.ids))
        return or_(*(column == lo if lo == hi else column.between(lo, hi) for lo, hi in ranges))


def _covered(table: Any, expired: SnapshotSet | None) -> ColumnElement[bool]:
    """A snapshot that survives (exists and is not in `expired`) lies in [begin_snapshot, end_snapshot)."""
    sn = s.snapshot_t.alias("surviving")
    conds = [sn.c.snapshot_id >= table.c.begin_snapshot, sn.c.snapshot_id < table.c.end_snapshot]
    if expired is not None:
        conds.append(not_(expired.matches(sn.c.snapshot_id)))
    return exists(select(literal(1)).select_from(sn).where(*conds))


def gone(table: Any, expired: SnapshotSet | None = None) -> ColumnElement[bool]:
    """DuckDB's "gone" row: ended, and no surviving snapshot lies in [begin_snapshot, end_snapshot)."""
    return and_(table.c.end_snapshot.is_not(None), not_(_covered(table, expired)))


def purged_tables(conn: Connection, expired: SnapshotSet | None = None) -> list[int]:
    """Tables all of whose versions are gone."""
    t = s.table_t
    t2 = t.alias("other_version")
    alive = exists(select(literal(1)).select_from(t2).where(
        t2.c.table_id == t.c.table_id,
        or_(t2.c.end_snapshot.is_(None), _covered(t2, expired)),
    ))
    rows = conn.execute(select(t.c.table_id).distinct().where(gone(t, expired), not_(alive)).order_by(t.c.table_id))
    return [int(r[0]) for r in rows]


def freed_files(conn: Connection, expired: SnapshotSet | None = None) -> Freed:
    """Purged tables, and the data files (gone or of purged tables) and delete files (gone, of purged tables or
    of freed data files) that expiring would remove and schedule."""
    tables = purged_tables(conn, expired)
    d, x = s.data_file_t, s.delete_file_t
    data_cond = gone(d, expired)
    if tables:
        data_cond = or_(d.c.table_id.in_(tables), data_cond)
    files = [
        CatalogFile(int(r.data_file_id), int(r.table_id), r.path, _bool(r.path_is_relative),
                    int(r.file_size_bytes or 0), "data")
        for r in conn.execute(select(d.c.data_file_id, d.c.table_id, d.c.path, d.c.path_is_relative,
                                     d.c.file_size_bytes).where(data_cond).order_by(d.c.data_file_id))
    ]
    freed_data = select(d.c.data_file_id).where(data_cond)
    delete_cond = or_(x.c.data_file_id.in_(freed_data), gone(x, expired))
    if tables:
        delete_cond = or_(x.c.table_id.in_(tables), delete_cond)
    files += [
        CatalogFile(int(r.delete_file_id), int(r.table_id), r.path, _bool(r.path_is_relative),
                    int(r.file_size_bytes or 0), "delete")
        for r in conn.execute(select(x.c.delete_file_id, x.c.table_id, x.c.path, x.c.path_is_relative,
                                     x.c.file_size_bytes).where(delete_cond).order_by(x.c.delete_file_id))
    ]
    return Freed(tuple(tables), tuple(files))


def directories(conn: Connection) -> tuple[dict[int, DirRow], dict[int, DirRow]]:
    """Path fields of every schema and table (their newest version: dropped ones included)."""
    sc, t = s.schema_t, s.table_t
    schemas = {
        int(r.schema_id): DirRow(int(r.schema_id), None, r.schema_name, r.path, _bool(r.path_is_relative))
        for r in conn.execute(select(sc.c.schema_id, sc.c.schema_name, sc.c.path, sc.c.path_is_relative)
                              .order_by(sc.c.begin_snapshot))
    }
    tables = {
        int(r.table_id): DirRow(int(r.table_id), int(r.schema_id), r.table_name, r.path, _bool(r.path_is_relative))
        for r in conn.execute(select(t.c.table_id, t.c.schema_id, t.c.table_name, t.c.path, t.c.path_is_relative)
                              .order_by(t.c.begin_snapshot))
    }
    return schemas, tables


def all_files(conn: Connection) -> list[CatalogFile]:
    """Every data and delete file row, at any snapshot."""
    d, x = s.data_file_t, s.delete_file_t
    out = [CatalogFile(int(r[0]), int(r[1]), r[2], _bool(r[3]), int(r[4] or 0), "data") for r in conn.execute(
        select(d.c.data_file_id, d.c.table_id, d.c.path, d.c.path_is_relative, d.c.file_size_bytes))]
    out += [CatalogFile(int(r[0]), int(r[1]), r[2], _bool(r[3]), int(r[4] or 0), "delete") for r in conn.execute(
        select(x.c.delete_file_id, x.c.table_id, x.c.path, x.c.path_is_relative, x.c.file_size_bytes))]
    return out


def file_path_rows(conn: Connection, *, batch: int = 50_000) -> Iterator[Sequence[Any]]:
    """`(table_id, path, path_is_relative)` of every data and delete file row, at any snapshot, as plain tuples
    streamed in batches (a lake may have millions)."""
    for t in (s.data_file_t, s.delete_file_t):
        yield from batches(conn, select(t.c.table_id, t.c.path, t.c.path_is_relative), batch)


def scheduled_files(conn: Connection, backend: Backend) -> list[ScheduledRow]:
    """Every row of `ducklake_files_scheduled_for_deletion`."""
    t = s.scheduled_t
    return [
        ScheduledRow(int(r.data_file_id), r.path, _bool(r.path_is_relative), backend.decode_timestamp(r.schedule_start))
        for r in conn.execute(select(t).order_by(t.c.data_file_id))
    ]


def delete_scheduled(conn: Connection, file_ids: Sequence[int]) -> int:
    """Remove rows of `ducklake_files_scheduled_for_deletion` by id."""
    t = s.scheduled_t
    return sum(int(conn.execute(delete(t).where(t.c.data_file_id.in_(chunk))).rowcount or 0)
               for chunk in _chunks(sorted(set(file_ids))))


def lock_snapshots(conn: Connection, backend: Backend) -> None:
    """Block concurrent commits for the rest of this transaction (no-op where the database serialises writers)."""
    sql = backend.lock_snapshots_sql()
    if sql:
        conn.exec_driver_sql(sql)


def expire(
    conn: Connection,
    backend: Backend,
    *,
    expired: SnapshotSet,
    freed: Freed,
    schedule: Sequence[tuple[int, str, bool]],
    now: dt.datetime,
    v11: bool = False,
) -> dict[str, int]:
    """Remove expired snapshots and every row only they referenced; schedule `(file id, path, relative)` rows.
    `freed` must come from `freed_files(conn, expired)` in this same transaction; `v11`: the catalog is DuckLake 1.1
    (its gone view column comments go too). Returns rows removed per table."""
    removed: dict[str, int] = {}

    def count(name: str, result: Any) -> None:
        removed[name] = removed.get(name, 0) + int(result.rowcount or 0)

    data_ids = sorted(f.file_id for f in freed.files if f.kind == "data")
    delete_ids = sorted(f.file_id for f in freed.files if f.kind == "delete")
    for name in ("ducklake_snapshot", "ducklake_snapshot_changes"):
        t = s.T[name]
        count(name, conn.execute(delete(t).where(expired.matches(t.c.snapshot_id))))
    x = s.delete_file_t
    for chunk in _chunks(delete_ids):
        count(x.name, conn.execute(delete(x).where(x.c.delete_file_id.in_(chunk))))
    for name in (*FILE_KEYED, "ducklake_data_file"):
        t = s.T[name]
        for chunk in _chunks(data_ids):
            count(name, conn.execute(delete(t).where(t.c.data_file_id.in_(chunk))))
    if schedule:
        when = backend.encode_timestamp(now)
        conn.execute(insert(s.scheduled_t), [
            {"data_file_id": fid, "path": path, "path_is_relative": rel, "schedule_start": when}
            for fid, path, rel in schedule
        ])
    drops: list[str] = []
    if freed.table_ids:
        it = s.inlined_tables_t
        drops = [r[0] for r in conn.execute(select(it.c.table_name).where(it.c.table_id.in_(freed.table_ids)))]
        drops += [s.inlined_delete_table_name(tid) for tid in freed.table_ids]
        for name in TABLE_KEYED:
            t = s.T[name]
            count(name, conn.execute(delete(t).where(t.c.table_id.in_(freed.table_ids))))
    for name in (*VERSIONED_OBJECTS, *(VERSIONED_OBJECTS_V11 if v11 else ())):
        t = s.table(name, v11)
        count(name, conn.execute(delete(t).where(gone(t))))
    macro = s.T["ducklake_macro"]
    for name in ("ducklake_macro_impl", "ducklake_macro_parameters"):
        t = s.T[name]
        count(name, conn.execute(delete(t).where(not_(exists(select(literal(1)).select_from(macro).where(
            macro.c.macro_id == t.c.macro_id))))))
    cm, nm = s.column_mapping_t, s.name_mapping_t
    count(nm.name, conn.execute(delete(nm).where(not_(exists(select(literal(1)).select_from(cm).where(
        cm.c.mapping_id == nm.c.mapping_id))))))
    existing = backend.list_tables(conn) if drops else set()
    for name in drops:  # last: DDL commits implicitly on MySQL
        if name in existing:
            conn.exec_driver_sql(f"DROP TABLE {backend.qualify(name)}")
            removed["inlined tables dropped"] = removed.get("inlined tables dropped", 0) + 1
    return {k: v for k, v in removed.items() if v}


def table_dirs(data_path: str, schemas: Mapping[int, DirRow], tables: Mapping[int, DirRow]) -> dict[int, str]:
    """Directory of every table (dropped ones too): data_path → schema → table, as spec §3.4 resolves it."""
    return {tid: table_dir(data_path, schemas.get(row.parent_id) if row.parent_id is not None else None, row)
            for tid, row in tables.items()}


def file_location(f: CatalogFile, dirs: Mapping[int, str], data_path: str) -> str:
    """Full path of a data or delete file row (below the data path when its table's directory is unknown)."""
    return file_path(dirs.get(f.table_id, ensure_dir(data_path)), f)
