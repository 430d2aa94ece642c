"""`SELECT count(*) FROM t` is answered from metadata: no JVM, no Spark job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.built_lakes import BuiltLakes
from tests.support.cli import run_cli
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot

PROBE = """
import sys
from ducklake_cli.cli.app import main
try:
    main({args!r})
except SystemExit as exc:
    assert not exc.code, exc.code
print("SPARK" if any(m == "pyspark" or m.startswith("pyspark.") for m in sys.modules) else "NO_SPARK")
"""


def _many_files(spot: Spot, files: int) -> int:
    """A table with `files` data files (scripts/make_big_catalog.py), plus a DuckDB delete; returns count(*)."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "make_big_catalog.py"
    subprocess.run([sys.executable, str(script), spot.catalog, "--data-path", str(spot.data_path),
                    "--files", str(files), "--snapshots", str(files)], check=True, capture_output=True)
    con = oracle_connect()
    try:
        con.execute(f"ATTACH 'ducklake:sqlite:{spot.catalog}' AS lake")
        con.execute("DELETE FROM lake.events WHERE id % 7 = 0")
        count = con.execute("SELECT count(*) FROM lake.events").fetchone()[0]  # type: ignore[index]
        files_live = con.execute("SELECT count(*) FROM ducklake_list_files('lake', 'events')").fetchone()[0]  # type: ignore[index]
        assert files_live >= files
        con.execute("DETACH lake")
        return int(count)
    finally:
        con.close()


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_count_of_1000_files_starts_no_spark(spot: Spot) -> None:
    expected = _many_files(spot, 1000)
    args = ["query", spot.catalog, "SELECT count(*) FROM events", "--format", "json"]
    res = subprocess.run([sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert lines[-1] == "NO_SPARK"
    assert json.loads("\n".join(lines[:-1])) == [{"count(1)": expected}]


def test_count_with_time_travel_and_alias(tmp_path: Path, built_lakes: BuiltLakes) -> None:
    spot, ids = built_lakes.copy("catalog_example", tmp_path / "lake")
    res = run_cli("query", spot.catalog, f"SELECT COUNT(*) AS n FROM main.t VERSION AS OF {ids[2]}", "-f", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [{"n": 1000}]
