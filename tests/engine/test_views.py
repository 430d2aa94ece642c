"""Views stored in the lake (DuckDB SQL) are queryable through `query`, nested ones too, as DuckDB reads them."""

from __future__ import annotations

from typing import Any

import pytest

import ducklake_cli
from ducklake_cli.ops.query import run_query
from tests.conftest import Spot
from tests.fixtures.lakes import build_lake
from tests.fixtures.oracle import oracle_connect


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_views_and_views_on_views(spot: Spot, spark: Any) -> None:
    build_lake(spot.backend, spot.oracle_target, spot.data_path, "catalog_example")
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        con.execute("CREATE VIEW lake.small AS SELECT id, full_name FROM t WHERE id < 100")
        con.execute("CREATE VIEW lake.small_count AS SELECT count(*) AS n, max(id) AS top FROM small")
        expected = con.execute("SELECT * FROM lake.small_count").fetchall()
        names = sorted(con.execute("SELECT full_name FROM lake.small WHERE id < 10").fetchall())
        con.execute("DETACH lake")
    finally:
        con.close()
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake:
        assert list(run_query(lake, "SELECT * FROM small_count").rows) == [tuple(r) for r in expected]
        got = run_query(lake, "SELECT full_name FROM main.small WHERE id < 10").rows
        assert sorted(got) == [tuple(r) for r in names]
