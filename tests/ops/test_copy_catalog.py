"""copy-catalog: a DuckDB-built SQLite catalog copied to DuckDB, PostgreSQL, MySQL and back reads identically at
every snapshot (by DuckDB where it attaches, by our scan planning everywhere, by Spark for a few snapshots), a
--data-path copy reads from the new place, and bad destinations change nothing."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from ducklake_cli.catalog.copy import TableCopy
from ducklake_cli.catalog.url import CatalogTarget, parse_catalog
from ducklake_cli.engine.planning.scan_plan import plan_scan
from ducklake_cli.errors import CatalogExistsError, DuckLakeError, UnsupportedVersionError
from ducklake_cli.lake import Lake
from ducklake_cli.ops.copy_catalog import CopiedCatalog, copy_catalog
from tests.support.copy_lakes import TYPED_HISTORY, attach_sql, build_history_lake, build_lake, read_every_snapshot


@dataclass
class History:
    """The source lake; DuckDB's reading of it and our scan plans of it at every snapshot, made when first used."""

    root: Path
    catalog: Path

    @cached_property
    def oracle(self) -> dict[int, dict[str, Any]]:
        """DuckDB's rows of t and u at every snapshot."""
        return read_every_snapshot(attach_sql("sqlite", self.catalog))

    @cached_property
    def scans(self) -> dict[int, dict[str, Any]]:
        """Our scan plans at every snapshot."""
        return scans(target(self.catalog))


def target(path_or_url: str | Path) -> CatalogTarget:
    """A catalog target that need not exist yet."""
    return parse_catalog(str(path_or_url), must_exist=False)


def scans(catalog: CatalogTarget, *, old_root: str = "", new_root: str = "") -> dict[int, dict[str, Any]]:
    """Our read of every table at every snapshot from metadata: files (paths under `new_root` shown as under
    `old_root`), their deletes, and the decoded inlined rows."""
    out: dict[int, dict[str, Any]] = {}
    with Lake.open(catalog, read_only=True) as lake, lake.reader() as r:
        for snap in r.snapshots():
            sid = snap.snapshot_id
            schemas = r.schemas(sid)
            out[sid] = {}
            for t in r.tables(sid):
                plan = plan_scan(r, table=t, snapshot_id=sid, data_path=r.data_path, schemas=schemas)
                files = sorted((f.path.replace(new_root, old_root, 1) if new_root else f.path, f.record_count,
                                f.row_id_start, f.delete.path.replace(new_root, old_root, 1)
                                if f.delete and new_root else (f.delete.path if f.delete else None),
                                f.inlined_deletes) for f in plan.files)
                inlined = [(i.table_name, i.rows.to_pylist()) for i in plan.inlined]
                out[sid][t.name] = (tuple(c.name for c in t.columns), files, inlined)
    return out


def history_json(catalog: CatalogTarget) -> Any:
    """`inspect --snapshots` as JSON (its metrics come from per-backend SQL)."""
    from ducklake_cli.ops.inspect import snapshots

    with Lake.open(catalog, read_only=True) as lake:
        return snapshots(lake).to_json()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """The DuckDB-built lake of tests/support/copy_lakes.py, read once."""
    root = tmp_path_factory.mktemp("copy_source")
    catalog = build_history_lake(root)
    return History(root, catalog)


