"""A lake's plan cache (issue 16): repeated statements reuse the scan DataFrame of a committed snapshot, and never
return stale rows: another writer's new snapshot is read, and an expired snapshot still fails."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import ducklake_cli
from ducklake_cli.errors import DuckLakeError
from tests.support.oracle import attach_clause, oracle_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Q = "SELECT count(*), sum(i) FROM t WHERE i >= 0"


def _duck(catalog: Path, *statements: str) -> list[Any]:
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, catalog.parent / "data"))
        out: list[Any] = []
        for s in statements:
            out = con.execute(s).fetchall()
        return out
    finally:
        con.close()


@pytest.mark.spark
def test_repeated_reads_reuse_plans_and_see_every_new_snapshot(spark: SparkSession, tmp_path: Path) -> None:
    catalog = tmp_path / "cat.sqlite"
    _duck(catalog, "CREATE TABLE lake.t AS SELECT range::BIGINT AS i FROM range(1000)",
          "DELETE FROM lake.t WHERE i % 7 = 0")
    lake = ducklake_cli.connect(str(catalog))
    try:
        first = lake.sql(Q, spark=spark).collect()
        kept = len(lake.plan_cache)
        assert kept > 0
        assert lake.sql(Q, spark=spark).collect() == first
        assert len(lake.plan_cache) == kept  # nothing new planned for the same snapshot
        old = _duck(catalog, "SELECT max(snapshot_id) FROM lake.snapshots()")[0][0]
        # Another writer: inserts, deletes and compacts; each of our reads sees the latest snapshot as DuckDB does.
        for step in ("INSERT INTO lake.t SELECT range FROM range(1000, 1100)", "DELETE FROM lake.t WHERE i < 10",
                     "CALL ducklake_merge_adjacent_files('lake')"):
            want = _duck(catalog, step, f"{Q.replace('FROM t', 'FROM lake.t')}")
            got = lake.sql(Q, spark=spark).collect()
            assert [tuple(r) for r in got] == [tuple(r) for r in want], step
        at_old = f"SELECT count(*), sum(i) FROM t VERSION AS OF {old}"
        assert [tuple(r) for r in lake.sql(at_old, spark=spark).collect()] == [tuple(r) for r in first]
        # Expired: the cached plan of `old` must not answer.
        _duck(catalog, f"CALL ducklake_expire_snapshots('lake', versions => [{old}])")
        with pytest.raises(DuckLakeError):
            lake.sql(at_old, spark=spark).collect()
    finally:
        lake.close()
    assert len(lake.plan_cache) == 0


@pytest.mark.spark
def test_cached_views_serve_self_joins_rowid_and_several_lakes(spark: SparkSession, tmp_path: Path) -> None:
    """A table read twice in one statement, with and without `rowid`, and by two lakes on one session: each scan's
    kept view holds its own rows (DuckDB's answers)."""
    catalogs = []
    for k in range(2):
        catalog = tmp_path / f"cat{k}.sqlite"
        _duck(catalog, f"CREATE TABLE lake.t AS SELECT (range * {k + 1})::BIGINT AS i FROM range(500)",
              "DELETE FROM lake.t WHERE i % 3 = 0")
        catalogs.append(catalog)
    statements = ["SELECT count(*), sum(a.i) FROM t a JOIN t b ON a.i = b.i WHERE a.i >= 0 AND b.i >= 0",
                  "SELECT count(*), max(rowid), sum(i) FROM t WHERE i >= 0",
                  "SELECT count(*), sum(i) FROM t WHERE i >= 0"]
    lakes = [ducklake_cli.connect(str(c)) for c in catalogs]
    try:
        for _ in range(2):
            for catalog, lake in zip(catalogs, lakes, strict=True):
                for sql in statements:
                    want = _duck(catalog, sql.replace("FROM t a JOIN t b", "FROM lake.t a JOIN lake.t b")
                                 .replace("FROM t WHERE", "FROM lake.t WHERE"))
                    assert [tuple(r) for r in lake.sql(sql, spark=spark).collect()] == [tuple(r) for r in want], sql
    finally:
        for lake in lakes:
            lake.close()
