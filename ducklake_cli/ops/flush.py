"""`maintain flush`: move inlined rows and inlined file deletions from the catalog into Parquet files (DuckDB's
`ducklake_flush_inlined_data`), in one snapshot for every table flushed, as DuckDB commits it.

Rows keep their row ids and inserting snapshots (embedded columns; the file's `begin_snapshot`/`partial_max` span
them, `row_id_start` is the smallest row id), rows already deleted become a 3-column delete file (positions tagged
with their end snapshots; `partial_max` NULL, as DuckDB leaves it), the flushed rows leave the inlined table (change
`inline_flush`), and after the commit empty inlined tables of superseded schema versions are dropped.

Inlined deletions of a data file's rows become one 3-column delete file per data file, each position tagged with
the snapshot that deleted it (`begin_snapshot`/`partial_max` = their smallest and largest); a live delete file of
that data file is merged in (its untagged positions take its `begin_snapshot`) and replaced (its row deleted, the
file scheduled for cleanup), and `ducklake_inlined_delete_<T>` is emptied (change `deleted_from_table`).
Established against DuckDB 1.5.5 on twin lakes. The rows come out of the catalog through this process, so the
files are written here with the same writers Spark executors use.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import (
    ColumnInfo,
    DataFile,
    DeleteFile,
    InlinedTable,
    NewDataFile,
    SchemaInfo,
    TableInfo,
)
from ducklake_cli.catalog.paths import file_path, relative_to_root, table_dir
from ducklake_cli.engine.writer import partition_keys, sort_arrow
from ducklake_cli.errors import CommitConflictError, DuckLakeError
from ducklake_cli.ops.maintenance import FileAction, MaintenanceReport, Plan
from ducklake_cli.ops.tables import MaintenanceContext, file_spec, maintenance_context, pick_tables

if TYPE_CHECKING:
    from ducklake_cli.catalog.transaction import Transaction
    from ducklake_cli.lake import Lake, LakeReader


_REPLACED = "replaced by a delete file holding its positions and the flushed ones"


@dataclass(frozen=True)
class InlinedBatch:
    """The rows of one inlined-data table to flush."""

    table: TableInfo
    schema: SchemaInfo
    inlined: InlinedTable
    columns: tuple[ColumnInfo, ...]  # as at the inlined table's schema version
    rows: int
    deleted: int


@dataclass(frozen=True)
class FileDeletions:
    """The inlined deletions of one data file, and the live delete file they are merged with (if any)."""

    data: DataFile
    path: str  # the data file, resolved: what the delete file's `file_path` column holds
    positions: tuple[tuple[int, int], ...]  # (position, snapshot that deleted it), by position
    old: DeleteFile | None


@dataclass(frozen=True)
class DeletionBatch:
    """A table's inlined file deletions to flush: one delete file per data file still in the catalog."""

    table: TableInfo
    table_dir: str
    files: tuple[FileDeletions, ...]
    rows: int  # rows of `ducklake_inlined_delete_<T>`, all of which the flush removes


@dataclass(frozen=True)
class FlushReport(MaintenanceReport):
    """What flushing does (`dry_run`) or did; `extra` carries the flush's own counts."""

    def is_empty(self) -> bool:
        """No inlined row and no inlined deletion to flush."""
        return not self.extra.get("rows_flushed") and not self.extra.get("deletions_flushed")

    def headline(self) -> str:
        """One line for people."""
        verb = "would" if self.dry_run else "did"
        e = self.extra
        parts = [f"{e.get('rows_flushed', 0)} inlined row(s) into Parquet"] if e.get("rows_flushed") or not \
            e.get("deletions_flushed") else []
        if e.get("deletions_flushed"):
            parts.append(f"{e['deletions_flushed']} inlined deletion(s) of {e['deletion_files']} data file(s) "
                         "into delete files")
        line = f"flush: {verb} move " + " and ".join(parts)
        if self.files_scheduled:
            line += f", schedule {self.files_scheduled} replaced delete file(s) for deletion"
        return line


