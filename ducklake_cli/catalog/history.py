"""Per-snapshot, per-table operation metrics (rows, files and bytes added and removed) from metadata, as the
catalog records them; a few grouped queries over the whole history, never one per snapshot.

Rows: `rows_added` and `rows_deleted` of a snapshot S equal the rows DuckDB's `table_changes(t, S, S)` reports
for it: rows_added = insert + update_postimage, rows_deleted = delete + update_preimage (an update is a delete
and an insert of the same row id). So a running sum of `rows_added - rows_deleted` is the table's row count.

- Added at S: the rows of the data files beginning at S, the inlined rows inserted at S, and the rows of a
  multi-snapshot file (flush, compaction: `partial_max` past `begin_snapshot`) whose embedded inserting
  snapshot is S (rows before `begin_snapshot` count there, rows past `partial_max` at `partial_max`).
- Deleted at S: the delete positions S added, the inlined file deletions at S, the rows still live in the
  data files S ends and the inlined rows S ends. A delete position belongs to its delete file's
  `begin_snapshot`, unless the file embeds each position's snapshot (`_ducklake_internal_snapshot_id`): a delete
  file rewritten in place by a later delete (DuckDB and our DML keep the old positions with their snapshots,
  record the span `begin_snapshot`..`partial_max` and drop the old file's row) or written by a flush (after
  its `begin_snapshot`: its id is at or past that snapshot's `next_file_id`). A non-embedding delete file
  that replaces one ended at its begin (restore) counts the difference of their positions.
- Files rewritten without changing rows count no rows: a flush or compaction keeps its rows at their
  embedded snapshots, and a rewrite (`rewrite_delete`) moves the live rows of the files it ends into files
  that embed their row ids (no `row_id_start`). DuckDB 1.5.5's `table_changes` at a rewrite snapshot reports
  those rows as updated (their insert snapshots are not kept) and the file's inlined deletions once more as
  deleted; we show no row change there, so that the running sum stays the row count.

Only the snapshot ids embedded in multi-snapshot files are read from storage (one column, from row-group
statistics where a row group holds one snapshot): the catalog records a span for them, not a count per
snapshot. Everything else comes from the catalog."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from sqlalchemy import Connection, select

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import Backend
from ducklake_cli.catalog.paths import table_dir
from ducklake_cli.catalog.types import SNAPSHOT_ID_COLUMN, SNAPSHOT_ID_FIELD_ID
from ducklake_cli.catalog.versions import read_version, system_columns

_INLINED_DELETE = re.compile(re.escape(s.INLINED_DELETE_PREFIX) + r"(\d+)$")
_REWRITE = re.compile(r"rewrite_delete:(\d+)")


@dataclass
class Metrics:
    """What one snapshot did to one table (or, summed, to the lake)."""

    rows_added: int = 0
    rows_deleted: int = 0
    data_files_added: int = 0
    data_files_removed: int = 0
    delete_files_added: int = 0
    delete_files_removed: int = 0
    bytes_added: int = 0
    bytes_removed: int = 0
    inlined_rows_added: int = 0
    inlined_rows_deleted: int = 0

    @property
    def files_added(self) -> int:
        """Data and delete files added."""
        return self.data_files_added + self.delete_files_added

    @property
    def files_removed(self) -> int:
        """Data and delete files removed."""
        return self.data_files_removed + self.delete_files_removed

    def add(self, other: Metrics) -> None:
        """Sum another table's metrics into these."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def is_empty(self) -> bool:
        """Nothing added or removed."""
        return not any(getattr(self, f.name) for f in fields(self))

    def as_dict(self) -> dict[str, int]:
        """Every counter, files_added/files_removed included."""
        out = {"rows_added": self.rows_added, "rows_deleted": self.rows_deleted,
               "files_added": self.files_added, "files_removed": self.files_removed}
        out.update({f.name: getattr(self, f.name) for f in fields(self)})
        return out


MetricsBySnapshot = dict[int, dict[int, Metrics]]  # snapshot id → table id → metrics


def _int(v: object) -> int:
    return int(v) if v is not None else 0  # type: ignore[call-overload]


