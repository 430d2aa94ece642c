"""Differential tests of expire → cleanup → orphans against DuckDB 1.5.5 on two copies of one DuckDB-written lake
(SQLite and PostgreSQL catalogs): DuckDB maintains copy A, our CLI maintains copy B; afterwards both catalogs hold
exactly the same rows in every table (scheduled paths and snapshot ids included), the same files were deleted,
every surviving snapshot reads the same rows in DuckDB on both, and our metadata-only counts agree. Running every
verb a second time changes nothing."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import duckdb
import pytest

import ducklake_cli
from ducklake_cli.ops import inspect as inspect_ops
from tests.support.cli import run_main
from tests.support.lakes import Quiet, run_steps
from tests.support.oracle import attach_clause, oracle_connect
from tests.support.services import require_env

BASE = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)  # snapshot k is rewritten to BASE + k days
OLD = time.time() - 10 * 86400  # mtime of planted "old" files


def maintenance_scenario(con: duckdb.DuckDBPyConnection, alias: str) -> None:
    """Everything expire must clean up: replaced and ended data/delete files, Puffin vectors, a partitioned table,
    a dropped schema with a dropped table (inlined rows, an added file with a name mapping), views, tags, macros."""
    data = Path(str(con.execute("SELECT value FROM ducklake_options(?) WHERE option_name = 'data_path'",
                                [alias]).fetchone()[0]))  # type: ignore[index]
    added = data / "s2" / "gone" / "added-by-hand.parquet"
    added.parent.mkdir(parents=True, exist_ok=True)
    run_steps(con, alias, [
        "CREATE TABLE {lake}.t (id BIGINT, v VARCHAR, g INTEGER)",
        "ALTER TABLE {lake}.t SET PARTITIONED BY (g)",
        "INSERT INTO {lake}.t SELECT i, 'v' || i, i % 3 FROM range(300) r(i)",
        "DELETE FROM {lake}.t WHERE id % 10 = 0",
        "DELETE FROM {lake}.t WHERE id % 10 = 1",  # replaces the delete files
        "UPDATE {lake}.t SET v = 'upd' WHERE id BETWEEN 100 AND 160",
        "INSERT INTO {lake}.t VALUES (1000, 'inl', 0), (1001, 'inl', 1)",  # inlined
        "CREATE SCHEMA {lake}.s2",
        "CREATE TABLE {lake}.s2.gone (id INTEGER, v VARCHAR)",
        "INSERT INTO {lake}.s2.gone VALUES (1, 'a'), (2, 'b')",  # inlined, in a table that is dropped later
        "INSERT INTO {lake}.s2.gone SELECT i, 'x' FROM range(50) r(i)",
        Quiet(f"COPY (SELECT (500 + i)::INTEGER AS id, 'h' AS v FROM range(20) r(i)) TO '{added}' (FORMAT parquet)"),
        f"CALL ducklake_add_data_files('{{lake}}', 'gone', '{added}', schema => 's2')",
        "CREATE VIEW {lake}.s2.v AS SELECT id FROM {lake}.s2.gone",
        "COMMENT ON TABLE {lake}.t IS 'first'",
        "COMMENT ON TABLE {lake}.t IS 'second'",
        "CREATE MACRO {lake}.plus_one(a) AS a + 1",
        "DROP MACRO {lake}.plus_one",
        "DROP VIEW {lake}.s2.v",
        "DROP TABLE {lake}.s2.gone",
        "DROP SCHEMA {lake}.s2",
        Quiet("CALL {lake}.set_option('write_deletion_vectors', true)"),
        "CREATE TABLE {lake}.dv (id BIGINT)",
        "INSERT INTO {lake}.dv SELECT i FROM range(400) r(i)",
        "DELETE FROM {lake}.dv WHERE id % 7 = 0",
        "DELETE FROM {lake}.dv WHERE id % 7 = 1",  # a second vector replaces the first
        "DELETE FROM {lake}.t WHERE g = 2",
        "INSERT INTO {lake}.t SELECT i, 'late', 5 FROM range(2000, 2030) r(i)",
        "CREATE TABLE {lake}.tmp AS SELECT 1 AS one",
        "DROP TABLE {lake}.tmp",
        "INSERT INTO {lake}.dv VALUES (9999)",
    ])


@dataclass
class Copy:
    """One copy of the lake: how our CLI names it, how DuckDB attaches it, where its files are."""

    backend: str
    catalog: str  # path or URL
    data: Path

    def attach(self, alias: str) -> str:
        """DuckDB's ATTACH statement."""
        return attach_clause(self.backend, self.catalog, self.data, alias=alias)

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run SQL directly on the catalog database (`?` placeholders)."""
        if self.backend == "sqlite":
            with sqlite3.connect(self.catalog) as con:
                return con.execute(statement, params).fetchall()
        import psycopg

        with psycopg.connect(self.catalog, autocommit=True) as con:
            cur = con.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []

    def columns(self, table: str) -> list[str]:
        """Column names of a catalog table."""
        if self.backend == "sqlite":
            return [r[1] for r in self.sql(f'PRAGMA table_info("{table}")')]
        return [r[0] for r in self.sql("SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                                       "ORDER BY ordinal_position", (table,))]

    def rows(self) -> dict[str, list[str]]:
        """Every row of every catalog table, the data path spelled `<DATA>` (schedule_start aside: it is NOW() of
        each engine's own run)."""
        if self.backend == "sqlite":
            names = [r[0] for r in self.sql("SELECT name FROM sqlite_master WHERE type = 'table'")]
        else:
            names = [r[0] for r in self.sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        out = {}
        for name in sorted(names):
            keep = ", ".join(f'"{c}"' for c in self.columns(name) if c != "schedule_start")
            out[name] = sorted(
                repr(tuple(v.replace(str(self.data), "<DATA>") if isinstance(v, str) else v for v in r))
                for r in self.sql(f'SELECT {keep} FROM "{name}"')
            )
        return out

    def files(self) -> set[str]:
        """Files under the data path, relative to it."""
        return {str(Path(d, f).relative_to(self.data)) for d, _, fs in os.walk(self.data) for f in fs}


@contextmanager
def two_copies(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Copy, Copy]]:
    """The scenario written once by DuckDB, then copied: catalog and data files (mtimes kept)."""
    data_a, data_b = tmp_path / "a" / "data", tmp_path / "b" / "data"
    if backend == "sqlite":
        a = Copy("sqlite", str(tmp_path / "a" / "cat.sqlite"), data_a)
        data_a.mkdir(parents=True)
        _build(a)
        (tmp_path / "b").mkdir()
        shutil.copy(a.catalog, tmp_path / "b" / "cat.sqlite")
        b = Copy("sqlite", str(tmp_path / "b" / "cat.sqlite"), data_b)
        shutil.copytree(data_a, data_b, symlinks=True)
        _relocate(b, data_a)
        yield a, b
        return
    import psycopg

    url = request.getfixturevalue("pg_url")
    admin = require_env("DUCKLAKE_TEST_PG")
    a = Copy("postgres", url, data_a)
    data_a.mkdir(parents=True)
    _build(a)
    name_b = urlsplit(url).path.lstrip("/") + "_b"
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name_b}" TEMPLATE "{urlsplit(url).path.lstrip("/")}"')
    try:
        b = Copy("postgres", urlsplit(url)._replace(path="/" + name_b).geturl(), data_b)
        shutil.copytree(data_a, data_b, symlinks=True)
        _relocate(b, data_a)
        yield a, b
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name_b}" WITH (FORCE)')


