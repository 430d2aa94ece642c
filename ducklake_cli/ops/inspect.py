"""`inspect`: a lake summary, one table in detail, its snapshots or its files — from metadata only."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from json.encoder import encode_basestring_ascii as _json_str
from typing import Any

from ducklake_cli.catalog.changes import parse_changes
from ducklake_cli.catalog.history import Metrics, TableNames, name_at, snapshot_metrics, table_names
from ducklake_cli.catalog.models import ColumnInfo, TableInfo, ViewInfo
from ducklake_cli.catalog.names import pick_entry, split_qualified
from ducklake_cli.catalog.partitions import transform_text
from ducklake_cli.catalog.paths import file_path, table_dir
from ducklake_cli.catalog.queries import ColumnStatsSummary, as_bool
from ducklake_cli.catalog.snapshots import LATEST, SnapshotSelector
from ducklake_cli.catalog.types import FLOAT_TYPES, INT_TYPES
from ducklake_cli.catalog.versions import format_version
from ducklake_cli.engine.planning.counts import TableCounts, table_counts
from ducklake_cli.errors import ChangeParseError, NotFoundError
from ducklake_cli.lake import Lake, LakeReader
from ducklake_cli.ops.options import OptionRow, effective_options, lake_options, options_section, table_entries
from ducklake_cli.ops.results import Section, jsonable
from ducklake_cli.ops.tables import view_query_columns


@dataclass(frozen=True)
class TableSummary:
    """One table's counts at the snapshot."""

    schema: str
    table: str
    table_id: int
    live_rows: int
    data_files: int
    delete_files: int
    data_bytes: int
    delete_bytes: int
    inlined_rows: int


@dataclass(frozen=True)
class LakeSummary:
    """The lake at a glance."""

    catalog: str
    backend: str
    format_version: str
    attached_by: str  # DuckDB releases that attach the catalog as it is
    needs_migration: bool  # for writing with this tool (and for DuckDB 1.5.2+ unless it is 1.1-dev1)
    data_path: str
    created_by: str | None
    snapshot_id: int
    snapshot_time: dt.datetime
    schema_version: int
    snapshot_count: int
    tables: tuple[TableSummary, ...]
    views: tuple[str, ...]
    options: tuple[OptionRow, ...] = ()

    def to_json(self) -> Any:
        """Stable JSON shape (README: `inspect --format json`)."""
        return jsonable(self)

    def sections(self) -> list[Section]:
        """Lake facts, then one row per table."""
        facts = (
            ("catalog", self.catalog), ("backend", self.backend), ("format version", self.format_version),
            ("attached by", self.attached_by),
            ("needs migration", ("yes: run `ducklake upgrade --to 1.1`" if self.format_version == "1.1-dev1" else
                                 "yes: run `ducklake upgrade`") if self.needs_migration else "no"),
            ("data path", self.data_path), ("snapshot", f"{self.snapshot_id} ({self.snapshot_time.isoformat()})"),
            ("schema version", self.schema_version), ("snapshots", self.snapshot_count),
            ("tables", len(self.tables)), ("views", ", ".join(self.views) or "-"),
        )
        rows = tuple(
            (t.schema, t.table, t.live_rows, t.data_files, t.delete_files, t.data_bytes + t.delete_bytes,
             t.inlined_rows)
            for t in self.tables
        )
        return [
            Section("DuckLake", ("property", "value"), facts, csv=False),
            Section("Tables", ("schema", "table", "live_rows", "data_files", "delete_files", "bytes",
                               "inlined_rows"), rows),
            dataclasses.replace(options_section(self.options), csv=False),
        ]


@dataclass(frozen=True)
class ColumnRow:
    """A column (nested ones as dotted paths)."""

    column_id: int
    name: str
    type: str
    nullable: bool
    default: str | None
    initial_default: str | None
    comment: str | None


@dataclass(frozen=True)
class ColumnStatRow:
    """Statistics of one leaf column over the files live at the snapshot."""

    column_id: int
    name: str
    min: str | None
    max: str | None
    null_count: int | None
    value_count: int | None
    contains_nan: bool | None


@dataclass(frozen=True)
class InlinedRow:
    """An inlined-data table and its live rows."""

    table_name: str
    schema_version: int
    live_rows: int


