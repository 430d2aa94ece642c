"""What maintenance must never delete, on local disk and S3, and expire on a MySQL catalog (DuckDB cannot write
one: a DuckDB-written SQLite catalog is copied into it and both are expired alike)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

import ducklake_cli
from ducklake_cli.ops.cleanup import plan_orphans
from tests.ops.test_inspect_mysql import copy_sqlite_catalog_to_mysql
from tests.support.cli import run_cli
from tests.support.lakes import build_lake
from tests.support.oracle import oracle_connect, sql_str
from tests.support.services import S3Target
from tests.support.spot import Spot

OLD = time.time() - 30 * 86400


def _old(path: Path) -> None:
    os.utime(path, (OLD, OLD), follow_symlinks=False)


def test_nothing_but_orphans_is_ever_deleted(tmp_path: Path) -> None:
    data, outside = tmp_path / "data", tmp_path / "outside"
    outside.mkdir()
    data.mkdir()
    catalog = data / "catalog.parquet"  # the catalog file itself, inside the data path, with a DuckLake suffix
    con = oracle_connect()
    con.execute(f"ATTACH {sql_str('ducklake:sqlite:' + str(catalog))} AS lake (DATA_PATH {sql_str(str(data))})")
    for sql in ("CREATE TABLE lake.t (id BIGINT)", "INSERT INTO lake.t SELECT i FROM range(100) r(i)",
                "INSERT INTO lake.t SELECT i FROM range(100, 200) r(i)", "DELETE FROM lake.t WHERE id < 100",
                "INSERT INTO lake.t SELECT i FROM range(1000, 1050) r(i)"):
        con.execute(sql)
    files = {r[0]: r[1] for r in con.execute(
        "SELECT data_file_id, path FROM __ducklake_metadata_lake.ducklake_data_file ORDER BY 1").fetchall()}
    con.execute("DETACH lake")
    con.close()
    table_dir = data / "main" / "t"
    first, fresh = table_dir / files[0], table_dir / files[max(files)]  # first: live only at snapshots 2 and 3
    for p in table_dir.iterdir():
        _old(p)
    os.utime(fresh, (time.time() - 60, time.time() - 60))  # a referenced file written a minute ago
    _old(catalog)
    planted = {
        data / "notes.txt": b"not a DuckLake file", table_dir / "ducklake-x.parquet.bak": b"backup",
        outside / "victim.parquet": b"PAR1", outside / "deep" / "victim2.parquet": b"PAR1",
    }
    for path, body in planted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        _old(path)
    os.symlink(outside / "deep", data / "main" / "linked-dir")  # a directory link out of the data path
    os.symlink(outside / "victim.parquet", table_dir / "ducklake-link.parquet")  # a file link out of it
    orphan = table_dir / "ducklake-orphan.parquet"
    orphan.write_bytes(b"PAR1")
    _old(orphan)
    with sqlite3.connect(catalog) as db:  # scheduled rows that point outside the data path and at a live file
        db.execute("INSERT INTO ducklake_files_scheduled_for_deletion VALUES (900, ?, 0, '2020-01-01 00:00:00+00')",
                   (str(outside / "victim.parquet"),))
        db.execute("INSERT INTO ducklake_files_scheduled_for_deletion VALUES (901, ?, 1, '2020-01-01 00:00:00+00')",
                   (f"main/t/{files[max(files)]}",))
    before = catalog.read_bytes()

    assert run_cli("maintain", "expire", str(catalog), "--snapshots", "0,1", "--yes").returncode == 0
    for verb in (["cleanup", "--all"], ["orphans", "--all"], ["orphans"]):
        result = run_cli("maintain", *verb, str(catalog), "--yes", "--format", "json")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        deleted = {f["path"] for f in report["files"] if f["action"] == "delete"}
        assert deleted <= {str(orphan)}, verb
    assert not orphan.exists()  # the one real orphan went
    skipped = {f["path"]: f["reason"] for f in json.loads(run_cli(
        "maintain", "cleanup", str(catalog), "--all", "--dry-run", "--format", "json").stdout)["files"]}
    assert skipped == {str(outside / "victim.parquet"): "outside the data path",
                       str(fresh): "still referenced by a catalog row"}
    for path in [*planted, first, fresh, catalog, data / "main" / "linked-dir", table_dir / "ducklake-link.parquet"]:
        assert path.exists() or path.is_symlink(), path
    assert catalog.read_bytes() != before  # expire did change it; the files it names are all still there
    con = oracle_connect()
    con.execute(f"ATTACH {sql_str('ducklake:sqlite:' + str(catalog))} AS lake (DATA_PATH {sql_str(str(data))})")
    assert con.execute("SELECT count(*) FROM lake.t AT (VERSION => 3)").fetchone() == (200,)
    assert con.execute("SELECT count(*) FROM lake.t").fetchone() == (150,)
    con.close()


@pytest.mark.s3
def test_orphans_on_s3_match_duckdb(s3_bucket: S3Target, tmp_path: Path) -> None:
    catalog, root = tmp_path / "cat.sqlite", s3_bucket.url
    con = oracle_connect()
    con.execute(f"CREATE SECRET (TYPE s3, KEY_ID '{s3_bucket.key}', SECRET '{s3_bucket.secret}', "
                f"ENDPOINT '{s3_bucket.host_port}', URL_STYLE 'path', USE_SSL false, REGION '{s3_bucket.region}')")
    con.execute(f"ATTACH {sql_str('ducklake:sqlite:' + str(catalog))} AS lake (DATA_PATH {sql_str(root)})")
    for sql in ("CREATE SCHEMA lake.s", "CREATE TABLE lake.s.t (id BIGINT)",
                "INSERT INTO lake.s.t SELECT i FROM range(100) r(i)", "DELETE FROM lake.s.t WHERE id < 30"):
        con.execute(sql)
    fs = s3_bucket.filesystem()
    base = f"{s3_bucket.bucket}/{s3_bucket.prefix}"
    for key in ("s/t/ducklake-orphan.parquet", "junk.parquet", "s/stray.parquet", "s/t/notes.txt",
                "s/t/dv.puffin"):
        fs.pipe(f"{base}/{key}", b"PAR1")
    duck = sorted(r[0] for r in con.execute(
        "SELECT path FROM ducklake_delete_orphaned_files('lake', cleanup_all => true, dry_run => true)").fetchall())
    con.execute("DETACH lake")
    with ducklake_cli.connect(str(catalog), storage_options=s3_bucket.storage_options()) as lake:
        plan = plan_orphans(lake, all_files=True)
        assert sorted(p for p, _ in plan.orphans) == sorted([*duck, f"{root}s/t/dv.puffin"])
        assert len(duck) == 3
        report = plan.apply(lake)
        assert report.files_deleted == 4 and report.bytes_freed == 16
    left = {p.removeprefix(base + "/") for p in fs.find(base)}
    assert "s/t/notes.txt" in left and not {"junk.parquet", "s/stray.parquet", "s/t/dv.puffin"} & left
    con.execute(f"ATTACH {sql_str('ducklake:sqlite:' + str(catalog))} AS lake (DATA_PATH {sql_str(root)})")
    assert con.execute("SELECT count(*) FROM lake.s.t").fetchone() == (70,)
    con.close()


@pytest.mark.mysql
@pytest.mark.parametrize("spot", ["mysql"], indirect=True)
def test_expire_on_mysql_matches_sqlite(spot: Spot, tmp_path: Path) -> None:
    source = tmp_path / "src.sqlite"
    ids = build_lake("sqlite", str(source), spot.data_path, "table_lifecycle")
    assert run_cli("create-catalog", spot.catalog, "--data-path", str(spot.data_path)).returncode == 0
    copy_sqlite_catalog_to_mysql(source, spot.catalog)
    shutil.copy(source, tmp_path / "twin.sqlite")
    reports = [json.loads(run_cli("maintain", "expire", c, "--keep-last", "3", "--yes", "--format", "json").stdout)
               for c in (str(tmp_path / "twin.sqlite"), spot.catalog)]
    assert reports[0]["snapshot_ids"] == reports[1]["snapshot_ids"] == ids[:-3]
    assert reports[0]["files"] == reports[1]["files"] and reports[0]["files"]
    assert reports[0]["catalog_rows_removed"] == reports[1]["catalog_rows_removed"]
    assert reports[1]["catalog_rows_removed"]["inlined tables dropped"] > 0
    with ducklake_cli.connect(str(tmp_path / "twin.sqlite")) as lite, ducklake_cli.connect(spot.catalog) as my, \
            lite.reader() as a, my.reader() as b:
        assert [s.snapshot_id for s in a.snapshots()] == [s.snapshot_id for s in b.snapshots()] == ids[-3:]
        assert a.table_names() == b.table_names()
    again = json.loads(run_cli("maintain", "expire", spot.catalog, "--keep-last", "3", "--format", "json").stdout)
    assert again["snapshots_expired"] == 0
