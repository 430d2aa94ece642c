"""Failures on Spark's executors (NOT NULL violations, numbers a column cannot hold, casts Spark refuses, bad values
in input files, values DuckDB cannot cast when it writes a file) are one line naming the table, the column and the
value or row, on every way of running Spark: embedded, a standalone cluster (`--master`), Spark Connect
(`--remote`) and the warm process; afterwards the catalog file is byte-identical and the data path holds the same
files. `--debug` shows the whole trace, the worker's included, on each of them.

One lake for the module; all failures of one run mode in one test (CI time: the cluster's driver starts once, in
one worker process; Connect clients start no JVM)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ducklake_cli.errors import ConstraintError
from tests.support.cli import REPO, run_cli, run_main
from tests.support.connect import ConnectServer
from tests.support.oracle import attach_clause, oracle_connect
from tests.support.writes import LEAN_JVM_ENV

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

CASTED = "CAST(CONCAT('x', id) AS INT)"


@dataclass(frozen=True)
class Case:
    """A failing command (`{cat}` and `{dir}` filled in) and the one line it must print; `everywhere`: also on the
    cluster, Connect and warm (the others reach the driver the same way as one that runs there: CI time)."""

    id: str
    args: tuple[str, ...]
    line: str
    everywhere: bool = True


CASES = [
    Case("update-not-null", ("query", "{cat}", "UPDATE w SET id = NULL WHERE id = 7"),
         "error: NOT NULL constraint failed: main.w.id is NULL in the row with rowid 7 (id=NULL, f=10.5, g=7, u=7)"),
    Case("insert-not-null", ("query", "{cat}", "INSERT INTO w (f) VALUES (1.5)"),
         "error: NOT NULL constraint failed: main.w.id is NULL in the new row (id=NULL, f=1.5, g=3, u=NULL)",
         everywhere=False),
    Case("merge-null-key", ("query", "{cat}", "MERGE INTO w USING (SELECT CAST(NULL AS INT) AS id, 2.5 AS f) s "
                            "ON w.id = s.id WHEN NOT MATCHED THEN INSERT (id, f) VALUES (s.id, s.f)"),
         "error: NOT NULL constraint failed: main.w.id is NULL in the new row (id=NULL, f=2.5, g=3, u=NULL)",
         everywhere=False),
    Case("overflow", ("query", "{cat}", "UPDATE w SET g = g + 3000000000 WHERE id = 5"),
         "error: main.w.g is INTEGER, which cannot hold 3000000005, in the row with rowid 5"),
    Case("spark-cast", ("query", "{cat}", f"UPDATE w SET g = {CASTED} WHERE id = 5"),
         "error: table main.w: The value 'x5' of the type \"STRING\" cannot be cast to \"INT\" because it is "
         "malformed. Correct the value as per the syntax, or change its target type. Use `try_cast` to tolerate "
         f"malformed input and return NULL instead. (in {CASTED})"),
    Case("parquet-value", ("write", "{cat}", "w", "--from", "{dir}/wide.parquet"),
         "error: main.w.u is UTINYINT, which cannot hold 300, in the new row (id=101, f=1.0, g=1, u=300)"),
    Case("csv-value", ("write", "{cat}", "w", "--from", "{dir}/bad.csv"),
         "error: {dir}/bad.csv line 3: Error when converting column \"f\". Could not convert string \"abc\" to "
         "'DOUBLE' (hint: fix the file, or pass --on-error skip to skip malformed CSV rows)"),
    # Two tasks: the first writes its file and ends before the second fails; the file goes with the failed job.
    Case("job-cleanup", ("write", "{cat}", "w", "--from", "{dir}/two/*.csv"),
         "error: NOT NULL constraint failed: main.w.id is NULL in the new row (id=NULL, f=7.5, g=1, u=NULL)",
         everywhere=False),
    Case("duckdb-cast", ("query", "{cat}", "UPDATE x SET k = 'not-a-uuid' WHERE id = 1"),
         "error: main.x.k is UUID, which cannot hold 'not-a-uuid', in the row with rowid 1 (id=1, k='not-a-uuid')",
         everywhere=False),
]
DEBUG = Case("debug", ("query", "{cat}", "UPDATE w SET id = NULL WHERE id = 7", "--debug"), "")
EVERYWHERE = [c for c in CASES if c.everywhere]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`cat.sqlite` (data in `data/`): w(id NOT NULL, f, g NOT NULL DEFAULT 3, u UTINYINT) in two files, x(id, k
    UUID) written by DuckDB; and the bad input files."""
    root = tmp_path_factory.mktemp("executor-errors")
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", root / "cat.sqlite", root / "data"))
        con.execute("CREATE TABLE lake.w (id INTEGER NOT NULL, f DOUBLE, g INTEGER NOT NULL DEFAULT 3, u UTINYINT)")
        for lo in (0, 20):
            con.execute(f"INSERT INTO lake.w SELECT i, i * 1.5, i, i FROM range({lo}, {lo + 20}) r(i)")
        con.execute("CREATE TABLE lake.x (id INTEGER, k UUID)")
        con.execute("INSERT INTO lake.x SELECT i, uuid() FROM range(0, 20) r(i)")
        con.execute("DETACH lake")
        con.execute(f"COPY (SELECT (100 + i)::INTEGER AS id, 1.0::DOUBLE AS f, 1 AS g, (i * 300)::SMALLINT AS u "
                    f"FROM range(0, 3) r(i)) TO '{root / 'wide.parquet'}' (FORMAT parquet)")
    finally:
        con.close()
    (root / "bad.csv").write_text("id,f,g,u\n1,1.5,1,1\n2,abc,2,2\n")
    (root / "two").mkdir()
    (root / "two" / "a.csv").write_text("id,f,g\n1,1.5,1\n")
    (root / "two" / "b.csv").write_text("id,f,g\n" + "".join(f"{i},{i}.5,1\n" for i in range(50_000)) + ",7.5,1\n")
    return root


