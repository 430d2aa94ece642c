"""`maintain compact` (merge adjacent small files) and `maintain rewrite` (drop deleted rows), through Spark.

Both read the chosen files with our scan (deletes applied, name mappings of registered files applied, row ids and
inserting snapshots kept), write ordinary field-id files on executors that embed `_ducklake_internal_row_id` (and,
merged files, `_ducklake_internal_snapshot_id`), and commit one snapshot per table, as DuckDB's
`ducklake_merge_adjacent_files` / `ducklake_rewrite_data_files` do (spec §7).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import DataFile, NewDataFile, SchemaInfo, SortKey, TableInfo
from ducklake_cli.catalog.partitions import hive_dir, hive_key_aliases, hive_key_names, hive_value
from ducklake_cli.catalog.paths import file_path, relative_to_root, table_dir
from ducklake_cli.catalog.types import ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN
from ducklake_cli.errors import CommitConflictError, UsageError
from ducklake_cli.ops.maintenance import FileAction, MaintenanceReport, Plan
from ducklake_cli.ops.tables import MaintenanceContext, file_spec, maintenance_context, parse_size, pick_tables

if TYPE_CHECKING:
    from ducklake_cli.catalog.transaction import Transaction
    from ducklake_cli.lake import Lake, LakeReader

DEFAULT_REWRITE_THRESHOLD = 0.95


@dataclass(frozen=True)
class FileGroup:
    """Files rewritten into one: same table, schema version, partition spec and partition values."""

    table: TableInfo  # the table as of the files' schema version
    schema: SchemaInfo
    files: tuple[DataFile, ...]
    partition_id: int | None
    partition_values: tuple[str | None, ...]
    deleted_rows: int = 0
    sort_keys: tuple[SortKey, ...] = ()  # the table's current ones: DuckDB sorts rewritten files by them

    @property
    def size(self) -> int:
        """Bytes of the input files."""
        return sum(f.file_size_bytes for f in self.files)


# Types Spark cannot hold exactly: VARIANT as JSON text (its dates, decimals and 32-bit integers would come back as
# JSON strings and numbers), TIMESTAMP_NS as microseconds (the nanosecond digits would be cut).
_NOT_REWRITABLE = {"variant": "VARIANT", "timestamp_ns": "TIMESTAMP_NS"}


def _rewritable(tables: Sequence[TableInfo], notes: list[str], *, named: bool) -> list[TableInfo]:
    """Tables whose rows survive a Spark rewrite unchanged; a note for each one left alone (an error for a table
    named with --table)."""
    def kinds(c: Any) -> set[str]:
        return ({_NOT_REWRITABLE[c.type]} if c.type in _NOT_REWRITABLE else set()).union(*map(kinds, c.children))

    keep = []
    for t in tables:
        found = sorted(set().union(*map(kinds, t.columns)))
        if not found:
            keep.append(t)
            continue
        why = f"rewriting {'/'.join(found)} columns on Spark would change their values (not supported yet)"
        if named:
            raise UsageError(f"{t.schema_name}.{t.name}: {why}")
        notes.append(f"left {t.schema_name}.{t.name} alone: {why}")
    return keep


def _versions(reader: LakeReader, table: TableInfo, latest: int) -> list[tuple[int, TableInfo]]:
    """`(first snapshot, table definition)` of each schema version of the table."""
    out = []
    for begin, _sv in reader.table_schema_versions(table.table_id):
        found = [t for t in reader.tables(begin, table_ids=[table.table_id]) if t.table_id == table.table_id]
        if found:
            out.append((begin, found[0]))
    return out or [(table.begin_snapshot, table)]


def _definition_for(versions: list[tuple[int, TableInfo]], begin_snapshot: int) -> TableInfo:
    chosen = versions[0][1]
    for begin, t in versions:
        if begin <= begin_snapshot:
            chosen = t
    return chosen


def _adjacent(g: FileGroup, scan_order: Sequence[int]) -> bool:
    """Whether a compaction group's files, read in `scan_order`, hold consecutive row ids (and are not re-sorted)."""
    if g.sort_keys or list(scan_order) != [f.data_file_id for f in g.files]:
        return False
    for prev, f in zip(g.files, g.files[1:], strict=False):
        if prev.row_id_start is None or f.row_id_start != prev.row_id_start + prev.record_count:
            return False
    return g.files[0].row_id_start is not None


