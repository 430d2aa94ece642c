"""DuckDB-file catalogs across DuckDB 1.5.5 and 2.0 (spec ducklake-versions §4): the catalog layer and the metadata
commands run under duckdb 2.0 (a second venv, `tests/support/duckdb2.py`); new files stay readable by 1.5.5; a 1.5
file we write under 2.0 keeps its storage; a file in 2.0's storage is refused under 1.5.5 in one line."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from ducklake_cli.catalog.backends import DuckDBBackend
from ducklake_cli.catalog.create import create_database_file
from ducklake_cli.catalog.duckdb_storage import DuckDBStorage, duckdb_file_storage
from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.errors import UsageError
from tests.support.cli import run_cli
from tests.support.duckdb2 import run_cli2, run_python2
from tests.support.oracle import attach_clause, oracle_connect

V15 = DuckDBStorage(68, 7)  # STORAGE_VERSION 'v1.5.0': what 1.5's ducklake extension and our create-catalog make
V10 = DuckDBStorage(64, 1)  # duckdb 1.5.5's default for a plain new database file (v0.10.2)
V20 = DuckDBStorage(999, 69)  # duckdb 2.0's default (its docs say 69: the serialization number)

# Metadata-only writes (no Spark): DDL through `query`, and options.
DDL = ("CREATE TABLE t2 (a INT NOT NULL, b DECIMAL(12, 3), c STRUCT(x INT, y VARCHAR)[], d MAP(VARCHAR, DOUBLE), "
       "e TIMESTAMPTZ, f VARCHAR DEFAULT 'x', g BLOB)")
DDL_MORE = ("CREATE SCHEMA s; CREATE TABLE s.u (k BIGINT, v UUID); ALTER TABLE t2 ADD COLUMN h DATE; "
            "ALTER TABLE t2 RENAME COLUMN b TO b2; CREATE VIEW v2 AS SELECT a FROM t2; COMMENT ON TABLE t2 IS 'two'")


def _ok(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr


def _write_metadata(run: Callable[..., subprocess.CompletedProcess[str]], catalog: str) -> None:
    """The metadata commands that write, run by `run` (`run_cli` under 1.5.5 or `run_cli2` under 2.0)."""
    _ok(run("query", catalog, DDL))
    _ok(run("query", catalog, DDL_MORE))
    _ok(run("options", catalog, "--set", "target_file_size=1MB", "--set", "data_inlining_row_limit=20"))


def _catalog_rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """The rows DDL writes, without uuids and times, read by plain duckdb 1.5.5 (read-only)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {
            "column": con.execute("SELECT table_id, column_id, column_order, column_name, column_type, "
                                  "initial_default, default_value, nulls_allowed, parent_column, begin_snapshot, "
                                  "end_snapshot FROM ducklake_column ORDER BY ALL").fetchall(),
            "table": con.execute("SELECT table_id, schema_id, table_name, path, begin_snapshot, end_snapshot "
                                 "FROM ducklake_table ORDER BY ALL").fetchall(),
            "view": con.execute("SELECT view_id, schema_id, view_name, dialect, sql, column_aliases "
                                "FROM ducklake_view ORDER BY ALL").fetchall(),
            "changes": con.execute("SELECT snapshot_id, changes_made FROM ducklake_snapshot_changes "
                                   "ORDER BY ALL").fetchall(),
            "snapshot": con.execute("SELECT snapshot_id, schema_version, next_catalog_id, next_file_id "
                                    "FROM ducklake_snapshot ORDER BY ALL").fetchall(),
            "options": con.execute("SELECT key, value, scope, scope_id FROM ducklake_metadata "
                                   "WHERE key NOT IN ('created_by', 'data_path') ORDER BY ALL").fetchall(),
            "tag": con.execute("SELECT object_id, key, value FROM ducklake_tag ORDER BY ALL").fetchall(),
            "inlined": con.execute("SELECT table_id, table_name, schema_version FROM ducklake_inlined_data_tables "
                                   "ORDER BY ALL").fetchall(),
        }
    finally:
        con.close()


def _oracle_sees(path: Path, data: Path, query: str) -> list[tuple[object, ...]]:
    """DuckDB 1.5.5's ducklake extension attaches the catalog (read-only) and answers `query` on `lake`."""
    con = oracle_connect()
    try:
        con.execute(attach_clause("duckdb", path, data, extra_options="READ_ONLY"))
        return con.execute(query).fetchall()
    finally:
        con.close()


