"""`ducklake write`, `maintain flush` and `maintain compact` on a standalone master + worker (`--master spark://…`)
and through Spark Connect (`--remote sc://…`): executors in other JVMs and Python workers write the files, and
DuckDB 1.5.5 reads exactly the written rows (after flush/compact: the same rows with the same row ids).

Five write scenarios per deployment (every primitive type, a 1-row inlined append, nested types, a table partitioned
by identity/day/bucket, an overwrite of it) on the session's one cluster and one Connect server. Through Connect
every step is a CLI process (no JVM on the client: cheap); on the cluster, where each CLI process costs a driver and
an executor JVM start, the first four share one application in a worker process and the overwrite and the flush
are CLI processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.ops.create import create_catalog
from tests.ops.test_write_differential import EVENTS, NESTED, PRIMITIVES, assert_same_rows
from tests.support.cli import REPO, run_cli
from tests.support.connect import ConnectServer
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot
from tests.support.writes import cli_env, make_parquet, scalar

pytestmark = pytest.mark.spark

INPUTS = {
    "prims": PRIMITIVES,
    "one": f"SELECT * FROM ({PRIMITIVES}) WHERE id = 7",
    "nested": NESTED,
    "events": EVENTS,
    "late": f"SELECT * FROM ({EVENTS}) WHERE id >= 450",
}
# (table, input, run_write keywords): the same steps on both deployments
STEPS: list[tuple[str, str, dict[str, Any]]] = [
    ("prims", "prims", {"mode": "create"}),
    ("prims", "one", {}),  # 1 row: inlined into the catalog
    ("nested", "nested", {}),
    ("ev", "events", {"mode": "create", "partition_by": ["region", "day(ts)", "bucket(4, id)"]}),
    ("ev", "late", {"mode": "overwrite"}),
]
# A loaded 2-core machine starts JVMs about twice as fast with the C1 compiler only and the serial collector.
LEAN_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The input Parquet files, written once by DuckDB; they are also the expected rows."""
    root = tmp_path_factory.mktemp("remote-write-inputs")
    return {name: make_parquet(root / f"{name}.parquet", sql) for name, sql in INPUTS.items()}


def _lake(tmp_path: Path) -> Spot:
    cat = tmp_path / "cat.sqlite"
    spot = Spot("sqlite", str(cat), str(cat), tmp_path / "data")
    create_catalog(parse_catalog(spot.catalog, must_exist=False), data_path=str(spot.data_path))
    return spot


