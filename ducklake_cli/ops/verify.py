"""`ducklake verify`: is the lake healthy at its latest snapshot? Live files exist with their recorded sizes;
with `deep`, footers agree with the catalog (row counts, field ids, min/max bounds); registered inlined tables
exist; the snapshot, schema-version and id sequences are consistent. `plan_repair` ends damaged files in one new
snapshot so the lake reads again (never deleting a file)."""

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
    from ducklake_cli.catalog.models import ColumnInfo, ColumnStats, NameMapping, TableInfo
    from ducklake_cli.lake import Lake, LakeReader
    from ducklake_cli.storage.footers import FooterSummary, LeafBounds

# Damage `--repair` can end a file for: the file cannot be read at all.
REPAIRABLE = frozenset({"missing_file", "empty_file", "unreadable_file"})
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
    snapshots = r.snapshots()
    latest = snapshots[-1] if snapshots else r.latest_snapshot()
    sid = latest.snapshot_id
    tables = [r.find_table(sid, table)] if table else r.tables(sid)
    ids = [t.table_id for t in tables]
    by_id = {t.table_id: t for t in tables}
    dirs = _dirs(r, sid, tables)
    files: list[_File] = []
    for d in r.data_files(sid, ids):
        files.append(_File("data", by_id[d.table_id], d.data_file_id, file_path(dirs[d.table_id], d),
                           d.file_size_bytes, d.record_count, (d.file_format or "parquet").lower() == "parquet",
                           bool(d.encryption_key), d.data_file_id, d.mapping_id))
    for x in r.delete_files(sid, ids):
        files.append(_File("delete", by_id[x.table_id], x.delete_file_id, file_path(dirs[x.table_id], x),
                           x.file_size_bytes, x.delete_count, (x.format or "parquet").lower() == "parquet",
                           bool(x.encryption_key), x.data_file_id))
    refs = cv.inlined_refs(r.conn, ids)
    findings = [*cv.inlined_findings(r.conn, r.backend, refs), *cv.sequence_findings(snapshots),
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
                   footers: Mapping[str, FooterSummary | str], cat: _Catalog, checked: dict[str, int]
                   ) -> list[Problem]:
    out: list[Problem] = []
    for f in files:
        def add(kind: str, detail: str, f: _File = f) -> None:
            what = "data file" if f.kind == "data" else f"delete file (of data file {f.data_file_id})"
            out.append(Problem(kind, f"{what}: {detail}", f.table.qualified_name, f.kind, f.path, f.file_id,
                               kind in REPAIRABLE))

        size = sizes.get(f.path)
        footer = footers.get(f.path)
        if size is None:
            add("missing_file", f"does not exist (catalog records {f.size} bytes)")
            continue
        if size == 0:
            add("empty_file", f"is 0 bytes (catalog records {f.size})")
            continue
        if isinstance(footer, str):
            add("unreadable_file", f"{size} bytes (catalog records {f.size}); {footer.replace(f.path, 'the file')}")
            continue
        if size != f.size:
            add("size_mismatch", f"{size} bytes, catalog records {f.size}")
        if footer is None or not cat.deep:  # without --deep a footer is read only to tell a truncated file
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

    with lake.reader() as r:
        cat = _gather(r, table, deep)
    sizes = _sizes([f.path for f in cat.files], lake.storage_options)
    # Footers: every Parquet file when deep; otherwise only those whose size is off (truncated, or worse).
    wanted = [f.path for f in cat.files if f.parquet and not f.encrypted and sizes.get(f.path)
              and (deep or sizes.get(f.path) != f.size)]
    footers = read_summaries(sorted(set(wanted)), lake.storage_options)
    checked = {"tables": len(cat.tables), "data_files": sum(f.kind == "data" for f in cat.files),
               "delete_files": sum(f.kind == "delete" for f in cat.files),
               "bytes": sum(f.size for f in cat.files), "inlined_tables": cat.inlined, "snapshots": cat.snapshots,
               "footers": 0, "stats_bounds": 0,
               # footers of encrypted files need the key: --deep cannot check their counts or bounds
               "footers_skipped_encrypted": sum(1 for f in cat.files if deep and f.parquet and f.encrypted
                                                and sizes.get(f.path))}
    problems = _file_problems(cat.files, sizes, footers, cat, checked)
    names = {t.table_id: t.qualified_name for t in cat.tables}
    problems += [Problem(x.kind, x.detail, names.get(x.table_id) if x.table_id is not None else None)
                 for x in cat.findings if x.table_id is None or x.table_id in names or table is None]
    return VerifyReport(lake.target.display(), cat.snapshot_id, deep, table, checked, tuple(problems))