@dataclass(frozen=True)
class _Embedded:
    """A file whose rows (data file: `last` is its partial_max) or positions (delete file: `last` None) count
    at the snapshots they embed."""

    table_id: int
    begin: int
    last: int | None
    path: str
    path_is_relative: bool

    def snapshot(self, embedded: int | None) -> int:
        """Where a row or position counts: rows as DuckDB's insertions take a multi-snapshot file's (those
        before its begin at the begin, those past its partial_max there), positions at their own snapshot."""
        if embedded is None:
            return self.begin
        if self.last is None:
            return embedded
        return min(max(embedded, self.begin), self.last)


def snapshot_metrics(conn: Connection, backend: Backend, table_ids: Iterable[int] | None = None, *,
                     data_path: str | None = None,
                     storage_options: Mapping[str, Any] | None = None) -> MetricsBySnapshot:
    """Metrics of every snapshot that changed a table's rows or files (optionally only of `table_ids`).
    `data_path` (the lake's, resolved) lets multi-snapshot files be read; without it their rows count at their
    `begin_snapshot`."""
    wanted = set(table_ids) if table_ids is not None else None
    out: MetricsBySnapshot = defaultdict(lambda: defaultdict(Metrics))
    q = backend.qualify
    df, dl, sn = q("ducklake_data_file"), q("ducklake_delete_file"), q("ducklake_snapshot")

    def rows(sql: str) -> list[tuple[int, ...]]:
        return [tuple(_int(v) for v in r) for r in conn.exec_driver_sql(sql)
                if wanted is None or _int(r[1]) in wanted]

    rewrites = _rewrites(conn)
    multi = "partial_max > begin_snapshot"  # rows of several snapshots in one file (flush, compaction)
    moved = "row_id_start IS NULL AND partial_max IS NULL"  # a rewrite's file: row ids embedded, one snapshot
    for snap, tid, n, recs, size, embedded, rewritten in rows(
            f"SELECT begin_snapshot, table_id, count(*), sum(record_count), sum(file_size_bytes), "
            f"sum(CASE WHEN {multi} THEN record_count ELSE 0 END), "
            f"sum(CASE WHEN {moved} THEN record_count ELSE 0 END) FROM {df} GROUP BY begin_snapshot, table_id"):
        m = out[snap][tid]
        m.data_files_added += n
        m.bytes_added += size
        # A rewrite's files hold the rows of the files it ends: moved, not inserted (nor deleted, below).
        rewritten = rewritten if (snap, tid) in rewrites else 0
        m.rows_added += recs - (embedded if data_path is not None else 0) - rewritten
        m.rows_deleted -= rewritten
    for snap, tid, n, size in rows(
            f"SELECT end_snapshot, table_id, count(*), sum(file_size_bytes) FROM {df} WHERE end_snapshot IS NOT NULL "
            "GROUP BY end_snapshot, table_id"):
        m = out[snap][tid]
        m.data_files_removed += n
        m.bytes_removed += size
    # Delete files embedding each position's snapshot: rewritten in place (`partial_max`), or written after their
    # begin_snapshot (a flush: the file id is at or past that snapshot's next_file_id). Deletion vectors never do.
    # (A 1.1 Puffin container, `partial_max` past its first blob, embeds each position's snapshot too.)
    embeds = ("((d.partial_max > d.begin_snapshot OR d.delete_file_id >= x.next_file_id) "
              "AND coalesce(d.format, 'parquet') <> 'puffin' "
              "OR d.partial_max > d.begin_snapshot AND d.format = 'puffin')")
    for snap, tid, n, positions, size, embedded in rows(
            f"SELECT d.begin_snapshot, d.table_id, count(*), sum(d.delete_count), sum(d.file_size_bytes), "
            f"sum(CASE WHEN {embeds} THEN d.delete_count ELSE 0 END) FROM {dl} d "
            f"LEFT JOIN {sn} x ON x.snapshot_id = d.begin_snapshot GROUP BY d.begin_snapshot, d.table_id"):
        m = out[snap][tid]
        m.delete_files_added += n
        m.rows_deleted += positions - (embedded if data_path is not None else 0)
        m.bytes_added += size
    # A delete file ending while its data file lives on was replaced: its positions are in the new one too.
    for snap, tid, n, replaced, size in rows(
            f"SELECT d.end_snapshot, d.table_id, count(*), sum(CASE WHEN f.end_snapshot IS NULL OR f.end_snapshot > "
            f"d.end_snapshot THEN d.delete_count ELSE 0 END), sum(d.file_size_bytes) FROM {dl} d "
            f"LEFT JOIN {df} f ON f.data_file_id = d.data_file_id WHERE d.end_snapshot IS NOT NULL "
            "GROUP BY d.end_snapshot, d.table_id"):
        m = out[snap][tid]
        m.delete_files_removed += n
        m.rows_deleted -= replaced
        m.bytes_removed += size
    if data_path is not None:
        found = [_Embedded(int(tid), int(begin), None if last is None else int(last), path, bool(rel))
                 for tid, begin, last, path, rel in (
                     *conn.exec_driver_sql(f"SELECT table_id, begin_snapshot, partial_max, path, path_is_relative "
                                           f"FROM {df} WHERE {multi}"),
                     *conn.exec_driver_sql(f"SELECT d.table_id, d.begin_snapshot, NULL, d.path, d.path_is_relative "
                                           f"FROM {dl} d LEFT JOIN {sn} x ON x.snapshot_id = d.begin_snapshot "
                                           f"WHERE {embeds}"))
                 if wanted is None or int(tid) in wanted]
        for f, counts in zip(found, _read_embedded(conn, backend, found, data_path, storage_options or {}),
                             strict=True):
            for snap, n in counts.items():
                m = out[snap][f.table_id]
                if f.last is None:
                    m.rows_deleted += n
                else:
                    m.rows_added += n
    # Rows still live in each data file when it ends: its rows less the deletes of the delete file live just before.
    # A join, not a correlated subquery: SQLite would scan the delete files once per ended file.
    ended = rows(
        f"SELECT f.end_snapshot, f.table_id, f.data_file_id, f.record_count, max(d.delete_count) FROM {df} f "
        f"LEFT JOIN {dl} d ON d.data_file_id = f.data_file_id AND d.begin_snapshot < f.end_snapshot AND "
        "(d.end_snapshot IS NULL OR d.end_snapshot >= f.end_snapshot) WHERE f.end_snapshot IS NOT NULL "
        "GROUP BY f.end_snapshot, f.table_id, f.data_file_id, f.record_count")
    inlined_deletes = _inlined_delete_rows(conn, backend, wanted)
    per_file: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for tid, fid, begin, n in inlined_deletes:
        per_file[fid].append((begin, n))
        out[begin][tid].rows_deleted += n
    for snap, tid, fid, recs, deleted in ended:
        earlier = sum(n for begin, n in per_file.get(fid, ()) if begin < snap)
        out[snap][tid].rows_deleted += recs - deleted - earlier
    for tid, snap, added, gone in _inlined_rows(conn, backend, wanted):
        m = out[snap][tid]
        m.inlined_rows_added += added
        m.rows_added += added
        m.inlined_rows_deleted += gone
        m.rows_deleted += gone
    return {snap: {tid: m for tid, m in per.items() if not m.is_empty()} for snap, per in out.items()}