def _cli(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    res = run_cli(*args, "--format", "json", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def _cli_args(kwargs: dict[str, Any]) -> list[str]:
    """`run_write` keywords as `ducklake write` options."""
    args = ["--mode", kwargs["mode"]] if "mode" in kwargs else []
    for key in kwargs.get("partition_by", []):
        args += ["--partition-by", key]
    return args


def _check(spot: Spot, inputs: dict[str, Path], results: list[dict[str, Any]]) -> None:
    """DuckDB reads each table's rows back exactly (and the partitioned table before its overwrite)."""
    by_step = dict(zip([(t, src) for t, src, _ in STEPS], results, strict=True))
    assert (by_step["prims", "one"]["inlined_rows"], by_step["prims", "one"]["files"]) == (1, 0)
    assert by_step["ev", "events"]["files"] > 4  # one file (at least) per partition key tuple
    con = oracle_connect()
    try:
        con.execute(spot.attach())

        def read(*names: str) -> str:
            return "SELECT * FROM read_parquet([" + ", ".join(f"'{inputs[n]}'" for n in names) + "])"

        assert_same_rows(con, "SELECT * FROM lake.main.prims", read("prims", "one"))
        assert_same_rows(con, "SELECT * FROM lake.main.nested", read("nested"))
        assert_same_rows(con, "SELECT * FROM lake.main.ev", read("late"))
        before = by_step["ev", "late"]["snapshot_id"] - 1
        assert_same_rows(con, f"SELECT * FROM lake.main.ev AT (VERSION => {before})", read("events"))
        paths = [p for (p,) in con.execute(
            "SELECT f.path FROM __ducklake_metadata_lake.ducklake_data_file f JOIN "
            "__ducklake_metadata_lake.ducklake_table t USING (table_id) WHERE t.table_name = 'ev'").fetchall()]
        assert all(p.startswith("region=") and "/day=" in p and "/bucket=" in p for p in paths), paths
    finally:
        con.close()


def _rows_with_ids(spot: Spot, table: str) -> tuple[list[tuple[Any, ...]], int, int]:
    """DuckDB's `rowid, *` of a table (by row id), its live data files and its live inlined rows."""
    meta = "__ducklake_metadata_lake"
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        rows = con.execute(f"SELECT rowid, * FROM lake.main.{table} ORDER BY rowid").fetchall()
        tid = scalar(con, f"SELECT table_id FROM {meta}.ducklake_table WHERE table_name = ? AND end_snapshot IS NULL",
                     [table])
        files = scalar(con, f"SELECT count(*) FROM {meta}.ducklake_data_file WHERE table_id = ? "
                            "AND end_snapshot IS NULL", [tid])
        names = [n for (n,) in con.execute(f"SELECT table_name FROM {meta}.ducklake_inlined_data_tables "
                                           "WHERE table_id = ?", [tid]).fetchall()]
        inlined = sum(scalar(con, f"SELECT count(*) FROM {meta}.{n} WHERE end_snapshot IS NULL") for n in names)
    finally:
        con.close()
    return rows, files, inlined


def test_write_and_flush_on_standalone_cluster(master: str, inputs: dict[str, Path], tmp_path: Path) -> None:
    """The first steps on one cluster application (a worker process: one driver and executor start for all),
    the overwrite as a `write --master` CLI process, then `maintain flush --master`."""
    spot = _lake(tmp_path)
    lean = {"spark.executorEnv.JAVA_TOOL_OPTIONS": LEAN_JVM}
    *first, (table, src, kwargs) = STEPS
    spec = {"master": master, "catalog": spot.catalog, "conf": lean,
            "steps": [{"table": t, "source": str(inputs[s]), "kwargs": k} for t, s, k in first]}
    res = subprocess.run([sys.executable, "-m", "tests.support.write_worker", json.dumps(spec)], capture_output=True,
                         text=True, cwd=REPO, env={**cli_env(), "JAVA_TOOL_OPTIONS": LEAN_JVM}, timeout=600,
                         check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    results = json.loads(res.stdout.strip().splitlines()[-1])
    cluster = ["--master", master, "--conf", f"spark.executorEnv.JAVA_TOOL_OPTIONS={LEAN_JVM}"]
    results.append(_cli("write", spot.catalog, table, "--from", str(inputs[src]), *_cli_args(kwargs), *cluster,
                        env={"JAVA_TOOL_OPTIONS": LEAN_JVM}))
    _check(spot, inputs, results)

    rows, files, inlined = _rows_with_ids(spot, "prims")
    assert (len(rows), files, inlined) == (301, 1, 1)
    report = _cli("maintain", "flush", spot.catalog, "--yes", *cluster, env={"JAVA_TOOL_OPTIONS": LEAN_JVM})
    assert report["rows_flushed"] == 1 and report["files_written"] == 1
    assert _rows_with_ids(spot, "prims") == (rows, 2, 0)


def test_write_and_compact_through_spark_connect(
    spark_connect: ConnectServer, inputs: dict[str, Path], tmp_path: Path
) -> None:
    """Every step as a `write --remote` CLI process, a second file for `prims`, then `maintain compact --remote`."""
    spot = _lake(tmp_path)
    remote = ["--remote", spark_connect.url]
    _check(spot, inputs, [_cli("write", spot.catalog, table, "--from", str(inputs[src]), *_cli_args(kwargs), *remote)
                          for table, src, kwargs in STEPS])
    again = _cli("write", spot.catalog, "prims", "--from", str(inputs["prims"]), "--no-inline", *remote)
    assert again["files"] == 1
    rows, files, inlined = _rows_with_ids(spot, "prims")
    assert (len(rows), files, inlined) == (601, 2, 1)
    report = _cli("maintain", "compact", spot.catalog, "--table", "prims", "--yes", *remote)
    assert (report["files_rewritten"], report["files_written"]) == (2, 1), report
    assert _rows_with_ids(spot, "prims") == (rows, 1, 1)
