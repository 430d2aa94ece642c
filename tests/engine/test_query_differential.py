"""Our Spark table scan against DuckDB's ducklake extension, on lakes DuckDB wrote (tests/support/lakes.py).

For each backend × scenario the lake is built by DuckDB 1.5.5, then for the chosen snapshots and *every*
table live at each of them, ``Lake.table("schema.table", snapshot=n, spark=spark)`` must return the same
column names (in order) and the same multiset of rows as DuckDB's ``SELECT * FROM lake.s.t AT (VERSION => n)``
(values canonicalised by tests/support/diff.py). All differences of one scenario are collected and reported
together.

Which scenarios and snapshots (a full check of all 37 scenarios × 3 backends × every snapshot is ~1500 Spark
reads; the default tier keeps it near 400):
* every scenario runs on SQLite; on the DuckDB-file and PostgreSQL catalogs the default tier runs
  ``BACKEND_SCENARIOS`` (inlined rows of every type and their history, whose storage differs per backend, and
  ``catalog_example``: files, deletes, schema changes; the rest reads catalog rows every backend stores alike),
  the full tier every scenario;
* scenarios in ``HISTORY_SCENARIOS`` (where time travel is the point: deletes, updates, compaction, flush,
  schema evolution, drops/renames, emptied tables) — every snapshot on sqlite; history logic (validity
  ranges, delete files, partial files) does not depend on the catalog database;
* ``FULL_HISTORY_EVERYWHERE`` (old snapshots read inlined rows, whose storage differs per backend) — every
  snapshot on every backend;
* everything else — the last ``LAST_SNAPSHOTS`` snapshots;
* the full tier (``--full``, or ``DUCKLAKE_DIFF_ALL_SNAPSHOTS=1``) checks every snapshot everywhere.
The ``rowid`` test covers scenarios where row ids move (UPDATE, compaction, flush, added files, Puffin
deletes): every snapshot on sqlite for ``ROWID_HISTORY``, otherwise the last snapshot; on the other catalogs
the default tier runs the inlined ones (``BACKEND_ROWID_SCENARIOS``).

The first tests check the comparison machinery itself (no ``Lake.table`` needed).
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.built_lakes import BuiltLakes
from tests.support.diff import (
    NAN,
    Bool,
    MapPairs,
    Struct,
    TableRows,
    assert_same_multiset,
    assert_same_table,
    compare_lake,
    duckdb_table_rows,
    multiset_diff,
    rendered_type_ids,
    spark_table_rows,
)
from tests.support.lakes import SCENARIOS
from tests.support.oracle import oracle_connect
from tests.support.spot import ORACLE_BACKENDS
from tests.support.tiers import all_snapshots, tiered

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import SparkSession

LAST_SNAPSHOTS = 3
# What the default tier reads on the DuckDB-file and PostgreSQL catalogs besides SQLite (see the docstring).
BACKEND_SCENARIOS = frozenset({"primitives", "nested", "inlined", "inlined_updates", "inlined_file_deletes",
                               "flush_inlined", "catalog_example"})
BACKEND_ROWID_SCENARIOS = frozenset({"inlined_updates", "flush_inlined"})
HISTORY_SCENARIOS = frozenset({
    "catalog_example", "deletes", "delete_files", "second_delete", "inlined", "inlined_file_deletes",
    "inlined_updates", "updates", "flush_inlined", "merge_adjacent", "rewrite_files", "evolution", "rename_columns",
    "add_column_defaults", "drop_columns", "type_promotion", "nested_evolution", "partition_values",
    "table_lifecycle", "empty_refill", "add_files", "deletion_vectors",
})
FULL_HISTORY_EVERYWHERE = frozenset({"inlined", "inlined_updates", "flush_inlined"})
ROWID_SCENARIOS = ["updates", "merge_adjacent", "flush_inlined", "rewrite_files", "inlined_updates", "add_files",
                   "deletion_vectors"]
ROWID_HISTORY = frozenset({"updates", "merge_adjacent", "flush_inlined", "rewrite_files"})


def snapshots_to_check(backend: str, scenario: str, ids: list[int]) -> list[int]:
    """The snapshots one (backend, scenario) is compared at (see the module docstring)."""
    if all_snapshots() or scenario in FULL_HISTORY_EVERYWHERE:
        return ids
    if backend == "sqlite" and scenario in HISTORY_SCENARIOS:
        return ids
    return ids[-LAST_SNAPSHOTS:]


# --------------------------------------------------------------------------------------------------
# the differential tests


def _cases(scenarios: list[str], on_every_backend: frozenset[str]) -> list[Any]:
    """(backend, scenario) parameters: every scenario on SQLite, `on_every_backend` on the others (default tier)."""
    cases = [pytest.param(b, s, marks=[pytest.mark.postgres] if b == "postgres" else [], id=f"{b}-{s}")
             for b in ORACLE_BACKENDS for s in scenarios]
    return tiered(cases, lambda case: case[0] == "sqlite" or case[1] in on_every_backend)


@pytest.mark.spark
@pytest.mark.parametrize(("backend", "scenario"), _cases(sorted(SCENARIOS), BACKEND_SCENARIOS))
def test_table_matches_duckdb(built_lakes: BuiltLakes, backend: str, scenario: str, spark: SparkSession) -> None:
    spot, ids = built_lakes.get(backend, scenario)
    compare_lake(spot, spark, scenario, snapshots_to_check(spot.backend, scenario, ids))


@pytest.mark.spark
@pytest.mark.parametrize(("backend", "scenario"), _cases(ROWID_SCENARIOS, BACKEND_ROWID_SCENARIOS))
def test_rowid_matches_duckdb(built_lakes: BuiltLakes, backend: str, scenario: str, spark: SparkSession) -> None:
    spot, ids = built_lakes.get(backend, scenario)
    every = all_snapshots() or (
        spot.backend == "sqlite" and scenario in ROWID_HISTORY)
    snapshots = ids if every else ids[-1:]
    compare_lake(spot, spark, scenario, snapshots, with_rowid=True)


def test_scenario_lists_are_consistent() -> None:
    assert set(ROWID_SCENARIOS) <= set(SCENARIOS)
    assert set(SCENARIOS) >= HISTORY_SCENARIOS >= FULL_HISTORY_EVERYWHERE
    assert set(ROWID_SCENARIOS) >= ROWID_HISTORY
    assert set(SCENARIOS) >= BACKEND_SCENARIOS and set(ROWID_SCENARIOS) >= BACKEND_ROWID_SCENARIOS
    assert len(SCENARIOS) >= 25


# --------------------------------------------------------------------------------------------------
# the comparison machinery


def _duck_rows(con: duckdb.DuckDBPyConnection, select: str, *, with_rowid: bool = False) -> TableRows:
    con.execute(f"CREATE OR REPLACE TABLE probe AS {select}")
    return duckdb_table_rows(con, "probe", with_rowid=with_rowid)


def test_duckdb_side_renders_and_normalises_by_type() -> None:
    con = oracle_connect()
    try:
        names, rows = _duck_rows(con, """
            SELECT 1 AS id, 'nan'::DOUBLE AS d, '-0.0'::FLOAT AS f, true AS b,
              UUID '00000000-0000-4000-8000-00000000002a' AS u, INTERVAL '1 month -2 days 3.5 seconds' AS iv,
              TIME '01:02:03.12' AS t, TIMETZ '01:02:03+05:30' AS ttz, '01:02:03.123456789'::TIME_NS AS tns,
              TIMESTAMP_NS '1969-12-31 23:59:59.999999999' AS tsns, TIMESTAMPTZ '2024-01-01 12:00:00+02' AS tz,
              TIMESTAMP '1900-01-01 00:00:00.5' AS ts, '\\x00\\xFF'::BLOB AS bl, 1::HUGEINT << 100 AS h,
              1.50::DECIMAL(9,2) AS dec,
              {'u': UUID '00000000-0000-0000-0000-000000000001', 'l': [TIME '00:00:01', NULL]} AS st,
              MAP {'b': INTERVAL 1 DAY, 'a': NULL} AS mp, [['x'], NULL, []] AS ll,
              NULL::STRUCT(a UUID) AS null_st, [NULL::DOUBLE, 'inf'::DOUBLE] AS lf
        """, with_rowid=True)
    finally:
        con.close()
    assert names[-1] == "rowid" and len(names) == 21
    row = dict(zip(names, rows[0], strict=True))
    assert row["d"] is NAN and row["f"] == 0.0 and math.copysign(1, row["f"]) == 1
    assert row["b"] is Bool.TRUE and row["b"] != 1
    assert row["u"] == "00000000-0000-4000-8000-00000000002a"
    assert row["iv"] == "1 month -2 days 00:00:03.5"
    assert (row["t"], row["ttz"], row["tns"]) == ("01:02:03.12", "01:02:03+05:30", "01:02:03.123456789")
    assert row["tsns"] == dt.datetime(1970, 1, 1)  # DuckDB's own µs cast truncates toward zero
    assert row["tz"] == dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC) and row["tz"].tzinfo == dt.UTC
    assert row["ts"] == dt.datetime(1900, 1, 1, 0, 0, 0, 500000) and row["ts"].tzinfo is None
    assert row["bl"] == b"\x00\xff" and type(row["bl"]) is bytes
    assert row["h"] == (str(2**100) if "hugeint" in rendered_type_ids() else 2**100)
    assert row["dec"] == Decimal("1.5")
    assert row["st"] == Struct((("u", "00000000-0000-0000-0000-000000000001"), ("l", ("00:00:01", None))))
    assert row["mp"] == MapPairs({("a", None), ("b", "1 day")})
    assert repr(row["mp"]) == "map{'a': None, 'b': '1 day'}"
    assert row["ll"] == (("x",), None, ())
    assert row["null_st"] is None
    assert row["lf"] == (None, math.inf)
    assert isinstance(row["rowid"], int)


def test_rendered_types_follow_spark_type() -> None:
    assert {"uuid", "interval", "time", "time_ns", "time with time zone"} <= rendered_type_ids()
    assert not {"varchar", "blob", "timestamp", "timestamp with time zone", "decimal", "integer"} & rendered_type_ids()


def test_multiset_comparison_and_report() -> None:
    a = [(1, NAN, "x"), (1, NAN, "x"), (2, 0.0, None)]
    assert_same_multiset(a, [(2, -0.0 + 0.0, None), (1, NAN, "x"), (1, NAN, "x")], "same")
    missing, extra = multiset_diff(a, [(1, NAN, "x"), (2, 0.0, None)])
    assert missing == [(1, NAN, "x")] and extra == []
    with pytest.raises(AssertionError) as info:
        assert_same_multiset(a, [(1, NAN, "x"), (1, NAN, "y"), (2, 0.0, None)], "ctx", columns=["id", "v", "s"])
    text = str(info.value)
    assert "ctx: rows differ (DuckDB 3 rows, ours 3 rows; 1 missing from ours, 1 unexpected in ours)" in text
    assert "- (id=1, v=NaN, s='x')" in text and "+ (id=1, v=NaN, s='y')" in text
    assert "s: DuckDB 'x' vs ours 'y'" in text
    with pytest.raises(AssertionError, match="columns differ"):
        assert_same_table((["a", "b"], []), (["b", "a"], []), "order")
    assert MapPairs({(1, "x")}) == MapPairs({(Decimal(1), "x")})  # int vs integral Decimal keys


@pytest.mark.spark
def test_spark_side_normalises_like_duckdb(spark: SparkSession, tmp_path: Path) -> None:
    """DuckDB writes a Parquet file of Spark-native types; plain Spark reads it back: canonical rows match."""
    path = tmp_path / "probe.parquet"
    select = """
        SELECT i AS id, i % 2 = 0 AS b, (i - 3)::TINYINT AS i8, (i * 1000)::SMALLINT AS i16, i * 100000 AS i32,
          i * 10000000000 AS i64,
          CASE i WHEN 0 THEN 'nan'::FLOAT WHEN 1 THEN '-0.0'::FLOAT ELSE i / 3 END::FLOAT AS f,
          CASE i WHEN 0 THEN '-inf'::DOUBLE WHEN 1 THEN 'nan'::DOUBLE WHEN 2 THEN '-0.0'::DOUBLE ELSE i / 7 END AS d,
          (i * 2.5 - 3)::DECIMAL(4,1) AS d41, (i * 1234.567)::DECIMAL(18,3) AS d183,
          (i * 3.0123456789 - 9)::DECIMAL(38,10) AS d3810, DATE '1969-12-25' + i::INTEGER AS dt,
          TIMESTAMP '1960-01-01 00:00:00.000001' + INTERVAL (i * 1000001) SECOND AS ts,
          TIMESTAMPTZ '1969-12-31 23:00:00+00' + INTERVAL (i * 90) MINUTE AS tz,
          CASE i WHEN 3 THEN NULL ELSE ['', 'Grüße 🦆', 'a' || chr(10) || 'b'][1 + i % 3] END AS s,
          ('\\x00\\xFF' || i)::BLOB AS bl,
          CASE i WHEN 1 THEN NULL ELSE [i, NULL, i * 2] END AS li,
          {'a': i, 'b': CASE WHEN i % 2 = 0 THEN 'e' END, 'c': [i / 2, 'nan'::DOUBLE]} AS st,
          MAP {'k' || i: i * 10, 'z': NULL} AS mp,
          [{'x': i, 'y': MAP {i: TIMESTAMPTZ '2024-01-01 00:00:00+00'}}] AS ls
        FROM range(6) r(i)
    """
    con = oracle_connect()
    try:
        con.execute(f"COPY ({select}) TO '{path}' (FORMAT parquet)")
        names, want = _duck_rows(con, select)
    finally:
        con.close()
    got_names, got = spark_table_rows(spark.read.parquet(str(path)))
    assert got_names == names
    assert_same_multiset(want, got, "duckdb-written parquet read by plain Spark", columns=names)
    by_id: dict[Any, tuple[Any, ...]] = {r[0]: r for r in got}
    tz = dict(zip(names, by_id[0], strict=True))["tz"]
    assert tz == dt.datetime(1969, 12, 31, 23, tzinfo=dt.UTC)
