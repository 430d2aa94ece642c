"""`restore`: commit one snapshot in which a table reads exactly as it read at an earlier snapshot N — its files,
delete files, inlined rows, columns, partition and sort specs — leaving every earlier snapshot as it was, so a
restore is itself undone by another restore. No Spark: catalog rows, small delete files and byte copies.

A data file N needs that is no longer live, or that later inlined deletions touch, is registered again as a byte
copy under a new name: a second catalog row naming the same path would let DuckDB's expire + cleanup delete a
file the restored snapshot still reads (established by experiment with DuckDB 1.5.5). A live file whose deletes
changed since N gets a new delete file holding exactly its positions deleted at N (and, for a compacted or flushed
file, the positions of rows inserted after N).
"""

from __future__ import annotations

import datetime as dt
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ducklake_cli.catalog import restore as cr
from ducklake_cli.catalog.options import require_message
from ducklake_cli.catalog.paths import file_path, new_data_file_name, table_dir, uuid7
from ducklake_cli.catalog.types import SNAPSHOT_ID_COLUMN
from ducklake_cli.errors import CommitConflictError, DuckLakeError, NotFoundError, StorageError, UsageError
from ducklake_cli.ops.maintenance import FileAction, MaintenanceReport, Plan
from ducklake_cli.ops.results import Section

if TYPE_CHECKING:
    from ducklake_cli.catalog.models import DataFile, DeleteFile, TableInfo
    from ducklake_cli.catalog.transaction import Transaction
    from ducklake_cli.lake import Lake, LakeReader


@dataclass(frozen=True)
class Copy:
    """A data file N reads that comes back as a byte copy (new name, new id, same row ids), with the positions
    its new delete file holds (deleted at N, or inserted after N into a compacted file)."""

    source: DataFile
    path: str  # full path of the source
    positions: tuple[int, ...]


@dataclass(frozen=True)
class Redelete:
    """A live data file whose deletes changed since N: its delete file ends and (unless none) a new one holds
    exactly the positions N does not read."""

    data: DataFile
    path: str
    end_delete: DeleteFile | None
    positions: tuple[int, ...]


@dataclass(frozen=True)
class RestoreReport(MaintenanceReport):
    """What restoring does (`dry_run`) or did; `extra` carries the restore's own fields."""

    def is_empty(self) -> bool:
        """Nothing to change: the table already reads as at the snapshot."""
        return not self.files and not self.extra.get("inlined_rows_restored") and not self.extra.get(
            "inlined_rows_ended") and not self.extra.get("schema_changes")

    def headline(self) -> str:
        """One line for people."""
        e = self.extra
        target = f"{e['table']} to snapshot {e['to_snapshot']}"
        if self.is_empty():
            return f"restore: {e['table']} already reads as at snapshot {e['to_snapshot']}"
        parts = []
        copies = [f for f in self.files if f.action == "copy"]
        if copies:
            parts.append(f"re-add {len(copies)} file(s) as copies ({sum(f.bytes or 0 for f in copies):,} bytes)")
        for action, what in (("end", "file(s)"), ("end-delete", "delete file(s)"),
                             ("write-delete", "new delete file(s)")):
            n = sum(1 for f in self.files if f.action == action)
            if n:
                parts.append(f"{action.replace('-delete', '')} {n} {what}")
        if e.get("inlined_rows_restored"):
            parts.append(f"re-insert {e['inlined_rows_restored']} inlined row(s)")
        if e.get("inlined_rows_ended"):
            parts.append(f"end {e['inlined_rows_ended']} inlined row(s)")
        if e.get("schema_changes"):
            parts.append(f"{len(e['schema_changes'])} definition change(s)")
        rows = f" ({e['rows_before']:,} → {e['rows_after']:,} rows)"
        if self.dry_run:
            return f"restore: would restore {target}{rows}: " + ", ".join(parts)
        return f"restore: {target} as snapshot {e.get('snapshot_id')}{rows}: " + ", ".join(parts)

    def question(self) -> str:
        """The confirmation question."""
        return self.headline().replace("would restore", "restore") + " — go ahead?"

    def to_json(self) -> Any:
        """`{verb, catalog, dry_run, table, from_snapshot, to_snapshot, snapshot_id, rows_before, rows_after,
        inlined_rows_restored, inlined_rows_ended, schema_changes, files[{path, action, bytes, reason}],
        bytes_copied, notes}`."""
        out: dict[str, Any] = {"verb": "restore", "catalog": self.catalog, "dry_run": self.dry_run}
        out.update(self.extra)
        out["files"] = [{"path": f.path, "action": f.action, "bytes": f.bytes, "reason": f.reason}
                        for f in self.files]
        out["bytes_copied"] = sum(f.bytes or 0 for f in self.files if f.action == "copy")
        out["notes"] = list(self.notes)
        return out

    def sections(self) -> list[Section]:
        """Summary, definition changes and files (the files table is what `--format csv` prints)."""
        e = self.extra
        out = [Section(f"restore: {'Plan' if self.dry_run else 'Done'}",
                       ("table", "from snapshot", "to snapshot", "new snapshot", "rows before", "rows after",
                        "inlined rows restored", "inlined rows ended"),
                       ((e["table"], e["from_snapshot"], e["to_snapshot"], e.get("snapshot_id"), e["rows_before"],
                         e["rows_after"], e.get("inlined_rows_restored", 0), e.get("inlined_rows_ended", 0)),),
                       csv=False)]
        if e.get("schema_changes"):
            out.append(Section("Definition changes", ("change",), tuple((c,) for c in e["schema_changes"]),
                               csv=False))
        out.append(Section("Files", ("action", "path", "bytes", "reason"),
                           tuple((f.action, f.path, f.bytes, f.reason) for f in self.files)))
        if self.notes:
            out.append(Section("Notes", ("note",), tuple((n,) for n in self.notes), csv=False))
        return out


