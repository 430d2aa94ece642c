"""`query` errors: one line on stderr, exit 1, nothing changed."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.cli import run_cli, run_main
from tests.support.lakes import build_lake
from tests.support.oracle import oracle_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """catalog_example, with snapshot 2 expired by DuckDB."""
    root = tmp_path_factory.mktemp("qerr")
    cat = root / "cat.sqlite"
    build_lake("sqlite", str(cat), root / "data", "catalog_example")
    con = oracle_connect()
    try:
        con.execute(f"ATTACH 'ducklake:sqlite:{cat}' AS lake")
        con.execute("CALL ducklake_expire_snapshots('lake', versions => [2])")
        con.execute("DETACH lake")
    finally:
        con.close()
    return cat


@pytest.mark.parametrize(
    ("sql", "extra", "needle"),
    [
        ("SELEC id FROM t", [], "SQL syntax error"),
        ("SELEC x", [], "SQL syntax error near 'SELEC'"),
        ("SELECT id FROM t WHERE", [], "SQL syntax error"),
        ("SELECT * FROM nosuch", [], "table main.nosuch does not exist"),
        ("SELECT * FROM tt", [], "did you mean main.t"),
        ("SELECT count(*) FROM t VERSION AS OF 99", [], "snapshot 99 does not exist"),
        ("SELECT count(*) FROM t VERSION AS OF 2", [], "snapshot 2 does not exist (it may have been expired)"),
        ("SELECT count(*) FROM t", ["--snapshot", "99"], "snapshot 99 does not exist"),
        ("SELECT count(*) FROM t TIMESTAMP AS OF '2001-01-01 00:00:00'", [], "no snapshot at or before"),
        ("SELECT count(*) FROM t", ["--as-of", "2001-01-01"], "no snapshot at or before"),
        ("DROP TABLE nosuch", [], "table main.nosuch does not exist"),
    ],
)
def test_one_line_exit_1(lake: Path, sql: str, extra: list[str], needle: str) -> None:
    before = hashlib.sha256(lake.read_bytes()).hexdigest()
    res = run_cli("query", str(lake), sql, *extra)
    assert res.returncode == 1, (res.returncode, res.stderr)
    assert res.stderr.startswith("error: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.stderr and needle in res.stderr
    assert hashlib.sha256(lake.read_bytes()).hexdigest() == before


@pytest.mark.spark
def test_spark_analyser_error_is_one_line_exit_1(lake: Path, spark: SparkSession,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """In this process, on the session's JVM (the subprocess path of the same rendering is tested above)."""
    before = hashlib.sha256(lake.read_bytes()).hexdigest()
    code, _, err = run_main(capsys, "query", str(lake), "SELECT nosuchcol FROM t")
    assert code == 1 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "nosuchcol" in err
    assert hashlib.sha256(lake.read_bytes()).hexdigest() == before


@pytest.mark.spark
def test_output_needs_a_known_extension(lake: Path, tmp_path: Path, spark: SparkSession,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "query", str(lake), "SELECT 1", "--output", str(tmp_path / "x.xlsx"))
    assert code == 2 and "use a .parquet, .csv or .json" in err
