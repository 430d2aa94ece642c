"""Deletes at scale (issue 16). Small delete sets (files with deletes of up to `delete_masks.MAX_BLOCKS` 64-row
blocks) become masks on the driver, read a batch at a time, and filter rows with no join. Larger ones are folded
on the executors into one 64-bit mask per 64-row block, so what reaches the driver (the broadcast side) is at most
one small row per 64 data rows, never the positions; above `BROADCAST_MASK_BLOCKS` the masks are joined by a
shuffle. Every way equals DuckDB."""

from __future__ import annotations

import resource
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import ducklake_cli
from ducklake_cli.engine import delete_masks
from ducklake_cli.engine import scan as scan_module
from tests.support.oracle import attach_clause, oracle_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROWS = 4_000_000  # one file; half of it deleted: 2,000,000 positions
AGG = "count(*), sum(i), sum(v)"


@pytest.fixture(scope="module")
def lake_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[tuple[str, int, Any]]]]:
    """A DuckDB-built lake: `half` (one file, every other row deleted) and `parts` (four files, deletes of
    several shapes in three of them, over three snapshots); DuckDB's answers per table and snapshot."""
    root = tmp_path_factory.mktemp("masks")
    catalog = root / "cat.sqlite"
    con = oracle_connect()
    expected: list[tuple[str, int, Any]] = []
    try:
        con.execute(attach_clause("sqlite", catalog, root / "data"))
        con.execute("SET threads = 2")
        con.execute(f"CREATE TABLE lake.half AS SELECT i::BIGINT AS i, (i * 7 % 1000)::INTEGER AS v "
                    f"FROM range({ROWS}) r(i)")
        half_before = con.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]
        con.execute("DELETE FROM lake.half WHERE i % 2 = 0")
        con.execute("CREATE TABLE lake.parts (i BIGINT, v INTEGER)")
        for k in range(4):
            con.execute(f"INSERT INTO lake.parts SELECT i::BIGINT, (i % 97)::INTEGER FROM range({k * 100_000}, "
                        f"{(k + 1) * 100_000}) r(i)")
        con.execute("DELETE FROM lake.parts WHERE i BETWEEN 1000 AND 1063 OR i % 1000 = 999")  # a whole block
        con.execute("DELETE FROM lake.parts WHERE i >= 200000 AND i < 300000 AND i % 3 = 0")
        con.execute("DELETE FROM lake.parts WHERE i % 1000 = 5")  # a second delete file for the first files
        snapshots = [r[0] for r in con.execute("SELECT snapshot_id FROM lake.snapshots() ORDER BY 1").fetchall()]
        for table, snaps in (("half", [half_before, snapshots[-1]]), ("parts", snapshots[-4:])):
            for snap in snaps:
                row = con.execute(f"SELECT {AGG} FROM lake.{table} AT (VERSION => {snap})").fetchone()
                expected.append((table, snap, row))
    finally:
        con.close()
    yield catalog, expected


def _ours(spark: SparkSession, catalog: Path, table: str, snapshot: int) -> tuple[Any, Any]:
    lake = ducklake_cli.connect(str(catalog))
    try:
        df = lake.sql(f"SELECT {AGG} FROM {table}", snapshot=snapshot, spark=spark)
        row = tuple(df.collect()[0])
        return row, df._jdf.queryExecution().executedPlan()
    finally:
        lake.close()


def _broadcasts(plan: Any) -> list[tuple[int, int]]:
    """(rows, bytes) each broadcast exchange of an executed (adaptive) plan collected on the driver."""
    out: list[tuple[int, int]] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            stack.append(node.executedPlan())
            continue
        if name.endswith("QueryStageExec"):
            stack.append(node.plan())
            continue
        if name == "BroadcastExchangeExec":
            metrics = node.metrics()
            out.append((int(metrics.apply("numOutputRows").value()), int(metrics.apply("dataSize").value())))
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return out


def _rss_growth_and_result(spark: SparkSession, catalog: Path, table: str, snap: int) -> tuple[float, Any, Any]:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    got, plan = _ours(spark, catalog, table, snap)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before, got, plan


@pytest.mark.spark
def test_large_delete_set_reads_as_duckdb_with_masks_not_positions_on_the_driver(
    spark: SparkSession, lake_dir: tuple[Path, list[tuple[str, int, Any]]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """2,000,000 deleted positions over the driver-mask limit: the executors fold them."""
    catalog, expected = lake_dir
    monkeypatch.setattr(delete_masks, "MAX_BLOCKS", ROWS // 64 - 1)  # `half` is one block over the limit
    table, snap, want = next(e for e in reversed(expected) if e[0] == "half")
    py_growth, got, plan = _rss_growth_and_result(spark, catalog, table, snap)
    assert got == tuple(want)
    assert want[0] == ROWS // 2
    # What the driver JVM collected for broadcasts: the masks, at most ROWS / 64 rows; the positions would be
    # 2,000,000 rows.
    broadcast = _broadcasts(plan)
    assert broadcast and max(rows for rows, _ in broadcast) <= -(-ROWS // 64), broadcast
    # The Python driver process takes no positions at all (its peak RSS does not move by their size).
    assert py_growth < 16, f"Python driver RSS grew {py_growth:.0f} MiB"


@pytest.mark.spark
def test_small_delete_set_filters_by_driver_masks_without_a_join(
    spark: SparkSession, lake_dir: tuple[Path, list[tuple[str, int, Any]]]
) -> None:
    """Under the limit the same 2,000,000 positions are read a batch at a time into 62,500 masks (500 KB): the
    driver's RSS does not grow by the positions (16 MB), and nothing is broadcast."""
    catalog, expected = lake_dir
    table, snap, want = next(e for e in reversed(expected) if e[0] == "half")
    py_growth, got, plan = _rss_growth_and_result(spark, catalog, table, snap)
    assert got == tuple(want)
    assert _broadcasts(plan) == []
    assert py_growth < 12, f"Python driver RSS grew {py_growth:.0f} MiB"


@pytest.mark.spark
@pytest.mark.parametrize("how", ["driver_masks", "driver_masks_bulk", "broadcast", "shuffle", "bulk_keys"])
def test_every_delete_strategy_equals_duckdb_at_every_snapshot(
    spark: SparkSession, lake_dir: tuple[Path, list[tuple[str, int, Any]]], how: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog, expected = lake_dir
    if not how.startswith("driver_masks"):  # as if the deletes were too many for the driver
        monkeypatch.setattr(delete_masks, "MAX_BLOCKS", 0)
    if how == "shuffle":  # over the limit: masks are joined by a shuffle (adaptive execution may still broadcast
        # what it measures small, so only the rows are compared)
        monkeypatch.setattr(scan_module, "BROADCAST_MASK_BLOCKS", 0)
    if how in ("bulk_keys", "driver_masks_bulk"):  # many files with deletes: one read for all, rows matched by path
        monkeypatch.setattr(scan_module, "PER_FILE_READS", 0)
    for table, snap, want in expected:
        if table == "half" and how in ("broadcast", "driver_masks"):
            continue  # the tests above
        got, plan = _ours(spark, catalog, table, snap)
        assert got == tuple(want), (table, snap, how)
        if how == "driver_masks":  # no join at all: each file read alone, its masks a literal
            assert _broadcasts(plan) == [], (table, snap)