def _state(world: Path) -> tuple[str, frozenset[str]]:
    """The catalog file's hash and the files under the data path."""
    return (hashlib.sha256((world / "cat.sqlite").read_bytes()).hexdigest(),
            frozenset(str(p.relative_to(world)) for p in (world / "data").rglob("*") if p.is_file()))


def _args(case: Case, world: Path, *extra: str) -> list[str]:
    return [a.format(cat=world / "cat.sqlite", dir=world) for a in case.args] + list(extra)


def _check(case: Case, world: Path, code: int, err: str) -> None:
    want = case.line.format(dir=world)
    assert (code, err) == (1, want + "\n"), f"{case.id}: exit {code}\n{err}"


def _check_debug(err: str) -> None:
    assert "Traceback (most recent call last)" in err, err[-3000:]
    assert "in write_batches" in err and "ducklake_cli.errors.ConstraintError: NOT NULL constraint failed" in err, \
        err[-3000:]


def test_embedded(world: Path, spark: SparkSession, capsys: pytest.CaptureFixture[str],
                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DUCKLAKE_CATALOG", raising=False)
    before = _state(world)
    for case in CASES:
        code, _out, err = run_main(capsys, *_args(case, world))
        _check(case, world, code, err)
        assert _state(world) == before, case.id
    with pytest.raises(ConstraintError) as raised:
        run_main(capsys, *_args(DEBUG, world))
    _check_debug("".join(traceback.format_exception(raised.value)))
    assert _state(world) == before


def test_standalone_cluster(world: Path, master: str) -> None:
    lean = LEAN_JVM_ENV["JAVA_TOOL_OPTIONS"]
    _in_one_process(world, ["--master", master, "--conf", f"spark.executorEnv.JAVA_TOOL_OPTIONS={lean}"],
                    LEAN_JVM_ENV)


def test_spark_connect(world: Path, spark_connect: ConnectServer) -> None:
    _in_one_process(world, ["--remote", spark_connect.url], {"DUCKLAKE_WARM": "0"})


def _in_one_process(world: Path, extra: list[str], env: dict[str, str]) -> None:
    """Every command line in one worker process (`tests/support/cli_worker.py`): one driver, one client."""
    before = _state(world)
    commands = [_args(case, world, *extra) for case in [*EVERYWHERE, DEBUG]]
    res = subprocess.run([sys.executable, "-m", "tests.support.cli_worker", json.dumps(commands)], capture_output=True,
                         text=True, cwd=REPO, timeout=900, check=False, env={**_env(), **env})
    assert res.returncode == 0, res.stderr[-3000:]
    results = json.loads(res.stdout.strip().splitlines()[-1])
    for case, got in zip(EVERYWHERE, results, strict=False):
        _check(case, world, got["code"], got["err"])
    _check_debug(results[-1]["err"])
    assert _state(world) == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the warm process is Linux-only")
def test_warm_process(world: Path, spark_connect: ConnectServer) -> None:
    log = Path(spark_connect.env["XDG_STATE_HOME"]) / "ducklake" / "warm.log"
    served = _served(log)
    _each_command(world, ["--remote", spark_connect.url], {**spark_connect.env, "DUCKLAKE_WARM": "1"})
    assert _served(log) == served + len(EVERYWHERE) + 1, "the commands did not run in the warm process"


def _served(log: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if line.startswith("command "))


def _each_command(world: Path, extra: list[str], env: dict[str, str]) -> None:
    before = _state(world)
    for case in EVERYWHERE:
        res = run_cli(*_args(case, world, *extra), env=env)
        _check(case, world, res.returncode, res.stderr)
        assert _state(world) == before, case.id
    res = run_cli(*_args(DEBUG, world, *extra), env=env)
    assert res.returncode == 1
    _check_debug(res.stderr)
    assert _state(world) == before


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("DUCKLAKE_CATALOG", "DUCKLAKE_CONFIG")}
