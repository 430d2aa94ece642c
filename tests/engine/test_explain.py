"""`--explain` shows how many files each scan keeps: partition values and min/max stats prune before Spark."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Spot, run_cli
from tests.fixtures.oracle import oracle_connect


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
    res = run_cli("query", spot.catalog, sql, "--explain", "--format", "json")
    assert res.returncode == 0, res.stderr
    scans = json.loads(res.stdout)["scans"]
    assert len(scans) == 1
    return scans[0]  # type: ignore[no-any-return]


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_partition_and_stats_pruning(spot: Spot) -> None:
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
                  "--format", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [{"n": 200, "min(id)": 250}]