# --- storage headers and the create function, in this venv (duckdb 1.5.5) ---


def test_header_storage_of_15_files(tmp_path: Path) -> None:
    plain, v15 = tmp_path / "plain.duckdb", tmp_path / "v15.duckdb"
    duckdb.connect(str(plain)).close()
    con = duckdb.connect()
    con.execute(f"ATTACH '{v15}' AS v15 (STORAGE_VERSION 'v1.5.0')")
    con.execute("CREATE TABLE v15.t AS SELECT 1 AS i")  # a checkpoint writes the second database header
    con.close()
    assert duckdb_file_storage(plain) == V10 and V10.needs == (0, 10)
    assert duckdb_file_storage(v15) == V15 and V15.needs == (1, 5)
    assert V20.needs == (2, 0) and V20.describe() == "storage version 999 (DuckDB 2.0+ format)"
    # A 1.5 file DuckDB 2.0 wrote with STORAGE_VERSION 'latest': the main header says 65, the database header 69.
    assert DuckDBStorage(65, 69).describe() == "storage version 65, serialization 69 (DuckDB 2.0+ format)"
    (tmp_path / "x.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(100))
    assert duckdb_file_storage(tmp_path / "x.sqlite") is None


def test_create_catalog_makes_15_storage_and_the_function_takes_another(tmp_path: Path) -> None:
    _ok(run_cli("create-catalog", str(tmp_path / "new.ducklake"), "--data-path", str(tmp_path / "data")))
    assert duckdb_file_storage(tmp_path / "new.ducklake") == V15

    old = DuckDBBackend(parse_catalog(str(tmp_path / "old.ducklake"), must_exist=False))
    assert create_database_file(old, storage_version="v1.0.0")
    v100 = DuckDBStorage(64, 2)
    assert duckdb_file_storage(tmp_path / "old.ducklake") == v100 and v100.needs == (1, 0)
    assert not create_database_file(old)  # an existing file is left as it is
    assert duckdb_file_storage(tmp_path / "old.ducklake") == v100
    _ok(run_cli("create-catalog", str(tmp_path / "old.ducklake"), "--data-path", str(tmp_path / "data")))
    # Still v1.0.0's header; 1.5.5 checkpoints a v1.0-headed file with v0.10's serialization number (1, not 2).
    assert duckdb_file_storage(tmp_path / "old.ducklake") == V10

    bad = DuckDBBackend(parse_catalog(str(tmp_path / "bad.ducklake"), must_exist=False))
    with pytest.raises(UsageError, match="cannot create DuckDB storage version 'v9.9.9'"):
        create_database_file(bad, storage_version="v9.9.9")
    assert not (tmp_path / "bad.ducklake").exists()


# --- under duckdb 2.0 (the second venv) ---


def test_catalog_made_under_duckdb2_opens_in_15(tmp_path: Path) -> None:
    cat, data = tmp_path / "cat.ducklake", tmp_path / "data"
    _ok(run_cli2("create-catalog", str(cat), "--data-path", str(data)))
    assert duckdb_file_storage(cat) == V15
    _write_metadata(run_cli2, str(cat))
    shown = run_cli2("inspect", str(cat), "t2", "--format", "json")
    _ok(shown)
    names = [c["name"] for c in json.loads(shown.stdout)["columns"] if "." not in c["name"]]  # no nested ones
    assert names == ["a", "b2", "c", "d", "e", "f", "g", "h"]
    assert duckdb_file_storage(cat) == V15

    # The same writes by our tool under 1.5.5 record the same rows (types and defaults rendered by DuckDB alike).
    twin, twin_data = tmp_path / "twin.ducklake", tmp_path / "twin_data"
    _ok(run_cli("create-catalog", str(twin), "--data-path", str(twin_data)))
    _write_metadata(run_cli, str(twin))
    assert _catalog_rows(cat) == _catalog_rows(twin)

    assert _oracle_sees(cat, data, "SELECT table_name, column_name, data_type FROM duckdb_columns() "
                                   "WHERE database_name = 'lake' AND table_name = 'u' ORDER BY column_index") == [
        ("u", "k", "BIGINT"), ("u", "v", "UUID")]
    _ok(run_cli("inspect", str(cat)))


def test_duckdb2_storage_catalog_is_used_under_2_and_refused_under_15(tmp_path: Path) -> None:
    cat, data = tmp_path / "cat.ducklake", tmp_path / "data"
    # DuckDB 2.0's own storage, asked for through the create function; then create-catalog fills the empty file.
    made = run_python2(
        "import sys, duckdb\n"
        "from ducklake_cli.catalog.backends import DuckDBBackend\n"
        "from ducklake_cli.catalog.create import create_database_file\n"
        "from ducklake_cli.catalog.url import parse_catalog\n"
        "assert create_database_file(DuckDBBackend(parse_catalog(sys.argv[1], must_exist=False)),"
        " storage_version='latest')\n"
        "print(duckdb.__version__)\n", str(cat))
    assert made.stdout.startswith("2.0.")
    assert duckdb_file_storage(cat) == V20
    _ok(run_cli2("create-catalog", str(cat), "--data-path", str(data)))
    _write_metadata(run_cli2, str(cat))
    shown = run_cli2("inspect", str(cat), "--format", "json")
    _ok(shown)
    assert sorted(t["table"] for t in json.loads(shown.stdout)["tables"]) == ["t2", "u"]
    assert duckdb_file_storage(cat) == V20

    before = cat.read_bytes()
    for args in (("inspect", str(cat)), ("query", str(cat), "CREATE TABLE t3 (i INT)")):
        refused = run_cli(*args)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.count("\n") == 1
        assert refused.stderr.startswith(f"error: DuckDB catalog {cat} uses storage version 999 (DuckDB 2.0+ "
                                         "format), which the installed duckdb 1.5.5 cannot open")
        for fix in ("install duckdb 2.0", "STORAGE_VERSION 'v1.5.0'); COPY FROM DATABASE old TO new",
                    f"ducklake copy-catalog {cat} new.ducklake"):
            assert fix in refused.stderr
    assert cat.read_bytes() == before

    # The hint's fix: under 2.0, copy-catalog makes a new file 1.5.5 opens.
    copy = tmp_path / "copy.ducklake"
    _ok(run_cli2("copy-catalog", str(cat), str(copy)))
    assert duckdb_file_storage(copy) == V15
    assert _oracle_sees(copy, data, "SELECT comment FROM duckdb_tables() WHERE database_name = 'lake' "
                                    "AND table_name = 't2'") == [("two",)]


@pytest.mark.parametrize("made_by", ["create-catalog", "duckdb-default", "extension"])
def test_15_file_written_under_duckdb2_keeps_its_storage(made_by: str, tmp_path: Path) -> None:
    """A catalog file made under 1.5.5 (by us, in DuckDB 1.5.5's default v1.0.0 storage, or by the ducklake
    extension with rows in it), written by our tool under 2.0, still opens in 1.5.5 as it was stored."""
    cat, data = tmp_path / "cat.ducklake", tmp_path / "data"
    if made_by == "duckdb-default":
        duckdb.connect(str(cat)).close()
    if made_by == "extension":
        con = oracle_connect()
        try:
            con.execute(attach_clause("duckdb", cat, data))
            con.execute("CREATE TABLE lake.t (i BIGINT, s VARCHAR)")
            con.execute("INSERT INTO lake.t SELECT range, 'v' || range FROM range(3)")  # inlined
            con.execute("INSERT INTO lake.t SELECT range, 'w' || range FROM range(3, 1003)")  # a Parquet file
        finally:
            con.close()
    else:
        _ok(run_cli("create-catalog", str(cat), "--data-path", str(data)))
    storage = duckdb_file_storage(cat)
    assert storage == (V10 if made_by == "duckdb-default" else V15)

    headers = cat.read_bytes()[4096:12288]
    _write_metadata(run_cli2, str(cat))
    # DuckDB 2.0 checkpointed the writes into the file (new database headers, no WAL left) in the file's own storage.
    assert cat.read_bytes()[4096:12288] != headers and not cat.with_name(cat.name + ".wal").exists()
    assert duckdb_file_storage(cat) == storage

    con = duckdb.connect(str(cat), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM ducklake_table WHERE table_name IN ('t2', 'u')").fetchone() == (2,)
    finally:
        con.close()
    assert _oracle_sees(cat, data, "SELECT column_name FROM duckdb_columns() WHERE database_name = 'lake' "
                                   "AND table_name = 't2' ORDER BY column_index") == [
        (c,) for c in ("a", "b2", "c", "d", "e", "f", "g", "h")]
    if made_by == "extension":
        assert _oracle_sees(cat, data, "SELECT count(*), sum(i) FROM lake.t") == [(1003, sum(range(1003)))]
    _ok(run_cli("inspect", str(cat)))
