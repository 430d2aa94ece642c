"""The pyarrow fallback reader (engine/fallback.py) against DuckDB reading the same lake.

One DuckDB-written lake for the whole module; the Spark session is the session-wide one of
tests/support/spark.py. Every table holds a type Spark's own Parquet reader rejects, and every value is
compared with what DuckDB returns through the lake (CAST to VARCHAR for the types we return as text, native
values otherwise).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from ducklake_cli.catalog.models import ColumnInfo
from tests.support.lakes import _NESTED_COLUMNS, _NESTED_SELECT, _PRIMITIVE_COLUMNS, _PRIMITIVE_PARQUET_SELECT
from tests.support.oracle import oracle_connect

pytestmark = pytest.mark.spark

ROW_ID = "_ducklake_internal_row_id"
SNAPSHOT_ID = "_ducklake_internal_snapshot_id"


def _pick(values: Sequence[str], duck_type: str) -> str:
    """`i`-indexed choice among SQL literals (strings cast to the type), cycling."""
    items = ", ".join("NULL" if v is None else "'" + v.replace("'", "''") + "'" for v in values)
    return f"([{items}])[i % {len(values)} + 1]::{duck_type}"


# Type extremes, 14 rows (→ one Parquet file). Negative intervals cannot be written to Parquet by DuckDB, and
# TIME_NS cannot be written at all. HUGEINT/UHUGEINT read as exact decimal text.
_EXTREMES = ",\n".join([
    "100 + i",
    "i % 2 = 1",
    _pick(["-128", "127", "0", "-1"], "TINYINT"),
    _pick(["-32768", "32767", "0", "-1"], "SMALLINT"),
    _pick(["-2147483648", "2147483647", "0", "-1"], "INTEGER"),
    _pick(["-9223372036854775808", "9223372036854775807", "0", "-1"], "BIGINT"),
    _pick(["0", "255", "128"], "UTINYINT"),
    _pick(["0", "65535", "32768"], "USMALLINT"),
    _pick(["0", "4294967295", "2147483648"], "UINTEGER"),
    _pick(["0", "18446744073709551615", "9223372036854775808"], "UBIGINT"),
    _pick(["99999999999999997748809823456034029568", "-99999999999999997748809823456034029568",
           "9007199254740993", "-1", "0", "12345678901234567890123"], "HUGEINT"),
    _pick(["99999999999999997748809823456034029568", "18446744073709551617", "0", "1"], "UHUGEINT"),
    _pick(["nan", "-inf", "inf", "-0.0", "3.4028235e38", "1.4e-45", "-1.5"], "FLOAT"),
    _pick(["nan", "-inf", "inf", "-0.0", "1.7976931348623157e308", "5e-324", "-2.5"], "DOUBLE"),
    _pick(["-999.9", "999.9", "0.1", "-0.1"], "DECIMAL(4,1)"),
    _pick(["-999999999999999.999", "999999999999999.999", "0.001"], "DECIMAL(18,3)"),
    _pick(["-9999999999999999999999999999.9999999999", "9999999999999999999999999999.9999999999",
           "0.0000000001", "-0.0000000001"], "DECIMAL(38,10)"),
    _pick(["0001-01-01", "9999-12-31", "1969-12-31", "1970-01-01", "1582-10-10", "2000-02-29"], "DATE"),
    _pick(["24:00:00", "00:00:00", "00:00:00.000001", "23:59:59.999999", "12:00:00.1"], "TIME"),
    _pick(["23:59:59.999999-15:59", "00:00:00+15:59", "08:00:00-07:30", "12:34:56.5+05:45"], "TIMETZ"),
    _pick(["0001-01-01 00:00:00", "9999-12-31 23:59:59.999999", "1969-12-31 23:59:59.999999",
           "1970-01-01 00:00:00.000001", "1582-10-10 12:00:00"], "TIMESTAMP"),
    _pick(["0001-01-01 00:00:00+00", "9999-12-31 23:59:59.999999+00", "1969-12-31 23:59:59.999999+00",
           "2024-03-31 01:30:00+02"], "TIMESTAMPTZ"),
    _pick(["1969-12-31 23:59:59", "0001-01-01 00:00:00", "9999-12-31 23:59:59"], "TIMESTAMP_S"),
    _pick(["1969-12-31 23:59:59.999", "0001-01-01 00:00:00.001", "9999-12-31 23:59:59.999"], "TIMESTAMP_MS"),
    _pick(["1969-12-31 23:59:59.999999999", "1677-09-22 00:12:43.145224193", "2262-04-11 23:47:16.854775806",
           "1970-01-01 00:00:00.000000001", "2000-01-01 00:00:00.000001999"], "TIMESTAMP_NS"),
    _pick(["1193 hours 2 minutes 47.295 seconds", "2147483647 days", "2147483647 months", "0 seconds",
           "1 year 1 month 1 day 00:00:00.001", "1 microsecond", "12 months", "25 hours"], "INTERVAL"),
    _pick(["", "Grüße, 世界 🦆", "line\nbreak\t\"q\"'", "x" * 5000, "NULL"], "VARCHAR"),
    _pick(["", "\\x00\\xFF\\x80", "\\x7F", "abc"], "BLOB"),
    _pick(["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
           "7fffffff-ffff-ffff-ffff-ffffffffffff", "80000000-0000-0000-0000-000000000000",
           "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"], "UUID"),
    _pick(["{}", "[]", "null", "\"ü\"", "{\"a\": [1, {\"b\": null}]}"], "JSON"),
])

_PRIM_DUCK = """id, b, i8, i16, i32, i64, u8, u16, u32, u64, CAST(h AS VARCHAR), CAST(uh AS VARCHAR), f, d, d41,
    d183, d3810, dt,
    CAST(t AS VARCHAR), CAST(ttz AS VARCHAR), ts, epoch_us(tstz), CAST(ts_s AS TIMESTAMP), CAST(ts_ms AS TIMESTAMP),
    CAST(ts_ns AS TIMESTAMP), CAST(iv AS VARCHAR), s, bl, CAST(u AS VARCHAR), CAST(j AS VARCHAR)"""

_UUID_I = "('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID"
_NESTED_EXTRA_COLUMNS = """,
    xs STRUCT(u UUID, iv INTERVAL, tz TIMETZ, ns TIMESTAMP_NS, t TIME, h HUGEINT),
    ul UUID[],
    mu MAP(UUID, INTERVAL),
    lx STRUCT(k INTEGER, u UUID)[]
