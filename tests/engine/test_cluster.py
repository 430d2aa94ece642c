"""Reads through a real standalone master + worker (`--master spark://…`), checked against DuckDB."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.support.cli import run_cli
from tests.support.lakes import build_lake
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot
from tests.support.tiers import full_only

pytestmark = pytest.mark.spark

# scenario, table, snapshot offset from the end (0 = latest), an ORDER BY making rows comparable. Each `query` is a
# driver JVM plus an executor on the cluster: the default tier runs one (time travel, `--output`); the others, in
# the full tier, read what tests/engine/test_connect.py's cluster differential reads (deletes, evolution).
CASES = [
    full_only("catalog_example", "main.t", 0, "id"),
    ("catalog_example", "main.t", 3, "id"),
    full_only("deletes", None, 0, None),
    full_only("evolution", None, 0, None),
]


def _duckdb_rows(spot: Spot, table: str, snapshot: int) -> list[tuple[object, ...]]:
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        return [tuple(r) for r in con.execute(f"SELECT * FROM lake.{table} AT (VERSION => {snapshot})").fetchall()]
    finally:
        con.close()


def _tables(spot: Spot, snapshot: int) -> list[str]:
    con = oracle_connect()
    try:
        con.execute(spot.attach("lake", f"SNAPSHOT_VERSION {snapshot}"))
        return [f"{s}.{t}" for s, t in con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'lake'").fetchall()]
    finally:
        con.close()


def _norm(value: object) -> object:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None).isoformat() + "Z"
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]
    return value


def _canon(rows: list[tuple[object, ...]]) -> list[str]:
    return sorted(repr(_norm(r)) for r in rows)


@pytest.mark.parametrize(("scenario", "table", "back", "order"), CASES)
@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_query_on_standalone_cluster(
    master: str, spot: Spot, tmp_path: Path, scenario: str, table: str | None, back: int, order: str | None
) -> None:
    ids = build_lake(spot.backend, spot.oracle_target, spot.data_path, scenario)
    sid = ids[-1 - back]
    for name in [table] if table else _tables(spot, sid):
        out = tmp_path / f"{name}-{sid}.parquet"
        res = run_cli("query", spot.catalog, f"SELECT * FROM {name}", "--snapshot", str(sid), "--master", master,
                      "--output", str(out))
        assert res.returncode == 0, res.stderr
        ours = [tuple(r.values()) for r in pq.read_table(out).to_pylist()]
        assert _canon(ours) == _canon(_duckdb_rows(spot, name, sid)), (scenario, name, sid)
