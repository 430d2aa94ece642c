"""`write` into a DuckDB-made lake on S3 (SeaweedFS on loopback), then `maintain expire`, `cleanup` and `orphans` on
it: DuckDB 1.5.5 reads exactly the rows we wrote, and our cleanup and orphans delete exactly the objects DuckDB's
`ducklake_cleanup_old_files` / `ducklake_delete_orphaned_files` name (their dry runs, on a copy of the catalog: both
copies share one set of objects). No secret shows in any output or the Connect server's log."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import ducklake_cli
from ducklake_cli.ops.write import run_write
from tests.engine.test_s3 import _oracle
from tests.ops.test_write_differential import EVENTS, assert_same_rows
from tests.support.cli import run_cli
from tests.support.connect import ConnectServer
from tests.support.services import S3Target
from tests.support.writes import make_parquet

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.s3, pytest.mark.spark]

INPUTS = {
    "base": f"SELECT * FROM ({EVENTS}) WHERE id < 200",  # DuckDB's own rows
    "more": f"SELECT * FROM ({EVENTS}) WHERE id BETWEEN 200 AND 449",
    "few": f"SELECT * FROM ({EVENTS}) WHERE id IN (0, 1, 2)",
    "late": f"SELECT * FROM ({EVENTS}) WHERE id >= 450",
    "events": EVENTS,
}


def _keys(s3: S3Target) -> set[str]:
    """Every object under the test's prefix, relative to it."""
    base = f"{s3.bucket}/{s3.prefix}/"
    return {p.removeprefix(base) for p in s3.filesystem().find(base)}


def _duckdb_dry_run(s3: S3Target, catalog: Path, tmp_path: Path, call: str) -> set[str]:
    """The paths DuckDB's maintenance function would delete, computed on a copy of the catalog."""
    twin = tmp_path / f"twin-{call}.sqlite"
    shutil.copy(catalog, twin)
    con = _oracle(s3, twin)
    try:
        rows = con.execute(f"SELECT path FROM {call}('lake', cleanup_all => true, dry_run => true)").fetchall()
    finally:
        con.close()
    return {str(p).removeprefix(s3.url) for (p,) in rows}


def test_write_to_s3_lake_read_by_duckdb_and_cleaned_like_duckdb(
    s3_bucket: S3Target, spark: SparkSession, spark_connect: ConnectServer, tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    s3, catalog = s3_bucket, tmp_path / "cat.sqlite"
    inputs = {name: str(make_parquet(tmp_path / f"{name}.parquet", sql)) for name, sql in INPUTS.items()}
    con = _oracle(s3, catalog)
    con.execute(f"CREATE TABLE lake.events AS SELECT * FROM read_parquet('{inputs['base']}')")
    con.execute("DELETE FROM lake.events WHERE id % 10 = 0")  # a delete file
    con.close()
    aws = {"AWS_ACCESS_KEY_ID": s3.key, "AWS_SECRET_ACCESS_KEY": s3.secret, "AWS_ENDPOINT_URL": s3.endpoint,
           "AWS_REGION": s3.region}
    runs: list[subprocess.CompletedProcess[str]] = []

    def cli(*args: str) -> dict[str, Any]:
        res = run_cli(*args, "--format", "json", env=aws)
        runs.append(res)
        assert res.returncode == 0, res.stderr[-3000:]
        out: dict[str, Any] = json.loads(res.stdout)
        return out

    # In-process on embedded Spark: a file appended to DuckDB's table, then 3 rows inlined in the catalog;
    # through Spark Connect (CLI, AWS_* credentials): a new table partitioned by identity and day.
    with ducklake_cli.connect(str(catalog), storage_options=s3.storage_options()) as lake:
        more = run_write(lake, "events", source=[inputs["more"]])
        few = run_write(lake, "events", source=[inputs["few"]])
    assert (more.files, more.inlined_rows, few.files, few.inlined_rows) == (1, 0, 0, 3)
    assert all(p.startswith(f"{s3.url}main/events/") for p in more.paths)
    parts = cli("write", str(catalog), "parts", "--from", inputs["events"], "--partition-by", "region",
                "--partition-by", "day(ts)", "--remote", spark_connect.url)
    assert parts["created_table"] and parts["files"] > 4
    assert any(k.startswith("main/parts/region=eu/day=") for k in _keys(s3))

    def read(*names: str) -> str:
        return "SELECT * FROM read_parquet([" + ", ".join(f"'{inputs[n]}'" for n in names) + "])"

    con = _oracle(s3, catalog)
    try:
        assert_same_rows(con, "SELECT * FROM lake.events",
                         f"SELECT * FROM ({read('base')}) WHERE id % 10 <> 0 UNION ALL {read('more', 'few')}")
        assert_same_rows(con, "SELECT * FROM lake.parts", read("events"))
        pruned = "SELECT count(*) FROM {} WHERE region = 'eu' AND ts < '2024-02-01'"  # DuckDB prunes on our keys
        assert con.execute(pruned.format("lake.parts")).fetchone() == con.execute(
            pruned.format(f"({read('events')})")).fetchone()
    finally:
        con.close()

    # An overwrite ends every file and inlined row of DuckDB's table; expiring the older snapshots schedules them.
    with ducklake_cli.connect(str(catalog), storage_options=s3.storage_options()) as lake:
        late = run_write(lake, "events", source=[inputs["late"]], mode="overwrite")
    expired = cli("maintain", "expire", str(catalog), "--keep-last", "1", "--yes")
    scheduled = {f["path"].removeprefix(s3.url) for f in expired["files"]}
    assert len(scheduled) == 3 and more.paths[0].removeprefix(s3.url) in scheduled  # data, delete, our append

    # cleanup: DuckDB's dry run on a twin catalog names exactly the objects ours deletes
    theirs = _duckdb_dry_run(s3, catalog, tmp_path, "ducklake_cleanup_old_files")
    before = _keys(s3)
    assert theirs == scheduled and theirs <= before
    cleaned = cli("maintain", "cleanup", str(catalog), "--all", "--yes")
    assert before - _keys(s3) == theirs and cleaned["files_deleted"] == 3

    # orphans: stray objects at the root, in a hive directory of our table and beside DuckDB's files
    fs = s3.filesystem()
    planted = ["junk.parquet", "main/parts/region=eu/ducklake-orphan.parquet", "main/events/ducklake-stray.parquet",
               "main/events/notes.txt"]
    for key in planted:
        fs.pipe(f"{s3.bucket}/{s3.prefix}/{key}", b"PAR1")
    theirs = _duckdb_dry_run(s3, catalog, tmp_path, "ducklake_delete_orphaned_files")
    assert theirs == set(planted[:3])
    before = _keys(s3)
    orphans = cli("maintain", "orphans", str(catalog), "--all", "--yes")
    assert before - _keys(s3) == theirs and orphans["files_deleted"] == 3

    con = _oracle(s3, catalog)
    try:
        assert_same_rows(con, "SELECT * FROM lake.events", read("late"))
        assert_same_rows(con, "SELECT * FROM lake.parts", read("events"))
        assert con.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone() == (late.snapshot_id,)
    finally:
        con.close()

    captured = capfd.readouterr()
    for text in [*(r.stdout + r.stderr for r in runs), captured.out + captured.err,
                 spark_connect.log.read_text(errors="replace")]:
        assert s3.secret not in text
