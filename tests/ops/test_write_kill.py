"""A `ducklake write` killed with SIGKILL while Spark writes its Parquet files (issue #4, acceptance).

The whole process group dies (driver, JVM; the Spark Python workers follow once their JVM is gone). Afterwards a
SQLite catalog is byte-identical (sha256, no hot journal left) and a PostgreSQL catalog holds exactly the same
rows in every `ducklake_*` table, with no session of the writer left; DuckDB still reads the table as before.
The half-written files stay behind as orphans (allowed: `maintain orphans` removes them)."""

from __future__ import annotations

import time
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
    make_wide_parquet,
    oracle_lake,
    pg_catalog_rows,
    scalar,
    sqlite_digest,
    wide_rows_sql,
)

INPUT_ROWS = 3_000_000  # several seconds of Spark writing even on a fast machine
BASE_ROWS = 1_000


def _pg_sessions(url: str) -> list[tuple[str, str]]:
    """(state, query) of every other session on the catalog database."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        rows = con.execute("SELECT coalesce(state, ''), coalesce(query, '') FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


@pytest.mark.spark
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_sigkill_mid_job_leaves_catalog_unchanged(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    catalog = str(tmp_path / "lake.sqlite") if backend == "sqlite" else str(request.getfixturevalue("pg_url"))
    data = tmp_path / "data"
    created = run_cli("create-catalog", catalog, "--data-path", str(data))
    assert created.returncode == 0, created.stderr
    con = oracle_connect()
    try:
        con.execute(attach_clause(backend, catalog, data))
        con.execute(f"CREATE TABLE lake.main.w AS {wide_rows_sql(10 * INPUT_ROWS, 10 * INPUT_ROWS + BASE_ROWS)}")
    finally:
        con.close()
    source = make_wide_parquet(tmp_path / "in", INPUT_ROWS, files=2)
    before_files = set(data_files(data))

    def fingerprint() -> object:
        return sqlite_digest(Path(catalog)) if backend == "sqlite" else pg_catalog_rows(catalog)

    before = fingerprint()

    proc = CliProcess(cli_args("write", catalog, "main.w", "--from", str(source), "--mode", "append", *LEAN_SPARK),
                      log_dir=tmp_path / "logs", name="killed", env=LEAN_JVM_ENV)
    deadline = time.monotonic() + 150
    started_file: list[Path] = []
    while not started_file:
        assert proc.popen.poll() is None, f"write ended before it was killed: {proc.wait(1)}"
        assert time.monotonic() < deadline, "no data file appeared within 150 s"
        time.sleep(0.1)
        started_file = sorted(set(data_files(data)) - before_files)
    time.sleep(0.5)  # well inside the job: the executor is streaming row groups into the file
    tree = descendants(proc.pid)
    sessions_during_job = _pg_sessions(catalog) if backend == "postgres" else []
    assert proc.popen.poll() is None, "write finished before the kill"
    proc.kill_group()
    finished = proc.wait(30)
    assert finished.returncode == -9, finished
    assert tree, "the writer had no child processes (no JVM?)"
    gone_by = time.monotonic() + 30
    while alive(tree) and time.monotonic() < gone_by:
        time.sleep(0.2)
    assert not alive(tree), f"processes of the killed write still running: {alive(tree)}"

    # The driver never opened a catalog transaction that outlived planning (nothing held while Spark ran).
    assert not [s for s in sessions_during_job if s[0].startswith("idle in transaction")], sessions_during_job
    assert fingerprint() == before
    if backend == "sqlite":
        assert not Path(catalog + "-journal").exists() and not Path(catalog + "-wal").exists()
    else:
        deadline = time.monotonic() + 10
        while _pg_sessions(catalog) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _pg_sessions(catalog) == []
    orphans = sorted(set(data_files(data)) - before_files)
    assert orphans, "the killed write left no file: it was not killed mid-write"
    with oracle_lake(backend, catalog, data) as con:
        assert scalar(con, "SELECT count(*) FROM lake.main.w") == BASE_ROWS
        assert scalar(con, "SELECT count(*) FROM ducklake_snapshots('lake')") == 2  # create-catalog, CREATE TABLE
        referenced = {Path(r[0]).name for r in con.execute(
            "SELECT path FROM __ducklake_metadata_lake.ducklake_data_file").fetchall()}
    assert not referenced & {p.name for p in orphans}
    if backend == "sqlite":
        assert sqlite_digest(Path(catalog)) == before  # DuckDB's read-only attach changed nothing either