def _rewrites(conn: Connection) -> set[tuple[int, int]]:
    """`(snapshot, table id)` of every rewrite (`rewrite_delete`), as DuckDB's and our rewrites record them."""
    t = s.snapshot_changes_t
    found = conn.execute(select(t.c.snapshot_id, t.c.changes_made).where(t.c.changes_made.like("%rewrite_delete:%")))
    return {(int(snap), int(tid)) for snap, text in found for tid in _REWRITE.findall(text or "")}


@dataclass(frozen=True)
class _PathRow:
    path: str | None
    path_is_relative: bool


def _table_dirs(conn: Connection, backend: Backend, data_path: str) -> dict[int, str]:
    """Every table's directory (dropped tables and schemas included: their newest row)."""
    q = backend.qualify
    schemas = {int(sid): _PathRow(path, bool(rel)) for sid, path, rel in conn.exec_driver_sql(
        f"SELECT schema_id, path, path_is_relative FROM {q('ducklake_schema')} ORDER BY begin_snapshot").all()}
    return {int(tid): table_dir(data_path, schemas.get(int(sid)), _PathRow(path, bool(rel)))
            for tid, sid, path, rel in conn.exec_driver_sql(
                f"SELECT table_id, schema_id, path, path_is_relative FROM {q('ducklake_table')} "
                "ORDER BY begin_snapshot").all()}


