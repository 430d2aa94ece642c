"""DDL through `ducklake query`: metadata only (Spark never starts), one snapshot per statement; bad DDL is one
line on stderr, exit 1, the catalog byte-identical, and DuckDB still attaches the lake."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_main
from tests.support.oracle import attach_clause, oracle_connect


def _lake(root: Path) -> tuple[Path, Path]:
    """Schema s with table s.t(a INT, b VARCHAR, s STRUCT(x INT, y INT), f FLOAT) holding a row, view s.v, and an
    empty schema e; built by DuckDB."""
    catalog, data = root / "cat.sqlite", root / "data"
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data))
        con.execute("CREATE SCHEMA lake.s")
        con.execute("CREATE SCHEMA lake.e")
        con.execute("CREATE TABLE lake.s.t (a INTEGER, b VARCHAR, s STRUCT(x INTEGER, y INTEGER), f FLOAT)")
        con.execute("INSERT INTO lake.s.t VALUES (1, NULL, {'x': 1, 'y': 2}, 1.5)")
        con.execute("CREATE VIEW lake.s.v AS SELECT a FROM lake.s.t")
        con.execute("DETACH lake")
    finally:
        con.close()
    return catalog, data


def _attach_ok(catalog: Path, data: Path) -> list[tuple[str, str]]:
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data))
        con.execute("SELECT * FROM lake.s.t").fetchall()
        return con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'lake' "
                           "ORDER BY ALL").fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One DuckDB-built lake per module, copied for each test (building one takes DuckDB a while)."""
    root = tmp_path_factory.mktemp("ddl_template")
    _lake(root)
    return root