@dataclass(frozen=True)
class RestorePlan(Plan):
    """Everything restoring the table to snapshot `target` changes, read at snapshot `latest`."""

    verb: ClassVar[str] = "restore"
    catalog: str
    table: TableInfo  # at the latest snapshot
    then: TableInfo  # at the target snapshot
    table_dir: str
    target: int
    latest: int
    copies: tuple[Copy, ...] = ()
    redeletes: tuple[Redelete, ...] = ()
    ended: tuple[tuple[DataFile, str], ...] = ()  # live files N does not read, with their full paths
    inlined: tuple[cr.InlinedChange, ...] = ()
    definition: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    selector: tuple[int | None, dt.datetime | None] = field(default=(None, None))
    message: str | None = None
    author: str | None = None
    rows: tuple[int, int] = (0, 0)  # rows the table reads now, and at the target snapshot

    def _report(self, *, dry_run: bool, snapshot_id: int | None = None,
                written: dict[int, str] | None = None) -> RestoreReport:
        files = [FileAction(c.path, "copy", c.source.file_size_bytes,
                            f"{c.source.record_count} row(s); {len(c.positions)} deleted at snapshot {self.target}"
                            if c.positions else f"{c.source.record_count} row(s)") for c in self.copies]
        files += [FileAction(p, "end", f.file_size_bytes, f"{f.record_count} row(s), not read at snapshot "
                             f"{self.target}") for f, p in self.ended]
        for r in self.redeletes:
            if r.end_delete is not None:
                files.append(FileAction(file_path(self.table_dir, r.end_delete), "end-delete",
                                        r.end_delete.file_size_bytes, f"deletes of {posixpath.basename(r.path)}"))
            if r.positions:
                where = (written or {}).get(r.data.data_file_id, r.path)
                files.append(FileAction(where, "write-delete", None,
                                        f"{len(r.positions)} position(s) of {posixpath.basename(r.path)}"))
        extra = {"table": self.table.qualified_name, "from_snapshot": self.latest, "to_snapshot": self.target,
                 "snapshot_id": snapshot_id, "rows_before": self.rows[0], "rows_after": self.rows[1],
                 "inlined_rows_restored": sum(i.to_readd for i in self.inlined),
                 "inlined_rows_ended": sum(i.to_end for i in self.inlined), "schema_changes": list(self.definition)}
        return RestoreReport("restore", self.catalog, dry_run, files=tuple(files), notes=self.notes, extra=extra)

    def report(self) -> RestoreReport:
        """The dry-run report."""
        return self._report(dry_run=True)

    def is_empty(self) -> bool:
        """The table already reads as at the target snapshot."""
        return self.report().is_empty()

    def question(self) -> str:
        """The confirmation question."""
        return self.report().question()

    def apply(self, lake: Lake) -> RestoreReport:
        """Plan again (the lake must not have moved since), copy and write the files, then commit one snapshot;
        files written for a commit that fails are removed."""
        fresh = plan_restore(lake, self.table.qualified_name, snapshot_id=self.selector[0], as_of=self.selector[1],
                             message=self.message, author=self.author)
        if fresh.latest != self.latest:
            with lake.reader() as r:
                _refuse_changed(cr.changes_to_table(r.conn, self.table, self.latest), self.table)
        written: list[str] = []
        try:
            staged = fresh._write_files(lake, written)
            snapshot = lake.commit(lambda tx: fresh._stage(tx, staged), author=self.author, message=self.message)
        except BaseException:
            from ducklake_cli.storage.listing import delete_files

            delete_files(written, lake.storage_options)
            raise
        paths = {fid: self.table_dir + rel for fid, (rel, *_) in staged.deletes.items()}
        return fresh._report(dry_run=False, snapshot_id=snapshot, written=paths)

    def _write_files(self, lake: Lake, written: list[str]) -> _Staged:
        """Copy the files that come back and write the new delete files (their data files' full paths inside)."""
        from ducklake_cli.engine.delete_files import write_parquet_delete

        opts = dict(lake.storage_options)
        staged = _Staged()
        for c in self.copies:
            rel_dir = posixpath.dirname(c.source.path) if c.source.path_is_relative else ""
            rel = f"{rel_dir}/{_copy_name(c.source.path)}" if rel_dir else _copy_name(c.source.path)
            _copy_file(c.path, self.table_dir + rel, opts)
            written.append(self.table_dir + rel)
            staged.copies[c.source.data_file_id] = rel
            if c.positions:
                out = write_parquet_delete(self.table_dir, self.table_dir + rel, list(c.positions), None, opts)
                written.append(self.table_dir + out[0])
                staged.copy_deletes[c.source.data_file_id] = (*out, len(c.positions))
        for r in self.redeletes:
            if r.positions:
                out = write_parquet_delete(self.table_dir, r.path, list(r.positions), None, opts)
                written.append(self.table_dir + out[0])
                staged.deletes[r.data.data_file_id] = (*out, len(r.positions))
        return staged

    def _stage(self, tx: Transaction, staged: _Staged) -> None:
        from ducklake_cli.catalog.deletes import add_delete_file
        from ducklake_cli.catalog.writes import end_data_files

        if tx.latest.snapshot_id != self.latest:
            _refuse_changed(cr.changes_to_table(tx.conn, self.table, self.latest), self.table)
        tid = self.table.table_id
        if self.ended:
            end_data_files(tx, tid, [f.data_file_id for f, _ in self.ended])
            tx.change("deleted_from_table", tid)
        cr.end_delete_files(tx, tid, [r.end_delete.delete_file_id for r in self.redeletes if r.end_delete])
        for c in self.copies:
            new_id = cr.copy_data_file(tx, c.source, path=staged.copies[c.source.data_file_id],
                                       path_is_relative=True)
            if c.source.data_file_id in staged.copy_deletes:
                rel, size, footer, groups, count = staged.copy_deletes[c.source.data_file_id]
                add_delete_file(tx, tid, new_id, path=rel, count=count, size=size, footer=footer,
                                begin_snapshot=tx.snapshot_id, partial_max=None, row_groups=groups)
        for fid, (rel, size, footer, groups, count) in staged.deletes.items():
            add_delete_file(tx, tid, fid, path=rel, count=count, size=size, footer=footer,
                            begin_snapshot=tx.snapshot_id, partial_max=None, row_groups=groups)
            tx.change("deleted_from_table", tid)
        for change in self.inlined:
            cr.restore_inlined(tx, tid, change, self.target)
        if self.definition:
            cr.restore_definition(tx, self.table, self.then, inline=cr.inlines(tx.backend, self.table))
        cr.add_table_stats(tx, tid, records=sum(c.source.record_count for c in self.copies)
                           + sum(i.to_readd for i in self.inlined),
                           file_bytes=sum(c.source.file_size_bytes for c in self.copies))