def _read_embedded(conn: Connection, backend: Backend, found: list[_Embedded], data_path: str,
                   storage_options: Mapping[str, Any]) -> list[Counter[int]]:
    """Per file, how many of its rows or positions count at each snapshot (small reads, in parallel: object-store
    round trips)."""
    if not found:
        return []
    from concurrent.futures import ThreadPoolExecutor

    from ducklake_cli.storage.listing import WORKERS

    dirs = _table_dirs(conn, backend, data_path)

    def one(f: _Embedded) -> Counter[int]:
        path = dirs[f.table_id] + f.path if f.path_is_relative else f.path
        out: Counter[int] = Counter()
        for embedded, n in _embedded_snapshots(path, storage_options).items():
            out[f.snapshot(embedded)] += n
        return out

    with ThreadPoolExecutor(max_workers=min(WORKERS, len(found))) as pool:
        return list(pool.map(one, found))


def _embedded_snapshots(path: str, storage_options: Mapping[str, Any]) -> Counter[int | None]:
    """How many rows of a Parquet file embed each snapshot id (None: the file has no such column, or a row has
    none). Row groups whose statistics show one snapshot are counted from the footer alone."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ducklake_cli.errors import StorageError
    from ducklake_cli.storage.files import filesystem

    out: Counter[int | None] = Counter()
    if path.endswith(".puffin"):  # a 1.1 container: each position counts at the first blob holding it
        from ducklake_cli.storage.deletion_vector import read_deletion_vectors

        out.update(snap for _, snap in read_deletion_vectors(path, storage_options).first_deleted())
        return out
    try:
        with filesystem(path, dict(storage_options)).open(path, "rb") as fh:
            pf = pq.ParquetFile(fh)
            meta = pf.metadata
            fields = pf.schema_arrow
            name = next((fl.name for fl in fields
                         if int((fl.metadata or {}).get(b"PARQUET:field_id", b"0")) == SNAPSHOT_ID_FIELD_ID),
                        SNAPSHOT_ID_COLUMN if SNAPSHOT_ID_COLUMN in fields.names else None)
            if name is None:
                out[None] = meta.num_rows
                return out
            leaf = next(i for i in range(meta.num_columns) if meta.schema.column(i).path == name)
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                stats = group.column(leaf).statistics
                if (stats is not None and stats.has_min_max and stats.min == stats.max
                        and stats.has_null_count and stats.null_count == 0):
                    out[int(stats.min)] += group.num_rows
                    continue
                counts = pc.value_counts(pf.read_row_group(g, columns=[name]).column(0))
                for value, n in zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(),
                                    strict=True):
                    out[None if value is None else int(value)] += int(n)
    except (OSError, ValueError, KeyError) as exc:
        raise StorageError(f"cannot read the snapshot ids of {path}: {exc}") from exc
    return out


def _delete_tables(conn: Connection, backend: Backend, wanted: set[int] | None) -> list[tuple[int, str]]:
    found = []
    for name in backend.list_tables(conn):
        match = _INLINED_DELETE.match(name)
        if match and (wanted is None or int(match.group(1)) in wanted):
            found.append((int(match.group(1)), name))
    return sorted(found)


def _inlined_delete_rows(conn: Connection, backend: Backend,
                         wanted: set[int] | None) -> list[tuple[int, int, int, int]]:
    """`(table id, data file id, begin_snapshot, positions)` of the inlined file deletions."""
    out = []
    for tid, name in _delete_tables(conn, backend, wanted):
        for fid, begin, n in conn.exec_driver_sql(
                f"SELECT file_id, begin_snapshot, count(*) FROM {backend.qualify(name)} "
                "GROUP BY file_id, begin_snapshot").all():
            out.append((tid, int(fid), int(begin), int(n)))
    return out


def _inlined_rows(conn: Connection, backend: Backend, wanted: set[int] | None) -> list[tuple[int, int, int, int]]:
    """`(table id, snapshot, inlined rows inserted, inlined rows ended)` over every inlined-data table."""
    existing = backend.list_tables(conn)
    version = read_version(conn, backend)  # names the system columns (probed per table only on a 1.1-dev1)
    t = backend.qualify("ducklake_inlined_data_tables")
    out = []
    # A dropped table's live inlined rows keep no end_snapshot: they go with the table.
    dropped = {int(tid): int(end) for tid, end, live in conn.exec_driver_sql(
        f"SELECT table_id, max(end_snapshot), count(*) - count(end_snapshot) FROM {backend.qualify('ducklake_table')} "
        "GROUP BY table_id") if end is not None and not live}
    # Fetched first: a DuckDB connection drops a pending result when the next query runs.
    for tid, name in conn.exec_driver_sql(f"SELECT table_id, table_name FROM {t}").all():
        if name not in existing or (wanted is not None and int(tid) not in wanted):
            continue
        q = backend.qualify(name)
        _, begin, end = system_columns(conn, backend, version, name)
        for snap, n in conn.exec_driver_sql(f"SELECT {begin}, count(*) FROM {q} GROUP BY {begin}").all():
            out.append((int(tid), int(snap), int(n), 0))
        for snap, n in conn.exec_driver_sql(f"SELECT {end}, count(*) FROM {q} WHERE {end} IS NOT NULL "
                                            f"GROUP BY {end}").all():
            out.append((int(tid), int(snap), 0, int(n)))
        drop = dropped.get(int(tid))
        if drop is not None:
            n = conn.exec_driver_sql(f"SELECT count(*) FROM {q} WHERE {begin} < {drop} AND "
                                     f"({end} IS NULL OR {end} > {drop})").scalar()
            out.append((int(tid), drop, 0, int(n or 0)))
    return out


# table id → (begin_snapshot, schema's full name, table name), oldest first
TableNames = dict[int, list[tuple[int, str | None, str]]]


def table_names(conn: Connection, backend: Backend) -> TableNames:
    """Every name each table had (renames and drops included), to label metrics at any snapshot."""
    from ducklake_cli.catalog.names import shown_path

    q = backend.qualify
    nested = "parent_schema_id" in backend.column_names(conn, "ducklake_schema")  # DuckLake 1.1: full paths
    schemas: dict[int, tuple[str, int | None]] = {}
    for sid, name, parent in conn.exec_driver_sql(
            f"SELECT schema_id, schema_name, {'parent_schema_id' if nested else 'NULL'} FROM {q('ducklake_schema')} "
            "ORDER BY begin_snapshot"):
        schemas[int(sid)] = (str(name), None if parent is None else int(parent))

    def path(sid: int | None) -> str | None:
        parts: list[str] = []
        while sid is not None and sid in schemas and len(parts) <= len(schemas):
            parts.insert(0, schemas[sid][0])
            sid = schemas[sid][1]
        return shown_path(parts, quote=nested) if parts else None

    out: TableNames = defaultdict(list)
    for tid, begin, schema_id, table_name in conn.exec_driver_sql(
            f"SELECT table_id, begin_snapshot, schema_id, table_name FROM {q('ducklake_table')} "
            "ORDER BY table_id, begin_snapshot"):
        out[int(tid)].append((int(begin), path(None if schema_id is None else int(schema_id)), table_name))
    return out


def name_at(names: TableNames, table_id: int, snapshot_id: int) -> tuple[str | None, str | None]:
    """`(schema, table)` as the table was named at a snapshot (its newest name at or before it)."""
    found: tuple[str | None, str | None] = (None, None)
    for begin, schema_name, table_name in names.get(table_id, ()):
        if begin <= snapshot_id or found == (None, None):
            found = (schema_name, table_name)
    return found
