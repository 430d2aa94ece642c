"""The ducklakepy harness (`tests/support/ducklakepy.py`) works: a 1.0 lake written by DuckDB 1.5.5 reads the same in
ducklakepy, is migrated by it to 1.1 in place, and then reads the same again, at every snapshot, on every backend the
oracle has (SQLite, DuckDB file, PostgreSQL)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from ducklake_cli.catalog.duckdb_storage import duckdb_file_storage
from tests.support.ducklakepy import (
    DucklakepyError,
    duckdb_reads,
    duckdb_rows,
    ducklakepy_migrate,
    ducklakepy_python,
    ducklakepy_read,
    ducklakepy_reads,
    ducklakepy_schemas,
    ducklakepy_tables,
    encode_arrow,
)
from tests.support.oracle import oracle_connect
from tests.support.spot import ORACLE_BACKENDS, Spot
from tests.support.tiers import backend_params

# A 1.0 lake with rows in files and inlined (limit 5), delete files and inlined deletions, an update, added and
# renamed columns (new inlined-data tables), nested and temporal types, a partitioned table, a second schema and a
# dropped table.
SCENARIO = (
    "CREATE TABLE t (i INTEGER, s VARCHAR, d DECIMAL(9, 2), tz TIMESTAMPTZ, st STRUCT(a INTEGER, b VARCHAR), "
    "l INTEGER[])",
    "INSERT INTO t SELECT i, 'x' || i, i * 1.25, TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) MINUTE, "
    "{'a': i, 'b': 'v' || i}, [i, NULL] FROM range(50) r(i)",
    "INSERT INTO t VALUES (100, 'inl', 1.5, NULL, NULL, []), (101, NULL, NULL, NULL, {'a': NULL, 'b': 'q'}, NULL)",
    "DELETE FROM t WHERE i % 7 = 0 OR i = 101",
    "UPDATE t SET s = 'upd' WHERE i = 100",
    "ALTER TABLE t ADD COLUMN extra VARCHAR DEFAULT 'dflt'",
    "INSERT INTO t (i, s) VALUES (200, 'after')",
    "ALTER TABLE t RENAME COLUMN s TO s2",
    "CREATE SCHEMA other",
    "CREATE TABLE other.u (k BIGINT, m MAP(VARCHAR, INTEGER), u UUID, b BLOB, iv INTERVAL, h HUGEINT, dt DATE)",
    "INSERT INTO other.u SELECT i, MAP {'k': i}, ('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID, "
    "'ab'::BLOB, INTERVAL 1 MONTH + INTERVAL (i) DAY, i::HUGEINT * 10000000000000000000, "
    "DATE '2024-02-28' + i::INTEGER FROM range(20) r(i)",
    "CREATE TABLE p (k INTEGER, ts TIMESTAMP)",
    "ALTER TABLE p SET PARTITIONED BY (year(ts), k)",
    "INSERT INTO p SELECT i % 3, TIMESTAMP '2023-12-30' + INTERVAL (i) DAY FROM range(10) r(i)",
    "CREATE TABLE gone (x INTEGER)",
    "INSERT INTO gone VALUES (1)",
    "DROP TABLE gone",
)
ADDED_COLUMNS = {
    "ducklake_data_file": "row_group_count", "ducklake_delete_file": "row_group_count",
    "ducklake_file_column_stats": "min_is_exact", "ducklake_table_column_stats": "max_is_exact",
    "ducklake_schema": "parent_schema_id",
}
SYSTEM_COLUMNS_1_1 = ["_ducklake_row_id", "_ducklake_begin_snapshot", "_ducklake_end_snapshot"]

Reads = dict[int, dict[str, list[tuple[str, ...]]]]


def _build(spot: Spot) -> Reads:
    """The scenario's lake, written by DuckDB 1.5.5 (format 1.0); what DuckDB reads at every snapshot."""
    con = oracle_connect()
    try:
        con.execute(spot.attach(extra="DATA_INLINING_ROW_LIMIT 5"))
        con.execute("USE lake")
        for statement in SCENARIO:
            con.execute(statement)
        reads = duckdb_reads(con)
        con.execute("USE memory")
        con.execute("DETACH lake")
    finally:
        con.close()
    return reads


