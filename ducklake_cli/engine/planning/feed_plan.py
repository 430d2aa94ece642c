"""What a table's change feed between two snapshots reads, decided from metadata alone (no Spark): the files whose
rows were inserted, the delete sources whose rows were deleted, and the inlined rows of either (spec §9).

The sources are chosen as DuckDB 1.5 chooses them for `ducklake_table_insertions` / `ducklake_table_deletions`,
quirks included, so the feed equals DuckDB's row for row (`engine/feed.py` runs it)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.feed import inlined_file_deletions, inlined_rows_changed, table_data_files, table_delete_files
from ducklake_cli.catalog.models import ColumnInfo, DataFile, DeleteFile, SchemaInfo, TableInfo
from ducklake_cli.catalog.paths import file_path, table_dir
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.engine.planning.scan_plan import DeleteSource, FileSource, ScanPlan

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class InsertFile:
    """A data file whose rows count as inserted, kept to embedded snapshots in [min, max] where set."""

    data_file_id: int
    min_snapshot: int | None = None
    max_snapshot: int | None = None
    range_id: int = 0


@dataclass(frozen=True)
class DeleteEntry:
    """One deletion source of one data file, as DuckDB scans it: the positions of `current` (kept to embedded
    snapshots in range) plus `inlined` deletions, or every row (`whole_file`), minus the positions of `previous`
    (only when `current` has no embedded snapshots). Rows lacking their own snapshot get `snapshot_id`."""

    entry_id: int
    data_file_id: int
    snapshot_id: int
    current: DeleteSource | None = None
    previous: DeleteSource | None = None
    inlined: tuple[tuple[int, int], ...] = ()  # (position, snapshot)
    whole_file: bool = False
    range_id: int = 0


@dataclass(frozen=True)
class InlinedChanges:
    """Rows of one inlined-data table inserted or deleted in the ranges: Arrow `row_id`, `snapshot_id`, `range_id`,
    `c<column_id>`… (columns as at the inlined table's schema version, those still in the table at the end)."""

    table_name: str
    columns: tuple[ColumnInfo, ...]
    rows: pa.Table


@dataclass(frozen=True)
class FeedPlan:
    """Everything the engine reads for a table's changes in each range [start, end] (bounds inclusive), every
    source tagged with its range's index."""

    table: TableInfo  # as of the ranges' end: the feed's columns
    ranges: tuple[tuple[int, int], ...]
    scan: ScanPlan  # every data file either side needs, without deletes (read once)
    inserts: tuple[InsertFile, ...] = ()
    deletes: tuple[DeleteEntry, ...] = ()
    inlined_inserts: tuple[InlinedChanges, ...] = ()
    inlined_deletes: tuple[InlinedChanges, ...] = ()
    data_files: Mapping[int, DataFile] = field(default_factory=dict)


def insert_files(files: Sequence[DataFile], start: int, end: int, *, range_id: int = 0) -> list[InsertFile]:
    """Files whose rows were inserted in range: begun in it, or partial files (several snapshots in one file,
    after a flush or merge) reaching into it, filtered per row on their embedded snapshots."""
    out = []
    for f in files:
        if f.begin_snapshot > end:
            continue
        partial = f.partial_max is not None
        if not (f.begin_snapshot >= start or (partial and (f.partial_max or 0) >= start)):
            continue
        out.append(InsertFile(
            f.data_file_id,
            min_snapshot=start if partial and f.begin_snapshot < start else None,
            max_snapshot=end if partial and (f.partial_max or 0) > end else None,
            range_id=range_id,
        ))
    return out


def delete_entries(
    files: Sequence[DataFile], deletes: Sequence[DeleteFile], inlined: Sequence[tuple[int, int, int]],
    start: int, end: int, *, source: Callable[[DeleteFile], DeleteSource], has_inlined_table: bool,
    range_id: int = 0, first_id: int = 0,
) -> list[DeleteEntry]:
    """DuckDB 1.5's deletion sources: (1) every delete file begun by `end` against the data file's newest delete
    file begun before `start`; (2) files ended in range against their newest delete file before the end; (3) files
    with inlined deletions in range and neither. Inlined deletions in range (`inlined`: file, position, snapshot)
    join every entry of their file."""
    by_file: dict[int, list[DeleteFile]] = defaultdict(list)
    for d in deletes:
        if d.begin_snapshot <= end:
            by_file[d.data_file_id].append(d)
    data = {f.data_file_id: f for f in files if f.begin_snapshot <= end}
    gone: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for file_id, pos, snap in inlined:
        if start <= snap <= end:
            gone[file_id].append((pos, snap))

    def newest_before(file_id: int, bound: int) -> DeleteFile | None:
        older = [d for d in by_file.get(file_id, ()) if d.begin_snapshot < bound]
        return max(older, key=lambda d: d.begin_snapshot) if older else None

    out: list[DeleteEntry] = []

    def add(file_id: int, snapshot: int, current: DeleteFile | None, previous: DeleteFile | None,
            whole: bool) -> None:
        out.append(DeleteEntry(
            first_id + len(out), file_id, snapshot, source(current) if current else None,
            source(previous) if previous else None, tuple(sorted(gone.get(file_id, ()))), whole, range_id))

    for file_id, ds in by_file.items():
        if file_id in data:
            for d in ds:
                add(file_id, d.begin_snapshot, d, newest_before(file_id, start), False)
    for f in data.values():
        if f.end_snapshot is not None and start <= f.end_snapshot <= end:
            # DuckDB scans the whole file only when no inlined deletion of it falls in range (then just those).
            add(f.data_file_id, f.end_snapshot, None, newest_before(f.data_file_id, f.end_snapshot),
                not gone.get(f.data_file_id))
    if has_inlined_table:
        for file_id, rows in sorted(gone.items()):
            ended = data.get(file_id)
            if ended is None or by_file.get(file_id):
                continue
            if ended.end_snapshot is not None and start <= ended.end_snapshot <= end:
                continue
            add(file_id, min(snap for _, snap in rows), None, None, False)
    return out


def resolve_range(reader: MetadataReader, start: int | dt.datetime,
                  end: int | dt.datetime | None) -> tuple[int, int]:
    """Snapshot ids of a feed's bounds as DuckDB resolves them: an id must exist; a start time means the first
    snapshot at or after it, an end time the last at or before it; no end means the latest snapshot."""
    from ducklake_cli.catalog.feed import first_snapshot_from

    if end is None:
        last = reader.latest_snapshot().snapshot_id
    elif isinstance(end, dt.datetime):
        last = reader.snapshot_at(end).snapshot_id
    else:
        last = reader.snapshot(int(end)).snapshot_id
    first = (first_snapshot_from(reader, start).snapshot_id if isinstance(start, dt.datetime)
             else reader.snapshot(int(start)).snapshot_id)
    return first, last


def plan_feed(
    reader: MetadataReader, *, table: TableInfo, ranges: Sequence[tuple[int, int]], data_path: str,
    schemas: Sequence[SchemaInfo], storage_options: Mapping[str, Any] | None = None,
) -> FeedPlan:
    """The feed plan of `table` (its columns as given: as of the ranges' end) for each snapshot range; a range
    whose start is after its end is empty."""
    from ducklake_cli.catalog import schema as s

    options = dict(storage_options or {})
    schema = next(sc for sc in schemas if sc.schema_id == table.schema_id)
    tdir = table_dir(data_path, schema, table)
    live = [(i, a, b) for i, (a, b) in enumerate(ranges) if a <= b]
    upto = max((b for _, _, b in live), default=-1)
    low = min((a for _, a, _ in live), default=0)
    files = table_data_files(reader, table.table_id, upto=upto) if live else []
    deletes = table_delete_files(reader, table.table_id, upto=upto) if live else []
    inlined = inlined_file_deletions(reader, table.table_id, low, upto) if live else []
    has_inlined_table = s.inlined_delete_table_name(table.table_id) in reader.table_names()

    def source(d: DeleteFile) -> DeleteSource:
        return DeleteSource(d.delete_file_id, file_path(tdir, d), d.format or "parquet", d.partial_max is not None,
                            d.begin_snapshot)

    inserts: list[InsertFile] = []
    entries: list[DeleteEntry] = []
    for i, a, b in live:
        inserts += insert_files(files, a, b, range_id=i)
        entries += delete_entries(files, deletes, inlined, a, b, source=source, has_inlined_table=has_inlined_table,
                                  range_id=i, first_id=len(entries))
    entries = _without_needless_previous(entries, options)
    wanted = {i.data_file_id for i in inserts} | {e.data_file_id for e in entries}
    read = [f for f in files if f.data_file_id in wanted]
    _refuse_encrypted(table, read, deletes)
    return FeedPlan(
        table=table, ranges=tuple(ranges), scan=_scan_plan(reader, table, upto, read, tdir, options),
        inserts=tuple(inserts), deletes=tuple(entries),
        inlined_inserts=tuple(_inlined(reader, table, live, deleted=False)),
        inlined_deletes=tuple(_inlined(reader, table, live, deleted=True)),
        data_files={f.data_file_id: f for f in read},
    )


def _without_needless_previous(entries: list[DeleteEntry], options: Mapping[str, Any]) -> list[DeleteEntry]:
    """DuckDB subtracts the previous delete file only when the current one has no embedded snapshot column
    (told by its footer): drop `previous` where it does not apply."""
    import dataclasses

    currents = {e.current.path for e in entries if e.current is not None and e.previous is not None
                and e.current.format != "puffin"}
    embedded = {path for path in currents if _has_snapshot_column(path, options)}
    # A 1.1 Puffin container (`partial`: several blobs) tags every position with its snapshot too.
    embedded |= {e.current.path for e in entries if e.current is not None and e.current.format == "puffin"
                 and e.current.partial}
    return [dataclasses.replace(e, previous=None) if e.current is not None and e.current.path in embedded else e
            for e in entries]


def _has_snapshot_column(path: str, options: Mapping[str, Any]) -> bool:
    from ducklake_cli.catalog.types import SNAPSHOT_ID_COLUMN
    from ducklake_cli.engine.planning.scan_plan import _footer_schema

    return SNAPSHOT_ID_COLUMN in _footer_schema(path, options).names


def _refuse_encrypted(table: TableInfo, files: Sequence[DataFile], deletes: Sequence[DeleteFile]) -> None:
    from ducklake_cli.engine.planning.scan_plan import _refuse_encrypted as refuse

    refuse(table, any(f.encryption_key for f in files), deletes)


def _scan_plan(reader: MetadataReader, table: TableInfo, end: int, files: Sequence[DataFile], tdir: str,
               options: dict[str, Any]) -> ScanPlan:
    """A scan plan over the files as they are, every row (no deletes, no snapshot filter), columns as of `end`;
    name mappings, defaults and reader choices worked out as for a table scan."""
    from ducklake_cli.engine.planning import scan_plan as sp

    sources = [
        FileSource(data_file_id=f.data_file_id, path=file_path(tdir, f), record_count=f.record_count,
                   file_size_bytes=f.file_size_bytes, row_id_start=f.row_id_start, begin_snapshot=f.begin_snapshot,
                   needs_snapshot_filter=False, mapping_id=f.mapping_id, delete=None)
        for f in files
    ]
    mapping_ids = {f.mapping_id for f in sources if f.mapping_id is not None}
    mappings = {k: tuple(v) for k, v in reader.name_mappings(mapping_ids).items()}
    sources, positional = sp._positional_mappings(table, sources, options)
    mappings.update(positional)
    return ScanPlan(
        table=table, snapshot_id=end, files=tuple(sources), pruned_files=0, inlined=(),
        name_mappings=mappings, missing_columns=_missing_columns(table, sources, options),
        storage_options=options, defaults=sp._defaults(table),
        pyarrow_files=sp._pyarrow_files(table, sources, mappings, options),
        type_changes=reader.type_changes(table.table_id, end),
    )


def _missing_columns(
    table: TableInfo, files: Sequence[FileSource], options: Mapping[str, Any],
) -> dict[int, frozenset[int]]:
    """Columns with a default that a file lacks, from every file's footer: DuckDB's rewrites write files after a
    column was added that still lack it (so a file's age says nothing)."""
    defaulted = [c for c in table.columns if c.initial_default is not None]
    plain = [f for f in files if f.mapping_id is None]
    if not defaulted or not plain:
        return {}
    from concurrent.futures import ThreadPoolExecutor

    from ducklake_cli.storage.parquet import top_level_field_ids

    with ThreadPoolExecutor(max_workers=min(8, len(plain))) as pool:
        present = list(pool.map(lambda f: top_level_field_ids(f.path, options), plain))
    out: dict[int, frozenset[int]] = {}
    for f, ids in zip(plain, present, strict=True):
        missing = frozenset(c.column_id for c in defaulted if c.column_id not in ids)
        if missing:
            out[f.data_file_id] = missing
    return out


def _inlined(reader: MetadataReader, table: TableInfo, ranges: Sequence[tuple[int, int, int]], *,
             deleted: bool) -> list[InlinedChanges]:
    import pyarrow as pa

    from ducklake_cli.catalog.inlined import decode_inlined

    out = []
    current = {c.column_id for c in table.columns}
    for inlined in table.inlined_tables:
        # The inlined table's columns are named as the table's columns were at its schema version.
        at = reader.schema_version_snapshot(table.table_id, inlined.schema_version, table.begin_snapshot)
        versions = reader.tables(at, table_ids=[table.table_id])
        columns = versions[0].columns if versions else table.columns
        rows: list[tuple[Any, ...]] = []
        range_ids: list[int] = []
        for i, a, b in ranges:
            found = inlined_rows_changed(reader, inlined, columns, a, b, deleted=deleted)
            rows += found
            range_ids += [i] * len(found)
        if not rows:
            continue
        decoded = decode_inlined([(r[0], *r[2:]) for r in rows], columns)
        keep = [c for c in columns if c.column_id in current]
        picked = decoded.select(["row_id", *[f"c{c.column_id}" for c in keep]])
        picked = picked.add_column(1, "snapshot_id", pa.array([int(r[1]) for r in rows], pa.int64()))
        picked = picked.add_column(2, "range_id", pa.array(range_ids, pa.int64()))
        out.append(InlinedChanges(inlined.table_name, tuple(keep), picked))
    return out