"""
_NESTED_EXTRA_SELECT = f""",
  CASE WHEN i % 5 = 4 THEN NULL ELSE {{'u': CASE WHEN i % 3 = 0 THEN NULL ELSE {_UUID_I} END,
       'iv': INTERVAL (i) DAY + INTERVAL (i * 1001) MILLISECOND,
       'tz': ('1' || (i % 10)::VARCHAR || ':30:00+0' || (i % 5)::VARCHAR)::TIMETZ,
       'ns': ('2020-06-01 12:00:00.' || lpad((i * 123456789)::VARCHAR, 9, '0'))::TIMESTAMP_NS,
       't': TIME '00:00:00' + INTERVAL (i * 3671001) MILLISECOND,
       'h': (i - 10)::HUGEINT * 1267650600228229401496703205376}} END,
  CASE WHEN i % 5 = 4 THEN NULL WHEN i % 5 = 3 THEN []::UUID[] ELSE [{_UUID_I}, NULL] END,
  CASE WHEN i % 5 = 4 THEN NULL
       ELSE MAP {{{_UUID_I}: INTERVAL (i) MONTH, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::UUID: NULL}} END,
  CASE WHEN i % 5 = 4 THEN NULL ELSE [{{'k': i, 'u': {_UUID_I}}}, NULL] END
