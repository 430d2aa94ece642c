"""VARIANT values read as the compact JSON COMPATIBILITY.md documents whether they sit inlined in the catalog
(DuckDB-file catalogs inline them natively) or in Parquet after a flush (DuckDB's or ours), on every backend."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

import pytest

import ducklake_cli
from ducklake_cli.engine.planning.scan_plan import plan_scan
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Every kind of variant value: objects, arrays, strings (quotes, backslashes, unicode), numbers, NULLs, nesting.
VALUES = [
    "{'a': 42, 'b': NULL}", "'str''q \"dq\" \\ back'", "42", "NULL", "[1, 2, NULL]",
    "'{\"x\": {\"y\": [1.5, 2]}}'::JSON", "3.25::DECIMAL(5,2)", "true", "DATE '2024-01-02'", "'null'::JSON",
    "{'n': {'m': [{'k': 'v'}]}}", "1.5::DOUBLE", "''", "'[]'::JSON", "{'e': []::INT[]}", "'ü ☃ {x}'",
    "TIMESTAMP '2020-01-01 10:00:00'", "-7::BIGINT", "1e300::DOUBLE", "'{\"k\": [true, null], \"d\": -0.5}'::JSON",
]
# A variant null is SQL NULL, at the top and inside a struct.
JSON_OF = "CASE WHEN {0} IS NULL THEN NULL ELSE CAST({0} AS JSON)::VARCHAR END"
EXPECTED = f"SELECT i, {JSON_OF.format('v')} FROM lake.t ORDER BY i"
# Nested variants only exist inlined: DuckDB cannot write a non-root VARIANT to Parquet (so never flushes them).
EXPECTED_NESTED = f"SELECT i, {JSON_OF.format('v')}, {JSON_OF.format('s.a')}, s.b FROM lake.t ORDER BY i"


def _build(spot: Spot, *, nested: bool = False) -> list[tuple[Any, ...]]:
    """The table, inlined where the backend inlines variants; DuckDB's JSON of each value."""
    con = oracle_connect()
    try:
        con.execute(spot.attach("lake", "DATA_INLINING_ROW_LIMIT 100"))
        if nested:
            con.execute("CREATE TABLE lake.t (i INTEGER, v VARIANT, s STRUCT(a VARIANT, b INTEGER))")
            rows = ", ".join(f"({i}, {v}::VARIANT, {{'a': {v}::VARIANT, 'b': {i}}})" for i, v in enumerate(VALUES))
        else:
            con.execute("CREATE TABLE lake.t (i INTEGER, v VARIANT)")
            rows = ", ".join(f"({i}, {v}::VARIANT)" for i, v in enumerate(VALUES))
        con.execute(f"INSERT INTO lake.t VALUES {rows}")
        want = [tuple(r) for r in con.execute(EXPECTED_NESTED if nested else EXPECTED).fetchall()]
        con.execute("DETACH lake")
    finally:
        con.close()
    return want


def _duckdb_after(spot: Spot, sql: str | None) -> list[tuple[Any, ...]]:
    """Run `sql` (a flush) with DuckDB, then DuckDB's JSON of each value."""
    con = oracle_connect()
    try:
        con.execute(spot.attach("lake"))
        if sql:
            con.execute(sql)
        rows = [tuple(r) for r in con.execute(EXPECTED).fetchall()]
        con.execute("DETACH lake")
    finally:
        con.close()
    return rows


def _ours(spot: Spot, spark: SparkSession) -> list[tuple[Any, ...]]:
    with ducklake_cli.connect(spot.catalog) as lake, contextlib.closing(lake):
        df = lake.table("t", spark=spark)
        return [(r["i"], r["v"]) for r in df.orderBy("i").collect()]


@pytest.mark.parametrize("spot", ["duckdb"], indirect=True)
def test_inlined_variants_decode_as_json(spot: Spot) -> None:
    """Without Spark: the decoded inlined rows of a DuckDB-file catalog are DuckDB's JSON of each value."""
    want = _build(spot, nested=True)
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake, lake.reader() as r:
        sid = r.latest_snapshot().snapshot_id
        table = r.find_table(sid, "t")
        assert table.inlined_tables, "DuckDB inlines variants in a DuckDB-file catalog"
        plan = plan_scan(r, table=table, snapshot_id=sid, data_path=r.data_path, schemas=r.schemas(sid))
        got = sorted(
            (row["c1"], row["c2"], *((list(row["c3"].values())) if row["c3"] else (None, None)))
            for part in plan.inlined for row in part.rows.to_pylist())
    assert got == want


@pytest.mark.spark
# Only DuckDB-file catalogs inline variants (SQLite and PostgreSQL get files at once): both flushes there.
@pytest.mark.parametrize(("spot", "flush"), [("duckdb", "duckdb"), ("duckdb", "ours"), ("sqlite", "duckdb"),
                                             ("postgres", "duckdb")], indirect=["spot"])
def test_variants_render_the_same_inlined_and_flushed(spot: Spot, flush: str, spark: SparkSession) -> None:
    inlined = _build(spot)
    assert _ours(spot, spark) == inlined
    if flush == "duckdb":
        flushed = _duckdb_after(spot, "CALL ducklake_flush_inlined_data('lake')")
    else:
        from ducklake_cli.ops.flush import plan_flush

        with ducklake_cli.connect(spot.catalog) as lake, contextlib.closing(lake):
            plan_flush(lake, table="t").apply(lake)
        flushed = _duckdb_after(spot, None)  # DuckDB reads what we flushed
    assert _ours(spot, spark) == flushed
    # The same JSON values; only object keys may be reordered (Parquet's variant encoding sorts them, as DuckDB).
    assert [(i, _parsed(v)) for i, v in flushed] == [(i, _parsed(v)) for i, v in inlined]


def _parsed(text: str | None) -> Any:
    return None if text is None else json.loads(text)
