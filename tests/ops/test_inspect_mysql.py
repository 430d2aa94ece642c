"""MySQL/MariaDB catalogs (DuckDB cannot write them): a DuckDB-written SQLite catalog, copied row by row into a
MySQL catalog made by our `create-catalog`, inspects exactly like the SQLite original at every snapshot (whose
counts the differential suite checks against DuckDB)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pymysql
import pytest

import ducklake_cli
from ducklake_cli.catalog.backends import parse_timestamp_text
from ducklake_cli.ops import inspect as inspect_ops
from tests.support.cli import run_cli
from tests.support.lakes import build_lake
from tests.support.services import mysql_connect_args
from tests.support.spot import Spot
from tests.support.tiers import full_only


def copy_sqlite_catalog_to_mysql(sqlite_path: Path, mysql_url: str) -> None:
    """Copy every catalog row; inlined tables are created with TEXT payload columns (SQLite stores text too)."""
    src = sqlite3.connect(sqlite_path)
    dst = pymysql.connect(**{**mysql_connect_args(mysql_url), "autocommit": False})
    try:
        with dst.cursor() as cur:
            cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
            existing = {r[0] for r in cur.fetchall()}
            names = [r[0] for r in src.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for name in names:
                cols = [r[1] for r in src.execute(f'PRAGMA table_info("{name}")')]
                if name not in existing:
                    decl = ", ".join(f"`{c}` {'BIGINT' if i < 3 else 'TEXT'}" for i, c in enumerate(cols))
                    cur.execute(f"CREATE TABLE `{name}` ({decl})")
                else:
                    cur.execute(f"DELETE FROM `{name}`")
                rows = src.execute(f'SELECT * FROM "{name}"').fetchall()
                if name in ("ducklake_snapshot", "ducklake_files_scheduled_for_deletion"):
                    ts = cols.index("snapshot_time" if name == "ducklake_snapshot" else "schedule_start")
                    rows = [(*r[:ts], parse_timestamp_text(r[ts]).replace(tzinfo=None), *r[ts + 1:]) for r in rows]
                if rows:
                    marks = ", ".join(["%s"] * len(cols))
                    cur.executemany(f"INSERT INTO `{name}` VALUES ({marks})", rows)
        dst.commit()
    finally:
        dst.close()
        src.close()


@pytest.mark.parametrize("scenario", ["catalog_example", "evolution", full_only("deletes"), full_only("misc")])
@pytest.mark.parametrize("spot", ["mysql"], indirect=True)
def test_mysql_catalog_inspects_like_duckdb(spot: Spot, scenario: str, tmp_path: Path) -> None:
    source = tmp_path / "src.sqlite"
    ids = build_lake("sqlite", str(source), spot.data_path, scenario)
    assert run_cli("create-catalog", spot.catalog, "--data-path", str(spot.data_path)).returncode == 0
    copy_sqlite_catalog_to_mysql(source, spot.catalog)
    with ducklake_cli.connect(str(source), read_only=True) as lite, \
            ducklake_cli.connect(spot.catalog, read_only=True) as my:
        assert [s.snapshot_id for s in inspect_ops.snapshots(my).snapshots] == ids
        for sid in ids:
            at = inspect_ops.SnapshotSelector(snapshot_id=sid)
            expected = {(t.schema, t.table): t.live_rows for t in inspect_ops.summary(lite, at=at).tables}
            assert {(t.schema, t.table): t.live_rows for t in inspect_ops.summary(my, at=at).tables} == expected
        first, last = inspect_ops.snapshots(my).snapshots[0], inspect_ops.snapshots(lite).snapshots[0]
        assert first.snapshot_time == last.snapshot_time