def _refuse_inlined_deletions(table: TableInfo, inl_deletes: Sequence[tuple[int, int, int]],
                              touched: set[int]) -> None:
    """Refuse to end, copy or re-delete a data file that has inlined deletions: a later flush (DuckDB 1.5.5's, or
    ours, which writes what DuckDB's does) would write them to a delete file beginning at their old snapshot,
    overlapping the one restore ended, and older snapshots would read wrongly. Flushed first, they are in the
    delete file restore handles."""
    hit = {fid for fid, _, _ in inl_deletes} & touched
    if hit:
        raise DuckLakeError(f"cannot restore {table.qualified_name} yet: {len(hit)} data file(s) restore would "
                            "change have inlined deletions (a later flush would corrupt older snapshots); "
                            "nothing changed",
                            hint=f"flush them first (`ducklake maintain flush CATALOG --table {table.qualified_name}"
                                 "`, or DuckDB's `CALL ducklake_flush_inlined_data('<lake>')`), then restore again")


def _refuse_changed(kinds: Sequence[str], table: TableInfo) -> None:
    """Another writer changed the table since the plan: its plan no longer holds (other tables do not matter)."""
    if kinds:
        raise CommitConflictError(f"another writer changed {table.qualified_name} since the plan "
                                  f"({', '.join(k.replace('_', ' ') for k in kinds)}); nothing was changed",
                                  hint="run restore again")


