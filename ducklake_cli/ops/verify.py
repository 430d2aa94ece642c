"""`ducklake verify`: is the lake healthy at its latest snapshot? Live files exist with their recorded sizes;
with `deep`, footers agree with the catalog (row counts, field ids, min/max bounds); registered inlined tables
exist; the snapshot, schema-version and id sequences are consistent. `plan_repair` ends damaged files in one new
snapshot so the lake reads again, saying how many rows each table loses, and cuts files that only have bytes
appended after their recorded size back to it (no rows lost); it never deletes a file."""

from __future__ import annotations

import dataclasses
import posixpath
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog import verify as cv
from ducklake_cli.catalog.paths import file_path, table_dir
from ducklake_cli.catalog.types import ROW_ID_FIELD_ID, SNAPSHOT_ID_FIELD_ID
from ducklake_cli.ops.maintenance import FileAction, MaintenanceReport, Plan
from ducklake_cli.ops.results import Section
from ducklake_cli.storage.files import split_protocol

if TYPE_CHECKING:
    from ducklake_cli.catalog.models import ColumnInfo, ColumnStats, DeleteFile, NameMapping, TableInfo
    from ducklake_cli.lake import Lake, LakeReader
    from ducklake_cli.storage.footers import FooterSummary, LeafBounds

