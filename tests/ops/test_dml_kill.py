"""A `ducklake query CATALOG "DELETE …"` killed with SIGKILL (issue #13, acceptance): (a) while Spark's executors
write its delete files, (b) inside its catalog commit, after every row of the snapshot was inserted but before
COMMIT. Either way every catalog table holds exactly the rows it held before, DuckDB reads the table as before,
and `maintain orphans --all` finds (and removes) exactly the delete files the killed process left behind.

To stop the process inside its commit, the test holds PostgreSQL's EXCLUSIVE lock on `ducklake_snapshot_changes`
(reads still pass): the commit's last INSERT waits on it, which `pg_stat_activity` shows."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.oracle import attach_clause, oracle_connect
from tests.support.writes import (
    LEAN_JVM_ENV,
    LEAN_SPARK,
    CliProcess,
    alive,
    cli_args,
    data_files,
    descendants,
    oracle_lake,
    pg_catalog_rows,
    scalar,
    sqlite_digest,
)

pytestmark = pytest.mark.spark

BIG_FILES = 4
BIG_ROWS = 300_000  # per file: 270,000 positions per delete file, most of a second to write each
DEADLINE_S = 240


def _seed(backend: str, catalog: str, data: Path, files: int, rows: int) -> None:
    """Our catalog; DuckDB creates main.t with `files` data files of `rows` rows."""
    created = run_cli("create-catalog", catalog, "--data-path", str(data))
    assert created.returncode == 0, created.stderr
    con = oracle_connect()
    try:
        con.execute(attach_clause(backend, catalog, data))
        con.execute("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
        for f in range(files):
            con.execute(f"INSERT INTO lake.main.t SELECT i, 'v' || (i % 1000) FROM range({f * rows}, "
                        f"{(f + 1) * rows}) r(i)")
        assert scalar(con, "SELECT count(*) FROM __ducklake_metadata_lake.ducklake_data_file") == files
    finally:
        con.close()


def _sqlite_rows(path: str) -> dict[str, list[str]]:
    """Every row of every table of a SQLite catalog, sorted."""
    con = sqlite3.connect(path)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {n: sorted(repr(r) for r in con.execute(f'SELECT * FROM "{n}"')) for n in names}
    finally:
        con.close()


def _delete_files(data: Path) -> set[Path]:
    return {p for p in data_files(data) if p.name.endswith("-delete.parquet")}


def _start_delete(catalog: str, where: str, logs: Path) -> CliProcess:
    return CliProcess(cli_args("query", catalog, f"DELETE FROM main.t WHERE {where}", *LEAN_SPARK),
                      log_dir=logs, name="killed", env=LEAN_JVM_ENV)


def _kill(proc: CliProcess) -> None:
    """SIGKILL the whole process group; wait until every process of it is gone."""
    tree = descendants(proc.pid)
    assert proc.popen.poll() is None, "the delete finished before the kill"
    proc.kill_group()
    assert proc.wait(30).returncode == -9
    assert tree, "the delete had no child processes (no JVM?)"
    gone_by = time.monotonic() + 30
    while alive(tree) and time.monotonic() < gone_by:
        time.sleep(0.2)
    assert not alive(tree), f"processes of the killed delete still running: {alive(tree)}"


def _wait_for(what: str, proc: CliProcess, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        assert proc.popen.poll() is None, f"the delete ended before it was killed: {proc.wait(1)}"
        assert time.monotonic() < deadline, f"no {what} within {DEADLINE_S} s"
        time.sleep(0.02)


def _orphans_removed(catalog: str, data: Path, expected: set[Path]) -> None:
    """`maintain orphans --all` lists exactly `expected` and deletes them."""
    plan = run_cli("maintain", "orphans", catalog, "--all", "--dry-run", "--format", "json")
    assert plan.returncode == 0, plan.stderr
    listed = {Path(f["path"]).name for f in json.loads(plan.stdout)["files"]}
    assert listed == {p.name for p in expected}, (listed, expected)
    applied = run_cli("maintain", "orphans", catalog, "--all", "--yes", "--format", "json")
    assert applied.returncode == 0, applied.stderr
    assert not any(p.exists() for p in expected)


def test_sigkill_while_spark_writes_delete_files(tmp_path: Path) -> None:
    """Killed when the first of its delete files appears, before the others: the SQLite catalog is unchanged."""
    catalog = str(tmp_path / "lake.sqlite")
    data = tmp_path / "data"
    _seed("sqlite", catalog, data, BIG_FILES, BIG_ROWS)
    before_rows, before_digest = _sqlite_rows(catalog), sqlite_digest(Path(catalog))

    proc = _start_delete(catalog, "id % 10 <> 0", tmp_path / "logs")
    _wait_for("delete file", proc, lambda: bool(_delete_files(data)))
    _kill(proc)
    left = _delete_files(data)
    sys.stderr.write(f"delete killed mid-job after {time.monotonic() - proc.started:.0f} s: "
                     f"{len(left)} of {BIG_FILES} delete files begun\n")
    # Fewer delete files than target files: the job had not finished, so the kill hit it mid-job.
    assert 0 < len(left) < BIG_FILES, left

    assert _sqlite_rows(catalog) == before_rows
    assert sqlite_digest(Path(catalog)) == before_digest
    assert not Path(catalog + "-journal").exists() and not Path(catalog + "-wal").exists()
    with oracle_lake("sqlite", catalog, data) as con:
        assert con.execute("SELECT count(*), sum(id) FROM lake.main.t").fetchone() == \
            (BIG_FILES * BIG_ROWS, sum(range(BIG_FILES * BIG_ROWS)))
    _orphans_removed(catalog, data, left)
    assert _sqlite_rows(catalog) == before_rows


def _pg_sessions(url: str) -> list[tuple[str, str, str]]:
    """(state, wait event type, query) of every other session on the catalog database."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        rows = con.execute("SELECT coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(query, '') "
                           "FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid()").fetchall()
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]