@dataclass(frozen=True)
class DeleteFileRow:
    """A delete file live at the snapshot."""

    delete_file_id: int
    data_file_id: int
    path: str
    format: str | None
    delete_count: int
    file_size_bytes: int
    begin_snapshot: int
    partial_max: int | None


@dataclass(frozen=True)
class TableDetail:
    """One table in detail."""

    schema: str
    table: str
    table_id: int
    table_uuid: str
    snapshot_id: int
    path: str
    comment: str | None
    tags: dict[str, str | None]
    live_rows: int
    data_files: int
    data_bytes: int
    columns: tuple[ColumnRow, ...]
    partitioning: tuple[str, ...]
    sort_keys: tuple[str, ...]
    column_stats: tuple[ColumnStatRow, ...]
    file_size_histogram: dict[str, int]
    delete_files: tuple[DeleteFileRow, ...]
    inlined: tuple[InlinedRow, ...]
    options: tuple[OptionRow, ...] = ()

    def to_json(self) -> Any:
        """Stable JSON shape (README: `inspect TABLE --format json`)."""
        return jsonable(self)

    def sections(self) -> list[Section]:
        """Columns first (the CSV section), then specs, stats, file sizes, deletes and inlined rows."""
        facts = (
            ("table", f"{self.schema}.{self.table} (id {self.table_id})"), ("snapshot", self.snapshot_id),
            ("path", self.path), ("live rows", self.live_rows), ("data files", self.data_files),
            ("bytes", self.data_bytes), ("partitioned by", ", ".join(self.partitioning) or "-"),
            ("sorted by", ", ".join(self.sort_keys) or "-"), ("comment", self.comment or "-"),
        )
        out = [
            Section("Table", ("property", "value"), facts, csv=False),
            Section("Columns", ("id", "name", "type", "nullable", "default", "initial_default", "comment"),
                    tuple((c.column_id, c.name, c.type, c.nullable, c.default, c.initial_default, c.comment)
                          for c in self.columns)),
            Section("Column stats", ("id", "column", "min", "max", "nulls", "values", "nan"),
                    tuple((c.column_id, c.name, c.min, c.max, c.null_count, c.value_count, c.contains_nan)
                          for c in self.column_stats), csv=False),
            Section("File sizes", ("size", "files"), tuple(self.file_size_histogram.items()), csv=False),
        ]
        if self.delete_files:
            out.append(Section("Delete files", ("id", "data_file", "path", "format", "deletes", "bytes", "snapshot"),
                               tuple((d.delete_file_id, d.data_file_id, d.path, d.format, d.delete_count,
                                      d.file_size_bytes, d.begin_snapshot) for d in self.delete_files), csv=False))
        if self.inlined:
            out.append(Section("Inlined data", ("table", "schema_version", "live_rows"),
                               tuple((i.table_name, i.schema_version, i.live_rows) for i in self.inlined), csv=False))
        out.append(dataclasses.replace(options_section(self.options), csv=False))
        return out


@dataclass(frozen=True)
class TableMetrics:
    """What one snapshot did to one table (catalog/history.py defines each counter)."""

    table_id: int
    schema: str | None
    table: str | None
    metrics: Metrics


@dataclass(frozen=True)
class SnapshotRow:
    """One snapshot with its parsed change list and its operation metrics, in all and per table."""

    snapshot_id: int
    snapshot_time: dt.datetime
    schema_version: int
    changes: dict[str, list[str]]
    author: str | None
    commit_message: str | None
    commit_extra_info: str | None
    metrics: Metrics = dataclasses.field(default_factory=Metrics)
    tables: tuple[TableMetrics, ...] = ()


_SHOWN = ("rows_added", "rows_deleted", "files_added", "files_removed", "bytes_added", "bytes_removed")