def _build(copy: Copy) -> None:
    con = oracle_connect()
    try:
        con.execute(copy.attach("lake"))
        maintenance_scenario(con, "lake")
        con.execute("DETACH lake")
    finally:
        con.close()
    # Distinct days per snapshot: DuckDB compares SQLite's text times with an ISO 'T' literal (see COMPATIBILITY.md),
    # which only agrees with time order when the threshold's day holds no snapshot.
    for (sid,) in copy.sql("SELECT snapshot_id FROM ducklake_snapshot"):
        when = BASE + dt.timedelta(days=int(sid))
        value = when.strftime("%Y-%m-%d %H:%M:%S+00") if copy.backend == "sqlite" else when
        copy.sql("UPDATE ducklake_snapshot SET snapshot_time = ? WHERE snapshot_id = ?", (value, sid))


def _relocate(copy: Copy, old: Path) -> None:
    copy.sql("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", (str(copy.data) + "/",))
    for (path,) in copy.sql("SELECT path FROM ducklake_data_file WHERE NOT path_is_relative"):
        assert not path.startswith(str(old)), "scenario files must be relative to be copied"


def plant_orphans(copy: Copy) -> None:
    """The same stray files in both copies: old ones (10 days), a young one, a non-DuckLake file, a Puffin file."""
    for rel, old in (("main/t/ducklake-orphan-old.parquet", True), ("main/t/ducklake-orphan-new.parquet", False),
                     ("main/stray.parquet", True), ("junk.parquet", True), ("main/t/orphan-dv.puffin", True),
                     ("main/t/notes.txt", True)):
        path = copy.data / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"PAR1 not really")
        if old:
            os.utime(path, (OLD, OLD))


def duck(copy: Copy, sql: str) -> list[tuple[Any, ...]]:
    """Run a maintenance call on copy A with DuckDB."""
    con = oracle_connect()
    try:
        con.execute(copy.attach("lake"))
        rows = con.execute(sql).fetchall()
        con.execute("DETACH lake")
        return rows
    finally:
        con.close()