class FlushPlan(Plan):
    """Inlined-data tables with rows to move into Parquet, and tables with inlined file deletions."""

    verb = "flush"

    def __init__(self, ctx: MaintenanceContext, batches: Sequence[InlinedBatch],
                 deletions: Sequence[DeletionBatch] = (), *, inlined_tables: bool = False) -> None:
        self.ctx = ctx
        self.inlined_tables = inlined_tables  # a table flushed has inlined-data tables: superseded ones may go
        self.batches = sorted(batches, key=lambda b: b.table.table_id)  # DuckDB numbers files in table order
        self.deletions = sorted(deletions, key=lambda d: d.table.table_id)

    def _extra(self, files: int | None) -> dict[str, Any]:
        names = {f"{b.schema.name}.{b.table.name}" for b in self.batches}
        names |= {d.table.qualified_name for d in self.deletions}
        out: dict[str, Any] = {"rows_flushed": sum(b.rows for b in self.batches), "tables": sorted(names),
                               "deletions_flushed": sum(len(f.positions) for d in self.deletions for f in d.files),
                               "deletion_files": sum(len(d.files) for d in self.deletions)}
        if files is not None:
            out["files_written"] = files
        return out

    def report(self) -> FlushReport:
        """The dry-run report: which inlined tables, how many rows; which tables, how many inlined deletions."""
        notes = [f"{b.schema.name}.{b.table.name}: {b.rows} row(s) from {b.inlined.table_name}"
                 + (f" ({b.deleted} already deleted)" if b.deleted else "") for b in self.batches]
        for d in self.deletions:
            merged = sum(f.old is not None for f in d.files)
            notes.append(f"{d.table.qualified_name}: {sum(len(f.positions) for f in d.files)} inlined deletion(s) "
                         f"of {len(d.files)} data file(s) into delete files"
                         + (f" ({merged} merged with the file's delete file, which is replaced)" if merged else ""))
        replaced = tuple(FileAction(file_path(d.table_dir, f.old), "schedule", f.old.file_size_bytes,
                                    _REPLACED) for d in self.deletions for f in d.files if f.old is not None)
        return FlushReport("flush", self.ctx.catalog, True, files=replaced, notes=tuple(notes),
                           extra=self._extra(None))

    def is_empty(self) -> bool:
        """No inlined rows and no inlined deletions."""
        return not self.batches and not self.deletions

    def question(self) -> str:
        """The confirmation question."""
        return self.report().headline().replace("would ", "") + " — go ahead?"

    def _puffin(self, lake: Lake, d: DeletionBatch) -> bool:
        """DuckLake 1.1 with `write_deletion_vectors`: inlined deletions flush into Puffin files, as DuckDB 2.0's
        flush does; Parquet otherwise (1.0: always)."""
        from ducklake_cli.catalog import options as lake_options

        return lake.v11 and lake_options.flag(self.ctx.meta, "write_deletion_vectors", table_id=d.table.table_id,
                                              schema_id=d.table.schema_id)

    def apply(self, lake: Lake) -> FlushReport:
        """Write the files, then commit one snapshot; files written for a commit that fails are removed."""
        written: list[str] = []
        try:
            flushed = [f for b in self.batches for f in self._write(lake, b, written)]
            deletes = [w for d in self.deletions for w in _write_deletions(lake, d, written, self._puffin(lake, d))]
            build = functools.partial(self._commit, flushed=flushed, deletes=deletes)
            snapshot = lake.commit(build)
        except BaseException:
            from ducklake_cli.storage.listing import delete_files

            delete_files(written, lake.storage_options)
            raise
        if self.inlined_tables:  # after the commit, as DuckDB does: empty inlined tables of old schema versions
            from ducklake_cli.catalog.inlined import drop_empty_superseded

            with lake.connection(write=True) as conn:
                drop_empty_superseded(conn, lake.backend)
        actions: list[FileAction] = []
        for w in flushed:
            tdir = table_dir(self.ctx.data_path, w.batch.schema, w.batch.table)
            actions.append(FileAction(tdir + w.file.path, "write", w.file.file_size_bytes,
                                      f"{w.file.record_count} rows"))
            if w.delete is not None:
                actions.append(FileAction(tdir + w.delete[0], "write", w.delete[1],
                                          f"{len(w.deleted)} flushed row(s) already deleted"))
        for x in deletes:
            actions.append(FileAction(x.batch.table_dir + x.path, "write", x.size,
                                      f"{x.count} deleted position(s) of {posixpath.basename(x.file.path)}"))
            if x.file.old is not None:
                actions.append(FileAction(file_path(x.batch.table_dir, x.file.old), "schedule",
                                          x.file.old.file_size_bytes, _REPLACED))
        return FlushReport("flush", self.ctx.catalog, False, files=tuple(actions),
                           notes=(f"committed snapshot {snapshot}",),
                           extra=self._extra(sum(a.action == "write" for a in actions)))

    def _write(self, lake: Lake, b: InlinedBatch, written: list[str]) -> list[_Flushed]:
        """Files for one inlined table, each with its rows' snapshot span and the `(position, end_snapshot)` of
        rows already deleted."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from ducklake_cli.catalog.inlined import decode_inlined
        from ducklake_cli.catalog.types import ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN
        from ducklake_cli.engine.delete_files import write_parquet_delete
        from ducklake_cli.engine.parquet_files import file_from_json, write_batches
        from ducklake_cli.storage.files import filesystem

        with lake.reader() as r:
            rows = r.inlined_rows_upto(self.ctx.base_snapshot, b.inlined, b.columns)
        # An updated row keeps its row id: its versions differ by begin snapshot (each ends on its own).
        ends: dict[tuple[int, int], list[Any]] = {}
        for row in rows:
            ends.setdefault((int(row[0]), int(row[1])), []).append(row[2])
        data = decode_inlined([(row[0], *row[3:]) for row in rows], b.columns, exact=True)
        table = pa.table([*[data.column(f"c{c.column_id}") for c in b.columns], data.column("row_id"),
                          pa.array([int(row[1]) for row in rows], pa.int64())],
                         names=[*[c.name for c in b.columns], ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN])
        table = sort_arrow(table, b.table.sort_keys, f"table {b.schema.name}.{b.table.name}")  # DuckDB: always
        tdir = table_dir(self.ctx.data_path, b.schema, b.table)
        partition = [(f.column_id, f.transform) for f in b.table.partition.fields] if b.table.partition else []
        live_ids = {c.column_id for c in b.columns}
        keys = partition_keys(b.columns, partition) if all(cid in live_ids for cid, _ in partition) else ()
        spec = file_spec(lake, self.ctx.meta, table_dir=tdir, columns=b.columns, keys=keys, lineage=True,
                         table_id=b.table.table_id, schema_id=b.schema.schema_id,
                         table=f"{b.schema.name}.{b.table.name}")
        files = [file_from_json(x.as_py()) for out in write_batches(iter(table.to_batches()), spec)
                 for x in out.column(0)] if table.num_rows else []
        written += [tdir + f.path for f in files]
        out = []
        for f in files:
            with filesystem(tdir + f.path, lake.storage_options).open(tdir + f.path, "rb") as fh:
                back = pq.read_table(fh, columns=[ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN])
            ids, snaps = back.column(0).to_pylist(), back.column(1).to_pylist()
            versions = [ends[(rid, snap)].pop(0) for rid, snap in zip(ids, snaps, strict=True)]
            gone = [(pos, int(end)) for pos, end in enumerate(versions) if end is not None]
            delete = None
            if gone:  # rows already deleted: a delete file tagging each with the snapshot that ended it
                delete = write_parquet_delete(tdir, tdir + f.path, [p for p, _ in gone], [e for _, e in gone],
                                              dict(lake.storage_options))
                written.append(tdir + delete[0])
            out.append(_Flushed(b, f, min(snaps), max(snaps), tuple(gone), min(ids), delete))
        return out

    def _check(self, tx: Transaction) -> None:
        """Spec §5.5 against what others committed since the plan: a table they dropped, inline-deleted from or
        flushed; for inlined deletions also one they compacted, or whose delete files of these data files they
        replaced."""
        if tx.latest.snapshot_id == self.ctx.base_snapshot:
            return
        other = tx.changes_since(self.ctx.base_snapshot)
        with_deletions = {d.table.table_id: d for d in self.deletions}
        for tid in sorted({b.table.table_id for b in self.batches} | set(with_deletions)):
            keys = ["tables_dropped", "inlined_delete", "flushed_inlined"]
            if tid in with_deletions:
                keys += ["merge_adjacent", "rewrite_delete"]
            for key in keys:
                if str(tid) in other.get(key, set()):
                    raise CommitConflictError(f"another writer changed table {tid} meanwhile "
                                              f"({key.replace('_', ' ')}); nothing was changed",
                                              hint="run the command again")
            if tid in with_deletions and str(tid) in other.get("tables_deleted_from", set()):
                now = _live_deletes(tx.reader.delete_files(tx.latest.snapshot_id, [tid]))
                for f in with_deletions[tid].files:
                    if (now[f.data.data_file_id].delete_file_id if f.data.data_file_id in now else None) != \
                            (f.old.delete_file_id if f.old else None):
                        raise CommitConflictError(f"another writer deleted from the same data files of table {tid} "
                                                  "meanwhile; nothing was changed", hint="run the command again")

    def _commit(self, tx: Transaction, *, flushed: Sequence[_Flushed], deletes: Sequence[_DeleteWritten]) -> None:
        """Ids as DuckDB assigns them: the flushed data files, then the delete files of inlined deletions, then
        those of flushed rows already deleted."""
        from ducklake_cli.catalog.deletes import add_delete_file, clear_inlined_file_deletes, drop_delete_file
        from ducklake_cli.catalog.inlined import set_flushed_row_id_start
        from ducklake_cli.catalog.writes import TableWrite, add_table_file_bytes, delete_inlined_rows

        self._check(tx)
        ids = [TableWrite(tx, w.batch.table).add_files([w.file], lineage=(w.first, w.last),
                                                      change="inline_flush")[0] for w in flushed]
        for w, fid in zip(flushed, ids, strict=True):
            set_flushed_row_id_start(tx, w.batch.table.table_id, fid, w.first_row_id)
        for x in deletes:
            tid = x.batch.table.table_id
            if x.file.old is not None:
                drop_delete_file(tx, tid, x.file.old.delete_file_id,
                                 relative_to_root(file_path(x.batch.table_dir, x.file.old), self.ctx.data_path))
            add_delete_file(tx, tid, x.file.data.data_file_id, path=x.path, count=x.count, size=x.size,
                            footer=x.footer, begin_snapshot=x.begin, partial_max=x.end, fmt=x.fmt,
                            row_groups=x.row_groups)
        for d in self.deletions:
            clear_inlined_file_deletes(tx, d.table.table_id)
            tx.change("deleted_from_table", d.table.table_id)
        for w, fid in zip(flushed, ids, strict=True):
            if w.delete is not None:
                rel, size, footer, groups = w.delete
                # DuckDB leaves partial_max NULL here; readers take each position's snapshot from the file
                add_delete_file(tx, w.batch.table.table_id, fid, path=rel, count=len(w.deleted), size=size,
                                footer=footer, begin_snapshot=min(s for _, s in w.deleted), partial_max=None,
                                row_groups=groups)
        for b in self.batches:
            delete_inlined_rows(tx, b.inlined.table_name, self.ctx.base_snapshot)
            tx.change("inline_flush", b.table.table_id)
        for tid in sorted({b.table.table_id for b in self.batches}):
            add_table_file_bytes(tx, tid, sum(w.file.file_size_bytes for w in flushed
                                              if w.batch.table.table_id == tid))


@dataclass(frozen=True)
class _Flushed:
    batch: InlinedBatch
    file: NewDataFile
    first: int  # smallest inserting snapshot of its rows
    last: int
    deleted: tuple[tuple[int, int], ...]
    first_row_id: int  # DuckDB records it as the file's row_id_start
    delete: tuple[str, int, int, int] | None  # rows already deleted: (path, size, footer size, row groups)


@dataclass(frozen=True)
class _DeleteWritten:
    """A delete file written for one data file's inlined deletions (merged with its old delete file)."""

    batch: DeletionBatch
    file: FileDeletions
    path: str  # relative to the table directory
    size: int
    footer: int
    count: int
    begin: int  # smallest snapshot among its positions
    end: int  # largest
    fmt: str  # parquet, or puffin (DuckLake 1.1 with write_deletion_vectors)
    row_groups: int | None  # a Parquet file's (DuckLake 1.1's row_group_count)