"""
_NEST_DUCK = """id, st, li, mp, sl, ls, ll, ms,
    CAST(xs AS STRUCT(u VARCHAR, iv VARCHAR, tz VARCHAR, ns TIMESTAMP, t VARCHAR, h VARCHAR)),
    CAST(ul AS VARCHAR[]), CAST(mu AS MAP(VARCHAR, VARCHAR)), CAST(lx AS STRUCT(k INTEGER, u VARCHAR)[])"""

_VARIANTS = """CASE i
  WHEN 0 THEN {'a': 1, 'b': [{'c': 'x'}, {'c': NULL}]}::VARIANT
  WHEN 1 THEN [1, 2, 3]::VARIANT
  WHEN 2 THEN 42::VARIANT
  WHEN 3 THEN 'héllo "q"'::VARIANT
  WHEN 4 THEN 12.345::DECIMAL(10,3)::VARIANT
  WHEN 5 THEN NULL
  WHEN 6 THEN {'d': DATE '2020-01-02', 'ts': TIMESTAMP '2020-01-01 01:02:03.5',
               'u': '00000000-0000-0000-0000-000000000001'::UUID, 'tz': TIMESTAMPTZ '2020-01-01 00:00:00+00'}::VARIANT
  WHEN 7 THEN true::VARIANT
  WHEN 8 THEN 1.5::DOUBLE::VARIANT
  WHEN 9 THEN 'null'::JSON::VARIANT
  WHEN 10 THEN {'n': NULL, 'e': []::INTEGER[], 'o': {'a': NULL::INT}}::VARIANT
  ELSE '{"k": [true, null, 1e300, -7, 0.000001, 1e-7]}'::JSON::VARIANT END"""


@dataclass
class Lake:
    """A DuckDB-written lake (SQLite catalog), still attached to `con` as `lake`."""

    con: duckdb.DuckDBPyConnection
    catalog: Path
    data_path: Path

    def duck(self, sql: str) -> list[tuple[Any, ...]]:
        return self.con.execute(sql).fetchall()

    def columns(self, table: str) -> list[ColumnInfo]:
        """Current top-level columns (with nested children), as the catalog layer models them."""
        with sqlite3.connect(self.catalog) as db:
            rows = db.execute(
                "SELECT c.column_id, c.column_name, c.column_type, c.parent_column, c.column_order "
                "FROM ducklake_column c JOIN ducklake_table t ON t.table_id = c.table_id AND t.end_snapshot IS NULL "
                "WHERE t.table_name = ? AND c.end_snapshot IS NULL ORDER BY c.column_order", [table]).fetchall()

        def build(r: tuple[Any, ...]) -> ColumnInfo:
            kids = tuple(build(k) for k in rows if k[3] == r[0])
            return ColumnInfo(r[0], r[1], r[2], True, None, None, None, r[3], r[4], 0, kids)

        return [build(r) for r in rows if r[3] is None]

    def files(self, table: str, *, current: bool = True) -> list[str]:
        """Data files of a table (resolved: data_path / schema path / table path / file path)."""
        with sqlite3.connect(self.catalog) as db:
            rows = db.execute(
                "SELECT s.path, t.path, f.path, f.path_is_relative FROM ducklake_data_file f "
                "JOIN ducklake_table t ON t.table_id = f.table_id AND t.end_snapshot IS NULL "
                "JOIN ducklake_schema s ON s.schema_id = t.schema_id AND s.end_snapshot IS NULL "
                "WHERE t.table_name = ?" + (" AND f.end_snapshot IS NULL" if current else "")
                + " ORDER BY f.data_file_id", [table]).fetchall()
        return [f"{self.data_path}/{sp}{tp}{fp}" if rel else fp for sp, tp, fp, rel in rows]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("fallback")
    data = root / "data"
    data.mkdir()
    con = oracle_connect()
    con.execute(f"ATTACH 'ducklake:sqlite:{root}/c.sqlite' AS lake (DATA_PATH '{data}/')")
    steps = [
        # primitives: the shared 20-row scenario plus type extremes, two Parquet files
        f"CREATE TABLE lake.prim ({_PRIMITIVE_COLUMNS})",
        f"INSERT INTO lake.prim {_PRIMITIVE_PARQUET_SELECT}",
        f"INSERT INTO lake.prim SELECT {_EXTREMES} FROM range(14) r(i)",
        # nested, with rejected types inside structs, lists and maps
        f"CREATE TABLE lake.nest ({_NESTED_COLUMNS}{_NESTED_EXTRA_COLUMNS})",
        f"INSERT INTO lake.nest {_NESTED_SELECT}{_NESTED_EXTRA_SELECT} FROM range(25) r(i)",
        # evolution: add/rename/drop/promote, struct field added, between two inserts
        "CREATE TABLE lake.evo (id INTEGER, a INTEGER, s STRUCT(x INTEGER), gone VARCHAR, u UUID)",
        "INSERT INTO lake.evo SELECT i, i * 10, {'x': i}, 'g' || i, uuid() FROM range(11) r(i)",
        "ALTER TABLE lake.evo ADD COLUMN extra VARCHAR",
        "ALTER TABLE lake.evo RENAME COLUMN a TO a2",
        "ALTER TABLE lake.evo ALTER COLUMN a2 TYPE BIGINT",
        "ALTER TABLE lake.evo ADD COLUMN s.y VARCHAR",
        "ALTER TABLE lake.evo DROP COLUMN gone",
        "INSERT INTO lake.evo SELECT i, i * 10000000000, {'x': i, 'y': 'y' || i}, uuid(), 'e' || i "
        "FROM range(100, 111) r(i)",
        # row lineage: UPDATE writes _ducklake_internal_row_id, merging writes _ducklake_internal_snapshot_id
        "CREATE TABLE lake.upd (id INTEGER, u UUID, v VARCHAR)",
        "INSERT INTO lake.upd SELECT i, uuid(), 'v' || i FROM range(20) r(i)",
        "UPDATE lake.upd SET v = 'x' || id WHERE id < 12",
        "CREATE TABLE lake.mrg (id INTEGER, u UUID)",
        "INSERT INTO lake.mrg SELECT i, uuid() FROM range(11) r(i)",
        "INSERT INTO lake.mrg SELECT i, uuid() FROM range(100, 115) r(i)",
        "CALL ducklake_merge_adjacent_files('lake', 'mrg')",
        # variant and geometry (best effort), and a HUGEINT beyond DECIMAL(38,0)
        "CREATE TABLE lake.vg (id INTEGER, v VARIANT, g GEOMETRY)",
        f"INSERT INTO lake.vg SELECT i, {_VARIANTS}, CASE WHEN i = 5 THEN NULL "
        "ELSE ('POINT(' || i || ' 2)')::GEOMETRY END FROM range(12) r(i)",
        "CREATE TABLE lake.big (id INTEGER, h HUGEINT, u UUID)",
        "INSERT INTO lake.big SELECT i, CASE WHEN i = 7 THEN -150000000000000000000000000000000000000 "
        "ELSE i END::HUGEINT, uuid() FROM range(11) r(i)",
    ]
    for sql in steps:
        con.execute(sql)
    try:
        yield Lake(con, root / "c.sqlite", data)
    finally:
        con.close()


def read(spark: Any, lake: Lake, table: str, files: Sequence[str] | None = None, **kw: Any) -> Any:
    from ducklake_cli.engine.fallback import read_files

    paths = lake.files(table) if files is None else files
    return read_files(spark, [(p, os.path.basename(p)) for p in paths], lake.columns(table), **kw)


def norm(value: Any) -> Any:
    """Comparable form: Rows → dicts, NaN/-0.0 kept distinct, bytearray → bytes."""
    from pyspark.sql import Row

    if isinstance(value, Row):
        value = value.asDict(recursive=True)
    if isinstance(value, dict):
        return {norm(k): norm(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [norm(v) for v in value]
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else repr(value))
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)  # HUGEINT/UBIGINT come back from DuckDB as int
    return value


def compare(got: Sequence[Sequence[Any]], want: Sequence[Sequence[Any]], names: Sequence[str]) -> None:
    assert len(got) == len(want)
    bad = []
    for g_row, w_row in zip(got, want, strict=True):
        for name, g, w in zip(names, g_row, w_row, strict=True):
            if norm(g) != norm(w):
                bad.append(f"id={g_row[0]} {name}: got {g!r}, want {w!r}")
    assert not bad, "\n".join(bad[:40])


# --------------------------------------------------------------------------------------------------
# Pure functions (no Spark).


def test_interval_text_matches_duckdb() -> None:
    from ducklake_cli.engine.fallback import format_interval

    rng = random.Random(7)
    cases = [(0, 0, 0), (12, 0, 0), (-12, 0, 0), (13, 1, 1), (-13, -1, -1_500_000), (1, 1, 1000), (0, 2, -3600 * 10**6),
             (2147483647, 2147483647, 9223372036854775807), (-2147483647, -2147483647, -9223372036854775807),
             (0, 0, 360_000_000_000), (0, 0, 4294967295000), (11, -30, 59_999_999), (-1, 1, 1)]
    for _ in range(400):
        cases.append((rng.randint(-30, 30) * rng.choice([1, 1000]), rng.randint(-400, 400),
                      rng.randint(-10**12, 10**12) * rng.choice([0, 1, 1000])))
    con = duckdb.connect()
    for months, days, micros in cases:
        want = con.execute("SELECT CAST(to_months(?) + to_days(?) + to_microseconds(?) AS VARCHAR)",
                           [months, days, micros]).fetchone()
        assert want is not None
        assert format_interval(months, days, micros) == want[0], (months, days, micros)


def test_time_text_matches_duckdb() -> None:
    from ducklake_cli.engine.fallback import _clock, _clock_array

    rng = random.Random(11)
    micros = [0, 1, 10, 999_999, 1_000_000, 86_399_999_999, 3_723_500_000]
    micros += [rng.randint(0, 86_399_999_999) for _ in range(300)]
    nanos = [0, 1, 100, 86_399_999_999_999] + [rng.randint(0, 86_399_999_999_999) for _ in range(300)]
    con = duckdb.connect()
    want_us = [r[0] for r in con.execute(
        "SELECT CAST(TIME '00:00:00' + to_microseconds(v) AS VARCHAR) FROM unnest(?) WITH ORDINALITY u(v, o) "
        "ORDER BY o", [micros]).fetchall()]
    assert [_clock(v, 6) for v in micros] == want_us
    assert _clock_array(pa.array(micros, pa.int64()).cast(pa.time64("us"))).to_pylist() == want_us
    # TIME_NS (DuckDB cannot write it to Parquet, but other writers can): render with up to 9 digits.
    full = [f"{v // 3_600_000_000_000:02d}:{v // 60_000_000_000 % 60:02d}:{v // 10**9 % 60:02d}.{v % 10**9:09d}"
            for v in nanos]
    want_ns = [r[0] for r in con.execute(
        "SELECT CAST(CAST(v AS TIME_NS) AS VARCHAR) FROM unnest(?) WITH ORDINALITY u(v, o) ORDER BY o",
        [full]).fetchall()]
    assert _clock_array(pa.array(nanos, pa.int64()).cast(pa.time64("ns"))).to_pylist() == want_ns
    # 24:00:00 is a valid DuckDB TIME; NULLs stay NULL.
    edge = _clock_array(pa.array([86_400_000_000, None], pa.int64()).cast(pa.time64("us"))).to_pylist()
    assert edge == ["24:00:00", None]


def test_coarser_timestamp_units_round_like_duckdb() -> None:
    """A finer timestamp registered into a TIMESTAMP_S / TIMESTAMP_MS column: rounded as DuckDB's cast rounds."""
    from ducklake_cli.engine.fallback import _round_timestamps

    rng = random.Random(5)
    micros = [0, 1, -1, 499_999, 500_000, -500_000, -500_001, 1_500_000, -1_500_000, 500, -500, 1499, -1501]
    micros += [rng.randint(-2 * 10**15, 2 * 10**15) for _ in range(300)]
    micros += [rng.randint(-10**8, 10**8) // 500 * 500 for _ in range(100)]  # many exact halves
    con = duckdb.connect()
    for unit, step in (("TIMESTAMP_S", 10**6), ("TIMESTAMP_MS", 1000)):
        want = [r[0] for r in con.execute(
            f"SELECT epoch_us(CAST(make_timestamp(v) AS {unit})::TIMESTAMP) FROM unnest(?) WITH ORDINALITY u(v, o) "
            "ORDER BY o", [micros]).fetchall()]
        arr = pa.array(micros + [None], pa.int64()).cast(pa.timestamp("us"))
        got = _round_timestamps(arr, step).cast(pa.int64()).to_pylist()
        assert got == [*want, None], unit


def test_double_json_text_matches_duckdb() -> None:
    from ducklake_cli.engine.fallback import _json_double

    rng = random.Random(3)
    values = [1e-7, 1e-6, 1e20, 1e21, 1.5e21, 0.1, 5e-324, 1.7976931348623157e308, -2.5, 100.0, 123.456]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(300)]
    con = duckdb.connect()
    for v in values:
        want = con.execute("SELECT CAST(?::DOUBLE::VARIANT AS JSON)::VARCHAR", [v]).fetchone()
        assert want is not None
        assert _json_double(v) == want[0], v