@pytest.fixture
def lake(template: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A fresh copy of the template's catalog (DDL writes no data: the data path stays the template's)."""
    shutil.copy(template / "cat.sqlite", tmp_path / "cat.sqlite")
    return tmp_path / "cat.sqlite", template / "data"


def _query(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, catalog: Path,
           *args: str) -> tuple[int, str, str]:
    monkeypatch.delenv("DUCKLAKE_CATALOG", raising=False)
    return run_main(capsys, "query", str(catalog), *args)


BAD = [
    ("ALTER TABLE s.t DROP COLUMN nope", "no column nope"),
    ("ALTER TABLE s.t ALTER COLUMN a TYPE SMALLINT", "cannot change the type"),
    ("ALTER TABLE s.t ALTER COLUMN b TYPE INT", "cannot change the type"),
    ("ALTER TABLE s.t RENAME COLUMN a TO b", "already exists"),
    ("ALTER TABLE s.t RENAME TO v", "a view of that name exists"),
    ("DROP SCHEMA s", "CASCADE"),
    ("DROP TABLE s.nope", "does not exist"),
    ("DROP TABLE nope.t", "schema nope does not exist"),
    ("CREATE TABLE nope.t (a INT)", "schema nope does not exist"),
    ("CREATE TABLE s.t (a INT)", "already exists"),
    ("CREATE SCHEMA s", "already exists"),
    ("CREATE VIEW s.t AS SELECT 1", "already exists"),
    ("CREATE VIEW s.v AS SELECT 1", "already exists"),
    ("ALTER TABLE s.t SET PARTITIONED BY (s.x)", "nested"),
    ("ALTER TABLE s.t SET PARTITIONED BY (year(a))", "date or timestamp"),
    ("ALTER TABLE s.t SET PARTITIONED BY (nope)", "no column"),
    ("ALTER TABLE s.t SET SORTED BY (nope)", "no column nope"),
    ("ALTER TABLE s.t SET SORTED BY (s.x)", "unqualified"),
    ("ALTER TABLE s.t ALTER COLUMN b SET NOT NULL", "NULL"),
    ("CREATE TABLE s.u (a DECIMAL)", "DECIMAL(precision, scale)"),
    ("CREATE TABLE s.u (a INT DEFAULT 'x')", "not a valid"),
    ("CREATE TABLE s.u (a NOPE)", "type"),
    ("CREATE TABLE s.u (a INT, A INT)", "twice"),
    ("COMMENT ON COLUMN s.t.nope IS 'x'", "no column"),
    ("ALTER VIEW s.v RENAME TO t", "a table of that name exists"),
    ("DROP VIEW s.nope", "does not exist"),
    ("ALTER TABLE s.t FROBNICATE", "unsupported"),
    ("DROP SCHEMA main", "cannot be dropped"),
    ("CREATE TABLE s.u (`` INT)", "empty"),
    ("ALTER TABLE s.t ADD COLUMN `` INT", "empty"),
    ("CREATE TABLE s.`` (a INT)", "empty"),
    ("CREATE SCHEMA ``", "empty"),
    ("ALTER TABLE s.t ADD COLUMN g INT DEFAULT 1+2", "constant"),
    ("ALTER TABLE s.t ADD COLUMN g BOOLEAN DEFAULT true", "constant"),
    ("ALTER TABLE s.t ADD COLUMN g DATE DEFAULT DATE '2024-13-45'", "DEFAULT"),
    ("ALTER TABLE s.t ADD COLUMN g INT DEFAULT 'abc'", "not a valid"),
    ("ALTER TABLE s.t RENAME TO e.t2", "another schema"),
    ("CREATE TABLE othercat.s.q9 (a INT)", "too many parts"),
    ("DROP TABLE othercat.s.t", "too many parts"),
    ("COMMENT ON COLUMN othercat.s.t.a IS 'x'", "schema.]table.column"),
    ("ALTER TABLE s.t SET PARTITIONED BY (bucket(0, a))", "bucket(0, a): the bucket count must be positive"),
    ("CREATE VIEW s.w AS SELECT * FROM nope", "nope does not exist"),
    ("CREATE VIEW s.w AS WITH c AS (SELECT 1) SELECT * FROM c JOIN s.nope ON true", "s.nope does not exist"),
    ("ALTER TABLE s.t SET PARTITIONED BY (trunc(a))", "PARTITIONED BY 'trunc(a)' is not a column"),
]


@pytest.mark.parametrize(("sql", "needle"), BAD, ids=[b[0] for b in BAD])
def test_bad_ddl_changes_nothing(sql: str, needle: str, lake: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """One line, exit 1, the catalog file byte-identical, DuckDB still attaches it."""
    catalog, data = lake
    before = hashlib.sha256(catalog.read_bytes()).hexdigest()
    code, out, err = _query(capsys, monkeypatch, catalog, sql)
    assert code == 1, (out, err)
    assert needle.lower() in err.lower(), err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert hashlib.sha256(catalog.read_bytes()).hexdigest() == before  # so DuckDB attaches it as before
    if sql == BAD[0][0]:  # once: the refused lake attaches in DuckDB (the bytes are those of DuckDB's lake)
        assert ("s", "t") in _attach_ok(catalog, data)


def test_a_nested_schema_on_1_0_needs_1_1(lake: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckLake 1.0 has no nested schemas: one line naming `upgrade --to 1.1`, exit 2, nothing changed."""
    catalog, _ = lake
    before = hashlib.sha256(catalog.read_bytes()).hexdigest()
    code, _, err = _query(capsys, monkeypatch, catalog, "CREATE SCHEMA othercat.x")
    assert code == 2 and "upgrade --to 1.1" in err and len(err.strip().splitlines()) == 1, err
    assert hashlib.sha256(catalog.read_bytes()).hexdigest() == before


