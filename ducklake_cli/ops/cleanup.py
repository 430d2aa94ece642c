"""`maintain cleanup` (delete files scheduled for deletion, then their rows) and `maintain orphans` (delete DuckLake
files under the data path that no catalog row references), as DuckDB's `ducklake_cleanup_old_files` and
`ducklake_delete_orphaned_files` do (spec §7) — but never a file outside the data path, a link, the catalog file,
or a file any catalog row still references."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ducklake_cli.catalog import maintenance as m
from ducklake_cli.catalog import options
from ducklake_cli.catalog.maintenance import table_dirs
from ducklake_cli.catalog.queries import as_bool
from ducklake_cli.ops.maintenance import FileAction, MaintenanceReport, Plan, option_threshold
from ducklake_cli.storage.files import ensure_dir, split_protocol
from ducklake_cli.storage.listing import (
    PathGuard,
    complete,
    delete_files,
    file_sizes,
    iter_files,
    listed_time,
    path_key,
    spell,
)

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ducklake_cli.catalog.models import LakeMetadata
    from ducklake_cli.lake import Lake

# DuckDB 1.5.5 only ever deletes `.parquet` orphans; Puffin deletion vectors are DuckLake files too (COMPATIBILITY.md).
ORPHAN_SUFFIXES = (".parquet", ".puffin")


@dataclass(frozen=True)
class Age:
    """An age threshold: files older than `before` qualify (None = every file, `--all`)."""

    before: dt.datetime | None
    source: str


def resolve_age(meta: LakeMetadata, *, older_than: dt.datetime | None, all_files: bool,
                now: dt.datetime) -> Age:
    """`--all`, else `--older-than`, else option `delete_older_than`, else 2 days (DuckDB's defaults)."""
    if all_files:
        return Age(None, "--all")
    if older_than is not None:
        return Age(older_than, f"older than {older_than.isoformat()}")
    before, source = option_threshold(options.effective(meta, "delete_older_than"), now=now)
    return Age(before, f"older than {before.isoformat() if before else '?'} ({source})")


def referenced_paths(conn: Connection, data_path: str) -> set[str]:
    """Path keys of every data and delete file any catalog row names, at any snapshot (rows streamed as tuples;
    a relative path is joined to its table directory's key once computed per table)."""
    schemas, tables = m.directories(conn)
    full = table_dirs(data_path, schemas, tables)
    dirs = {tid: path_key(d) for tid, d in full.items()}
    root = path_key(ensure_dir(data_path))
    flags: dict[Any, bool] = {}
    out: set[str] = set()
    add = out.add
    for rows in m.file_path_rows(conn):
        for tid, path, raw in rows:
            relative = flags.get(raw)
            if relative is None:
                relative = flags[raw] = bool(as_bool(raw))
            if not relative:
                add(path_key(path))
            elif path.startswith("/") or "//" in path:  # the joined key would differ from directory key + path
                add(path_key(full.get(int(tid), ensure_dir(data_path)) + path))
            else:
                add(dirs.get(int(tid), root) + path)
    return out


def _protected(lake: Lake) -> list[str]:
    path = lake.target.path
    return [str(path), f"{path}.wal"] if path is not None else []


def _scheduled_location(row: m.ScheduledRow, data_path: str) -> str:
    return ensure_dir(data_path) + row.path if row.path_is_relative else row.path


# ----- cleanup ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CleanupPlan(Plan):
    """Scheduled files due for deletion, and those left alone with the reason."""

    verb: ClassVar[str] = "cleanup"
    catalog: str
    data_path: str
    due: tuple[tuple[int, str, int | None], ...]  # (scheduled id, full path, size or None when already gone)
    skipped: tuple[FileAction, ...]
    notes: tuple[str, ...]

    def report(self) -> MaintenanceReport:
        """The dry-run report."""
        files = [FileAction(p, "delete", size, None if size is not None else "already gone") for _, p, size in
                 self.due]
        return MaintenanceReport("cleanup", self.catalog, True, files=(*files, *self.skipped), notes=self.notes)

    def is_empty(self) -> bool:
        """Nothing due (a row whose file is already gone still counts: its row goes)."""
        return not self.due

    def apply(self, lake: Lake) -> MaintenanceReport:
        """Delete the due files that are still scheduled and unreferenced, then their rows."""
        with lake.reader() as r:
            still = {row.file_id for row in m.scheduled_files(r.conn, lake.backend)}
            known = referenced_paths(r.conn, self.data_path)
        due = [(fid, p, size) for fid, p, size in self.due if fid in still and path_key(p) not in known]
        errors = delete_files([p for _, p, size in due if size is not None], lake.storage_options)
        done = [(fid, p, size) for fid, p, size in due if not errors.get(p)]
        if done:
            with lake.connection(write=True) as conn:
                m.delete_scheduled(conn, [fid for fid, _, _ in done])
        files = [FileAction(p, "delete", size, None if size is not None else "already gone; row removed")
                 for _, p, size in done]
        files += [FileAction(p, "skip", size, f"delete failed: {errors[p]}") for _, p, size in due if errors.get(p)]
        return MaintenanceReport("cleanup", self.catalog, False, files=(*files, *self.skipped), notes=self.notes)


def plan_cleanup(lake: Lake, *, older_than: dt.datetime | None = None, all_files: bool = False,
                 now: dt.datetime | None = None) -> CleanupPlan:
    """Files on `ducklake_files_scheduled_for_deletion` scheduled before the threshold. Read-only."""
    when = now or dt.datetime.now(dt.UTC)
    with lake.reader() as r:
        meta = r.metadata()
        data_path = r.data_path
        age = resolve_age(meta, older_than=older_than, all_files=all_files, now=when)
        rows = m.scheduled_files(r.conn, lake.backend)
        known = referenced_paths(r.conn, data_path) if rows else set()
    candidates: list[tuple[int, str]] = []
    skipped: list[FileAction] = []
    young = 0
    guard = PathGuard(data_path, _protected(lake))
    for row in rows:
        if age.before is not None and (row.schedule_start is None or row.schedule_start >= age.before):
            young += 1
            continue
        full = _scheduled_location(row, data_path)
        reason = guard.reason(full)
        if reason is None and path_key(full) in known:
            reason = "still referenced by a catalog row"
        if reason:
            skipped.append(FileAction(full, "skip", None, reason))
        else:
            candidates.append((row.file_id, full))
    sizes = file_sizes([p for _, p in candidates], lake.storage_options)
    notes = [age.source]
    if young:
        notes.append(f"{young} scheduled file(s) are not old enough yet")
    return CleanupPlan(lake.target.display(), data_path, tuple((fid, p, sizes[p]) for fid, p in candidates),
                       tuple(skipped), tuple(notes))


# ----- orphans ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OrphansPlan(Plan):
    """DuckLake files under the data path that no catalog row references and that are past the grace period."""

    verb: ClassVar[str] = "orphans"
    catalog: str
    data_path: str
    orphans: tuple[tuple[str, int], ...]  # (full path, size)
    notes: tuple[str, ...]

    def report(self) -> MaintenanceReport:
        """The dry-run report."""
        return MaintenanceReport("orphans", self.catalog, True,
                                 files=tuple(FileAction(p, "delete", size) for p, size in self.orphans),
                                 notes=self.notes)

    def apply(self, lake: Lake) -> MaintenanceReport:
        """Re-read the catalog (a writer may have registered a file since), then delete what is still orphaned."""
        with lake.reader() as r:
            known = referenced_paths(r.conn, self.data_path) | {
                path_key(_scheduled_location(row, self.data_path)) for row in m.scheduled_files(r.conn, lake.backend)}
        todo = [(p, size) for p, size in self.orphans if path_key(p) not in known]
        errors = delete_files([p for p, _ in todo], lake.storage_options)
        files = [FileAction(p, "skip", size, f"delete failed: {errors[p]}") if errors.get(p)
                 else FileAction(p, "delete", size) for p, size in todo]
        files += [FileAction(p, "skip", size, "registered in the catalog since the plan") for p, size in self.orphans
                  if path_key(p) in known]
        return MaintenanceReport("orphans", self.catalog, False, files=tuple(files), notes=self.notes)


def plan_orphans(lake: Lake, *, older_than: dt.datetime | None = None, all_files: bool = False,
                 now: dt.datetime | None = None, suffixes: Sequence[str] = ORPHAN_SUFFIXES) -> OrphansPlan:
    """List the data path by prefix, in parallel, and keep DuckLake files (`.parquet`, `.puffin`) that no data
    file, delete file or scheduled row names and that are older than the grace period. Read-only."""
    when = now or dt.datetime.now(dt.UTC)
    with lake.reader() as r:
        meta = r.metadata()
        data_path = r.data_path
        age = resolve_age(meta, older_than=older_than, all_files=all_files, now=when)
        known = referenced_paths(r.conn, data_path) | {
            path_key(_scheduled_location(row, data_path)) for row in m.scheduled_files(r.conn, lake.backend)}
    guard = PathGuard(data_path, _protected(lake))
    ends = tuple(suffixes)
    local = split_protocol(data_path)[0] == "file"
    orphans: list[tuple[str, int]] = []
    listed = young = other = 0
    # Catalog membership first: path-safety work (real paths, once per directory) only for what it keeps.
    for batch in iter_files(data_path, lake.storage_options, sizes=False):  # sizes: stat'ed below, candidates only
        listed += len(batch)
        for item in batch:
            key = item[0]
            if not key.endswith(ends):
                other += 1
            elif key in known:
                if guard.key_reason(key, local=local, regular=True):
                    other += 1
            else:
                full = complete(item)
                if full is None:  # gone since it was listed: as if never listed
                    listed -= 1
                    continue
                _, size, modified = full
                path = spell(data_path, key)
                if guard.reason(path):
                    other += 1
                    continue
                stamp = listed_time(modified)
                if age.before is not None and (stamp is None or stamp >= age.before):
                    young += 1
                else:
                    orphans.append((path, size))
    orphans.sort()
    notes = [age.source, f"{listed} file(s) listed under {data_path}"]
    if young:
        notes.append(f"{young} unreferenced file(s) are younger than the grace period (maybe still being written)")
    if other:
        notes.append(f"{other} file(s) are not DuckLake data or delete files and are never touched")
    return OrphansPlan(lake.target.display(), data_path, tuple(orphans), tuple(notes))