# --------------------------------------------------------------------------------------------------
# Spark.


def test_primitives_match_duckdb(spark: Any, lake: Lake) -> None:
    from ducklake_cli.engine.fallback import output_schema

    df = read(spark, lake, "prim")
    assert df.schema == output_schema(lake.columns("prim"))
    assert len(lake.files("prim")) == 2
    assert df.rdd.getNumPartitions() == 2  # one input partition per file
    names = [f"c{c.column_id}" for c in lake.columns("prim")]
    exprs = [f"unix_micros({n}) AS {n}" if n == "c22" else n for n in names]  # c22 = tstz: compare instants
    got = [tuple(r) for r in df.selectExpr(*exprs).orderBy("c1").collect()]
    want = lake.duck(f"SELECT {_PRIM_DUCK} FROM lake.prim ORDER BY id")
    assert len(want) == 34
    compare(got, want, [c.name for c in lake.columns("prim")])


def test_internal_columns_and_positions(spark: Any, lake: Lake) -> None:
    files = lake.files("prim")
    rows = read(spark, lake, "prim").select("c1", ROW_ID, SNAPSHOT_ID, "__file", "__pos").collect()
    got = {(r["__file"], r["__pos"]): r["c1"] for r in rows}
    want = {}
    for path in files:
        for pos, ident in lake.duck(f"SELECT file_row_number, id FROM read_parquet('{path}', file_row_number=true)"):
            want[(os.path.basename(path), pos)] = ident
    assert got == want
    assert all(r[ROW_ID] is None and r[SNAPSHOT_ID] is None for r in rows)

    df = read(spark, lake, "prim", include_internal=False)
    assert df.columns[-2:] == ["__file", "__pos"] and ROW_ID not in df.columns and SNAPSHOT_ID not in df.columns