def _subdir(g: FileGroup, *, hive: bool) -> str:
    """Where a group's output goes under the table directory: the first input's directory (its hive partition
    directory) when that lies under the table's; for a registered file outside it, the hive directory of the
    group's partition values (DuckDB nests its absolute directory under the table's instead)."""
    first = min(g.files, key=lambda f: f.data_file_id)
    if first.path_is_relative:
        return first.path.rsplit("/", 1)[0] + "/" if "/" in first.path else ""
    spec = g.table.partition
    if not hive or spec is None or spec.partition_id != g.partition_id or not g.partition_values:
        return ""
    names = hive_key_names({c.column_id: c.name for c in g.table.columns},
                           [(f.column_id, f.transform) for f in spec.fields])
    return hive_dir(names, g.partition_values)


# ----- plans -----------------------------------------------------------------------------------------------------

class _RewritePlan(Plan):
    """Groups of files to rewrite, per table; applied table by table, one snapshot each."""

    change: str

    def __init__(self, ctx: MaintenanceContext, groups: Sequence[FileGroup], *, notes: Sequence[str] = ()) -> None:
        self.ctx = ctx
        self.groups = list(groups)
        self.notes = (*notes, *self._outside_note())

    def _outside_note(self) -> tuple[str, ...]:
        """Registered inputs outside the data path: `maintain cleanup` never deletes those (DuckDB's would)."""
        outside = sum(1 for g in self.groups for f in g.files
                      if not relative_to_root(file_path(self._dir(g), f), self.ctx.data_path)[1])
        if not outside:
            return ()
        when = "scheduled for deletion" if self.verb == "compact" else "retired (scheduled for deletion once expired)"
        return (f"{outside} registered file(s) outside the data path will be {when}, but `maintain cleanup` never "
                "deletes files outside the data path: delete them yourself once no snapshot needs them",)

    def _dir(self, g: FileGroup) -> str:
        return table_dir(self.ctx.data_path, g.schema, g.table)

    def _actions(self) -> list[FileAction]:
        out = []
        for g in self.groups:
            for f in g.files:
                rel, _ = relative_to_root(file_path(self._dir(g), f), self.ctx.data_path)
                out.append(FileAction(rel, "schedule" if self.verb == "compact" else "end", f.file_size_bytes,
                                      self._reason(g)))
        return out

    def _reason(self, g: FileGroup) -> str:
        raise NotImplementedError

    def _extra(self, written: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {"groups": len(self.groups), "files_rewritten": sum(len(g.files) for g in self.groups),
                               "tables": sorted({f"{g.schema.name}.{g.table.name}" for g in self.groups})}
        if written is not None:
            out["files_written"] = written
        return out

    def report(self) -> MaintenanceReport:
        """The dry-run report."""
        return MaintenanceReport(self.verb, self.ctx.catalog, True, files=tuple(self._actions()), notes=self.notes,
                                 extra=self._extra(None))

    def is_empty(self) -> bool:
        """No group to rewrite."""
        return not self.groups

    def question(self) -> str:
        """The confirmation question."""
        return f"{self.verb}: rewrite {sum(len(g.files) for g in self.groups)} file(s) in {len(self.groups)} " \
               "group(s) — go ahead?"

    def _write_group(self, lake: Lake, g: FileGroup) -> list[NewDataFile]:
        from ducklake_cli.engine.planning.scan_plan import plan_scan
        from ducklake_cli.engine.scan import scan
        from ducklake_cli.engine.session import spark_errors
        from ducklake_cli.engine.writer import sort_orders, write_files

        ids = {f.data_file_id for f in g.files}
        with lake.reader() as r:
            plan = plan_scan(r, table=g.table, snapshot_id=self.ctx.base_snapshot, data_path=self.ctx.data_path,
                             schemas=[g.schema], storage_options=lake.storage_options)
        plan = dataclasses.replace(plan, files=tuple(f for f in plan.files if f.data_file_id in ids), inlined=())
        # A rewritten file embeds row ids only: its rows are as new as the rewrite (begin_snapshot), so that a later
        # merge of it does not show them again at snapshots where the retired file still does (as in DuckDB).
        merge = self.verb == "compact"
        # DuckDB's merge of files whose row ids follow on from each other embeds no row ids: the new file starts
        # where the first did (`adjacent`).
        adjacent = merge and _adjacent(g, [f.data_file_id for f in plan.files])
        spec = file_spec(lake, self.ctx.meta, table_dir=self._dir(g), columns=g.table.columns,
                         lineage=merge and not adjacent, row_ids=not merge, snapshot_ids=adjacent,
                         table_id=g.table.table_id, schema_id=g.schema.schema_id, table=g.table.qualified_name)
        # One output per group, however the sizes came out: DuckDB's compactions do not cut files.
        spec = dataclasses.replace(spec, subdir=_subdir(g, hive=spec.hive), target_file_size=1 << 62)
        spark = lake.spark()
        with spark_errors():
            df = scan(spark, plan, with_lineage=True)
            if not merge:
                df = df.drop(SNAPSHOT_ID_COLUMN)
            elif adjacent:
                # The new file's row ids are its rows' positions, and Spark's file scan does not keep the files'
                # order (it packs the largest first): put the rows back in row-id order before dropping the ids.
                df = df.coalesce(1).sortWithinPartitions(ROW_ID_COLUMN).drop(ROW_ID_COLUMN)
            sort = sort_orders(df, g.table.columns, g.sort_keys, f"{g.schema.name}.{g.table.name}")
            files = write_files(df, spec, single_file=True, sort=sort)
        return [dataclasses.replace(f, partition_values=g.partition_values) for f in files]

    def apply(self, lake: Lake) -> MaintenanceReport:
        """Write the new files on Spark, then commit one snapshot per table."""

        by_table: dict[int, list[tuple[FileGroup, list[NewDataFile]]]] = {}
        for g in self.groups:
            by_table.setdefault(g.table.table_id, []).append((g, self._write_group(lake, g)))
        written = 0
        snapshots = []
        for tid, done in by_table.items():
            snapshot = lake.commit(functools.partial(self._commit, table_id=tid, done=done))
            if snapshot is not None:
                snapshots.append(snapshot)
            written += sum(len(files) for _, files in done)
        notes = (*self.notes, *(f"committed snapshot {s}" for s in snapshots))
        return MaintenanceReport(self.verb, self.ctx.catalog, False, files=tuple(self._actions()), notes=notes,
                                 extra=self._extra(written))

    def _check(self, tx: Transaction, table_id: int, groups: Sequence[FileGroup]) -> None:
        """Spec §5.5: a compaction conflicts with drops, deletes and other compactions of the table since we
        planned; and every input file must still be live."""
        if tx.latest.snapshot_id != self.ctx.base_snapshot:
            other = tx.changes_since(self.ctx.base_snapshot)
            for key in ("tables_dropped", "tables_deleted_from", "inlined_delete", "merge_adjacent",
                        "rewrite_delete"):
                if str(table_id) in other.get(key, set()):
                    raise CommitConflictError(f"another writer changed table {table_id} meanwhile "
                                              f"({key.replace('_', ' ')}); nothing was changed",
                                              hint="run the command again")
        live = {f.data_file_id for f in tx.reader.data_files(tx.latest.snapshot_id, [table_id])}
        if any(f.data_file_id not in live for g in groups for f in g.files):
            raise CommitConflictError("input files changed meanwhile; nothing was changed", hint="run it again")

    def _commit(self, tx: Transaction, *, table_id: int, done: list[tuple[FileGroup, list[NewDataFile]]]) -> None:
        raise NotImplementedError


class CompactPlan(_RewritePlan):
    """Merge adjacent small files (DuckDB's `ducklake_merge_adjacent_files`)."""

    verb = "compact"

    def _reason(self, g: FileGroup) -> str:
        return f"merged with {len(g.files) - 1} other file(s) of {g.schema.name}.{g.table.name}"

    def _commit(self, tx: Transaction, *, table_id: int, done: list[tuple[FileGroup, list[NewDataFile]]]) -> None:
        from ducklake_cli.catalog.writes import TableWrite, remove_data_files, schedule_for_deletion

        self._check(tx, table_id, [g for g, _ in done])
        for g, files in done:
            tw = TableWrite(tx, g.table)
            begin = min(f.begin_snapshot for f in g.files)
            partial = max(max(f.begin_snapshot, f.partial_max or 0) for f in g.files)
            start = g.files[0].row_id_start if _adjacent(g, [f.data_file_id for f in g.files]) else None
            tw.add_files(files, lineage=(begin, partial), partition_id=g.partition_id, change="merge_adjacent",
                         row_id_start=start)
            remove_data_files(tx, table_id, [f.data_file_id for f in g.files])
            schedule_for_deletion(tx, [(f.data_file_id, *relative_to_root(file_path(self._dir(g), f),
                                                                         self.ctx.data_path)) for f in g.files])


class RewritePlan(_RewritePlan):
    """Rewrite files whose deleted fraction reached the threshold (DuckDB's `ducklake_rewrite_data_files`)."""

    verb = "rewrite"

    def _reason(self, g: FileGroup) -> str:
        rows = sum(f.record_count for f in g.files)
        return f"{g.deleted_rows} of {rows} rows deleted" + (f", with {len(g.files) - 1} other file(s)"
                                                              if len(g.files) > 1 else "")

    def _commit(self, tx: Transaction, *, table_id: int, done: list[tuple[FileGroup, list[NewDataFile]]]) -> None:
        from ducklake_cli.catalog.writes import TableWrite, end_data_files, recompute_after_rewrite

        self._check(tx, table_id, [g for g, _ in done])
        for g, files in done:
            TableWrite(tx, g.table).add_files(files, lineage=(tx.snapshot_id, None), partition_id=g.partition_id,
                                              change="rewrite_delete")
            end_data_files(tx, table_id, [f.data_file_id for f in g.files])
            tx.change("rewrite_delete", table_id)
        recompute_after_rewrite(tx, done[0][0].table)


# ----- planning ----------------------------------------------------------------------------------------------------

def _partition_filter(partition: Sequence[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for item in partition:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--partition {item!r}: expected KEY=VALUE, e.g. region=eu or day=31")
        out[key.strip().lower()] = hive_value(value)
    return out


def _matches(t: TableInfo, values: dict[int, str | None], wanted: dict[str, str | None]) -> bool:
    """Whether a file's partition values match `--partition` keys (named like its hive directories)."""
    if not wanted:
        return True
    if t.partition is None:
        return False
    fields = t.partition.fields
    keys = hive_key_aliases({c.column_id: c.name for c in t.columns}, [(f.column_id, f.transform) for f in fields])
    return all(k in keys and values.get(fields[keys[k]].key_index) == v for k, v in wanted.items())


def adjacent_runs(files: Sequence[DataFile], target: int) -> list[list[DataFile]]:
    """Consecutive files (each below `target`) cut as DuckDB's `ducklake_merge_adjacent_files` cuts them: a run takes
    files while its size is below the target, so each run but the last reaches it with its last file."""
    runs: list[list[DataFile]] = []
    size = target
    for f in files:
        if size >= target:
            runs.append([])
            size = 0
        runs[-1].append(f)
        size += f.file_size_bytes
    return runs


def plan_compact(lake: Lake, *, table: str | None = None, max_input_files: int | None = None,
                 target_size: str | None = None, partition: Sequence[str] = ()) -> CompactPlan:
    """Groups of adjacent live files smaller than the target size with no deletes, per table, schema version,
    partition spec and partition values, in insertion order; groups of one file are left alone. `partition`
    (`region=eu`, `day=31`) limits it to files with those partition values."""
    if max_input_files is not None and max_input_files < 2:
        raise UsageError("--max-input-files must be at least 2")
    wanted = _partition_filter(partition)
    with lake.reader() as r:
        ctx = maintenance_context(lake, r)
        groups: list[FileGroup] = []
        notes: list[str] = []
        budget = max_input_files
        for t in _rewritable(pick_tables(r, ctx.base_snapshot, table, ctx.meta), notes, named=table is not None):
            target = parse_size(target_size or ctx.meta.option("target_file_size", table_id=t.table_id,
                                                               schema_id=t.schema_id) or str(1 << 29))
            schema = next(sc for sc in r.schemas(ctx.base_snapshot) if sc.schema_id == t.schema_id)
            files = r.data_files(ctx.base_snapshot, [t.table_id])
            deleted = {d.data_file_id for d in r.delete_files(ctx.base_snapshot, [t.table_id])}
            deleted |= set(r.inlined_deletes(ctx.base_snapshot, t.table_id))
            # Registered (name-mapped) files merge too, with each other and with field-id files, as in DuckDB.
            candidates = [f for f in files if f.data_file_id not in deleted and f.file_size_bytes < target]
            if len(candidates) < 2:
                continue
            values = r.file_partition_values(t.table_id, [f.data_file_id for f in candidates])
            candidates = [f for f in candidates if _matches(t, values.get(f.data_file_id, {}), wanted)]
            versions = _versions(r, t, ctx.base_snapshot)
            buckets: dict[tuple[Any, ...], list[DataFile]] = {}
            for f in sorted(candidates, key=lambda f: (f.begin_snapshot, f.row_id_start or 0, f.data_file_id)):
                definition = _definition_for(versions, f.begin_snapshot)
                pv = values.get(f.data_file_id, {})
                key = (id(definition), f.partition_id, tuple(pv[i] for i in sorted(pv)))
                buckets.setdefault(key, []).append(f)
            for (_, pid, pvals), members in buckets.items():
                definition = _definition_for(versions, members[0].begin_snapshot)
                for run in adjacent_runs(members, target):
                    if len(run) >= 2 and (budget is None or budget >= 2):
                        take = run if budget is None else run[:budget]
                        groups.append(FileGroup(definition, schema, tuple(take), pid, pvals,
                                                sort_keys=t.sort_keys))
                        budget = None if budget is None else budget - len(take)
    return CompactPlan(ctx, groups, notes=notes)


def plan_rewrite(lake: Lake, *, table: str | None = None, threshold: float | None = None) -> RewritePlan:
    """Live files whose deleted fraction (delete files plus inlined deletions) reaches the threshold (option
    `rewrite_delete_threshold`, default 0.95)."""
    if threshold is not None and not 0 < threshold <= 1:
        raise UsageError("--delete-threshold must be in (0, 1]")
    with lake.reader() as r:
        ctx = maintenance_context(lake, r)
        groups = []
        notes: list[str] = []
        for t in _rewritable(pick_tables(r, ctx.base_snapshot, table, ctx.meta), notes, named=table is not None):
            limit = threshold if threshold is not None else float(
                ctx.meta.option("rewrite_delete_threshold", table_id=t.table_id, schema_id=t.schema_id)
                or DEFAULT_REWRITE_THRESHOLD)
            schema = next(sc for sc in r.schemas(ctx.base_snapshot) if sc.schema_id == t.schema_id)
            deletes = {d.data_file_id: d.delete_count for d in r.delete_files(ctx.base_snapshot, [t.table_id])}
            inlined = r.inlined_deletes(ctx.base_snapshot, t.table_id)
            files = r.data_files(ctx.base_snapshot, [t.table_id])
            values = r.file_partition_values(t.table_id, [f.data_file_id for f in files])
            versions = _versions(r, t, ctx.base_snapshot)
            # As DuckDB's `ducklake_rewrite_data_files`: the files of one schema version and partition are
            # rewritten into one file.
            buckets: dict[tuple[Any, ...], list[tuple[DataFile, int]]] = {}
            for f in sorted(files, key=lambda f: (f.begin_snapshot, f.row_id_start or 0, f.data_file_id)):
                gone = deletes.get(f.data_file_id, 0) + inlined.get(f.data_file_id, 0)
                if f.record_count and gone and gone / f.record_count >= limit:
                    pv = values.get(f.data_file_id, {})
                    key = (id(_definition_for(versions, f.begin_snapshot)), f.partition_id,
                           tuple(pv[i] for i in sorted(pv)))
                    buckets.setdefault(key, []).append((f, gone))
            for (_, pid, pvals), members in buckets.items():
                # The new file starts at the rewrite's snapshot, so it holds today's columns (defaults of columns
                # added since filled in), as readers expect of a file that new.
                groups.append(FileGroup(t, schema, tuple(f for f, _ in members), pid, pvals,
                                        sum(gone for _, gone in members), sort_keys=t.sort_keys))
    return RewritePlan(ctx, groups, notes=notes)