@dataclass
class _Staged:
    """Files written before the commit: copies (source id → relative path) and new delete files (data file id →
    relative path, size, footer size, row groups, positions)."""

    copies: dict[int, str] = field(default_factory=dict)
    copy_deletes: dict[int, tuple[str, int, int, int, int]] = field(default_factory=dict)
    deletes: dict[int, tuple[str, int, int, int, int]] = field(default_factory=dict)


def _copy_name(path: str) -> str:
    """A fresh name for a copy: DuckLake's own form, or (for a registered file) its name with a UUID added, so
    readers that tell DuckLake-written files by name still read its footer."""
    base = posixpath.basename(path)
    if base.startswith("ducklake-"):
        return new_data_file_name()
    stem = base[:-len(".parquet")] if base.endswith(".parquet") else base
    return f"{stem}-{uuid7()}.parquet"


def _copy_file(src: str, dst: str, opts: dict[str, Any]) -> None:
    """Copy a file (server-side within one object store)."""
    from ducklake_cli.storage.files import filesystem, split_protocol

    fs = filesystem(dst, opts)
    if split_protocol(src)[0] == split_protocol(dst)[0]:
        if split_protocol(dst)[0] == "file":
            fs.makedirs(posixpath.dirname(dst), exist_ok=True)
        fs.copy(src, dst)
        return
    with filesystem(src, opts).open(src, "rb") as r, fs.open(dst, "wb") as w:
        while chunk := r.read(1 << 24):
            w.write(chunk)


def _delete_rows(path: str, fmt: str | None, opts: dict[str, Any]) -> list[tuple[int, int | None]]:
    """`(position, snapshot or None)` of every position in a delete file."""
    if (fmt or "parquet") == "puffin":
        from ducklake_cli.storage.deletion_vector import read_deletion_vectors

        return read_deletion_vectors(path, opts).first_deleted()  # a 1.1 container tags each with its blob's snapshot
    from ducklake_cli.engine.delete_files import parquet_delete_batches

    rows: list[tuple[int, int | None]] = []
    for pos, snaps in parquet_delete_batches(path, opts):
        p = pos.to_pylist()
        rows += zip(p, snaps.to_pylist() if snaps is not None else [None] * len(p), strict=True)
    return rows


def _inserted_after(path: str, target: int, opts: dict[str, Any]) -> set[int]:
    """Positions of a compacted or flushed file's rows whose embedded inserting snapshot is after `target`."""
    import pyarrow.parquet as pq

    from ducklake_cli.storage.files import filesystem

    try:
        with filesystem(path, opts).open(path, "rb") as fh:
            snaps = pq.read_table(fh, columns=[SNAPSHOT_ID_COLUMN]).column(0).to_pylist()
    except (OSError, KeyError) as exc:
        raise StorageError(f"cannot read the snapshot column of {path}: {exc}") from exc
    return {i for i, v in enumerate(snaps) if v is not None and v > target}