def test_nested_match_duckdb(spark: Any, lake: Lake) -> None:
    cols = lake.columns("nest")
    got = [tuple(r) for r in read(spark, lake, "nest").select(*[f"c{c.column_id}" for c in cols])
           .orderBy("c1").collect()]
    want = lake.duck(f"SELECT {_NEST_DUCK} FROM lake.nest ORDER BY id")
    assert len(want) == 25
    compare(got, want, [c.name for c in cols])


def test_evolution_by_field_id(spark: Any, lake: Lake) -> None:
    cols = lake.columns("evo")
    assert [c.name for c in cols] == ["id", "a2", "s", "u", "extra"]
    got = [tuple(r) for r in read(spark, lake, "evo").select(*[f"c{c.column_id}" for c in cols])
           .orderBy("c1").collect()]
    want = lake.duck("SELECT id, a2, s, CAST(u AS VARCHAR), extra FROM lake.evo ORDER BY id")
    assert len(want) == 22
    compare(got, want, [c.name for c in cols])
    first = got[0]
    assert first[4] is None and first[2].asDict() == {"x": 0, "y": None}  # absent in the first file → NULL
    assert first[1] == 0 and got[-1][1] == 110 * 10_000_000_000  # renamed + promoted, read by field id


def test_row_id_and_snapshot_id_columns(spark: Any, lake: Lake) -> None:
    def internal(path: str) -> set[str]:
        names = {n for (n,) in lake.duck(f"SELECT name FROM parquet_schema('{path}')")}
        return names & {ROW_ID, SNAPSHOT_ID}

    # UPDATE: the old file (with a delete file) has no row ids; the new one carries the moved rows' ids.
    upd = lake.files("upd")
    assert [internal(p) for p in upd] == [set(), {ROW_ID}]
    # Merging files of two snapshots: the merged file records each row's snapshot.
    mrg = lake.files("mrg")
    assert [internal(p) for p in mrg] == [{SNAPSHOT_ID}]

    def expected(path: str) -> dict[tuple[str, int], tuple[Any, ...]]:
        have = internal(path)
        cols = ", ".join(c if c in have else "NULL" for c in (ROW_ID, SNAPSHOT_ID))
        sql = f"SELECT file_row_number, id, {cols} FROM read_parquet('{path}', file_row_number=true)"
        return {(os.path.basename(path), pos): tuple(rest) for pos, *rest in lake.duck(sql)}

    for table, paths in (("upd", upd), ("mrg", mrg)):
        rows = read(spark, lake, table).collect()
        got = {(r["__file"], r["__pos"]): (r["c1"], r[ROW_ID], r[SNAPSHOT_ID]) for r in rows}
        want = {k: v for p in paths for k, v in expected(p).items()}
        assert got == want
    snapshots = {r[SNAPSHOT_ID] for r in read(spark, lake, "mrg").collect()}
    assert len(snapshots) == 2 and None not in snapshots
    # The rewritten rows keep the row ids DuckDB reports for them.
    duck_row_ids = dict(lake.duck("SELECT id, rowid FROM lake.upd"))
    moved = read(spark, lake, "upd", files=[upd[1]]).collect()
    assert len(moved) == 12 and all(duck_row_ids[r["c1"]] == r[ROW_ID] for r in moved)


