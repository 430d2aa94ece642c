"""`expire --older-than 7d` on 10,000 snapshots (one a hour, so 9,8xx expire) with half of the 10,000 data files
ended along the way (so ~5,000 files are freed and scheduled, with their stats rows) takes under 5 s, end to end
through the CLI, on SQLite and PostgreSQL: a few set-based statements, no per-snapshot work."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests.scripts.test_make_big_catalog import mbc  # noqa: F401  (the script as a module fixture)
from tests.support.cli import run_cli

SNAPSHOTS = FILES = 10_000
LIMIT_S = 5.0


def _end_half(catalog: str) -> str:
    # Every other file ends one snapshot after it began: realistic churn for expire to free.
    sql = "UPDATE ducklake_data_file SET end_snapshot = begin_snapshot + 1 WHERE data_file_id % 2 = 1"
    if catalog.startswith("postgresql"):
        import psycopg

        with psycopg.connect(catalog, autocommit=True) as con:
            con.execute(sql)
    else:
        with sqlite3.connect(catalog) as con:
            con.execute(sql)
    return catalog


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_expire_10k_snapshots_under_5s(backend: str, tmp_path: Path, mbc: ModuleType,  # noqa: F811
                                       request: pytest.FixtureRequest) -> None:
    catalog = str(tmp_path / "cat.sqlite") if backend == "sqlite" else request.getfixturevalue("pg_url")
    options = mbc.Options(catalog=catalog, data_path=tmp_path / "data", snapshots=SNAPSHOTS, files=FILES,
                          rows_per_file=20, mode="copy", interval=3600.0)
    mbc.build(options)
    _end_half(catalog)
    start = time.perf_counter()
    result = run_cli("maintain", "expire", catalog, "--older-than", "7d", "--yes", "--format", "json")
    elapsed = time.perf_counter() - start
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert SNAPSHOTS - 200 < report["snapshots_expired"] < SNAPSHOTS
    assert report["files_scheduled"] > 4_800
    print(f"\nexpire {backend}: {report['snapshots_expired']} snapshots, {report['files_scheduled']} files "  # noqa: T201
          f"scheduled in {elapsed:.2f} s")
    assert elapsed < LIMIT_S