def _resolve(reader: LakeReader, snapshot_id: int | None, as_of: dt.datetime | None) -> int:
    """The target snapshot id; an expired one (or a time whose snapshot may have been expired) is refused."""
    from ducklake_cli.catalog.maintenance import snapshot_ids

    existing = snapshot_ids(reader.conn)
    if snapshot_id is not None:
        if snapshot_id not in existing:
            gone = existing and 0 <= snapshot_id < max(existing)  # a negative id never existed
            raise NotFoundError(f"snapshot {snapshot_id} does not exist" + (
                ": it was expired, so the files it read may already be deleted; nothing changed" if gone else ""),
                hint=f"snapshots {min(existing)}–{max(existing)} exist; `ducklake inspect CATALOG --snapshots` "
                     "lists them" if existing else None)
        return snapshot_id
    assert as_of is not None
    found = reader.snapshot_at(as_of).snapshot_id
    later = [i for i in existing if i > found]
    if later and min(later) != found + 1:
        raise NotFoundError(f"the state at {as_of.isoformat()} is unknown: snapshot(s) {found + 1}–{min(later) - 1} "
                            "after it were expired; nothing changed",
                            hint=f"restore to an existing snapshot id with --to-snapshot (e.g. {found})")
    return found


def plan_restore(lake: Lake, table: str, *, snapshot_id: int | None = None, as_of: dt.datetime | None = None,
                 message: str | None = None, author: str | None = None) -> RestorePlan:
    """Read what restoring `table` to a snapshot (an id, or the newest at a time) changes. Read-only; refuses an
    expired snapshot, a table missing now or then, and files N needs that are gone from storage."""
    from ducklake_cli.storage.listing import file_sizes

    if (snapshot_id is None) == (as_of is None):
        raise UsageError("say which snapshot to restore to: --to-snapshot N or --as-of TIME")
    opts = dict(lake.storage_options)
    with lake.reader() as r:
        require_message(r.metadata(), message)
        latest = r.latest_snapshot().snapshot_id
        target = _resolve(r, snapshot_id, as_of)
        now = r.find_table(latest, table)
        found = r.tables(target, table_ids=[now.table_id])
        if not found:
            same_name = any(x.qualified_name == now.qualified_name for x in r.tables(target))
            raise NotFoundError(f"table {now.qualified_name} did not exist at snapshot {target}; nothing changed",
                                hint="the table of that name then was dropped since; this one was created at "
                                     f"snapshot {now.begin_snapshot}" if same_name
                                else f"it was created (or last renamed) at snapshot {now.begin_snapshot}")
        then = found[0]
        schema = next(sc for sc in r.schemas(latest) if sc.schema_id == now.schema_id)
        tdir = table_dir(r.data_path, schema, now)
        at_n = cr.file_states(r, now.table_id, target)
        at_l = cr.file_states(r, now.table_id, latest)
        inl_deletes = cr.inlined_file_deletes(r, now.table_id)
        inlined = cr.inlined_changes(r, now, target)
        inlined_rows = (sum(r.inlined_row_count(latest, i) for i in now.inlined_tables),
                        sum(r.inlined_row_count(target, i) for i in now.inlined_tables))
        definition = cr.definition_differences(now, then)
    needed = {file_path(tdir, st.data): st.data.data_file_id for st in at_n.values()}
    needed |= {file_path(tdir, st.delete): st.data.data_file_id for st in at_n.values() if st.delete}
    sizes = file_sizes(list(needed), opts)
    missing = sorted(p for p, size in sizes.items() if size is None)
    if missing:
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        raise StorageError(
            f"cannot restore {now.qualified_name} to snapshot {target}: {len(missing)} file(s) it reads are gone "
            f"from storage: {', '.join(missing[:5])}{more}; nothing changed",
            hint="they were probably deleted by a cleanup after expiring snapshots; restore a later snapshot")
    if any(st.data.encryption_key or (st.delete and st.delete.encryption_key) for st in at_n.values()):
        raise DuckLakeError(f"{now.qualified_name} has encrypted files: restore does not write encrypted delete "
                            "files; nothing changed")
    copies, redeletes, rows_then = _file_plan(at_n, at_l, inl_deletes, target, tdir, opts)
    gone_now = dict.fromkeys(at_l, 0)
    for fid, _, _ in inl_deletes:
        if fid in gone_now:
            gone_now[fid] += 1
    rows_now = sum(st.data.record_count - (st.delete.delete_count if st.delete else 0) - gone_now[fid]
                   for fid, st in at_l.items())
    copied = {c.source.data_file_id for c in copies}
    ended = tuple((st.data, file_path(tdir, st.data)) for fid, st in sorted(at_l.items())
                  if fid not in at_n or fid in copied)
    _refuse_inlined_deletions(now, inl_deletes, copied | {r.data.data_file_id for r in redeletes}
                              | {f.data_file_id for f, _ in ended})
    return RestorePlan(lake.target.display(), now, then, tdir, target, latest, copies=tuple(copies),
                       redeletes=tuple(redeletes), ended=ended, inlined=tuple(inlined), definition=tuple(definition),
                       rows=(rows_now + inlined_rows[0], rows_then + inlined_rows[1]),
                       selector=(snapshot_id, as_of), message=message, author=author)