@dataclass(frozen=True)
class SnapshotList:
    """`inspect --snapshots` (of the lake, or of one table: `table` set)."""

    snapshots: tuple[SnapshotRow, ...]
    table: str | None = None

    def to_json(self) -> Any:
        """A list of snapshot objects (built directly: this list can hold many thousands); `metrics` sums the
        per-table `tables` entries."""
        return [_snapshot_json(s) for s in self.snapshots]

    def sections(self) -> list[Section]:
        """One row per snapshot with its totals (compact for people, one number a column in CSV); then one row
        per snapshot and table it changed."""
        base = tuple(
            (s.snapshot_id, s.snapshot_time.isoformat(), s.schema_version,
             "; ".join(f"{k}: {', '.join(v)}" for k, v in s.changes.items()), s.author, s.commit_message)
            for s in self.snapshots
        )
        head = ("snapshot_id", "time", "schema_version", "changes", "author", "message")
        shown = tuple((*b, *_compact(s.metrics)) for b, s in zip(base, self.snapshots, strict=True))
        flat = tuple(_snapshot_csv(s) for s in self.snapshots)
        per_table = tuple(
            (s.snapshot_id, f"{m.schema}.{m.table}" if m.table else str(m.table_id), *_compact(m.metrics))
            for s in self.snapshots for m in s.tables
        )
        return [Section("Snapshots", (*head, "rows +/-", "files +/-", "bytes +/-"), shown, csv=False, history=True),
                Section("Snapshots", (*head, *_SHOWN), flat, table=False, history=True),
                Section("Changes per table", ("snapshot_id", "table", "rows +/-", "files +/-", "bytes +/-"),
                        per_table, csv=False, history=True)]


_SNAPSHOT_CSV = ("snapshot_id", "time", "schema_version", "changes", "author", "message", *_SHOWN)
_METRIC_FIELDS = tuple(f.name for f in dataclasses.fields(Metrics))


def _compact(m: Metrics) -> tuple[str, str, str]:
    return (f"+{m.rows_added} -{m.rows_deleted}", f"+{m.files_added} -{m.files_removed}",
            f"+{m.bytes_added} -{m.bytes_removed}")


_PLAIN_METRICS = tuple(vars(Metrics())) == _METRIC_FIELDS  # its attributes are exactly its fields, in order


def _metrics_json(m: Metrics) -> dict[str, int]:
    """`Metrics.as_dict()`, the same keys in the same order, without a `fields()` walk per call."""
    out = {"rows_added": m.rows_added, "rows_deleted": m.rows_deleted,
           "files_added": m.data_files_added + m.delete_files_added,
           "files_removed": m.data_files_removed + m.delete_files_removed}
    out.update(vars(m) if _PLAIN_METRICS else {name: getattr(m, name) for name in _METRIC_FIELDS})
    return out


def _snapshot_json(s: SnapshotRow) -> dict[str, Any]:
    """One snapshot object of `inspect --snapshots --format json`."""
    return {"snapshot_id": s.snapshot_id, "snapshot_time": s.snapshot_time.isoformat(),
            "schema_version": s.schema_version, "changes": s.changes, "author": s.author,
            "commit_message": s.commit_message, "commit_extra_info": s.commit_extra_info,
            "metrics": _metrics_json(s.metrics),
            "tables": [{"table_id": m.table_id, "schema": m.schema, "table": m.table, **_metrics_json(m.metrics)}
                       for m in s.tables]}


def _metrics_text(m: Metrics) -> str:
    """`json.dumps(_metrics_json(m))` without the inner braces."""
    return ", ".join(f'"{k}": {_json_value(v)}' for k, v in _metrics_json(m).items())


def _snapshot_text(s: SnapshotRow) -> str:
    """`json.dumps(_snapshot_json(s))`, encoded piece by piece (this list can hold many thousands)."""
    v = _json_value
    tables = ", ".join(f'{{"table_id": {v(m.table_id)}, "schema": {v(m.schema)}, "table": {v(m.table)}, '
                       f'{_metrics_text(m.metrics)}}}' for m in s.tables)
    return (f'{{"snapshot_id": {v(s.snapshot_id)}, "snapshot_time": {v(s.snapshot_time.isoformat())}, '
            f'"schema_version": {v(s.schema_version)}, "changes": {json.dumps(s.changes)}, "author": {v(s.author)}, '
            f'"commit_message": {v(s.commit_message)}, "commit_extra_info": {v(s.commit_extra_info)}, '
            f'"metrics": {{{_metrics_text(s.metrics)}}}, "tables": [{tables}]}}')


def _snapshot_csv(s: SnapshotRow) -> tuple[Any, ...]:
    """One row of `inspect --snapshots --format csv`."""
    m = s.metrics
    return (s.snapshot_id, s.snapshot_time.isoformat(), s.schema_version,
            "; ".join(f"{k}: {', '.join(v)}" for k, v in s.changes.items()), s.author, s.commit_message,
            m.rows_added, m.rows_deleted, m.files_added, m.files_removed, m.bytes_added, m.bytes_removed)