def test_last_column_cannot_go(lake: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB refuses to drop a table's only column; so do we (a table with no columns breaks DuckDB)."""
    catalog, data = lake
    code, _, err = _query(capsys, monkeypatch, catalog, "CREATE TABLE one (a INT)")
    assert code == 0, err
    before = hashlib.sha256(catalog.read_bytes()).hexdigest()
    code, _, err = _query(capsys, monkeypatch, catalog, "ALTER TABLE one DROP COLUMN a")
    assert code == 1 and "only column" in err, err
    assert hashlib.sha256(catalog.read_bytes()).hexdigest() == before
    _attach_ok(catalog, data)


def test_partition_and_sort_columns_cannot_go(lake: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """As in DuckDB: a partition key or sort key column is dropped only after the spec changes."""
    catalog, _ = lake
    for setup, drop, needle in (("ALTER TABLE s.t SET PARTITIONED BY (a)", "a", "partition key"),
                                ("ALTER TABLE s.t SET SORTED BY (f + 1 DESC)", "f", "sorted by")):
        code, _, err = _query(capsys, monkeypatch, catalog, setup)
        assert code == 0, err
        before = hashlib.sha256(catalog.read_bytes()).hexdigest()
        code, _, err = _query(capsys, monkeypatch, catalog, f"ALTER TABLE s.t DROP COLUMN {drop}")
        assert code == 1 and needle in err, err
        assert hashlib.sha256(catalog.read_bytes()).hexdigest() == before


def test_ddl_script_and_json(lake: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A --file script of DDL commits one snapshot per statement (no-ops commit none); JSON lists them."""
    catalog, data = lake
    script = tmp_path / "shape.sql"
    script.write_text("-- reshape\nCREATE SCHEMA IF NOT EXISTS s;\nALTER TABLE s.t ADD COLUMN c STRING DEFAULT "
                      "'a;b';\nALTER TABLE s.t SET SORTED BY (a DESC);\nCOMMENT ON TABLE s.t IS 'it''s';\n",
                      encoding="utf-8")
    code, out, err = _query(capsys, monkeypatch, catalog, "--file", str(script), "--format", "json")
    assert code == 0, err
    got = json.loads(out)["statements"]
    assert [g["snapshot_id"] for g in got] == [None, 6, 7, 8]
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data))
        assert con.execute("SELECT c FROM lake.s.t").fetchall() == [("a;b",)]
        assert con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 't'").fetchall() == [("it's",)]
    finally:
        con.close()


@pytest.mark.parametrize(("text", "needle"), [
    ("CREATE SCHEMA x; DELETE FROM s.t WHERE a = 1;", "not both"),
    ("BEGIN;\nCREATE SCHEMA x;\nCREATE TABLE x.u (a INT);\nCOMMIT;\n", "BEGIN … COMMIT"),
    ("START TRANSACTION; CREATE SCHEMA x; END;", "BEGIN … COMMIT"),
], ids=["mixed", "begin-commit", "start-end"])
def test_script_refused(text: str, needle: str, lake: tuple[Path, Path], tmp_path: Path,
                        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """DDL and data changes do not share a script; a DDL script is no transaction (DuckDB would commit BEGIN …
    COMMIT as one snapshot, ours commits one per statement), so BEGIN/COMMIT is refused, not ignored."""
    catalog, _ = lake
    script = tmp_path / "refused.sql"
    script.write_text(text, encoding="utf-8")
    before = hashlib.sha256(catalog.read_bytes()).hexdigest()
    code, _, err = _query(capsys, monkeypatch, catalog, "--file", str(script))
    assert code == 2 and needle in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert hashlib.sha256(catalog.read_bytes()).hexdigest() == before


def test_view_reads_back_through_query(lake: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A view made by our DDL is stored as DuckDB stores it: DuckDB queries it (our Spark read of stored
    DuckDB views is covered by the query tests)."""
    catalog, data = lake
    code, _, err = _query(capsys, monkeypatch, catalog,
                          "CREATE VIEW s.w (n, twice) AS SELECT a, a * 2 FROM s.t WHERE b IS NULL")
    assert code == 0, err
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data))
        assert con.execute("SELECT * FROM lake.s.w").fetchall() == [(1, 2)]
    finally:
        con.close()
    from ducklake_cli.engine.planning.sql_rewrite import transpile_view

    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data))
        stored = con.execute("SELECT sql FROM __ducklake_metadata_lake.ducklake_view WHERE view_name = 'w'"
                             ).fetchone()
    finally:
        con.close()
    assert stored is not None
    assert "s.t" in transpile_view(stored[0], schema="s", view="s.w")


def test_ddl_does_not_start_spark(lake: tuple[Path, Path]) -> None:
    """In a fresh process, DDL never imports pyspark."""
    import subprocess

    catalog, _ = lake
    code = ("import sys\nfrom ducklake_cli.cli.app import main\n"
            f"try:\n    main(['query', {str(catalog)!r}, 'ALTER TABLE s.t SET SORTED BY (a)'])\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "assert 'pyspark' not in sys.modules, 'pyspark imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.spark
def test_view_reads_back_through_spark(lake: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A view our DDL stored (DuckDB's text) reads back through our Spark `query`, aliases and all."""
    catalog, _ = lake
    code, _, err = _query(capsys, monkeypatch, catalog,
                          "CREATE VIEW s.w (n, twice) AS SELECT a, a * 2 FROM s.t WHERE b IS NULL")
    assert code == 0, err
    code, out, err = _query(capsys, monkeypatch, catalog, "SELECT * FROM s.w", "--format", "json")
    assert code == 0, err
    assert json.loads(out) == [{"n": 1, "twice": 2}]