def _read_all(at_n: dict[int, cr.FileState], target: int, tdir: str,
              opts: dict[str, Any]) -> dict[int, tuple[list[tuple[int, int | None]], set[int]]]:
    """Per data file N reads: its delete file's `(position, snapshot)` rows and, for a compacted or flushed file
    holding rows inserted after N, their positions (small reads, in parallel: object-store round trips)."""
    from concurrent.futures import ThreadPoolExecutor

    from ducklake_cli.storage.listing import WORKERS

    def one(st: cr.FileState) -> tuple[list[tuple[int, int | None]], set[int]]:
        f = st.data
        rows = _delete_rows(file_path(tdir, st.delete), st.delete.format, opts) if st.delete else []
        later = f.partial_max is not None and f.partial_max > target
        return rows, _inserted_after(file_path(tdir, f), target, opts) if later else set()

    todo = sorted(at_n.items())
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return dict(zip([fid for fid, _ in todo], pool.map(one, [st for _, st in todo]), strict=True))


def _file_plan(at_n: dict[int, cr.FileState], at_l: dict[int, cr.FileState],
               inl_deletes: Sequence[tuple[int, int, int]], target: int, tdir: str,
               opts: dict[str, Any]) -> tuple[list[Copy], list[Redelete], int]:
    """Per data file N reads: untouched (same deletes now), a new delete file (live, deletes changed), or a
    copy (no longer live, or inlined deletions since N that no delete file can take back); and the rows the files
    give at N."""
    inline_upto: dict[int, set[int]] = {}
    later_inline: set[int] = set()
    for fid, pos, begin in inl_deletes:
        if begin <= target:
            inline_upto.setdefault(fid, set()).add(pos)
        else:
            later_inline.add(fid)
    copies: list[Copy] = []
    redeletes: list[Redelete] = []
    reads = _read_all(at_n, target, tdir, opts)
    count = 0
    for fid, st in sorted(at_n.items()):
        f, path = st.data, file_path(tdir, st.data)
        rows, hidden = reads[fid]
        deleted = {p for p, snap in rows if snap is None or snap <= target}
        count += f.record_count - len(deleted | hidden | inline_upto.get(fid, set()))
        later_in_file = any(snap is not None and snap > target for _, snap in rows)
        live = at_l.get(fid)
        if live is not None and fid not in later_inline:
            same_delete = (live.delete.delete_file_id if live.delete else None) == \
                (st.delete.delete_file_id if st.delete else None)
            if same_delete and not later_in_file and not hidden:
                continue
            if live.delete is None and not deleted and not hidden:
                continue
            redeletes.append(Redelete(f, path, live.delete, tuple(sorted(deleted | hidden))))
        else:
            copies.append(Copy(f, path, tuple(sorted(deleted | hidden | inline_upto.get(fid, set())))))
    return copies, redeletes, count