@dataclass(frozen=True)
class SnapshotStream:
    """`inspect --snapshots` as JSON or CSV, each snapshot read from the catalog as it is written."""

    rows: Iterator[SnapshotRow]
    table: str | None = None

    def json_stream(self, *, compact: bool) -> tuple[dict[str, Any] | None, str | None, Iterator[Any]]:
        """The document around the list (none: the list is the document), its key, and the list's items (with
        `compact`, encoded)."""
        return None, None, (_snapshot_text(s) if compact else _snapshot_json(s) for s in self.rows)

    def csv_stream(self) -> tuple[tuple[str, ...], Iterator[tuple[Any, ...]]]:
        """The CSV header and rows (`SnapshotList`'s CSV section)."""
        return _SNAPSHOT_CSV, (_snapshot_csv(s) for s in self.rows)


@dataclass(frozen=True)
class FileRow:
    """A data file live at the snapshot and its delete file, if any."""

    schema: str
    table: str
    data_file_id: int
    path: str
    record_count: int
    file_size_bytes: int
    begin_snapshot: int
    delete_file: str | None
    delete_count: int


@dataclass(frozen=True)
class FileList:
    """`inspect --files`."""

    snapshot_id: int
    files: tuple[FileRow, ...]

    def to_json(self) -> Any:
        """`{"snapshot_id": …, "files": [...]}`."""
        return jsonable(self)

    def sections(self) -> list[Section]:
        """One row per data file."""
        rows = tuple((f.schema, f.table, f.data_file_id, f.path, f.record_count, f.file_size_bytes,
                      f.begin_snapshot, f.delete_file, f.delete_count) for f in self.files)
        return [Section("Data files", _FILE_CSV, rows)]


_FILE_CSV = ("schema", "table", "data_file_id", "path", "records", "bytes", "snapshot", "delete_file", "deletes")


@dataclass(frozen=True)
class FileStream:
    """`inspect --files` as JSON or CSV, each file read from the catalog cursor as it is written."""

    snapshot_id: int
    rows: Iterator[tuple[Any, ...]]  # FileRow's fields in order

    def json_stream(self, *, compact: bool) -> tuple[dict[str, Any] | None, str | None, Iterator[Any]]:
        """`{"snapshot_id": …, "files": [...]}` as FileList writes it: the head, the list's key, its items (with
        `compact`, encoded)."""
        if compact:
            return {"snapshot_id": self.snapshot_id}, "files", (_file_text(r) for r in self.rows)
        names = [f.name for f in dataclasses.fields(FileRow)]
        return {"snapshot_id": self.snapshot_id}, "files", (dict(zip(names, r, strict=True)) for r in self.rows)

    def csv_stream(self) -> tuple[tuple[str, ...], Iterator[tuple[Any, ...]]]:
        """The CSV header and rows (FileList's one section)."""
        return _FILE_CSV, self.rows


def _json_value(value: Any) -> str:
    """`json.dumps(value)` for the scalars of a listing, the common ones without the encoder's set-up."""
    if type(value) is int:
        return str(value)
    if type(value) is str:
        return _json_str(value)
    return "null" if value is None else json.dumps(value, default=str)


def _file_text(r: tuple[Any, ...]) -> str:
    """`json.dumps` of one `--files` object (`FileRow`'s fields in order)."""
    v = _json_value
    return (f'{{"schema": {v(r[0])}, "table": {v(r[1])}, "data_file_id": {v(r[2])}, "path": {v(r[3])}, '
            f'"record_count": {v(r[4])}, "file_size_bytes": {v(r[5])}, "begin_snapshot": {v(r[6])}, '
            f'"delete_file": {v(r[7])}, "delete_count": {v(r[8])}}}')


