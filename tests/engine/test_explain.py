"""`--explain` shows how many files each scan keeps: partition values and min/max stats prune before Spark."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ducklake_cli
from ducklake_cli.ops.query import run_query
from tests.support.cli import run_cli
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot

pytestmark = pytest.mark.spark


def _build(spot: Spot) -> None:
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        # 100 days, identity-partitioned by day: one data file per day, written by one INSERT.
        con.execute("CREATE TABLE lake.events (day DATE, id BIGINT, v VARCHAR)")
        con.execute("ALTER TABLE lake.events SET PARTITIONED BY (day)")
        con.execute("INSERT INTO lake.events SELECT DATE '2026-01-01' + (i // 20)::INTEGER, i, 'v' || i "
                    "FROM range(2000) t(i)")
        # 20 files written in id order: 100 ids each.
        con.execute("CREATE TABLE lake.ordered (id BIGINT, v VARCHAR)")
        for k in range(20):
            con.execute(f"INSERT INTO lake.ordered SELECT {k * 100} + range, 'x' FROM range(100)")
        con.execute("DETACH lake")
    finally:
        con.close()


def _explain(spot: Spot, sql: str) -> dict[str, object]:
    """In-process (the session's one JVM); the CLI path is exercised once below."""
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake:
        result = run_query(lake, sql, explain=True)
    assert result.explain is not None and len(result.explain.scans) == 1
    return result.explain.scans[0]


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_partition_and_stats_pruning(spot: Spot, spark: Any) -> None:
    _build(spot)
    everything = _explain(spot, "SELECT * FROM events")
    assert (everything["files_kept"], everything["files_pruned"]) == (100, 0)
    one_day = _explain(spot, "SELECT count(v) FROM events WHERE day = DATE '2026-02-10'")
    assert (one_day["files_kept"], one_day["files_pruned"]) == (1, 99)
    ranged = _explain(spot, "SELECT * FROM ordered WHERE id BETWEEN 250 AND 449")
    assert (ranged["files_kept"], ranged["files_pruned"]) == (3, 17)
    flipped = _explain(spot, "SELECT * FROM ordered o WHERE 1999 <= o.id")
    assert flipped["files_kept"] == 1
    either = _explain(spot, "SELECT * FROM ordered WHERE id = 5 OR id = 1999")  # OR is not used for pruning
    assert either["files_kept"] == 20

    res = run_cli("query", spot.catalog, "SELECT count(*) AS n, min(id) FROM ordered WHERE id BETWEEN 250 AND 449",
                  "--explain", "--format", "json")
    assert res.returncode == 0, res.stderr
    assert [(s["files_kept"], s["files_pruned"]) for s in json.loads(res.stdout)["scans"]] == [(3, 17)]
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake:
        rows = run_query(lake, "SELECT count(*) AS n, min(id) FROM ordered WHERE id BETWEEN 250 AND 449").rows
    assert rows == ((200, 250),)