def test_variant_and_geometry(spark: Any, lake: Lake) -> None:
    got = [tuple(r) for r in read(spark, lake, "vg").select("c1", "c2", "c3").orderBy("c1").collect()]
    want = lake.duck("SELECT id, CASE WHEN v IS NULL THEN NULL ELSE CAST(v AS JSON)::VARCHAR END, ST_AsWKB(g) "
                     "FROM lake.vg ORDER BY id")
    compare(got, want, ["id", "v", "g"])


def test_hugeint_beyond_decimal38_reads_exactly(spark: Any, lake: Lake) -> None:
    got = [tuple(r) for r in read(spark, lake, "big").select("c1", "c2").orderBy("c1").collect()]
    compare(got, lake.duck("SELECT id, CAST(h AS VARCHAR) FROM lake.big ORDER BY id"), ["id", "h"])


def test_no_files_gives_empty_frame(spark: Any, lake: Lake) -> None:
    from ducklake_cli.engine.fallback import output_schema

    df = read(spark, lake, "prim", files=[])
    assert df.schema == output_schema(lake.columns("prim")) and df.count() == 0


def test_missing_file_column_reads_null_and_rows_survive(spark: Any, lake: Lake) -> None:
    # A table column the file never had (by field id): NULL, and the row count still comes from the file.
    extra = ColumnInfo(9999, "nothing", "uuid", True, None, None, None, None, 99, 0)
    from ducklake_cli.engine.fallback import read_files

    path = lake.files("prim")[0]
    rows = read_files(spark, [(path, "k")], [extra]).collect()
    assert len(rows) == 20 and all(r["c9999"] is None for r in rows)
    assert [r["__pos"] for r in rows] == list(range(20)) and {r["__file"] for r in rows} == {"k"}