def _live_deletes(deletes: Sequence[DeleteFile]) -> dict[int, DeleteFile]:
    """Per data file, its delete file (the newest when a data file has several live ones)."""
    out: dict[int, DeleteFile] = {}
    for d in deletes:
        old = out.get(d.data_file_id)
        if old is None or d.begin_snapshot > old.begin_snapshot:
            out[d.data_file_id] = d
    return out


def _write_deletions(lake: Lake, d: DeletionBatch, written: list[str], puffin: bool) -> list[_DeleteWritten]:
    """One 3-column delete file per data file (`puffin`: a Puffin file, one cumulative deletion vector per
    snapshot): the inlined deletions with their snapshots, merged with the positions of the file's live delete file
    (tagged with their own snapshots, or the file's `begin_snapshot`); a position in both keeps the inlined
    deletion's snapshot, as DuckDB's merge does."""
    from ducklake_cli.engine.delete_files import TargetFile, old_positions, write_parquet_delete, write_puffin_file

    opts = dict(lake.storage_options)
    out = []
    for f in d.files:
        merged = dict(f.positions)
        if f.old is not None:
            target = TargetFile(f.data.data_file_id, f.path, f.data.record_count, file_path(d.table_dir, f.old),
                                f.old.format, f.old.begin_snapshot)
            for pos, snap in zip(*old_positions(target, opts), strict=True):
                merged.setdefault(pos, snap)
        positions = sorted(merged)
        snaps = [merged[p] for p in positions]
        groups: int | None = None
        if puffin:
            rel, size, footer = write_puffin_file(d.table_dir, f.path, positions, snaps, opts)
        else:
            rel, size, footer, groups = write_parquet_delete(d.table_dir, f.path, positions, snaps, opts)
        written.append(d.table_dir + rel)
        out.append(_DeleteWritten(d, f, rel, size, footer, len(positions), min(snaps), max(snaps),
                                  "puffin" if puffin else "parquet", groups))
    return out