# Damage `--repair` ends a data file for (the file cannot be read at all), and damage it undoes without losing a row.
ENDED_FOR = frozenset({"missing_file", "empty_file", "unreadable_file"})
APPENDED = "appended_bytes"  # a whole Parquet file of the recorded size, then more bytes: truncated back
REPAIRABLE = ENDED_FOR | {APPENDED}
_NESTED = frozenset({"struct", "list", "map"})
INTERNAL_FIELD_IDS = frozenset({ROW_ID_FIELD_ID, SNAPSHOT_ID_FIELD_ID})  # DuckDB's row-id and snapshot columns


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the lake."""

    kind: str
    detail: str
    table: str | None = None
    file: str | None = None  # "data" | "delete" for a file's problem
    path: str | None = None
    file_id: int | None = None
    repairable: bool = False

    def to_json(self) -> dict[str, Any]:
        """`{kind, table, file, path, file_id, detail, repairable}`."""
        return {"kind": self.kind, "table": self.table, "file": self.file, "path": self.path,
                "file_id": self.file_id, "detail": self.detail, "repairable": self.repairable}


@dataclass(frozen=True)
class VerifyReport:
    """What `verify` checked (counts) and found (problems); healthy when nothing was found."""

    catalog: str
    snapshot_id: int
    deep: bool
    table: str | None
    checked: Mapping[str, int]
    problems: tuple[Problem, ...]

    @property
    def healthy(self) -> bool:
        """No problem found."""
        return not self.problems

    def headline(self) -> str:
        """One line for people."""
        what = f"{self.checked.get('data_files', 0)} data and {self.checked.get('delete_files', 0)} delete file(s)"
        skipped = self.checked.get("footers_skipped_encrypted", 0)
        note = f"; {skipped} encrypted file(s) not read deeply: no key" if skipped else ""
        if self.healthy:
            return (f"verify: healthy at snapshot {self.snapshot_id} ({what} checked{', deep' if self.deep else ''}"
                    f"{note})")
        fixable = sum(p.repairable for p in self.problems)
        return (f"verify: {len(self.problems)} problem(s) at snapshot {self.snapshot_id} ({what} checked; "
                f"{fixable} repairable with --repair{note})")

    def to_json(self) -> Any:
        """`{healthy, catalog, snapshot_id, deep, table, checked{…}, problems[{kind, table, path, file_id, detail,
        repairable}]}`."""
        return {"healthy": self.healthy, "catalog": self.catalog, "snapshot_id": self.snapshot_id, "deep": self.deep,
                "table": self.table, "checked": dict(self.checked), "problems": [p.to_json() for p in self.problems]}

    def sections(self) -> list[Section]:
        """Counts checked, then the problems (the CSV section)."""
        checked = Section("verify: checked", ("what", "count"), tuple(self.checked.items()), csv=False)
        problems = Section("Problems", ("kind", "table", "file", "path", "file id", "detail", "repairable"),
                           tuple((p.kind, p.table, p.file, p.path, p.file_id, p.detail, p.repairable)
                                 for p in self.problems),
                           table=bool(self.problems))
        return [checked, problems]


@dataclass(frozen=True)
class _File:
    """A live data or delete file to check."""

    kind: str  # "data" | "delete"
    table: TableInfo
    file_id: int
    path: str
    size: int
    rows: int
    parquet: bool
    encrypted: bool
    data_file_id: int  # the data file it belongs to (itself for a data file)
    mapping_id: int | None = None


@dataclass
class _Catalog:
    """What one read transaction gathered."""

    snapshot_id: int
    tables: list[TableInfo]
    files: list[_File]
    findings: list[cv.Finding]
    inlined: int
    snapshots: int
    deep: bool
    stats: dict[int, list[ColumnStats]] = field(default_factory=dict)  # data file id → its column stats
    mappings: dict[int, list[NameMapping]] = field(default_factory=dict)
    ever: dict[int, set[int]] = field(default_factory=dict)  # table id → every column id it ever had
    columns: dict[int, dict[int, ColumnInfo]] = field(default_factory=dict)  # table id → its columns by id


def _dirs(r: LakeReader, sid: int, tables: Sequence[TableInfo]) -> dict[int, str]:
    schemas = {sc.schema_id: sc for sc in r.schemas(sid)}
    return {t.table_id: table_dir(r.data_path, schemas.get(t.schema_id), t) for t in tables}


def _gather(r: LakeReader, table: str | None, deep: bool) -> _Catalog:
    """The catalog side of a check: tables, findings and, with `deep`, every live file with its stats (without,
    the files are streamed by `_odd_files`)."""
    snapshots = r.snapshots()
    latest = snapshots[-1] if snapshots else r.latest_snapshot()
    sid = latest.snapshot_id
    tables = [r.find_table(sid, table)] if table else r.tables(sid)
    ids = [t.table_id for t in tables]
    by_id = {t.table_id: t for t in tables}
    files: list[_File] = []
    dirs = _dirs(r, sid, tables) if deep else {}
    for d in r.data_files(sid, ids) if deep else ():
        files.append(_File("data", by_id[d.table_id], d.data_file_id, file_path(dirs[d.table_id], d),
                           d.file_size_bytes, d.record_count, (d.file_format or "parquet").lower() == "parquet",
                           bool(d.encryption_key), d.data_file_id, d.mapping_id))
    for x in r.delete_files(sid, ids) if deep else ():
        files.append(_File("delete", by_id[x.table_id], x.delete_file_id, file_path(dirs[x.table_id], x),
                           x.file_size_bytes, x.delete_count, (x.format or "parquet").lower() == "parquet",
                           bool(x.encryption_key), x.data_file_id))
    refs = cv.inlined_refs(r.conn, ids)
    findings = [*cv.inlined_findings(r.conn, r.backend, refs, version=r.format_version()),
                *cv.sequence_findings(snapshots),
                *cv.schema_version_findings(r.conn, snapshots), *cv.next_id_findings(r.conn, r.backend, latest),
                *cv.lifetime_findings(r.conn, r.backend, sid)]
    out = _Catalog(sid, tables, files, findings, len(refs), len(snapshots), deep)
    if deep:
        data = defaultdict(list)
        for f in files:
            if f.kind == "data":
                data[f.table.table_id].append(f.file_id)
        for tid, fids in data.items():
            out.stats.update(r.file_column_stats(tid, fids))
        out.mappings = dict(r.name_mappings({f.mapping_id for f in files if f.mapping_id is not None}))
        out.ever = cv.column_ids_ever(r.conn, ids)
    return out


def _odd_files(r: LakeReader, cat: _Catalog, storage_options: Mapping[str, Any],
               checked: dict[str, int]) -> tuple[list[_File], dict[str, int | None]]:
    """Live files streamed from the catalog as tuples and stat'ed a batch at a time (`SizeProbe`), counted into
    `checked`; only those whose size on storage is not the recorded one (missing, empty, cut or grown: the only
    files a check that is not deep reports) come back, with their sizes."""
    from ducklake_cli.catalog.queries import as_bool
    from ducklake_cli.storage.listing import SizeProbe

    by_id = {t.table_id: t for t in cat.tables}
    dirs = _dirs(r, cat.snapshot_id, cat.tables)
    probe = SizeProbe(storage_options)
    flags: dict[Any, bool] = {}
    odd: list[_File] = []
    sizes: dict[str, int | None] = {}
    for kind, rows in cv.live_file_rows(r.conn, cat.snapshot_id, list(by_id)):
        paths = []
        for row in rows:
            relative = flags.get(row[3])
            if relative is None:
                relative = flags[row[3]] = bool(as_bool(row[3]))
            paths.append(dirs[row[1]] + row[2] if relative else row[2])
        found = probe.sizes(paths)
        checked[f"{kind}_files"] += len(rows)
        for row, path, size in zip(rows, paths, found, strict=True):
            recorded = row[4] or 0
            checked["bytes"] += recorded
            if size is None or size == 0 or size != recorded:
                odd.append(_File(kind, by_id[row[1]], row[0], path, recorded, row[5] or 0,
                                 (row[6] or "parquet").lower() == "parquet", bool(row[7]), row[8],
                                 row[9] if kind == "data" else None))
                sizes[path] = size
    return odd, sizes


def _sizes(paths: Sequence[str], storage_options: Mapping[str, Any]) -> dict[str, int | None]:
    from ducklake_cli.storage.listing import file_sizes

    by_proto: dict[str, list[str]] = defaultdict(list)
    for p in paths:
        by_proto[split_protocol(p)[0]].append(p)
    out: dict[str, int | None] = {}
    for group in by_proto.values():  # one file system per protocol (registered files may live elsewhere)
        out.update(file_sizes(group, storage_options))
    return out


def _positional(f: _File, s: FooterSummary) -> bool:
    """A file with neither field ids nor a name mapping: read by column position, as DuckDB reads it (not one
    named like DuckLake's own, which readers take to carry field ids)."""
    return (f.mapping_id is None and all(fid is None for fid in s.top_field_ids)
            and not posixpath.basename(f.path).startswith("ducklake-"))


def _field_ids(f: _File, s: FooterSummary, cat: _Catalog) -> list[str]:
    """What is wrong with how a data file's columns map to the table's (by field id, name mapping or position)."""
    ever = cat.ever.get(f.table.table_id, set()) | INTERNAL_FIELD_IDS
    if f.mapping_id is not None:
        rows = cat.mappings.get(f.mapping_id, [])
        names = set(s.top_names)
        folded = {n.lower() for n in names}
        out = [f"mapped column {m.source_name!r} is not in the file" for m in rows
               if m.parent_column is None and not m.is_partition and m.source_name not in names
               and m.source_name.lower() not in folded]
        out += [f"name mapping {f.mapping_id} targets field id {m.target_field_id}, no column of the table"
                for m in rows if m.target_field_id not in ever]
        return out
    if _positional(f, s):
        columns = f.table.columns
        if len(s.top_names) != len(columns):
            return [f"neither field ids nor a name mapping, and {len(s.top_names)} columns where the table has "
                    f"{len(columns)} (it cannot be read by position)"]
        if any(c.children for c in columns):
            return ["neither field ids nor a name mapping, and the table has nested columns (it cannot be read "
                    "by position)"]
        return []
    out = [f"column {name!r} has no field id" for name, fid in zip(s.top_names, s.top_field_ids, strict=True)
           if fid is None]
    unknown = sorted({fid for fid in s.top_field_ids if fid is not None and fid not in ever}
                     | {fid for fid in s.nested_field_ids if fid not in ever})
    if unknown:
        out.append(f"field id(s) {', '.join(map(str, unknown))} are no column of the table")
    return out


def _leaf_finder(f: _File, s: FooterSummary, cat: _Catalog) -> Callable[[int], LeafBounds | None]:
    """How a table column id finds its leaf in the file: field id, top-level name mapping or position (a nested
    column reached through a mapping is left unchecked)."""
    if f.mapping_id is not None:
        by_target = {m.target_field_id: m.source_name for m in cat.mappings.get(f.mapping_id, [])
                     if m.parent_column is None and not m.is_partition}
        return lambda cid: s.by_path.get(by_target[cid]) if cid in by_target else None
    if _positional(f, s):
        by_position = {c.column_id: name for c, name in zip(f.table.columns, s.top_names, strict=False)}
        return lambda cid: s.by_path.get(by_position[cid]) if cid in by_position else None
    return s.by_field_id.get


def _bounds(f: _File, s: FooterSummary, cat: _Catalog) -> tuple[int, list[str]]:
    """(bounds compared, what is wrong) for a data file's recorded min/max against its footer."""
    columns = cat.columns.get(f.table.table_id)
    if columns is None:
        columns = cat.columns[f.table.table_id] = f.table.column_by_id()
    find = _leaf_finder(f, s, cat)
    # only a file written elsewhere (registered: a name mapping or a foreign name) may have cut string bounds short
    foreign = f.mapping_id is not None or not posixpath.basename(f.path).startswith("ducklake-")
    compared, out = 0, []
    for st in cat.stats.get(f.file_id, []):
        col = columns.get(st.column_id)
        if col is None or col.type in _NESTED or (st.min_value is None and st.max_value is None):
            continue
        leaf = find(st.column_id)
        if leaf is None:
            continue
        compared += 1
        wrong = cv.bound_problem(st.min_value, st.max_value, leaf.min, leaf.max, col.type, leaf.physical_type,
                                 may_truncate=foreign)
        if wrong:
            out.append(f"column {col.name!r}: {wrong}")
    return compared, out


def _file_problems(files: Sequence[_File], sizes: Mapping[str, int | None],
                   footers: Mapping[str, FooterSummary | str], cat: _Catalog, checked: dict[str, int],
                   prefixes: Mapping[str, FooterSummary | str]) -> list[Problem]:
    """`prefixes`: for a file larger than recorded, the summary of the Parquet file its recorded size makes."""
    out: list[Problem] = []
    for f in files:
        def add(kind: str, detail: str, f: _File = f) -> None:
            what = "data file" if f.kind == "data" else f"delete file (of data file {f.data_file_id})"
            out.append(Problem(kind, f"{what}: {detail}", f.table.qualified_name, f.kind, f.path, f.file_id,
                               kind in REPAIRABLE))

        size = sizes.get(f.path)
        footer = footers.get(f.path)
        prefix = prefixes.get(f.path)
        if size is None:
            add("missing_file", f"does not exist (catalog records {f.size} bytes)")
            continue
        if size == 0:
            add("empty_file", f"is 0 bytes (catalog records {f.size})")
            continue
        if prefix is not None and not isinstance(prefix, str):
            add(APPENDED, f"{size:,} bytes, catalog records {f.size:,}: a whole Parquet file of that size, then "
                          f"{size - f.size:,} byte(s) appended (--repair cuts them off; no rows lost)")
            footer = prefix
        elif isinstance(footer, str):
            add("unreadable_file", f"{size} bytes (catalog records {f.size}); {footer.replace(f.path, 'the file')}")
            continue
        elif size != f.size:
            add("size_mismatch", f"{size} bytes, catalog records {f.size}")
        if footer is None or isinstance(footer, str) or not cat.deep:  # else only read to tell a damaged file
            continue
        checked["footers"] += 1
        if footer.num_rows != f.rows:
            recorded = "record_count" if f.kind == "data" else "delete_count"
            add("record_count_mismatch", f"footer holds {footer.num_rows} rows, catalog records {recorded} {f.rows}")
        if f.kind != "data":
            continue
        for wrong in _field_ids(f, footer, cat):
            add("field_id_mismatch", wrong)
        compared, lies = _bounds(f, footer, cat)
        checked["stats_bounds"] += compared
        for wrong in lies:
            add("stats_bound", wrong)
    return out


def verify(lake: Lake, *, table: str | None = None, deep: bool = False) -> VerifyReport:
    """Check the lake (or one table) at its latest snapshot; with `deep`, read every Parquet footer too."""
    from ducklake_cli.storage.footers import read_summaries

    checked = {"tables": 0, "data_files": 0, "delete_files": 0, "bytes": 0}
    with lake.reader() as r:
        cat = _gather(r, table, deep)
        if not deep:  # a file whose size is as recorded has nothing to report: keep only the others
            cat.files, sizes = _odd_files(r, cat, lake.storage_options, checked)
    if deep:
        sizes = _sizes([f.path for f in cat.files], lake.storage_options)
        checked.update(data_files=sum(f.kind == "data" for f in cat.files),
                       delete_files=sum(f.kind == "delete" for f in cat.files), bytes=sum(f.size for f in cat.files))
    # A file larger than recorded: is what the catalog records (its first bytes) a whole Parquet file?
    grown = {f.path: f.size for f in cat.files if f.parquet and not f.encrypted and (sizes.get(f.path) or 0) > f.size}
    prefixes = read_summaries(sorted(grown), lake.storage_options, sizes=grown)
    # Footers: every Parquet file when deep; otherwise only those whose size is off (truncated, or worse).
    wanted = [f.path for f in cat.files if f.parquet and not f.encrypted and sizes.get(f.path)
              and (deep or sizes.get(f.path) != f.size) and isinstance(prefixes.get(f.path, ""), str)]
    footers = read_summaries(sorted(set(wanted)), lake.storage_options)
    checked.update({"tables": len(cat.tables), "inlined_tables": cat.inlined, "snapshots": cat.snapshots,
                    "footers": 0, "stats_bounds": 0,
                    # footers of encrypted files need the key: --deep cannot check their counts or bounds
                    "footers_skipped_encrypted": sum(1 for f in cat.files if deep and f.parquet and f.encrypted
                                                     and sizes.get(f.path))})
    problems = _file_problems(cat.files, sizes, footers, cat, checked, prefixes)
    names = {t.table_id: t.qualified_name for t in cat.tables}
    problems += [Problem(x.kind, x.detail, names.get(x.table_id) if x.table_id is not None else None)
                 for x in cat.findings if x.table_id is None or x.table_id in names or table is None]
    return VerifyReport(lake.target.display(), cat.snapshot_id, deep, table, checked, tuple(problems))


# ----- repair ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EndFile:
    """A live data file the repair ends, with the rows the table reads from it now (they leave the table)."""

    table: str
    path: str
    size: int  # recorded bytes
    reason: str
    rows: int


@dataclass(frozen=True)
class Truncation:
    """A file with bytes appended after its recorded size, cut back to it (no row lost)."""

    table: str
    path: str
    size: int  # recorded bytes: what it is cut back to
    actual: int  # its size when verified (it must still have it)


def _rows_phrase(rows_lost: Mapping[str, int]) -> str:
    return ", ".join(f"{t} loses {n:,} row(s)" for t, n in sorted(rows_lost.items()))


@dataclass(frozen=True)
class RepairReport(MaintenanceReport):
    """The repair plan (or what it did): data files ended (with the rows each table loses), files truncated back
    to their recorded size, and the verify problems it acted on."""

    def _of_kind(self, action: str) -> list[FileAction]:
        return [f for f in self.files if f.action == action]

    def is_empty(self) -> bool:
        """No file to end or truncate."""
        return not self._of_kind("end") and not self._of_kind("truncate")

    def _what(self) -> str:
        ended, cut = len(self._of_kind("end")), len(self._of_kind("truncate"))
        parts = []
        if ended or not cut:
            rows = _rows_phrase(self.extra.get("rows_lost", {}))
            parts.append(f"end {ended} damaged data file(s) in one snapshot" + (f" ({rows})" if rows else ""))
        if cut:
            parts.append(f"truncate {cut} file(s) with bytes appended back to their recorded size (no rows lost)")
        return " and ".join(parts)

    def headline(self) -> str:
        """One line for people."""
        verb = "would" if self.dry_run else "did"
        left = int(self.extra.get("unrepairable", 0))
        tail = f"; {left} problem(s) --repair cannot fix" if left else ""
        return f"repair: {verb} {self._what()}{tail}"

    def question(self) -> str:
        """The confirmation question: rows lost per table, or none."""
        return f"{self._what()} — go ahead?"

    def to_json(self) -> Any:
        """`{verb, catalog, dry_run, files[{path, action, bytes, reason}], notes, rows_lost{table: rows},
        healthy, unrepairable, snapshot_id, problems[…]}` (none of expire's or cleanup's counts)."""
        out: dict[str, Any] = {"verb": self.verb, "catalog": self.catalog, "dry_run": self.dry_run,
                               "files": [{"path": f.path, "action": f.action, "bytes": f.bytes, "reason": f.reason}
                                         for f in self.files], "notes": list(self.notes)}
        out.update(self.extra)
        return out

    def sections(self) -> list[Section]:
        """The files ended or truncated (the CSV section), rows lost per table, and notes."""
        out = [Section("repair: " + ("Plan" if self.dry_run else "Done"), ("action", "path", "bytes", "reason"),
                       tuple((f.action, f.path, f.bytes, f.reason) for f in self.files))]
        lost = self.extra.get("rows_lost", {})
        if lost:
            out.append(Section("Rows lost", ("table", "rows"), tuple(sorted(lost.items())), csv=False))
        if self.notes:
            out.append(Section("Notes", ("note",), tuple((n,) for n in self.notes), csv=False))
        return out


class RepairPlan(Plan):
    """End every live data file that is missing, empty or unreadable, or whose delete file is (its deleted rows
    must not come back), in one snapshot with change `deleted_from_table`; truncate files that only have bytes
    appended after a whole Parquet file of their recorded size back to it. Files are never deleted."""

    verb = "repair"

    def __init__(self, found: VerifyReport, ends: Mapping[int, Mapping[int, EndFile]],
                 truncations: Sequence[Truncation] = ()) -> None:
        self.found = found
        self.ends = ends  # table id → data file id → the file ended
        self.truncations = tuple(truncations)

    def rows_lost(self) -> dict[str, int]:
        """Rows each table loses at the latest snapshot (tables with a file to end)."""
        out: dict[str, int] = {}
        for per in self.ends.values():
            for e in per.values():
                out[e.table] = out.get(e.table, 0) + e.rows
        return out

    def report(self) -> RepairReport:
        """The files to end (with their rows) and to truncate."""
        files = [FileAction(e.path, "end", e.size, e.reason) for per in self.ends.values() for e in per.values()]
        files += [FileAction(t.path, "truncate", t.size, f"{t.actual - t.size:,} byte(s) appended after the "
                             f"recorded {t.size:,}; no rows lost") for t in self.truncations]
        left = [p for p in self.found.problems if not p.repairable]
        notes = ("ending a file removes its rows from the latest snapshot; earlier snapshots still name it",) \
            if self.ends else ()
        # healthy: as the lake is after this run (a dry run changes nothing)
        return RepairReport(self.verb, self.found.catalog, True, files=tuple(files), notes=notes, extra={
            "rows_lost": self.rows_lost(), "healthy": self.found.healthy, "unrepairable": len(left),
            "snapshot_id": None, "problems": [p.to_json() for p in self.found.problems]})

    def question(self) -> str:
        """The confirmation question, with the rows each table loses."""
        return self.report().question()

    def apply(self, lake: Lake) -> RepairReport:
        """Truncate the files still as verified, then commit one snapshot ending the files still live."""
        from ducklake_cli.catalog.writes import end_data_files
        from ducklake_cli.storage.parquet import truncate_parquet

        for t in self.truncations:
            truncate_parquet(t.path, t.size, lake.storage_options, expected=t.actual)

        def build(tx: Any) -> None:
            for tid, per in self.ends.items():
                if end_data_files(tx, tid, sorted(per)):
                    tx.change("deleted_from_table", tid)

        total = sum(len(v) for v in self.ends.values())
        sid = lake.commit(build, message=f"ducklake verify --repair: ended {total} damaged data file(s)") \
            if total else None
        report = self.report()
        left = int(report.extra["unrepairable"])
        return dataclasses.replace(report, dry_run=False, extra={**report.extra, "snapshot_id": sid,
                                                                 "healthy": not left})


def plan_repair(lake: Lake, *, table: str | None = None, deep: bool = False) -> RepairPlan:
    """Verify, then plan to end the data files the damage makes unreadable (a damaged delete file ends its data
    file: dropping only the delete file would bring deleted rows back), counting the rows each table reads from
    them now, and to truncate files that only have bytes appended after their recorded size."""
    found = verify(lake, table=table, deep=deep)
    with lake.reader() as r:
        sid = r.latest_snapshot().snapshot_id
        tables = [r.find_table(sid, table)] if table else r.tables(sid)
        ids = [t.table_id for t in tables]
        names = {t.table_id: t.qualified_name for t in tables}
        dirs = _dirs(r, sid, tables)
        data = {d.data_file_id: (d, file_path(dirs[d.table_id], d)) for d in r.data_files(sid, ids)}
        deletes = {x.delete_file_id: x for x in r.delete_files(sid, ids)}
        inlined = {tid: r.inlined_deletes(sid, tid) for tid in {d.table_id for d, _ in data.values()}}
    newest: dict[int, DeleteFile] = {}  # data file id → its live delete file (the newest, as readers take it)
    for x in deletes.values():
        if x.data_file_id not in newest or x.begin_snapshot > newest[x.data_file_id].begin_snapshot:
            newest[x.data_file_id] = x
    deleted = {fid: x.delete_count for fid, x in newest.items()}  # rows the catalog records it deletes
    ends: dict[int, dict[int, EndFile]] = defaultdict(dict)
    grown: dict[str, tuple[str, int]] = {}  # path → (table, recorded size)
    for p in found.problems:
        if not p.repairable or p.file_id is None or p.path is None:
            continue
        if p.kind == APPENDED:
            recorded = data[p.file_id][0].file_size_bytes if p.file == "data" and p.file_id in data else \
                deletes[p.file_id].file_size_bytes if p.file == "delete" and p.file_id in deletes else None
            if recorded is not None:
                grown[p.path] = (p.table or "", recorded)
            continue
        fid = deletes[p.file_id].data_file_id if p.file == "delete" and p.file_id in deletes else \
            p.file_id if p.file == "data" else None
        if fid is None or fid not in data:
            continue
        d, path = data[fid]
        what = p.kind.removesuffix("_file").replace("_", " ")
        reason = f"its delete file is {what}: {p.path}" if p.file == "delete" else f"{what} file"
        rows = d.record_count - deleted.get(fid, 0) - inlined.get(d.table_id, {}).get(fid, 0)
        ends[d.table_id].setdefault(fid, EndFile(names[d.table_id], path, d.file_size_bytes, reason, max(rows, 0)))
    now = _sizes(sorted(grown), lake.storage_options) if grown else {}
    truncations = [Truncation(t, path, size, int(now[path] or 0)) for path, (t, size) in sorted(grown.items())
                   if (now.get(path) or 0) > size]
    return RepairPlan(found, ends, truncations)