# ----------------------------------------------------------------------------------------------------------
def summary(lake: Lake, *, at: SnapshotSelector = LATEST) -> LakeSummary:
    """The lake summary at a snapshot."""
    known = format_version(lake.format_version)
    assert known is not None
    with lake.reader() as r:
        meta = r.metadata()
        snap = at.resolve(r)
        schemas = r.schemas(snap.snapshot_id)
        tables = r.tables(snap.snapshot_id)
        counts = table_counts(r, snapshot_id=snap.snapshot_id, data_path=r.data_path, tables=tables,
                              schemas=schemas, storage_options=lake.storage_options)
        views = tuple(f"{v.schema_name}.{v.name}" for v in r.views(snap.snapshot_id))
        return LakeSummary(
            catalog=lake.target.display(), backend=lake.catalog_backend.name, format_version=known.version,
            attached_by=known.attached_by, needs_migration=known.needs_migration,
            data_path=r.data_path, created_by=meta.created_by, snapshot_id=snap.snapshot_id,
            snapshot_time=snap.snapshot_time, schema_version=snap.schema_version, snapshot_count=r.snapshot_count(),
            tables=tuple(_table_summary(t, counts[t.table_id]) for t in tables), views=views,
            options=lake_options(meta, table_entries(tables, schemas), fixed=False),
        )


def _table_summary(t: TableInfo, c: TableCounts) -> TableSummary:
    return TableSummary(t.schema_name, t.name, t.table_id, c.live_rows, c.data_files, c.delete_files,
                        c.data_bytes, c.delete_bytes, c.inlined_rows)


def snapshots(lake: Lake, table: str | None = None) -> SnapshotList:
    """Every snapshot with its changes parsed as DuckDB's `ducklake_snapshots()` shows them and its operation
    metrics from metadata; with `table`, only the snapshots that changed that table, with its metrics alone."""
    return SnapshotList(tuple(_started(_snapshot_rows(lake, table))), table)


def snapshot_stream(lake: Lake, table: str | None = None) -> SnapshotStream:
    """`snapshots` read while they are written: the table is looked up now (errors before any output), the
    snapshots one at a time as the stream is consumed (inside the open lake)."""
    return SnapshotStream(_started(_snapshot_rows(lake, table)), table)


def _started(rows: Iterator[Any]) -> Iterator[Any]:
    """A row generator run up to its first `yield None`: what can fail before the first row has failed."""
    next(rows)
    return rows


def _snapshot_rows(lake: Lake, table: str | None) -> Iterator[SnapshotRow | None]:
    """None once set up, then each snapshot row (see `snapshots`), in one reader."""
    with lake.reader() as r:
        tid = None
        names = table_names(r.conn, r.backend)
        if table is not None:
            tid = _table_id(r, table, names)
        metrics = snapshot_metrics(r.conn, r.backend, None if tid is None else [tid], data_path=r.data_path,
                                   storage_options=lake.storage_options)
        yield None
        parsed: dict[str | None, dict[str, list[str]]] = {}  # change strings repeat (e.g. inserted_into_table:1)
        no_metrics: dict[int, Metrics] = {}
        for sid, when, schema_version, made, author, message, extra in r.snapshot_listing():
            changes = parsed.get(made)
            if changes is None:
                try:
                    changes = parse_changes(made)
                except ChangeParseError:
                    changes = {"unparsed": [made or ""]}
                if len(parsed) < 4096:
                    parsed[made] = changes
            per = metrics.get(sid, no_metrics)
            if tid is not None and tid not in per and not _names_table(changes, tid, names, sid):
                continue
            entries = tuple(TableMetrics(table_id, *name_at(names, table_id, sid), per[table_id])
                            for table_id in sorted(per))
            yield SnapshotRow(sid, when, schema_version, changes, author, message, extra, _total(per), entries)


def _total(per: Mapping[int, Metrics]) -> Metrics:
    """The per-table metrics summed (one table's own object: nothing changes it)."""
    if len(per) == 1:
        return next(iter(per.values()))
    total = Metrics()
    for m in per.values():
        for name in _METRIC_FIELDS:
            setattr(total, name, getattr(total, name) + getattr(m, name))
    return total


def _table_id(r: LakeReader, table: str, names: TableNames) -> int:
    """The table's id: live at the latest snapshot, else the newest table ever so named (a dropped table)."""
    try:
        return r.find_table(r.latest_snapshot().snapshot_id, table).table_id
    except NotFoundError:
        schema_name, _, table_name = table.rpartition(".")
        found = [(rows[-1][0], tid) for tid, rows in names.items()
                 if any(n == table_name and s == (schema_name or "main") for _, s, n in rows)]
        if not found:
            raise
        return max(found)[1]


def _names_table(changes: dict[str, list[str]], table_id: int, names: TableNames, snapshot_id: int) -> bool:
    """Whether a snapshot's changes name the table: by id, or by its name when created."""
    schema_name, table_name = name_at(names, table_id, snapshot_id)
    created = f"{schema_name}.{table_name}"
    return any(str(table_id) in values or (key == "tables_created" and created in values)
               for key, values in changes.items())