def _catalog(spot: Spot, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of `query` run on the catalog database itself (not through ducklake)."""
    if spot.backend == "sqlite":
        lite = sqlite3.connect(spot.catalog)
        try:
            cursor = lite.execute(query)
            return [d[0] for d in cursor.description], cursor.fetchall()
        finally:
            lite.close()
    if spot.backend == "duckdb":
        duck = duckdb.connect(spot.catalog, read_only=True)
        try:
            result = duck.execute(query)
            return [d[0] for d in result.description or ()], result.fetchall()
        finally:
            duck.close()
    import psycopg

    with psycopg.connect(spot.catalog) as pg:
        cur = pg.execute(query)
        return [d.name for d in cur.description or ()], cur.fetchall()


@pytest.mark.parametrize("spot", backend_params(ORACLE_BACKENDS, default=("sqlite",)), indirect=True)
def test_migrate_to_1_1_and_read_every_snapshot(spot: Spot) -> None:
    before = _build(spot)
    storage = duckdb_file_storage(Path(spot.catalog)) if spot.backend == "duckdb" else None
    assert _catalog(spot, "SELECT value FROM ducklake_metadata WHERE key = 'version'")[1] == [("1.0",)]
    assert len(before) == len(SCENARIO) + 1 and before[len(SCENARIO)]["main.t"]  # every snapshot, rows read

    # ducklakepy reads the 1.0 catalog as it is, like DuckDB did
    assert ducklakepy_reads(spot.catalog) == before

    assert ducklakepy_migrate(spot.catalog) == ("1.0", "1.1")
    assert ducklakepy_migrate(spot.catalog) == ("1.1", "1.1")  # nothing left to do

    assert _catalog(spot, "SELECT value FROM ducklake_metadata WHERE key = 'version'")[1] == [("1.1",)]
    for table, column in ADDED_COLUMNS.items():
        assert column in _catalog(spot, f"SELECT * FROM {table} LIMIT 0")[0], table
    assert _catalog(spot, "SELECT * FROM ducklake_view_column_tag")[0] == [
        "view_id", "column_name", "begin_snapshot", "end_snapshot", "key", "value"]
    companions = [str(r[0]) for r in _catalog(spot, "SELECT table_name FROM ducklake_inlined_data_tables")[1]]
    assert companions
    for companion in companions:
        assert _catalog(spot, f"SELECT * FROM {companion} LIMIT 0")[0][:3] == SYSTEM_COLUMNS_1_1, companion
    if storage is not None:  # duckdb 1.5.5 in ducklakepy's venv keeps the file's storage version
        assert duckdb_file_storage(Path(spot.catalog)) == storage

    # ducklakepy reads the migrated catalog the same at every snapshot; DuckDB 1.5.5 no longer opens it
    assert ducklakepy_reads(spot.catalog) == before
    last = max(before)
    assert ducklakepy_tables(spot.catalog) == sorted(before[last]) == ["main.p", "main.t", "other.u"]
    assert ducklakepy_tables(spot.catalog, 1) == ["main.t"]
    assert ducklakepy_schemas(spot.catalog) == ["main", "other"]
    assert ducklakepy_read(spot.catalog, "main", "t", 3) == before[3]["main.t"]
    con = oracle_connect()
    try:
        with pytest.raises(duckdb.Error, match="catalog version is 1.1, but the extension requires version 1.0"):
            con.execute(spot.attach())
    finally:
        con.close()


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_read_data_path_and_errors(spot: Spot, tmp_path: Path) -> None:
    before = _build(spot)
    moved = tmp_path / "moved"
    shutil.move(spot.data_path, moved)
    last = max(before)
    with pytest.raises(DucklakepyError, match="FileNotFoundError"):  # the data path the catalog names is gone
        ducklakepy_read(spot.catalog, "main", "t")
    assert ducklakepy_read(spot.catalog, "main", "t", data_path=moved) == before[last]["main.t"]
    assert ducklakepy_reads(spot.catalog, data_path=moved) == before
    with pytest.raises(DucklakepyError, match="TableNotFoundError"):
        ducklakepy_read(spot.catalog, "main", "gone", data_path=moved)
    assert ducklakepy_read(spot.catalog, "main", "gone", len(SCENARIO) - 1, data_path=moved) == [("1",)]


def test_encode_arrow() -> None:
    """The encoding, and DuckDB's rows through it, for the types whose Arrow forms differ between the two sides."""
    table = pa.table({
        "dec": pa.array([None, Decimal("1.00")], pa.decimal128(5, 2)),
        "huge": pa.array([None, Decimal(10**37)], pa.decimal256(76, 0)),
        "uuid": pa.array([None, bytes(15) + b"\x01"], pa.binary(16)),
        "ts": pa.array([None, 1_500_000], pa.timestamp("us", tz="Europe/Paris")),
        "m": pa.array([None, [("a", 1)]], pa.map_(pa.string(), pa.int32())),
        "st": pa.array([None, {"x": [1.5, None]}], pa.struct([("x", pa.list_(pa.float64()))])),
        "b": pa.array([None, b"\x00"], pa.binary()),
    })
    assert encode_arrow(table) == [  # sorted
        ('"1.00"', str(10**37), '"00000000-0000-0000-0000-000000000001"',
         '"1970-01-01 00:00:01.5+00"', '[["a",1]]', '{"x":[1.5,null]}', '{"$blob":"AA=="}'),
        ("null",) * 7,
    ]
    con = oracle_connect()
    try:
        con.execute("SET TimeZone = 'Asia/Tokyo'")
        got = duckdb_rows(con, "SELECT 1.00::DECIMAL(5, 2), ('1' || repeat('0', 37))::HUGEINT, "
                               "'00000000-0000-0000-0000-000000000001'::UUID, TIMESTAMPTZ '1970-01-01 00:00:01.5+00', "
                               "MAP {'a': 1::INTEGER}, {'x': [1.5::DOUBLE, NULL]}, '\\x00'::BLOB")
        assert got == [encode_arrow(table)[0]]
        assert duckdb_rows(con, "SELECT TIMETZ '10:00:00+05' v") == [('"05:00:00"',)]
    finally:
        con.close()


def test_venv_is_cached() -> None:
    python = ducklakepy_python()
    assert ducklakepy_python() == python
    done = subprocess.run([str(python), "-I", "-c", "import ducklakepy; print(ducklakepy.__version__)"],
                          capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "0.1.0.dev0"


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_migration_restores_renamed_struct_field_default(spot: Spot) -> None:
    """DuckDB 1.5.5 drops a struct field's defaults when it renames the field, so the rows written before the field
    existed read NULL from then on; the 1.1 migration copies them back (spec ducklake-versions §2.6 step 4)."""
    con = oracle_connect()
    try:
        con.execute(spot.attach(extra="DATA_INLINING_ROW_LIMIT 0"))
        for statement in ("CREATE TABLE lake.t (i INTEGER, st STRUCT(a INTEGER))",
                          "INSERT INTO lake.t VALUES (1, {'a': 1})",
                          "ALTER TABLE lake.t ADD COLUMN st.c INTEGER DEFAULT 7",
                          "ALTER TABLE lake.t RENAME COLUMN st.c TO c2"):
            con.execute(statement)
        before = duckdb_reads(con)
        con.execute("DETACH lake")
    finally:
        con.close()
    assert before[3]["main.t"] == [("1", '{"a":1,"c":7}')]
    assert before[4]["main.t"] == [("1", '{"a":1,"c2":null}')]  # the default lost
    assert ducklakepy_reads(spot.catalog) == before  # ducklakepy reads the 1.0 rows as they are
    assert ducklakepy_migrate(spot.catalog) == ("1.0", "1.1")
    query = "SELECT initial_default, default_value FROM ducklake_column WHERE column_name = 'c2'"
    assert _catalog(spot, query)[1] == [("7", "7")]
    assert ducklakepy_read(spot.catalog, "main", "t") == [("1", '{"a":1,"c2":7}')]