# ----- repair ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RepairReport(MaintenanceReport):
    """The repair plan (or what it did): data files ended, and the verify problems it acted on."""

    def _ended(self) -> list[FileAction]:
        return [f for f in self.files if f.action == "end"]

    def is_empty(self) -> bool:
        """No file to end."""
        return not self._ended()

    def headline(self) -> str:
        """One line for people."""
        verb = "would" if self.dry_run else "did"
        left = int(self.extra.get("unrepairable", 0))
        tail = f"; {left} problem(s) --repair cannot fix" if left else ""
        return f"repair: {verb} end {len(self._ended())} damaged data file(s) in one snapshot{tail}"

    def to_json(self) -> Any:
        """`{verb, catalog, dry_run, files[{path, action, bytes, reason}], notes, healthy, unrepairable,
        snapshot_id, problems[…]}` (none of expire's or cleanup's counts)."""
        out: dict[str, Any] = {"verb": self.verb, "catalog": self.catalog, "dry_run": self.dry_run,
                               "files": [{"path": f.path, "action": f.action, "bytes": f.bytes, "reason": f.reason}
                                         for f in self.files], "notes": list(self.notes)}
        out.update(self.extra)
        return out

    def sections(self) -> list[Section]:
        """The files ended (the CSV section) and notes."""
        out = [Section("repair: " + ("Plan" if self.dry_run else "Done"), ("action", "path", "bytes", "reason"),
                       tuple((f.action, f.path, f.bytes, f.reason) for f in self.files))]
        if self.notes:
            out.append(Section("Notes", ("note",), tuple((n,) for n in self.notes), csv=False))
        return out


class RepairPlan(Plan):
    """End every live data file that is missing, empty or unreadable, or whose delete file is (its deleted rows
    must not come back), in one snapshot with change `deleted_from_table`; files are never deleted."""

    verb = "repair"

    def __init__(self, found: VerifyReport, ends: Mapping[int, Mapping[int, tuple[str, int, str]]]) -> None:
        self.found = found
        self.ends = ends  # table id → data file id → (path, recorded bytes, reason)

    def report(self) -> RepairReport:
        """The files to end."""
        files = tuple(FileAction(path, "end", size, reason) for per in self.ends.values()
                      for path, size, reason in per.values())
        left = [p for p in self.found.problems if not p.repairable]
        notes = ("ending a file removes its rows from the latest snapshot; earlier snapshots still name it",) \
            if files else ()
        # healthy: as the lake is after this run (a dry run changes nothing)
        return RepairReport(self.verb, self.found.catalog, True, files=files, notes=notes, extra={
            "healthy": self.found.healthy, "unrepairable": len(left), "snapshot_id": None,
            "problems": [p.to_json() for p in self.found.problems]})

    def question(self) -> str:
        """The confirmation question."""
        n = sum(len(v) for v in self.ends.values())
        return f"end {n} damaged data file(s) (their rows leave the table) — go ahead?"

    def apply(self, lake: Lake) -> RepairReport:
        """Commit one snapshot ending the files still live."""
        from ducklake_cli.catalog.writes import end_data_files

        ended: list[int] = []

        def build(tx: Any) -> None:
            ended.clear()
            for tid, per in self.ends.items():
                n = end_data_files(tx, tid, sorted(per))
                if n:
                    ended.append(n)
                    tx.change("deleted_from_table", tid)

        total = sum(len(v) for v in self.ends.values())
        sid = lake.commit(build, message=f"ducklake verify --repair: ended {total} damaged data file(s)")
        report = self.report()
        left = int(report.extra["unrepairable"])
        return dataclasses.replace(report, dry_run=False, extra={**report.extra, "snapshot_id": sid,
                                                                 "healthy": not left})


def plan_repair(lake: Lake, *, table: str | None = None, deep: bool = False) -> RepairPlan:
    """Verify, then plan to end the data files the damage makes unreadable (a damaged delete file ends its data
    file: dropping only the delete file would bring deleted rows back)."""
    found = verify(lake, table=table, deep=deep)
    with lake.reader() as r:
        sid = r.latest_snapshot().snapshot_id
        tables = [r.find_table(sid, table)] if table else r.tables(sid)
        ids = [t.table_id for t in tables]
        dirs = _dirs(r, sid, tables)
        data = {d.data_file_id: (d, file_path(dirs[d.table_id], d)) for d in r.data_files(sid, ids)}
        owner = {x.delete_file_id: x.data_file_id for x in r.delete_files(sid, ids)}
    ends: dict[int, dict[int, tuple[str, int, str]]] = defaultdict(dict)
    for p in found.problems:
        if not p.repairable or p.file_id is None:
            continue
        fid = owner.get(p.file_id) if p.file == "delete" else p.file_id
        if fid is None or fid not in data:
            continue
        d, path = data[fid]
        what = p.kind.removesuffix("_file").replace("_", " ")
        reason = f"its delete file is {what}: {p.path}" if p.file == "delete" else f"{what} file"
        ends[d.table_id].setdefault(d.data_file_id, (path, d.file_size_bytes, reason))
    return RepairPlan(found, ends)
