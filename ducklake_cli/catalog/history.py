"""Per-snapshot, per-table operation metrics (rows, files and bytes added and removed) from metadata alone, as the
catalog records them; a few grouped queries over the whole history, never one per snapshot.

A snapshot S adds the data and delete files beginning at S and the inlined rows inserted at S; it removes the files
ending at S. `rows_deleted` counts the delete positions S adds (a delete file beginning at S, less the one it
replaces for the same data file), the rows still live in the data files S ends, the inlined file deletions at S
and the inlined rows S ends. Files rewritten with their rows' lineage (flush, compaction: `partial_max` set)
count at their `begin_snapshot`, the snapshot the catalog records for them."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, fields

from sqlalchemy import Connection

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import Backend

_INLINED_DELETE = re.compile(re.escape(s.INLINED_DELETE_PREFIX) + r"(\d+)$")


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


def snapshot_metrics(conn: Connection, backend: Backend, table_ids: Iterable[int] | None = None) -> MetricsBySnapshot:
    """Metrics of every snapshot that changed a table's rows or files (optionally only of `table_ids`)."""
    wanted = set(table_ids) if table_ids is not None else None
    out: MetricsBySnapshot = defaultdict(lambda: defaultdict(Metrics))
    q = backend.qualify
    df, dl = q("ducklake_data_file"), q("ducklake_delete_file")

    def rows(sql: str) -> list[tuple[int, ...]]:
        return [tuple(_int(v) for v in r) for r in conn.exec_driver_sql(sql)
                if wanted is None or _int(r[1]) in wanted]

    for snap, tid, n, recs, size in rows(
            f"SELECT begin_snapshot, table_id, count(*), sum(record_count), sum(file_size_bytes) FROM {df} "
            "GROUP BY begin_snapshot, table_id"):
        m = out[snap][tid]
        m.data_files_added += n
        m.rows_added += recs
        m.bytes_added += size
    for snap, tid, n, size in rows(
            f"SELECT end_snapshot, table_id, count(*), sum(file_size_bytes) FROM {df} WHERE end_snapshot IS NOT NULL "
            "GROUP BY end_snapshot, table_id"):
        m = out[snap][tid]
        m.data_files_removed += n
        m.bytes_removed += size
    for snap, tid, n, positions, size in rows(
            f"SELECT begin_snapshot, table_id, count(*), sum(delete_count), sum(file_size_bytes) FROM {dl} "
            "GROUP BY begin_snapshot, table_id"):
        m = out[snap][tid]
        m.delete_files_added += n
        m.rows_deleted += positions
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
        for snap, n in conn.exec_driver_sql(f"SELECT begin_snapshot, count(*) FROM {q} GROUP BY begin_snapshot").all():
            out.append((int(tid), int(snap), int(n), 0))
        for snap, n in conn.exec_driver_sql(f"SELECT end_snapshot, count(*) FROM {q} WHERE end_snapshot IS NOT NULL "
                                            "GROUP BY end_snapshot").all():
            out.append((int(tid), int(snap), 0, int(n)))
        drop = dropped.get(int(tid))
        if drop is not None:
            n = conn.exec_driver_sql(f"SELECT count(*) FROM {q} WHERE begin_snapshot < {drop} AND "
                                     f"(end_snapshot IS NULL OR end_snapshot > {drop})").scalar()
            out.append((int(tid), drop, 0, int(n or 0)))
    return out


TableNames = dict[int, list[tuple[int, str, str]]]  # table id → (begin_snapshot, schema name, table name), oldest first


def table_names(conn: Connection, backend: Backend) -> TableNames:
    """Every name each table had (renames and drops included), to label metrics at any snapshot."""
    q = backend.qualify
    out: TableNames = defaultdict(list)
    for tid, begin, schema_name, table_name in conn.exec_driver_sql(
            f"SELECT t.table_id, t.begin_snapshot, s.schema_name, t.table_name FROM {q('ducklake_table')} t "
            f"LEFT JOIN {q('ducklake_schema')} s ON s.schema_id = t.schema_id ORDER BY t.table_id, t.begin_snapshot"):
        out[int(tid)].append((int(begin), schema_name, table_name))
    return out


def name_at(names: TableNames, table_id: int, snapshot_id: int) -> tuple[str | None, str | None]:
    """`(schema, table)` as the table was named at a snapshot (its newest name at or before it)."""
    found: tuple[str | None, str | None] = (None, None)
    for begin, schema_name, table_name in names.get(table_id, ()):
        if begin <= snapshot_id or found == (None, None):
            found = (schema_name, table_name)
    return found