@pytest.mark.postgres
def test_sigkill_inside_the_commit(pg_url: str, tmp_path: Path) -> None:
    """Killed while its commit waits to insert the snapshot's change row (every other row already inserted): the
    PostgreSQL catalog rolls back to exactly what it held."""
    import psycopg

    data = tmp_path / "data"
    _seed("postgres", pg_url, data, 2, 1_000)
    before = pg_catalog_rows(pg_url)
    before_files = set(data_files(data))

    with psycopg.connect(pg_url) as blocker:
        blocker.execute("LOCK TABLE ducklake_snapshot_changes IN EXCLUSIVE MODE")
        proc = _start_delete(pg_url, "id % 1000 < 500", tmp_path / "logs")  # 500 rows of each file

        def waiting() -> bool:
            return any(w == "Lock" and "ducklake_snapshot_changes" in q.lower() and q.lstrip().upper()
                       .startswith("INSERT") for _, w, q in _pg_sessions(pg_url))

        try:
            _wait_for("commit waiting on the lock", proc, waiting)
            # The rows before the change row are in: the snapshot row, the delete files' rows.
            assert any("ducklake_snapshot_changes" in q for _, _, q in _pg_sessions(pg_url))
            _kill(proc)
        finally:
            proc.kill_group()
            blocker.rollback()
    deadline = time.monotonic() + 30
    while _pg_sessions(pg_url) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _pg_sessions(pg_url) == [], "the killed delete's session is still open"
    assert pg_catalog_rows(pg_url) == before
    left = set(data_files(data)) - before_files
    assert len(left) == 2 and all(p.name.endswith("-delete.parquet") for p in left), left
    with oracle_lake("postgres", pg_url, data) as con:
        assert con.execute("SELECT count(*), sum(id) FROM lake.main.t").fetchone() == (2_000, sum(range(2_000)))
        assert scalar(con, "SELECT count(*) FROM ducklake_snapshots('lake')") == 4  # catalog, table, 2 inserts
    _orphans_removed(pg_url, data, left)
    assert pg_catalog_rows(pg_url) == before
