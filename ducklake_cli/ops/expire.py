"""`maintain expire`: remove old snapshots and every catalog row only they reference, and schedule the files they
alone used for deletion — exactly the rows DuckDB's `ducklake_expire_snapshots` removes (spec §7)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ducklake_cli.catalog import maintenance as m
from ducklake_cli.catalog import options
from ducklake_cli.catalog.maintenance import file_location, table_dirs
from ducklake_cli.catalog.paths import relative_to_root
from ducklake_cli.errors import UsageError
from ducklake_cli.ops.maintenance import FileAction, MaintenanceReport, Plan, option_threshold

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ducklake_cli.catalog.backends import Backend
    from ducklake_cli.lake import Lake


@dataclass(frozen=True)
class ExpireCriteria:
    """Which snapshots to expire: older than a time, all but the newest N, or explicit ids (never the latest).
    `older_than` and `keep_last` combine (both must hold); `snapshot_ids` stands alone."""

    older_than: dt.datetime | None = None
    keep_last: int | None = None
    snapshot_ids: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.snapshot_ids is not None and (self.older_than is not None or self.keep_last is not None):
            raise UsageError("--snapshots cannot be combined with --older-than or --keep-last")
        if self.keep_last is not None and self.keep_last < 1:
            raise UsageError("--keep-last must be at least 1 (the latest snapshot is always kept)")

    @property
    def given(self) -> bool:
        """Any criterion set."""
        return self.older_than is not None or self.keep_last is not None or self.snapshot_ids is not None


@dataclass(frozen=True)
class PlannedFile:
    """A file expiring frees: its id, full path, the path DuckDB schedules (relative to the data path) and size."""

    file_id: int
    full_path: str
    scheduled_path: str
    relative: bool
    size: int


@dataclass(frozen=True)
class Expiry:
    """The effect of expiring a snapshot set, computed inside one transaction."""

    snapshots: m.SnapshotSet
    freed: m.Freed
    files: tuple[PlannedFile, ...]
    tables: tuple[str, ...]


def select_snapshots(times: Sequence[m.SnapshotTime], criteria: ExpireCriteria) -> tuple[list[int], list[str]]:
    """Ids to expire (never the latest) and notes on requested ids that were skipped."""
    if not times:
        return [], []
    ids = [t.snapshot_id for t in times]
    latest = max(ids)
    notes: list[str] = []
    if criteria.snapshot_ids is not None:
        existing = set(ids)
        missing = sorted(set(criteria.snapshot_ids) - existing)
        if missing:
            notes.append(f"snapshot(s) {', '.join(map(str, missing))} do not exist (already expired?)")
        if latest in criteria.snapshot_ids:
            notes.append(f"snapshot {latest} is the latest and is never expired")
        return sorted((set(criteria.snapshot_ids) & existing) - {latest}), notes
    chosen = [t.snapshot_id for t in times if t.snapshot_id != latest
              and (criteria.older_than is None or t.snapshot_time < criteria.older_than)]
    if criteria.keep_last is not None:
        kept = set(sorted(ids)[-criteria.keep_last:])
        chosen = [i for i in chosen if i not in kept]
    return sorted(chosen), notes


def _expiry(conn: Connection, backend: Backend, ids: Sequence[int], existing: Sequence[int],
            data_path: str) -> Expiry:
    snapshots = m.SnapshotSet(tuple(ids), tuple(existing))
    freed = m.freed_files(conn, snapshots) if ids else m.Freed((), ())
    schemas, tables = m.directories(conn)
    dirs = table_dirs(data_path, schemas, tables)
    files = []
    for f in freed.files:
        full = file_location(f, dirs, data_path)
        rel_path, rel = relative_to_root(full, data_path)
        files.append(PlannedFile(f.file_id, full, rel_path, rel, f.size))

    def name(tid: int) -> str:
        row = tables[tid]
        schema = schemas.get(row.parent_id) if row.parent_id is not None else None
        return f"{schema.name if schema else '?'}.{row.name}"

    return Expiry(snapshots, freed, tuple(files), tuple(name(t) for t in freed.table_ids if t in tables))


@dataclass(frozen=True)
class ExpirePlan(Plan):
    """Snapshots to expire and what that frees, as read before confirming."""

    verb: ClassVar[str] = "expire"
    catalog: str
    data_path: str
    snapshot_ids: tuple[int, ...]
    files: tuple[PlannedFile, ...]
    tables: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def report(self) -> MaintenanceReport:
        """The dry-run report."""
        return _report(self.catalog, dry_run=True, ids=self.snapshot_ids, files=self.files, tables=self.tables,
                       notes=self.notes)

    def apply(self, lake: Lake, *, now: dt.datetime | None = None) -> MaintenanceReport:
        """Expire, in one transaction that first blocks concurrent commits, the planned snapshots that still
        exist and are still not the latest."""
        if not self.snapshot_ids:
            return _report(self.catalog, dry_run=False, ids=(), files=(), tables=(), notes=self.notes)
        when = now or dt.datetime.now(dt.UTC)
        with lake.connection(write=True) as conn:
            m.lock_snapshots(conn, lake.backend)
            existing = m.snapshot_ids(conn)
            latest = max(existing)
            ids = sorted((set(self.snapshot_ids) & set(existing)) - {latest})
            exp = _expiry(conn, lake.backend, ids, existing, self.data_path)
            if ids:
                schedule = [(f.file_id, f.scheduled_path, f.relative) for f in exp.files]
                removed = m.expire(conn, lake.backend, expired=exp.snapshots, freed=exp.freed, schedule=schedule,
                                   now=when, v11=lake.v11)
            else:
                removed = {}
        return _report(self.catalog, dry_run=False, ids=tuple(ids), files=exp.files, tables=exp.tables,
                       notes=self.notes, removed=removed)


def _report(catalog: str, *, dry_run: bool, ids: Sequence[int], files: Sequence[PlannedFile],
            tables: Sequence[str], notes: Sequence[str], removed: Mapping[str, int] | None = None) -> MaintenanceReport:
    extra = {"catalog_rows_removed": dict(removed)} if removed is not None else {}
    return MaintenanceReport(
        verb="expire", catalog=catalog, dry_run=dry_run, snapshot_ids=tuple(ids),
        files=tuple(FileAction(f.full_path, "schedule", f.size) for f in files), tables_removed=tuple(tables),
        notes=tuple(notes), extra=extra,
    )


def plan_expire(lake: Lake, criteria: ExpireCriteria | None = None, *, now: dt.datetime | None = None) -> ExpirePlan:
    """Choose the snapshots (criteria, else the catalog option `expire_older_than`, else none) and read what
    expiring them frees. Read-only."""
    criteria = criteria or ExpireCriteria()
    when = now or dt.datetime.now(dt.UTC)
    notes: list[str] = []
    with lake.reader() as r:
        meta = r.metadata()
        data_path = r.data_path
        if not criteria.given:
            older, source = option_threshold(options.effective(meta, "expire_older_than"), now=when)
            if older is None:
                notes.append("nothing selected: give --older-than, --keep-last or --snapshots, or set the catalog "
                             "option expire_older_than")
            else:
                notes.append(f"older than {older.isoformat()} ({source})")
                criteria = ExpireCriteria(older_than=older)
        times = m.snapshot_times(r.conn, lake.backend)
        ids, skipped = select_snapshots(times, criteria) if criteria.given else ([], [])
        notes += skipped
        exp = _expiry(r.conn, lake.backend, ids, [t.snapshot_id for t in times], data_path)
    return ExpirePlan(lake.target.display(), data_path, tuple(ids), exp.files, exp.tables, tuple(notes))