def check_copy(result: CopiedCatalog, history: History) -> None:
    """Every table verified, the source's row counts, the source's tables."""
    assert all(t.matches for t in result.tables)
    with sqlite3.connect(history.catalog) as con:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        counts = {n: con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    assert {t.table: t.copied_rows for t in result.tables} == counts


@pytest.mark.postgres
@pytest.mark.mysql
def test_copies_round_trip_through_every_backend(history: History, tmp_path: Path, pg_url: str,
                                                 mysql_url: str) -> None:
    duck, back = tmp_path / "copy.ducklake", tmp_path / "back.sqlite"
    chain = [(target(history.catalog), target(duck)), (target(duck), target(pg_url)),
             (target(pg_url), target(mysql_url)), (target(mysql_url), target(back))]
    metrics = history_json(target(history.catalog))
    for src, dst in chain:
        check_copy(copy_catalog(src, dst), history)
        assert scans(dst) == history.scans, f"our reading of the copy on {dst.backend} differs"
        assert history_json(dst) == metrics, f"inspect --snapshots differs on {dst.backend}"
    for backend, where in (("duckdb", duck), ("postgres", pg_url), ("sqlite", back)):
        assert read_every_snapshot(attach_sql(backend, where)) == history.oracle, f"DuckDB reads {backend} apart"
    # A second copy into a now non-empty database is refused and changes nothing.
    for url in (pg_url, mysql_url):
        with pytest.raises(CatalogExistsError, match="not empty"):
            copy_catalog(target(history.catalog), target(url))
    assert scans(target(mysql_url)) == history.scans


@pytest.mark.postgres
@pytest.mark.mysql
def test_every_type_of_inlined_value_survives_a_copy(tmp_path: Path, pg_url: str, mysql_url: str) -> None:
    source = build_lake(tmp_path / "typed", TYPED_HISTORY, inlining=10)
    expected = read_every_snapshot(attach_sql("sqlite", source), tables=("k",))
    duck, back = tmp_path / "typed.ducklake", tmp_path / "back.sqlite"
    copy_catalog(target(source), target(mysql_url))
    copy_catalog(target(mysql_url), target(back))
    for dst, backend in ((pg_url, "postgres"), (duck, "duckdb"), (back, "sqlite")):
        if backend != "sqlite":
            copy_catalog(target(source), target(dst))
        got = read_every_snapshot(attach_sql(backend, dst), tables=("k",))
        assert repr(got) == repr(expected), backend  # repr: NaN equals itself


def moved_lake(history: History, where: Path) -> tuple[Path, Path]:
    """A private copy of the source lake (catalog and data, the catalog pointing at its own data), for tests that
    move or damage it."""
    shutil.copytree(history.root, where)
    with sqlite3.connect(where / "cat.sqlite") as con:
        con.execute(f"UPDATE ducklake_metadata SET value = '{where}/data/' WHERE key = 'data_path'")
    return where / "cat.sqlite", where / "data"


def test_data_path_copy_reads_from_the_new_location(history: History, tmp_path: Path) -> None:
    catalog, data = moved_lake(history, tmp_path / "lake")
    with sqlite3.connect(catalog) as con:  # absolute paths: one under the data path (moves), one outside (stays)
        old_root = con.execute("SELECT value FROM ducklake_metadata WHERE key = 'data_path'").fetchone()[0]
        con.execute(f"UPDATE ducklake_data_file SET path = '{old_root}main/u/' || path, path_is_relative = 0 "
                    "WHERE table_id = 2")
        con.execute("UPDATE ducklake_files_scheduled_for_deletion SET path = '/registered/x.parquet', "
                    "path_is_relative = 0 WHERE data_file_id = (SELECT min(data_file_id) FROM "
                    "ducklake_files_scheduled_for_deletion)")
    moved = tmp_path / "elsewhere" / "data"
    moved.parent.mkdir()
    data.rename(moved)  # nothing remains at the old place
    dst = tmp_path / "moved.sqlite"
    result = copy_catalog(target(catalog), target(dst), data_path=str(moved))
    assert result.data_path == f"{moved}/" and result.data_path_rewritten
    check_copy(result, history)
    with sqlite3.connect(dst) as con:
        absolute = {r[0] for r in con.execute("SELECT path FROM ducklake_data_file WHERE path_is_relative = 0 UNION "
                                              "SELECT path FROM ducklake_files_scheduled_for_deletion "
                                              "WHERE path_is_relative = 0")}
    assert "/registered/x.parquet" in absolute and all(p.startswith(f"{moved}/main/u/") for p in absolute - {
        "/registered/x.parquet"}) and len(absolute) > 1
    assert read_every_snapshot(attach_sql("sqlite", dst)) == history.oracle
    assert scans(target(dst), old_root=f"{history.root}/data/", new_root=f"{moved}/") == history.scans


def test_a_non_empty_destination_is_refused_and_unchanged(history: History, tmp_path: Path) -> None:
    dst = tmp_path / "other.sqlite"
    with sqlite3.connect(dst) as con:
        con.execute("CREATE TABLE keep(x)")
    before = dst.read_bytes()
    with pytest.raises(CatalogExistsError, match="not empty"):
        copy_catalog(target(history.catalog), target(dst))
    assert dst.read_bytes() == before
    with pytest.raises(CatalogExistsError, match="same catalog"):
        copy_catalog(target(history.catalog), target(history.catalog))


def test_an_unknown_format_version_is_refused(history: History, tmp_path: Path) -> None:
    catalog, _ = moved_lake(history, tmp_path / "lake")
    with sqlite3.connect(catalog) as con:
        con.execute("UPDATE ducklake_metadata SET value = '1.1-dev2' WHERE key = 'version'")
    with pytest.raises(UnsupportedVersionError, match="no DuckDB release writes"):
        copy_catalog(target(catalog), target(tmp_path / "new.sqlite"))
    assert not (tmp_path / "new.sqlite").exists()


@pytest.fixture
def failing_verification(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Verification that finds ducklake_column different."""
    monkeypatch.setattr(TableCopy, "matches", property(lambda self: self.name != "ducklake_column"))
    yield


@pytest.mark.mysql
def test_a_failed_verification_leaves_nothing_behind(history: History, tmp_path: Path, mysql_url: str,
                                                      failing_verification: None) -> None:
    dst = tmp_path / "new.ducklake"
    with pytest.raises(DuckLakeError, match="verification failed: 1 table"):
        copy_catalog(target(history.catalog), target(dst))
    assert not dst.exists()
    with pytest.raises(DuckLakeError, match="verification failed"):
        copy_catalog(target(history.catalog), target(mysql_url))  # MySQL DDL does not roll back: dropped
    import pymysql

    from tests.support.services import mysql_connect_args

    with pymysql.connect(**mysql_connect_args(mysql_url)) as con, con.cursor() as cur:
        cur.execute("SHOW TABLES")
        assert cur.fetchall() == ()


@pytest.mark.spark
@pytest.mark.mysql
def test_spark_reads_a_moved_mysql_copy_like_duckdb_reads_the_source(history: History, tmp_path: Path,
                                                                      mysql_url: str, spark: Any) -> None:
    from ducklake_cli.catalog.snapshots import SnapshotSelector
    from ducklake_cli.ops.query import run_query

    catalog, data = moved_lake(history, tmp_path / "lake")
    moved = tmp_path / "moved"
    data.rename(moved)
    copy_catalog(target(catalog), target(mysql_url), data_path=str(moved))
    with Lake.open(target(mysql_url), read_only=True) as lake:
        # t at 17: files, delete files and a live inlined row; u at 21: a renamed column, an inlined deletion.
        got_t = run_query(lake, "SELECT a, b, e, f FROM t", at=SnapshotSelector(snapshot_id=17)).rows
        got_u = run_query(lake, "SELECT * FROM u", at=SnapshotSelector(snapshot_id=21)).rows
    assert sorted(map(tuple, got_t), key=repr) == sorted(
        ((r[0], r[1], r[4], r[5]) for r in history.oracle[17]["t"]), key=repr)
    assert sorted(map(tuple, got_u), key=repr) == history.oracle[21]["u"]
