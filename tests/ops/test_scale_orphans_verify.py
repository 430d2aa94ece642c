"""`maintain orphans` and `verify` at scale keep their answers: the local `os.scandir` listing lists what fsspec's
does, catalog membership (streamed tuples) names the paths the row-by-row resolution names, path safety resolved
once per directory gives each path's reason, and sizes stat'ed in batches (local) or by directory listing (S3) are
`file_sizes`' ones."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import time
from pathlib import Path

import pytest

import ducklake_cli
from ducklake_cli.catalog import maintenance as m
from ducklake_cli.catalog import verify as cv
from ducklake_cli.ops.cleanup import plan_orphans, referenced_paths
from ducklake_cli.ops.verify import verify
from ducklake_cli.storage.files import filesystem
from ducklake_cli.storage.listing import (
    LIST_MIN,
    PathGuard,
    SizeProbe,
    complete,
    file_sizes,
    iter_files,
    list_files,
    listed_time,
    path_key,
)
from tests.support.oracle import oracle_connect, sql_str
from tests.support.services import S3Target

OLD = time.time() - 30 * 86400


def _write(path: Path, body: bytes = b"PAR1", *, old: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    if old:
        os.utime(path, (OLD, OLD))
    return path


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    """A data path with nested directories, links to files and directories (inside and out), a FIFO, an empty
    directory; and a directory outside it."""
    data, outside = tmp_path / "data", tmp_path / "outside"
    for i in range(5):
        _write(data / "main" / "t" / f"ducklake-{i}.parquet", b"x" * i)
    _write(data / "main" / "t" / "k=1" / "deep" / "deeper" / "ducklake-d.parquet", b"deep")
    _write(data / "top.parquet")
    _write(data / "main" / "schema-level.puffin")
    _write(data / "main" / "t" / "notes.txt", b"notes")
    _write(outside / "victim.parquet")
    (data / "main" / "empty").mkdir()
    os.symlink(outside / "victim.parquet", data / "main" / "t" / "link.parquet")
    os.symlink(outside, data / "main" / "t" / "out-dir")
    os.symlink(data / "main" / "t" / "k=1", data / "main" / "in-dir")
    os.mkfifo(data / "main" / "t" / "pipe.parquet")
    return data, outside


def test_local_listing_lists_what_fsspec_lists(tmp_path: Path) -> None:
    data, _ = _tree(tmp_path)
    fs = filesystem(str(data))
    found = fs.find(str(data), detail=True, withdirs=False)
    expected = sorted((name, int(info["size"]), info["mtime"]) for name, info in found.items()
                      if info["type"] == "file" and not info["islink"])
    listed = sorted(item for batch in iter_files(str(data)) for item in batch)
    assert listed == expected and len(listed) == 9
    assert [(f.path, f.size, f.modified) for f in list_files(str(data))] == \
        [(p, size, listed_time(mtime)) for p, size, mtime in expected]
    bare = sorted(item for batch in iter_files(str(data), sizes=False) for item in batch)
    assert [p for p, _, _ in bare] == [p for p, _, _ in expected] and {s for _, s, _ in bare} == {-1}
    assert [complete(item) for item in bare] == expected
    assert complete((str(data / "gone.parquet"), -1, None)) is None


def test_path_guard_gives_each_path_its_reason(tmp_path: Path) -> None:
    data, outside = _tree(tmp_path)
    _write(outside / "f.parquet")
    catalog = _write(data / "cat.parquet")
    guard = PathGuard(str(data), [str(catalog)])
    t = data / "main" / "t"
    cases = {
        t / "ducklake-1.parquet": None,
        t / "k=1" / "deep" / "deeper" / "ducklake-d.parquet": None,
        data / "main" / "in-dir" / "deep" / "deeper" / "ducklake-d.parquet": None,  # a link that stays inside
        t / "link.parquet": "a symbolic link",
        t / "out-dir" / "f.parquet": "outside the data path (through a link)",
        catalog: "protected (the catalog file)",
        outside / "victim.parquet": "outside the data path",
        t / ".." / ".." / "top.parquet": "outside the data path",
    }
    for path, reason in cases.items():
        assert guard.reason(str(path)) == reason, path
        assert PathGuard(str(data), [str(catalog)]).reason(str(path)) == reason, path
    assert guard.reason(f"s3://bucket/{data}/main/t/x.parquet") == "outside the data path"
    s3 = PathGuard("s3://bucket/data/")
    assert s3.reason("s3://bucket/data/main/t/x.parquet") is None
    assert s3.reason("s3://bucket/other/x.parquet") == "outside the data path"


def _duckdb_lake(tmp_path: Path) -> tuple[Path, Path]:
    """A partitioned table and a plain one, with a deletion, written by DuckDB."""
    catalog, data = tmp_path / "cat.sqlite", tmp_path / "data"
    con = oracle_connect()
    con.execute(f"ATTACH {sql_str('ducklake:sqlite:' + str(catalog))} AS lake (DATA_PATH {sql_str(str(data))})")
    for sql in ("CREATE TABLE lake.p (k INTEGER, v BIGINT)", "ALTER TABLE lake.p SET PARTITIONED BY (k)",
                "INSERT INTO lake.p SELECT i % 4, i FROM range(400) r(i)",
                "INSERT INTO lake.p SELECT i % 3, i FROM range(300) r(i)",
                "CREATE TABLE lake.t (id BIGINT)", "INSERT INTO lake.t SELECT i FROM range(100) r(i)",
                "INSERT INTO lake.t SELECT i FROM range(100, 200) r(i)", "DELETE FROM lake.t WHERE id % 7 = 0"):
        con.execute(sql)
    con.execute("DETACH lake")
    con.close()
    return catalog, data


def test_referenced_paths_are_the_row_by_row_resolution(tmp_path: Path) -> None:
    catalog, data = _duckdb_lake(tmp_path)
    with sqlite3.connect(catalog) as db:  # odd spellings take the exact path: absolute, doubled and leading slashes
        ids = [r[0] for r in db.execute("SELECT data_file_id FROM ducklake_data_file ORDER BY 1")]
        db.execute("UPDATE ducklake_data_file SET path = '/elsewhere//x.parquet', path_is_relative = 0 "
                   "WHERE data_file_id = ?", (ids[0],))
        db.execute("UPDATE ducklake_data_file SET path = replace(path, '/', '//') WHERE data_file_id = ?", (ids[1],))
        db.execute("UPDATE ducklake_data_file SET path = '/' || path WHERE data_file_id = ?", (ids[2],))
    with ducklake_cli.connect(str(catalog)) as lake, lake.reader() as r:
        schemas, tables = m.directories(r.conn)
        dirs = m.table_dirs(r.data_path, schemas, tables)
        expected = {path_key(m.file_location(f, dirs, r.data_path)) for f in m.all_files(r.conn)}
        assert referenced_paths(r.conn, r.data_path) == expected
        assert len(expected) == len(m.all_files(r.conn)) > 8


def test_orphans_in_partition_directories_match_duckdb(tmp_path: Path) -> None:
    catalog, data = _duckdb_lake(tmp_path)
    planted = [_write(d / f"ducklake-orphan-{i}.parquet") for i, d in
               enumerate(sorted(p for p in (data / "main" / "p").rglob("*") if p.is_dir()))]
    planted.append(_write(data / "main" / "t" / "ducklake-orphan.parquet"))
    _write(data / "main" / "t" / "ducklake-young.parquet", old=False)
    _write(data / "main" / "t" / "notes.txt")
    con = oracle_connect()
    con.execute(f"ATTACH {sql_str('ducklake:sqlite:' + str(catalog))} AS lake (DATA_PATH {sql_str(str(data))})")
    duck = sorted(r[0] for r in con.execute(
        "SELECT path FROM ducklake_delete_orphaned_files('lake', older_than => now() - INTERVAL 1 DAY, "
        "dry_run => true)").fetchall())
    con.execute("DETACH lake")
    con.close()
    listed = sum(1 for p in data.rglob("*") if p.is_file())
    with ducklake_cli.connect(str(catalog)) as lake:
        plan = plan_orphans(lake, older_than=dt.datetime.fromtimestamp(OLD + 86400, dt.UTC))
    assert [p for p, _ in plan.orphans] == duck == sorted(str(p) for p in planted)
    assert all(size == 4 for _, size in plan.orphans) and len(planted) > 4
    assert plan.notes[1:] == (f"{listed} file(s) listed under {data}/",
                              "1 unreferenced file(s) are younger than the grace period (maybe still being written)",
                              "1 file(s) are not DuckLake data or delete files and are never touched")


def test_sizes_stat_in_batches_as_file_sizes_says(tmp_path: Path) -> None:
    data, _ = _tree(tmp_path)
    t = data / "main" / "t"
    os.symlink(t / "missing.parquet", t / "broken.parquet")
    paths = [str(p) for p in (*sorted(t.iterdir()), t / "missing.parquet", data / "main")]
    expected = file_sizes(paths)
    assert SizeProbe().sizes(paths) == [expected[p] for p in paths]
    assert None in expected.values() and 3 in expected.values()


def test_live_file_rows_stream_in_batches(tmp_path: Path) -> None:
    catalog, _ = _duckdb_lake(tmp_path)
    with ducklake_cli.connect(str(catalog)) as lake, lake.reader() as r:
        sid = r.latest_snapshot().snapshot_id
        ids = [t.table_id for t in r.tables(sid)]
        whole = [(kind, tuple(row)) for kind, rows in cv.live_file_rows(r.conn, sid, ids) for row in rows]
        small = [(kind, tuple(row)) for kind, rows in cv.live_file_rows(r.conn, sid, ids, batch=2) for row in rows]
        assert whole == small
        assert [row[1][0] for row in whole if row[0] == "data"] == [d.data_file_id for d in r.data_files(sid, ids)]
        assert [row[1][0] for row in whole if row[0] == "delete"] == \
            [x.delete_file_id for x in r.delete_files(sid, ids)]
    with ducklake_cli.connect(str(catalog)) as lake:
        report = verify(lake)
    assert report.healthy and report.checked["data_files"] == len([w for w in whole if w[0] == "data"])
    assert report.checked["delete_files"] == len([w for w in whole if w[0] == "delete"]) > 0


@pytest.mark.s3
def test_s3_sizes_by_directory_listing_as_file_sizes_says(s3_bucket: S3Target) -> None:
    fs = s3_bucket.filesystem()
    base = f"{s3_bucket.bucket}/{s3_bucket.prefix}"
    for i in range(LIST_MIN + 2):
        fs.pipe(f"{base}/many/f{i}.parquet", b"x" * i)
    fs.pipe(f"{base}/few/a.parquet", b"abc")
    fs.pipe(f"{base}/many/sub/inner.parquet", b"inner")
    root = s3_bucket.url
    paths = [f"{root}many/f{i}.parquet" for i in range(LIST_MIN + 2)]
    paths += [f"{root}many/missing.parquet", f"{root}many/sub", f"{root}few/a.parquet", f"{root}few/gone.parquet",
              f"{root}nowhere/x.parquet"]
    options = s3_bucket.storage_options()
    expected = file_sizes(paths, options)
    assert SizeProbe(options).sizes(paths) == [expected[p] for p in paths]
    assert expected[f"{root}many/f3.parquet"] == 3 and expected[f"{root}many/missing.parquet"] is None
