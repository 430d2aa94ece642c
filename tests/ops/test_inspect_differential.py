"""`inspect` against DuckDB on lakes DuckDB wrote: live rows of every table at every snapshot, and snapshot ids."""

from __future__ import annotations

import contextlib
import json

import duckdb
import pytest

import ducklake_cli
from ducklake_cli.ops import inspect as inspect_ops
from tests.support.built_lakes import BuiltLakes
from tests.support.cli import run_cli
from tests.support.lakes import INSPECT_SCENARIOS, SCENARIOS
from tests.support.oracle import oracle_connect
from tests.support.spot import ORACLE_BACKENDS, Spot
from tests.support.tiers import tiered


def _duckdb_counts(spot: Spot, snapshot_id: int, con: duckdb.DuckDBPyConnection | None = None) -> dict[str, int]:
    """DuckDB's own view at a snapshot: every table and its count(*)."""
    own = con is None
    con = con or oracle_connect()
    alias = f"lake_at_{snapshot_id}"
    try:
        con.execute(spot.attach(alias, f"SNAPSHOT_VERSION {snapshot_id}"))
        tables = con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ?", [alias]
        ).fetchall()
        counts = {
            f"{s}.{t}": con.execute(f'SELECT count(*) FROM {alias}."{s}"."{t}"').fetchone()[0]  # type: ignore[index]
            for s, t in tables
        }
        con.execute(f"DETACH {alias}")
    finally:
        if own:
            con.close()
    return counts


def test_inspect_scenarios_exist() -> None:
    assert set(INSPECT_SCENARIOS) <= set(SCENARIOS)
    assert set(INSPECT_SCENARIOS) >= BACKEND_SCENARIOS


def _duckdb_counts_at_every_snapshot(spot: Spot, ids: list[int]) -> dict[int, dict[str, int]]:
    """DuckDB's count(*) of every table at every snapshot, from one ATTACH: the tables live at a snapshot come from
    the catalog rows DuckDB wrote, and DuckDB counts each through its own time travel (`AT (VERSION => n)`, which
    resolves the name at that snapshot, so renamed and dropped tables count too)."""
    meta = "__ducklake_metadata_lake"
    out: dict[int, dict[str, int]] = {}
    with contextlib.closing(oracle_connect()) as con:
        con.execute("SET threads=1")  # hundreds of tiny count(*) queries: faster without thread hand-offs
        con.execute(spot.attach("lake"))
        for sid in ids:
            tables = con.execute(
                f"SELECT s.schema_name, t.table_name FROM {meta}.ducklake_table t JOIN {meta}.ducklake_schema s "
                "ON s.schema_id = t.schema_id AND s.begin_snapshot <= $sid "
                "AND (s.end_snapshot IS NULL OR s.end_snapshot > $sid) "
                "WHERE t.begin_snapshot <= $sid AND (t.end_snapshot IS NULL OR t.end_snapshot > $sid)", {"sid": sid},
            ).fetchall()
            out[sid] = {
                f"{sch}.{tab}": con.execute(
                    f'SELECT count(*) FROM lake."{sch}"."{tab}" AT (VERSION => {sid})').fetchone()[0]  # type: ignore[index]
                for sch, tab in tables
            }
    return out


# Every scenario on SQLite; on the DuckDB-file and PostgreSQL catalogs the default tier reads these (inlined rows
# are counted from per-backend tables; drops and renames, time travel), the full tier all of them.
BACKEND_SCENARIOS = frozenset({"catalog_example", "inlined", "table_lifecycle"})


@pytest.mark.parametrize(("backend", "scenario"), tiered(
    [pytest.param(b, s, id=f"{b}-{s}") for b in ORACLE_BACKENDS for s in INSPECT_SCENARIOS],
    lambda case: case[0] == "sqlite" or case[1] in BACKEND_SCENARIOS))
def test_live_rows_at_every_snapshot(built_lakes: BuiltLakes, backend: str, scenario: str) -> None:
    spot, ids = built_lakes.get(backend, scenario)
    theirs = _duckdb_counts_at_every_snapshot(spot, ids)
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake:
        assert [s.snapshot_id for s in inspect_ops.snapshots(lake).snapshots] == ids
        for sid in ids:
            ours = {
                f"{t.schema}.{t.table}": t.live_rows
                for t in inspect_ops.summary(lake, at=inspect_ops.SnapshotSelector(snapshot_id=sid)).tables
            }
            assert ours == theirs[sid], f"snapshot {sid}"


@pytest.mark.parametrize("backend", ORACLE_BACKENDS)
def test_cli_json_matches_duckdb(built_lakes: BuiltLakes, backend: str) -> None:
    spot, ids = built_lakes.get(backend, "catalog_example")
    res = run_cli("inspect", spot.catalog, "--format", "json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["snapshot_id"] == ids[-1]
    assert {f"{t['schema']}.{t['table']}": t["live_rows"] for t in summary["tables"]} == _duckdb_counts(spot, ids[-1])

    res = run_cli("inspect", spot.catalog, "--snapshots", "--format", "json")
    assert res.returncode == 0, res.stderr
    listed = json.loads(res.stdout)
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        theirs = con.execute(
            "SELECT snapshot_id, schema_version, changes FROM ducklake_snapshots('lake') ORDER BY 1"
        ).fetchall()
        con.execute("DETACH lake")
    finally:
        con.close()
    assert [(s["snapshot_id"], s["schema_version"], s["changes"]) for s in listed] == [
        (sid, sv, {k: list(v) for k, v in changes.items()}) for sid, sv, changes in theirs
    ]


def test_table_detail_and_files(built_lakes: BuiltLakes) -> None:
    spot = built_lakes.get("sqlite", "catalog_example")[0]  # read only
    res = run_cli("inspect", spot.catalog, "t", "--format", "json")
    assert res.returncode == 0, res.stderr
    detail = json.loads(res.stdout)
    assert detail["live_rows"] == 913
    names = [c["name"] for c in detail["columns"]]
    assert names[:3] == ["id", "full_name", "ts"] and "info.a" in names and "tags.element" in names
    assert detail["columns"][names.index("extra")]["column_id"] == 12
    stats = {c["name"]: c for c in detail["column_stats"]}
    assert stats["id"]["min"] == "0" and stats["id"]["max"] == "2019"
    assert sum(detail["file_size_histogram"].values()) == detail["data_files"] == 3
    assert [i["table_name"] for i in detail["inlined"]] == [
        "ducklake_inlined_data_1_1", "ducklake_inlined_data_1_2", "ducklake_inlined_data_1_3"]

    res = run_cli("inspect", spot.catalog, "--files", "--format", "csv")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert lines[0].startswith("schema,table,data_file_id,path")
    assert len(lines) == 1 + 3  # header + t's three data files (t2 is all inlined)

    old = run_cli("inspect", spot.catalog, "--snapshot", "2", "--format", "json")
    assert {t["table"]: t["live_rows"] for t in json.loads(old.stdout)["tables"]} == {"t": 1000}
