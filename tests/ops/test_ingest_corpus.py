"""`ducklake write` on a corpus of awkward CSV and JSON-lines files, through the CLI (in-process, on the session's
one Spark JVM): each table DuckDB reads back from the lake has exactly the rows and column types DuckDB's own
`read_csv` / `read_json` give for the same files, or the write is refused in one line naming the line at fault and
the catalog is left as it was."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.ops.create import create_catalog
from tests.support.cli import run_main
from tests.support.corpus import CASES, Case
from tests.support.oracle import oracle_connect, sql_str
from tests.support.spot import ORACLE_BACKENDS, Spot

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


cli = run_main


def expected_relation(case: Case, files: list[str]) -> str:
    """DuckDB's own reading of the files (several files: matched by header name, as `write` does)."""
    fn = "read_csv" if case.fmt == "csv" else "read_json"
    arg = sql_str(files[0]) if len(files) == 1 else "[" + ", ".join(map(sql_str, files)) + "]"
    return f"{fn}({arg}{', union_by_name=true' if len(files) > 1 else ''})"


def assert_same_table(con: duckdb.DuckDBPyConnection, table: str, expected: str) -> None:
    """Same column names and types, and the same multiset of rows."""
    got = con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {table})").fetchall()
    want = con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {expected})").fetchall()
    assert got == want
    extra = con.execute(f"SELECT * FROM {table} EXCEPT ALL SELECT * FROM {expected}").fetchall()
    missing = con.execute(f"SELECT * FROM {expected} EXCEPT ALL SELECT * FROM {table}").fetchall()
    assert (extra, missing) == ([], [])
    assert con.execute(f"SELECT count(*) FROM {table}").fetchone() == \
        con.execute(f"SELECT count(*) FROM {expected}").fetchone()


def digest(path: Path) -> str:
    """The catalog file's bytes, to show a refusal changed nothing."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_spot(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Spot:
    """A fresh catalog created by our create-catalog."""
    data = tmp_path / "data"
    if backend == "postgres":
        url = request.getfixturevalue("pg_url")
        spot = Spot(backend, url, url, data)
    else:
        path = str(tmp_path / ("cat.sqlite" if backend == "sqlite" else "cat.ducklake"))
        spot = Spot(backend, path, path, data)
    create_catalog(parse_catalog(spot.catalog, must_exist=False), data_path=str(data))
    return spot


def snapshot_count(con: duckdb.DuckDBPyConnection, spot: Spot) -> int:
    """How many snapshots DuckDB sees in the lake (attached afresh)."""
    con.execute("DETACH DATABASE IF EXISTS lake")
    con.execute(spot.attach())
    row = con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()
    return int(row[0]) if row else 0


def check_case(case: Case, spot: Spot, inputs: Path, capsys: pytest.CaptureFixture[str],
               con: duckdb.DuckDBPyConnection) -> None:
    """Write one corpus case through the CLI and compare with DuckDB's reader (or check the refusal)."""
    files = case.write(inputs)
    catalog_file = Path(spot.catalog) if spot.backend != "postgres" else None
    refused = case.refusal is not None
    before = digest(catalog_file) if catalog_file and refused else None
    snapshots = snapshot_count(con, spot) if refused else 0
    con.execute("DETACH DATABASE IF EXISTS lake")  # our side may need to open a DuckDB catalog file
    args = ["write", spot.catalog, case.name, "--format", "json"]
    for f in files:
        args += ["--from", f]
    code, out, err = cli(capsys, *args)
    if case.refusal is not None:
        assert code == 1, out + err
        assert err.count("\n") == 1 and err.startswith("error: "), err
        assert case.refusal in err and Path(files[0]).name in err, err
        if catalog_file:
            assert digest(catalog_file) == before
        assert snapshot_count(con, spot) == snapshots  # DuckDB still attaches; nothing was committed
        return
    assert code == 0, err
    con.execute(spot.attach())
    assert_same_table(con, f'lake.main."{case.name}"', expected_relation(case, files))
    con.execute("DETACH DATABASE IF EXISTS lake")


@pytest.fixture(scope="module")
def corpus_lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Spot, duckdb.DuckDBPyConnection]]:
    """One SQLite lake (each case writes its own table) and one oracle connection for the whole corpus."""
    tmp = tmp_path_factory.mktemp("corpus")
    path = str(tmp / "cat.sqlite")
    spot = Spot("sqlite", path, path, tmp / "data")
    create_catalog(parse_catalog(path, must_exist=False), data_path=str(spot.data_path))
    con = oracle_connect()
    try:
        yield spot, con
    finally:
        con.close()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_on_sqlite(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                          corpus_lake: tuple[Spot, duckdb.DuckDBPyConnection], spark: SparkSession) -> None:
    spot, con = corpus_lake
    check_case(case, spot, tmp_path / "inputs", capsys, con)


BACKEND_CASES = [c for c in CASES if c.name in ("rfc_quoting", "reordered_headers", "json_nested",
                                                "timestamps_zoned", "malformed_long_row")]


@pytest.mark.parametrize("backend", [b for b in ORACLE_BACKENDS if b != "sqlite"])
def test_corpus_sample_on_other_catalogs(backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         request: pytest.FixtureRequest, spark: SparkSession) -> None:
    spot = make_spot(backend, tmp_path, request)
    con = oracle_connect()
    try:
        for case in BACKEND_CASES:
            check_case(case, spot, tmp_path / "inputs", capsys, con)
    finally:
        con.close()