def _deletion_batch(r: LakeReader, ctx: MaintenanceContext, table: TableInfo,
                    schema: SchemaInfo) -> DeletionBatch | None:
    """The table's inlined file deletions, grouped per data file (live or ended; deletions of a data file no
    longer in the catalog are dropped with the rest), with each file's live delete file at the base snapshot.
    None when no data file is left to write a delete file for: DuckDB then leaves the rows alone."""
    from ducklake_cli.catalog.deletes import data_files_by_id, inlined_file_deletions

    rows = inlined_file_deletions(r, table.table_id)
    if not rows:
        return None
    per_file: dict[int, dict[int, int]] = {}
    for fid, pos, snap in rows:
        got = per_file.setdefault(fid, {})
        got[pos] = min(snap, got.get(pos, snap))  # the same position twice: the earlier deletion counts
    data = data_files_by_id(r, table.table_id, sorted(per_file))
    if not data:
        return None
    live = _live_deletes(r.delete_files(ctx.base_snapshot, [table.table_id]))
    tdir = table_dir(ctx.data_path, schema, table)
    files = []
    for fid in sorted(data):
        old = live.get(fid)
        if old is not None and old.encryption_key:
            raise DuckLakeError(f"cannot flush the inlined deletions of {table.qualified_name}: the delete file "
                                f"{file_path(tdir, old)} they merge with is encrypted; nothing changed",
                                hint="flush this table with DuckDB (`CALL ducklake_flush_inlined_data`)")
        files.append(FileDeletions(data[fid], file_path(tdir, data[fid]), tuple(sorted(per_file[fid].items())), old))
    return DeletionBatch(table, tdir, tuple(files), len(rows))


def plan_flush(lake: Lake, *, table: str | None = None) -> FlushPlan:
    """Every inlined-data table (of the named table, or of all auto_compact tables) holding rows, and every such
    table's inlined file deletions."""
    with lake.reader() as r:
        ctx = maintenance_context(lake, r)
        batches = []
        deletions = []
        inlined_tables = False
        for t in pick_tables(r, ctx.base_snapshot, table, ctx.meta):
            schema = next(sc for sc in r.schemas(ctx.base_snapshot) if sc.schema_id == t.schema_id)
            for inl in t.inlined_tables:
                if inl.table_name not in r.table_names():
                    continue
                inlined_tables = True
                at = r.schema_version_snapshot(t.table_id, inl.schema_version, t.begin_snapshot)
                versions = r.tables(at, table_ids=[t.table_id])
                columns = versions[0].columns if versions else t.columns
                n, gone = r.inlined_row_counts(inl, ctx.base_snapshot)
                if n:
                    batches.append(InlinedBatch(t, schema, inl, tuple(columns), int(n), int(gone)))
            found = _deletion_batch(r, ctx, t, schema)
            if found is not None:
                deletions.append(found)
    return FlushPlan(ctx, batches, deletions, inlined_tables=inlined_tables)
