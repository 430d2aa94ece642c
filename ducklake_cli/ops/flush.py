"""`maintain flush`: move inlined rows from the catalog into Parquet files (DuckDB's `ducklake_flush_inlined_data`).

Rows keep their row ids and inserting snapshots (embedded columns; the file's `begin_snapshot`/`partial_max` span
them), rows already deleted become a partial delete file, and the flushed rows leave the inlined table — all in
one snapshot per table with change `inline_flush`. The rows come out of the catalog through this process, so the
files are written here with the same writer Spark executors use.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import ColumnInfo, InlinedTable, NewDataFile, SchemaInfo, TableInfo
from ducklake_cli.catalog.paths import table_dir
from ducklake_cli.engine.writer import partition_keys, sort_arrow
from ducklake_cli.errors import CommitConflictError
from ducklake_cli.ops.maintenance import FileAction, MaintenanceReport, Plan
from ducklake_cli.ops.tables import MaintenanceContext, file_spec, maintenance_context, pick_tables

if TYPE_CHECKING:
    from ducklake_cli.catalog.transaction import Transaction
    from ducklake_cli.lake import Lake


@dataclass(frozen=True)
class InlinedBatch:
    """The rows of one inlined-data table to flush."""

    table: TableInfo
    schema: SchemaInfo
    inlined: InlinedTable
    columns: tuple[ColumnInfo, ...]  # as at the inlined table's schema version
    rows: int
    deleted: int


class FlushPlan(Plan):
    """Inlined-data tables with rows to move into Parquet."""

    verb = "flush"

    def __init__(self, ctx: MaintenanceContext, batches: Sequence[InlinedBatch]) -> None:
        self.ctx = ctx
        self.batches = list(batches)

    def _extra(self, files: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {"rows_flushed": sum(b.rows for b in self.batches),
                               "tables": sorted({f"{b.schema.name}.{b.table.name}" for b in self.batches})}
        if files is not None:
            out["files_written"] = files
        return out

    def report(self) -> MaintenanceReport:
        """The dry-run report: which inlined tables, how many rows."""
        notes = tuple(f"{b.schema.name}.{b.table.name}: {b.rows} row(s) from {b.inlined.table_name}"
                      + (f" ({b.deleted} already deleted)" if b.deleted else "") for b in self.batches)
        return MaintenanceReport("flush", self.ctx.catalog, True, notes=notes, extra=self._extra(None))

    def is_empty(self) -> bool:
        """No inlined rows."""
        return not self.batches

    def question(self) -> str:
        """The confirmation question."""
        return f"flush: move {sum(b.rows for b in self.batches)} inlined row(s) into Parquet — go ahead?"

    def apply(self, lake: Lake) -> MaintenanceReport:
        """Write the files, then commit one snapshot per table."""

        by_table: dict[int, list[InlinedBatch]] = {}
        for b in self.batches:
            by_table.setdefault(b.table.table_id, []).append(b)
        actions: list[FileAction] = []
        notes: list[str] = []
        for tid, batches in by_table.items():
            written = [f for b in batches for f in self._write(lake, b)]
            build = functools.partial(self._commit, table_id=tid, batches=batches, written=written, lake=lake)
            snapshot = lake.commit(build)
            notes.append(f"committed snapshot {snapshot}")
            for w in written:
                tdir = table_dir(self.ctx.data_path, w.batch.schema, w.batch.table)
                actions.append(FileAction(tdir + w.file.path, "write", w.file.file_size_bytes,
                                          f"{w.file.record_count} rows"))
        return MaintenanceReport("flush", self.ctx.catalog, False, files=tuple(actions), notes=tuple(notes),
                                 extra=self._extra(len(actions)))

    def _write(self, lake: Lake, b: InlinedBatch) -> list[_Flushed]:
        """Files for one inlined table, each with its rows' snapshot span and the `(position, end_snapshot)` of
        rows already deleted."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from ducklake_cli.catalog.inlined import decode_inlined
        from ducklake_cli.catalog.types import ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN
        from ducklake_cli.engine.parquet_files import file_from_json, write_batches
        from ducklake_cli.storage.files import filesystem

        with lake.reader() as r:
            rows = r.inlined_rows_upto(self.ctx.base_snapshot, b.inlined, b.columns)
        ends = {int(row[0]): row[2] for row in rows}
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
                         table_id=b.table.table_id, schema_id=b.schema.schema_id)
        files = [file_from_json(x.as_py()) for out in write_batches(iter(table.to_batches()), spec)
                 for x in out.column(0)] if table.num_rows else []
        out = []
        for f in files:
            with filesystem(tdir + f.path, lake.storage_options).open(tdir + f.path, "rb") as fh:
                back = pq.read_table(fh, columns=[ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN])
            ids, snaps = back.column(0).to_pylist(), back.column(1).to_pylist()
            gone = [(pos, int(ends[rid])) for pos, rid in enumerate(ids) if ends.get(rid) is not None]
            out.append(_Flushed(b, f, min(snaps), max(snaps), tuple(gone)))
        return out

    def _commit(self, tx: Transaction, *, table_id: int, batches: Sequence[InlinedBatch],
                written: Sequence[_Flushed], lake: Lake) -> None:
        from ducklake_cli.catalog.deletes import add_delete_file
        from ducklake_cli.catalog.writes import TableWrite, add_table_file_bytes, delete_inlined_rows
        from ducklake_cli.engine.delete_files import write_delete_file

        if tx.latest.snapshot_id != self.ctx.base_snapshot:
            other = tx.changes_since(self.ctx.base_snapshot)
            for key in ("tables_dropped", "inlined_delete", "flushed_inlined"):
                if str(table_id) in other.get(key, set()):
                    raise CommitConflictError(f"another writer changed table {table_id} meanwhile "
                                              f"({key.replace('_', ' ')}); nothing was changed",
                                              hint="run the command again")
        for w in written:
            tdir = table_dir(self.ctx.data_path, w.batch.schema, w.batch.table)
            (fid,) = TableWrite(tx, w.batch.table).add_files([w.file], lineage=(w.first, w.last),
                                                             change="inline_flush")
            if w.deleted:
                rel, size, footer = write_delete_file(tdir, tdir + w.file.path, [p for p, _ in w.deleted],
                                                      [s for _, s in w.deleted], dict(lake.storage_options))
                add_delete_file(tx, table_id, fid, path=rel, count=len(w.deleted), size=size, footer=footer,
                                begin_snapshot=min(s for _, s in w.deleted),
                                partial_max=max(s for _, s in w.deleted))
        for b in batches:
            delete_inlined_rows(tx, b.inlined.table_name, self.ctx.base_snapshot)
        tx.change("inline_flush", table_id)
        add_table_file_bytes(tx, table_id, sum(w.file.file_size_bytes for w in written))


@dataclass(frozen=True)
class _Flushed:
    batch: InlinedBatch
    file: NewDataFile
    first: int  # smallest inserting snapshot of its rows
    last: int
    deleted: tuple[tuple[int, int], ...]


def plan_flush(lake: Lake, *, table: str | None = None) -> FlushPlan:
    """Every inlined-data table (of the named table, or of all auto_compact tables) holding rows."""
    with lake.reader() as r:
        ctx = maintenance_context(lake, r)
        batches = []
        for t in pick_tables(r, ctx.base_snapshot, table, ctx.meta):
            schema = next(sc for sc in r.schemas(ctx.base_snapshot) if sc.schema_id == t.schema_id)
            for inl in t.inlined_tables:
                if inl.table_name not in r.table_names():
                    continue
                at = r.schema_version_snapshot(t.table_id, inl.schema_version, t.begin_snapshot)
                versions = r.tables(at, table_ids=[t.table_id])
                columns = versions[0].columns if versions else t.columns
                n, gone = r.inlined_row_counts(inl, ctx.base_snapshot)
                if n:
                    batches.append(InlinedBatch(t, schema, inl, tuple(columns), int(n), int(gone)))
    return FlushPlan(ctx, batches)
