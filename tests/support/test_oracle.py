"""The DuckDB oracle itself: offline extension loading, ATTACH statements, and the DuckDB-written scenarios."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest

from tests.support.built_lakes import BuiltLakes
from tests.support.lakes import INSPECT_SCENARIOS, SCENARIOS
from tests.support.oracle import EXTENSIONS, attach_clause, extension_dir, oracle_connect
from tests.support.spot import Spot

BACKENDS = ["sqlite", "duckdb", pytest.param("postgres", marks=pytest.mark.postgres)]


def test_extensions_come_from_the_private_directory(oracle: duckdb.DuckDBPyConnection) -> None:
    rows = oracle.execute(
        "SELECT extension_name, loaded, install_path FROM duckdb_extensions() WHERE installed"
    ).fetchall()
    by_name = {name: (loaded, path) for name, loaded, path in rows}
    for name in EXTENSIONS:
        # sqlite/postgres register under their *_scanner names.
        loaded, path = by_name.get(name) or by_name[f"{name}_scanner"]
        assert loaded
        assert path.startswith(extension_dir())
    assert oracle.execute("SELECT current_setting('TimeZone')").fetchone() == ("UTC",)
    assert oracle.execute("SELECT current_setting('autoinstall_known_extensions')").fetchone() == (False,)


def test_attach_clause_per_backend() -> None:
    assert attach_clause("sqlite", "/x/cat.sqlite", "/x/data") == (
        "ATTACH 'ducklake:sqlite:/x/cat.sqlite' AS lake (DATA_PATH '/x/data/')"
    )
    assert attach_clause("duckdb", Path("/x/c.ducklake"), Path("/x/data/"), alias="l2") == (
        "ATTACH 'ducklake:/x/c.ducklake' AS l2 (DATA_PATH '/x/data/')"
    )
    assert attach_clause(
        "postgres", "postgresql://lake:p%27w@127.0.0.1:55432/cat", "/d", extra_options="SNAPSHOT_VERSION 3"
    ) == (
        "ATTACH 'ducklake:postgres:dbname=cat host=127.0.0.1 port=55432 user=lake password=''p\\''w''' "
        "AS lake (DATA_PATH '/d/', SNAPSHOT_VERSION 3)"
    )
    with pytest.raises(ValueError):
        attach_clause("mysql", "mysql://x", "/d")


def _table_counts(spot: Spot) -> dict[str, int]:
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        tables = con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'lake'"
        ).fetchall()
        counts: dict[str, int] = {}
        for schema, table in tables:
            row = con.execute(f'SELECT count(*) FROM lake."{schema}"."{table}"').fetchone()
            assert row is not None
            counts[f"{schema}.{table}"] = int(row[0])
        con.execute("DETACH lake")
    finally:
        con.close()
    return counts


# Every scenario on SQLite; on the DuckDB-file and PostgreSQL catalogs the ones the (non-Spark) inspect differential
# builds anyway. The Spark query differential builds and reads every scenario on all three.
_SCENARIO_CASES = [
    *(("sqlite", s) for s in sorted(SCENARIOS)),
    *(("duckdb", s) for s in INSPECT_SCENARIOS),
    *(pytest.param("postgres", s, marks=pytest.mark.postgres) for s in INSPECT_SCENARIOS),
]


@pytest.mark.parametrize(("backend", "scenario"), _SCENARIO_CASES)
def test_scenario_builds_and_duckdb_reads_it(built_lakes: BuiltLakes, backend: str, scenario: str) -> None:
    spot, ids = built_lakes.get(backend, scenario)
    # Snapshot 0 (lake creation) plus one per step; run_steps already checked one-per-step.
    assert ids == list(range(len(ids)))
    assert len(ids) >= 4
    if spot.backend == "duckdb":
        # build_lake must release the catalog file: a plain DuckDB can open it read-write now.
        duckdb.connect(spot.oracle_target).close()
    counts = _table_counts(spot)
    assert counts, "scenario left no tables"
    assert any(n > 0 for n in counts.values())


@pytest.mark.parametrize("backend", BACKENDS)
def test_catalog_example_final_result(built_lakes: BuiltLakes, backend: str) -> None:
    spot, ids = built_lakes.get(backend, "catalog_example")
    assert ids == list(range(14))  # snapshot ids [0]..[13] as in catalog-example.txt
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        assert con.execute("SELECT count(*), count(extra), sum(id) FROM lake.t").fetchone() == (913, 20, 480844)
        assert con.execute("SELECT count(*), sum(v) FROM lake.t2").fetchone() == (5, 20)
        changes = con.execute(
            "SELECT changes_made FROM __ducklake_metadata_lake.ducklake_snapshot_changes ORDER BY snapshot_id"
        ).fetchall()
        assert [c for (c,) in changes][8:] == [
            "altered_table:1",
            "altered_table:1",
            "inserted_into_table:1",
            "deleted_from_table:1",
            "inserted_into_table:1,deleted_from_table:1",
            'created_table:"main"."t2",inlined_insert:2',
        ]
        con.execute("DETACH lake")
    finally:
        con.close()


def test_duckdb_drops_quotes_in_struct_strings_inlined_on_sqlite(tmp_path: Path) -> None:
    """Canary for a DuckDB 1.5.5 quirk the scenarios avoid on purpose.

    Inlined nested values are stored as DuckDB's text rendering on SQLite (and PostgreSQL, same result
    checked by hand). For a STRUCT field the quote
    is rendered as '' but DuckDB reads it back without it ("it's" -> "its"); in a LIST it is rendered as
    \\' and survives. If this starts failing, DuckDB fixed it: add the case to the ``nested`` scenario.
    """
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", tmp_path / "c.sqlite", tmp_path / "data"))
        con.execute("CREATE TABLE lake.q (s STRUCT(a VARCHAR), l VARCHAR[])")
        con.execute("INSERT INTO lake.q VALUES ({'a': 'it''s'}, ['it''s'])")
        assert con.execute("SELECT s.a, l[1] FROM lake.q").fetchone() == ("its", "it's")
        con.execute("DETACH lake")
    finally:
        con.close()
    raw = sqlite3.connect(tmp_path / "c.sqlite")
    try:
        assert raw.execute("SELECT s, l FROM ducklake_inlined_data_1_1").fetchone() == (
            "{'a': 'it''s'}",
            "['it\\'s']",
        )
    finally:
        raw.close()
