"""Metadata `count(*)` and `inspect` live rows at every snapshot vs DuckDB, on lakes whose delete files carry
per-row snapshots (flushes of inlined inserts, deletes and updates, compaction, rewrites, partial delete files)."""

from __future__ import annotations

import contextlib

import pytest

import ducklake_cli
from ducklake_cli.ops import inspect as inspect_ops
from ducklake_cli.ops.query import plan_sql
from tests.support.oracle import oracle_connect
from tests.support.spot import ORACLE_BACKENDS, Spot

# name → (DATA_INLINING_ROW_LIMIT, statements); `{lake}` is the attached alias, the table is always `t`.
LAKES: dict[str, tuple[int, list[str]]] = {
    # issue 11, case 1: the flush's delete file tags positions with snapshots 3 and 4.
    "flush_deletes": (10, [
        "CREATE TABLE {lake}.t (a INTEGER)",
        "INSERT INTO {lake}.t VALUES (1), (2), (3), (1), (2), (3)",
        "DELETE FROM {lake}.t WHERE a = 2",
        "DELETE FROM {lake}.t WHERE a = 1",
        "CALL ducklake_flush_inlined_data('{lake}')",
    ]),
    # issue 11, case 2: three updates of inlined rows, then a flush (DuckDB: 5 rows at every snapshot).
    "flush_updates": (50, [
        "CREATE TABLE {lake}.t (id INTEGER, val INTEGER)",
        "INSERT INTO {lake}.t SELECT i, i FROM range(5) r(i)",
        "UPDATE {lake}.t SET val = val + 1",
        "UPDATE {lake}.t SET val = val + 1",
        "UPDATE {lake}.t SET val = val + 1",
        "CALL ducklake_flush_inlined_data('{lake}')",
    ]),
    # inlined deletions of Parquet rows merged with an existing delete file by the flush.
    "flush_file_deletes": (10, [
        "CREATE TABLE {lake}.t (id INTEGER, s VARCHAR)",
        "INSERT INTO {lake}.t SELECT i, 's' || i FROM range(60) r(i)",
        "DELETE FROM {lake}.t WHERE id < 12",
        "DELETE FROM {lake}.t WHERE id IN (20, 21, 22)",
        "DELETE FROM {lake}.t WHERE id IN (30, 31)",
        "UPDATE {lake}.t SET s = 'x' WHERE id = 40",
        "CALL ducklake_flush_inlined_data('{lake}')",
        "DELETE FROM {lake}.t WHERE id = 50",
    ]),
    # flushes around merge_adjacent_files and rewrite_data_files.
    "flush_maintenance": (10, [
        "CREATE TABLE {lake}.t (id INTEGER, s VARCHAR)",
        "INSERT INTO {lake}.t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        "INSERT INTO {lake}.t VALUES (4, 'd'), (5, 'e')",
        "DELETE FROM {lake}.t WHERE id = 2",
        "UPDATE {lake}.t SET s = 'z' WHERE id = 4",
        "CALL ducklake_flush_inlined_data('{lake}')",
        "INSERT INTO {lake}.t SELECT i, 'f' FROM range(100, 130) r(i)",
        "INSERT INTO {lake}.t SELECT i, 'g' FROM range(200, 230) r(i)",
        "CALL ducklake_merge_adjacent_files('{lake}')",
        "DELETE FROM {lake}.t WHERE id >= 100 AND id < 128",
        "CALL ducklake_rewrite_data_files('{lake}', delete_threshold => 0.1)",
        "INSERT INTO {lake}.t VALUES (7, 'h'), (8, 'i')",
        "DELETE FROM {lake}.t WHERE id IN (1, 7)",
        "CALL ducklake_flush_inlined_data('{lake}')",
        "CALL ducklake_merge_adjacent_files('{lake}')",
    ]),
    # deletes and updates of a flushed (partial) file, then a second flush.
    "partial_files": (50, [
        "CREATE TABLE {lake}.t (id INTEGER, v INTEGER)",
        "INSERT INTO {lake}.t SELECT i, i FROM range(20) r(i)",
        "INSERT INTO {lake}.t SELECT i, i FROM range(20, 30) r(i)",
        "DELETE FROM {lake}.t WHERE id % 5 = 0",
        "UPDATE {lake}.t SET v = -v WHERE id % 3 = 0",
        "CALL ducklake_flush_inlined_data('{lake}')",
        "DELETE FROM {lake}.t WHERE id % 7 = 0",
        "UPDATE {lake}.t SET v = 0 WHERE id < 10",
        "INSERT INTO {lake}.t SELECT i, i FROM range(30, 40) r(i)",
        "DELETE FROM {lake}.t WHERE id > 35",
        "CALL ducklake_flush_inlined_data('{lake}')",
        "DELETE FROM {lake}.t WHERE id = 33",
    ]),
    # a partitioned flush writes one partial file (and delete file) per partition.
    "partitioned_flush": (50, [
        "CREATE TABLE {lake}.t (id INTEGER, k INTEGER)",
        "ALTER TABLE {lake}.t SET PARTITIONED BY (k)",
        "INSERT INTO {lake}.t SELECT i, i % 3 FROM range(12) r(i)",
        "DELETE FROM {lake}.t WHERE id IN (0, 1, 2)",
        "UPDATE {lake}.t SET id = id + 100 WHERE k = 1",
        "INSERT INTO {lake}.t SELECT i, i % 3 FROM range(12, 15) r(i)",
        "DELETE FROM {lake}.t WHERE k = 2",
        "CALL ducklake_flush_inlined_data('{lake}')",
    ]),
}


def _build(spot: Spot, limit: int, steps: list[str]) -> dict[int, int]:
    """Build the lake with DuckDB; its count(*) of `t` at every snapshot after the table exists."""
    con = oracle_connect()
    try:
        con.execute(spot.attach("lake", f"DATA_INLINING_ROW_LIMIT {limit}"))
        for sql in steps:
            con.execute(sql.replace("{lake}", "lake"))
        ids = [int(r[0]) for r in con.execute("SELECT snapshot_id FROM ducklake_snapshots('lake') ORDER BY 1")
               .fetchall()]
        counts = {
            sid: int(con.execute(f"SELECT count(*) FROM lake.t AT (VERSION => {sid})").fetchone()[0])  # type: ignore[index]
            for sid in ids[1:]
        }
        con.execute("DETACH lake")
    finally:
        con.close()
    return counts


@pytest.mark.parametrize("name", sorted(LAKES))
@pytest.mark.parametrize("spot", ORACLE_BACKENDS, indirect=True)
def test_count_at_every_snapshot(spot: Spot, name: str) -> None:
    limit, steps = LAKES[name]
    theirs = _build(spot, limit, steps)
    ours_inspect: dict[int, int | None] = {}
    ours_count: dict[int, object] = {}
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake, contextlib.closing(lake):
        for sid in theirs:
            tables = inspect_ops.summary(lake, at=inspect_ops.SnapshotSelector(snapshot_id=sid)).tables
            ours_inspect[sid] = next((t.live_rows for t in tables if t.table == "t"), None)
            with lake.reader() as r:
                plan = plan_sql(lake, r, "SELECT count(*) FROM t", snapshot=r.snapshot(sid))
            assert plan.count_only is not None
            ours_count[sid] = plan.count_only[1]
    assert ours_inspect == theirs
    assert ours_count == theirs
