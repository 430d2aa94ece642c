"""Spark Connect (`ducklake spark start|stop|status`, `--remote`, `$DUCKLAKE_REMOTE`) and the query differential
on a standalone master + worker and through Spark Connect.

The differential runs `compare_lake` (tests/support/diff.py) in one worker process per Spark
deployment (tests/support/diff_worker.py): a process holds either an embedded/cluster session or a Connect one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.built_lakes import BuiltLakes
from tests.support.cli import REPO, run_cli
from tests.support.connect import ConnectServer
from tests.support.spot import Spot

pytestmark = pytest.mark.spark

# Fallback-reader types (primitives), nested types, schema evolution, inlined rows, delete files and partitions.
SCENARIOS = ["primitives", "nested", "evolution", "inlined", "deletes"]


@pytest.fixture(scope="module")
def cases(built_lakes: BuiltLakes) -> list[dict[str, Any]]:
    """The scenarios' lakes, built once by DuckDB for the session (read only); the last two snapshots of each."""
    cases = []
    for scenario in SCENARIOS:
        spot, ids = built_lakes.get("sqlite", scenario)
        cases.append({"backend": "sqlite", "catalog": spot.catalog, "oracle_target": spot.oracle_target,
                      "data_path": str(spot.data_path), "scenario": scenario, "snapshots": ids[-2:]})
    return cases


def _differential(spark: dict[str, str], cases: list[dict[str, Any]]) -> None:
    spec = json.dumps({**spark, "cases": cases})
    res = subprocess.run([sys.executable, "-m", "tests.support.diff_worker", spec], capture_output=True, text=True,
                         cwd=REPO, timeout=900, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    failures = json.loads(res.stdout.strip().splitlines()[-1])
    assert not failures, "\n\n".join(f"{name}: {text}" for name, text in failures.items())


def test_query_differential_through_spark_connect(spark_connect: ConnectServer, cases: list[dict[str, Any]]) -> None:
    _differential({"remote": spark_connect.url}, cases)


def test_query_differential_on_standalone_cluster(master: str, cases: list[dict[str, Any]]) -> None:
    _differential({"master": master}, cases)


@pytest.fixture
def lake(tmp_path: Path, built_lakes: BuiltLakes) -> Spot:
    return built_lakes.copy("catalog_example", tmp_path / "lake")[0]


def test_remote_from_flag_environment_and_profile(spark_connect: ConnectServer, lake: Spot, tmp_path: Path) -> None:
    sql = "SELECT count(*) AS n, sum(id) AS s FROM t WHERE id > 0"  # a filter: Spark, not the metadata count
    want = run_cli("query", lake.catalog, sql, "--remote", spark_connect.url, "--format", "json")
    assert want.returncode == 0, want.stderr
    by_env = run_cli("query", lake.catalog, sql, "--format", "json", env={"DUCKLAKE_REMOTE": spark_connect.url})
    assert by_env.returncode == 0, by_env.stderr
    assert json.loads(by_env.stdout) == json.loads(want.stdout)
    toml = f'[profiles.p]\ncatalog = "{lake.catalog}"\nremote = "{spark_connect.url}"\n'
    (tmp_path / "ducklake.toml").write_text(toml)
    by_profile = run_cli("query", "p", sql, "--format", "json", cwd=tmp_path)
    assert by_profile.returncode == 0, by_profile.stderr
    assert json.loads(by_profile.stdout) == json.loads(want.stdout)
    # A --master flag beats $DUCKLAKE_REMOTE; an unreachable server is one line, exit 1.
    bad = run_cli("query", lake.catalog, sql, "--remote", "sc://127.0.0.1:1", env={"DUCKLAKE_REMOTE": "sc://x:2"})
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "sc://127.0.0.1:1" in bad.stderr, bad.stderr


def test_spark_status_start_and_stop(spark_connect: ConnectServer, tmp_path: Path) -> None:
    res = run_cli("spark", "status", "--format", "json", env=spark_connect.env)
    assert res.returncode == 0, res.stderr
    status = json.loads(res.stdout)
    assert status["running"] and status["url"] == spark_connect.url and status["uptime_seconds"] > 0
    assert isinstance(status["pid"], int)
    again = run_cli("spark", "start", "--format", "json", env=spark_connect.env)  # already running: reported
    assert again.returncode == 0 and json.loads(again.stdout)["pid"] == status["pid"], again.stderr
    table = run_cli("spark", "status", env=spark_connect.env)
    assert table.returncode == 0 and spark_connect.url in table.stdout, table.stdout
    csv = run_cli("spark", "status", "--format", "csv", env=spark_connect.env)
    assert csv.stdout.splitlines()[0] == "state,url,pid,master,uptime,log,warm_pid", csv.stdout
    # Nothing recorded in another state dir: status exits 1, stop is a no-op; a busy port is a one-line error.
    other = {"XDG_STATE_HOME": str(tmp_path / "state")}
    none = run_cli("spark", "status", "--format", "json", env=other)
    assert none.returncode == 1 and json.loads(none.stdout)["running"] is False
    assert run_cli("spark", "stop", env=other).returncode == 0
    port = spark_connect.url.rsplit(":", 1)[1]
    busy = run_cli("spark", "start", "--port", port, env=other)
    assert busy.returncode == 1 and busy.stderr.startswith("error: port") and busy.stderr.count("\n") == 1


def test_commands_run_in_the_warm_process(spark_connect: ConnectServer, lake: Spot) -> None:
    """`ducklake spark start` leaves a warm ducklake process: commands that find it run in forks of it (the
    latency target, `query "SELECT 1" --remote` under 1.5 s, is measured by scripts/bench.py, not here)."""
    status = json.loads(run_cli("spark", "status", "--format", "json", env=spark_connect.env).stdout)
    assert isinstance(status["warm_pid"], int), status
    log = Path(spark_connect.env["XDG_STATE_HOME"]) / "ducklake" / "warm.log"
    served = log.read_text().count(" exit 0\n")
    for _ in range(3):
        res = run_cli("query", lake.catalog, "SELECT 1 AS one", "--remote", spark_connect.url, "--format", "json",
                      env=spark_connect.env)
        assert res.returncode == 0 and json.loads(res.stdout) == [{"one": 1}], res.stderr
    assert log.read_text().count(" exit 0\n") == served + 3