def ours(capsys: pytest.CaptureFixture[str], copy: Copy, *args: str) -> dict[str, Any]:
    """Run one of our verbs on copy B through the CLI, in this process (--yes: no question), and parse the JSON
    (the CLI's own process paths are tests/cli/test_maintain_cli.py's)."""
    code, out, err = run_main(capsys, "maintain", *args, copy.catalog, "--yes", "--format", "json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def assert_same(a: Copy, b: Copy) -> None:
    rows_a, rows_b = a.rows(), b.rows()
    assert rows_a.keys() == rows_b.keys()
    for name in rows_a:
        assert rows_a[name] == rows_b[name], name


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_expire_cleanup_orphans_match_duckdb(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with two_copies(backend, tmp_path, request) as (a, b):
        ids = [r[0] for r in a.sql("SELECT snapshot_id FROM ducklake_snapshot ORDER BY 1")]
        cut = BASE + dt.timedelta(days=len(ids) - 9, hours=6)  # after snapshot N-9: all but the last 8 expire

        # expire --older-than
        expired = duck(a, f"SELECT snapshot_id FROM ducklake_expire_snapshots('lake', older_than => '{cut}')")
        summary = ours(capsys, b, "expire", "--older-than", cut.isoformat())
        assert summary["snapshot_ids"] == [r[0] for r in expired] == ids[:-8]
        assert summary["snapshots_expired"] == len(expired) and summary["files_scheduled"] == 2
        assert summary["tables_removed"] == ["s2.gone"]
        assert_same(a, b)
        scheduled = sorted(r[0] for r in b.sql("SELECT path FROM ducklake_files_scheduled_for_deletion"))
        assert "s2/gone/added-by-hand.parquet" in scheduled
        assert all(not p.startswith("/") for p in scheduled)  # data_path-relative, as DuckDB writes them
        # a file ended later than the oldest surviving snapshot is still read there: not scheduled yet
        (ended,) = b.sql("SELECT path FROM ducklake_data_file WHERE end_snapshot IS NOT NULL")

        # expire --snapshots (one id twice over, the latest never)
        some = ids[-8:-5]
        duck(a, f"SELECT * FROM ducklake_expire_snapshots('lake', versions => {some})")
        summary = ours(capsys, b, "expire", "--snapshots", ",".join(map(str, [*some, ids[-1]])))
        assert summary["snapshot_ids"] == some
        assert summary["files_scheduled"] == 1 and summary["files"][0]["path"].endswith(ended[0])
        assert_same(a, b)

        # cleanup --all, then orphans with a one-day grace period
        plant_orphans(a)
        plant_orphans(b)
        before = a.files()
        assert before == b.files()
        scheduled = sorted(r[0] for r in b.sql("SELECT path FROM ducklake_files_scheduled_for_deletion"))
        duck(a, "SELECT * FROM ducklake_cleanup_old_files('lake', cleanup_all => true)")
        summary = ours(capsys, b, "cleanup", "--all")
        assert before - a.files() == before - b.files() == set(scheduled)
        assert summary["files_deleted"] == len(scheduled) and summary["bytes_freed"] > 0
        assert_same(a, b)
        before = a.files()
        duck(a, "SELECT * FROM ducklake_delete_orphaned_files('lake', older_than => now() - INTERVAL 1 DAY)")
        summary = ours(capsys, b, "orphans", "--older-than", "1d")
        assert before - a.files() == {"main/t/ducklake-orphan-old.parquet", "main/stray.parquet", "junk.parquet"}
        assert before - b.files() == (before - a.files()) | {"main/t/orphan-dv.puffin"}  # DuckDB skips Puffin
        assert summary["files_deleted"] == 4
        assert_same(a, b)

        # a second run of every verb changes nothing
        state = (b.rows(), b.files())
        verbs = (["expire", "--older-than", cut.isoformat()], ["cleanup", "--all"], ["orphans", "--older-than", "1d"])
        for verb in verbs:
            again = ours(capsys, b, *verb)
            assert again["snapshots_expired"] == again["files_scheduled"] == again["files_deleted"] == 0, verb
        assert (b.rows(), b.files()) == state

        # every surviving snapshot reads the same rows in DuckDB on both copies; our counts agree
        survivors = [r[0] for r in b.sql("SELECT snapshot_id FROM ducklake_snapshot ORDER BY 1")]
        con = oracle_connect()
        try:
            con.execute(a.attach("la"))
            con.execute(b.attach("lb"))
            with ducklake_cli.connect(b.catalog, read_only=True) as lake:
                for sid in survivors:
                    counts = inspect_ops.summary(lake, at=inspect_ops.SnapshotSelector(snapshot_id=sid)).tables
                    for t in counts:
                        q = f"SELECT * FROM {{}}.{t.schema}.{t.table} AT (VERSION => {sid}) ORDER BY ALL"
                        rows_a = con.execute(q.format("la")).fetchall()
                        assert rows_a == con.execute(q.format("lb")).fetchall(), (sid, t.table)
                        assert len(rows_a) == t.live_rows, (sid, t.table)
        finally:
            con.close()