def files(lake: Lake, table: str | None = None, *, at: SnapshotSelector = LATEST) -> FileList:
    """Data files (with their delete files) live at a snapshot, for one table or all."""
    rows = _file_rows(lake, table, at)
    sid = next(rows)
    return FileList(sid, tuple(FileRow(*row) for row in rows))


def file_stream(lake: Lake, table: str | None = None, *, at: SnapshotSelector = LATEST) -> FileStream:
    """`files` read while they are written: snapshot and table resolved now (errors before any output), the
    files streamed from the catalog cursor as the stream is consumed (inside the open lake)."""
    rows = _file_rows(lake, table, at)
    return FileStream(next(rows), rows)


def _file_rows(lake: Lake, table: str | None, at: SnapshotSelector) -> Iterator[Any]:
    """The snapshot id once set up, then each file as a tuple of `FileRow`'s fields, in one reader."""
    with lake.reader() as r:
        snap = at.resolve(r)
        sid = snap.snapshot_id
        tables = [r.find_table(sid, table)] if table else r.tables(sid)
        schemas = {sc.schema_id: sc for sc in r.schemas(sid)}
        root = r.data_path
        where = {t.table_id: (t.schema_name, t.name, table_dir(root, schemas[t.schema_id], t)) for t in tables}
        yield sid
        for tid, fid, path, rel, records, size, begin, did, dpath, drel, deletes in r.file_listing(sid, list(where)):
            schema_name, table_name, tdir = where[tid]
            yield (schema_name, table_name, fid, tdir + path if as_bool(rel) else path, records or 0, size or 0,
                   begin, None if did is None else tdir + dpath if as_bool(drel) else dpath,
                   0 if did is None else deletes or 0)


HISTOGRAM = ((1 << 20, "< 1 MiB"), (8 << 20, "1-8 MiB"), (64 << 20, "8-64 MiB"), (256 << 20, "64-256 MiB"))


def _histogram(counts: list[int]) -> dict[str, int]:
    """Bucket counts (one per `HISTOGRAM` limit, then the rest) by their labels."""
    return dict(zip([label for _, label in HISTOGRAM] + [">= 256 MiB"], counts, strict=True))


def _flatten(cols: tuple[ColumnInfo, ...], prefix: str = "") -> list[tuple[str, ColumnInfo]]:
    out: list[tuple[str, ColumnInfo]] = []
    for c in cols:
        name = prefix + c.name
        out.append((name, c))
        out.extend(_flatten(c.children, name + "."))
    return out


def _sort_key(type_name: str, value: str) -> Any:
    """Compare stats strings by their type, as DuckDB does (numbers numerically, the rest as text)."""
    try:
        if type_name in INT_TYPES:
            return int(value)
        if type_name in FLOAT_TYPES:
            return float(value)
        if type_name.startswith("decimal"):
            return Decimal(value)
    except (ValueError, InvalidOperation):
        pass
    return value


def _stat_row(name: str, col: ColumnInfo, st: ColumnStatsSummary | None) -> ColumnStatRow:
    if st is None:
        return ColumnStatRow(col.column_id, name, None, None, None, None, None)
    return ColumnStatRow(
        column_id=col.column_id, name=name,
        min=min(st.mins, key=lambda v: _sort_key(col.type, v)) if st.mins else None,
        max=max(st.maxs, key=lambda v: _sort_key(col.type, v)) if st.maxs else None,
        null_count=st.null_count, value_count=st.value_count, contains_nan=st.contains_nan,
    )


@dataclass(frozen=True)
class ViewColumnRow:
    """A view's column and its comment (DuckLake 1.1's view column comments)."""

    name: str
    comment: str | None


@dataclass(frozen=True)
class ViewDetail:
    """One view in detail."""

    schema: str
    view: str
    view_id: int
    snapshot_id: int
    sql: str | None
    comment: str | None
    columns: tuple[ViewColumnRow, ...]

    def to_json(self) -> Any:
        """Stable JSON shape (`inspect VIEW --format json`)."""
        return jsonable(self)

    def sections(self) -> list[Section]:
        """The view's facts, then its columns with their comments (the CSV section)."""
        facts = (("view", f"{self.schema}.{self.view} (id {self.view_id})"), ("snapshot", self.snapshot_id),
                 ("sql", self.sql or "-"), ("comment", self.comment or "-"))
        return [Section("View", ("property", "value"), facts, csv=False),
                Section("Columns", ("name", "comment"), tuple((c.name, c.comment) for c in self.columns))]