@pytest.mark.parametrize("table", ["evo", "vg"])
def test_reader_needs_no_ducklake_cli_on_executors(lake: Lake, tmp_path: Path, table: str) -> None:
    """The data source is pickled by value: a worker without ducklake_cli can still read (cluster mode)."""
    from pyspark import cloudpickle
    from pyspark.sql.datasource import InputPartition

    from ducklake_cli.engine import fallback

    cloudpickle.register_pickle_by_value(fallback)
    cols = lake.columns(table)
    options = {"files": "[]", "columns": json.dumps([fallback.column_spec(c) for c in cols])}
    reader = fallback.FallbackDataSource(options).reader(fallback.output_schema(cols))
    partition = InputPartition((lake.files(table)[0], "key"))
    local = [r for b in reader.read(partition) for r in b.to_pylist()]
    blob = tmp_path / "reader.pkl"
    blob.write_bytes(cloudpickle.dumps((reader, partition)))
    script = (
        "import sys, pickle, json\n"
        "sys.modules['ducklake_cli'] = None  # importing it now fails\n"
        f"reader, part = pickle.loads(open({str(blob)!r}, 'rb').read())\n"
        "rows = [r for b in reader.read(part) for r in b.to_pylist()]\n"
        "print(json.dumps(rows, default=str))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(json.dumps(local, default=str))
    assert len(local) in (11, 12)


def test_convert_handles_sliced_nested_arrays() -> None:
    """Batches can be slices: offsets of lists/maps/structs must be honoured."""
    from ducklake_cli.engine.fallback import convert

    elem = pa.field("element", pa.binary(16), metadata={b"PARQUET:field_id": b"3"})
    arr = pa.array([[b"\x00" * 16], None, [b"\xff" * 16, None], []], pa.list_(elem))
    spec = {"id": 2, "type": "list", "children": [{"id": 3, "type": "uuid", "children": []}]}
    got = convert(arr.slice(1, 3), spec, pa.list_(pa.field("element", pa.string())))
    assert got.to_pylist() == [None, ["ffffffff-ffff-ffff-ffff-ffffffffffff", None], []]
    struct_type = pa.struct([pa.field("t", pa.time64("us"), metadata={b"PARQUET:field_id": b"5"})])
    sarr = pa.array([{"t": dt.time(1)}, None, {"t": dt.time(2, 0, 0, 500000)}], struct_type)
    sspec = {"id": 4, "type": "struct", "children": [{"id": 5, "type": "time", "children": []},
                                                      {"id": 6, "type": "uuid", "children": []}]}
    target = pa.struct([pa.field("t", pa.string()), pa.field("u", pa.string())])
    assert convert(sarr.slice(1), sspec, target).to_pylist() == [None, {"t": "02:00:00.5", "u": None}]


@pytest.mark.s3
def test_reads_s3_files(spark: Any, lake: Lake, s3_bucket: Any) -> None:
    """Non-local paths go through fsspec (s3fs) on the executors, with the given storage options."""
    from ducklake_cli.engine.fallback import read_files

    fs = s3_bucket.filesystem()
    local = lake.files("nest")
    remote = [f"{s3_bucket.url}{os.path.basename(p)}" for p in local]
    for src, dst in zip(local, remote, strict=True):
        fs.put(src, dst)
    cols = lake.columns("nest")
    names = [f"c{c.column_id}" for c in cols]
    from_s3 = read_files(spark, [(p, os.path.basename(p)) for p in remote], cols,
                         storage_options=s3_bucket.storage_options())
    got = [tuple(r) for r in from_s3.select(*names, "__file", "__pos").orderBy("c1").collect()]
    want = [tuple(r) for r in read(spark, lake, "nest").select(*names, "__file", "__pos").orderBy("c1").collect()]
    assert len(got) == 25 and norm(got) == norm(want)