def _view_detail(r: LakeReader, view: ViewInfo, sid: int) -> ViewDetail:
    """A view's facts and columns: its aliases, then the query's own names (where its text tells them), each with
    the comment stored under the query's name."""
    from ducklake_cli.engine.planning.sql_rewrite import view_column_aliases

    comments = view.column_comments()
    aliases = view_column_aliases(view.column_aliases)
    query = view_query_columns(view, r.tables(sid), nested=r.v11)
    names = [(a, query[i] if i < len(query) else a) for i, a in enumerate(aliases)]
    names += [(q, q) for q in query[len(aliases):] if q]
    listed = {own for _, own in names}
    names += [(own, own) for own in comments if own not in listed]  # e.g. columns of a `*`
    tags = dict(r.object_tags(sid, view.view_id))
    return ViewDetail(view.schema_name, view.name, view.view_id, sid, view.sql, tags.get("comment"),
                      tuple(ViewColumnRow(shown, comments.get(own)) for shown, own in names))


def table_detail(lake: Lake, table: str, *, at: SnapshotSelector = LATEST) -> TableDetail | ViewDetail:
    """One table (or view) in detail at a snapshot."""
    with lake.reader() as r:
        snap = at.resolve(r)
        sid = snap.snapshot_id
        try:
            t = r.find_table(sid, table)
        except NotFoundError:
            view = pick_entry(r.views(sid), split_qualified(table), nested=r.v11)
            if view is None:
                raise
            return _view_detail(r, view, sid)
        schemas = r.schemas(sid)
        root = r.data_path
        counts = table_counts(r, snapshot_id=sid, data_path=root, tables=[t], schemas=schemas,
                              storage_options=lake.storage_options)[t.table_id]
        tdir = table_dir(root, next(sc for sc in schemas if sc.schema_id == t.schema_id), t)
        leaves = t.leaf_columns()
        by_id = t.column_by_id()
        stats = r.column_stats_at(sid, t.table_id, {c.column_id: by_id[c.column_id].type for c in leaves})
        comments = {cid: v for cid, k, v in t.column_tags if k == "comment"}
        flat = _flatten(t.columns)
        names = {c.column_id: n for n, c in flat}
        deletes = r.live_delete_files(sid, t.table_id)
        partitioning = tuple(transform_text(p.transform, names.get(p.column_id, f"#{p.column_id}"))
                             for p in (t.partition.fields if t.partition else ()))
        return TableDetail(
            schema=t.schema_name, table=t.name, table_id=t.table_id, table_uuid=t.table_uuid, snapshot_id=sid,
            path=tdir, comment=t.comment(), tags=dict(t.tags), live_rows=counts.live_rows,
            data_files=counts.data_files, data_bytes=counts.data_bytes,
            columns=tuple(ColumnRow(c.column_id, n, c.type_text(), c.nulls_allowed,
                                    None if c.default_value in (None, "NULL") else c.default_value,
                                    c.initial_default, comments.get(c.column_id)) for n, c in flat),
            partitioning=partitioning,
            sort_keys=tuple(f"{k.expression} {k.direction} {k.null_order}" for k in t.sort_keys),
            column_stats=tuple(_stat_row(names[leaf.column_id], by_id[leaf.column_id], stats.get(leaf.column_id))
                               for leaf in leaves),
            file_size_histogram=_histogram(r.size_histogram(sid, t.table_id, [limit for limit, _ in HISTOGRAM])),
            delete_files=tuple(DeleteFileRow(d.delete_file_id, d.data_file_id, file_path(tdir, d), d.format,
                                             d.delete_count, d.file_size_bytes, d.begin_snapshot, d.partial_max)
                               for d in deletes),
            inlined=tuple(InlinedRow(i.table_name, i.schema_version, r.inlined_row_count(sid, i))
                          for i in t.inlined_tables),
            options=effective_options(r.metadata(), table_id=t.table_id, schema_id=t.schema_id,
                                      entries=table_entries([t], schemas)),
        )
