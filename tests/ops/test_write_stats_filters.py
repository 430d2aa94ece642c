"""Stats acceptance for `ducklake write`: for every type, DuckDB 1.5.5's filters (=, <, >, <=, >=, IS [NOT] NULL and
NaN comparisons) on our written table return the same rows as on the input and as on DuckDB's own lake of the same
rows; our Parquet footers and catalog stats say what DuckDB's do for the same values (NaN, ±inf, -0.0, all-NULL
columns, empty and long strings, nested leaves). A reader trusting a footer min/max that ignores a NaN skips it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ducklake_cli.api import connect
from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.ops.create import create_catalog
from ducklake_cli.ops.write import run_write
from tests.support.oracle import oracle_connect
from tests.support.spot import ORACLE_BACKENDS, Spot
from tests.support.tiers import backend_params

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

# The case: 400 rows, 90% NULL, one NaN among finite values — for FLOAT, DOUBLE and nested float leaves.
NAN_SPARSE = """
    SELECT i::INTEGER AS id,
           CASE WHEN i = 200 THEN 'nan'::FLOAT WHEN i % 10 = 0 THEN (i / 10)::FLOAT END AS f32,
           CASE WHEN i = 201 THEN 'nan'::DOUBLE WHEN i % 10 = 1 THEN i / 10 END AS f64,
           CASE WHEN i % 10 = 2 THEN {'x': CASE WHEN i = 202 THEN 'nan'::DOUBLE ELSE i END} END AS st,
           CASE WHEN i % 10 = 3 THEN [CASE WHEN i = 203 THEN 'nan'::FLOAT ELSE i END] END AS li
    FROM range(400) t(i)
"""
# Edge values of every type pyarrow writes: ±inf, -0.0, NaN-only, all-NULL, empty and long strings, nested leaves.
EDGES = """
    SELECT i::INTEGER AS id, i % 3 = 0 AS b, (i % 200 - 100)::TINYINT AS i8, (i * 37 - 5000)::SMALLINT AS i16,
           (i * 1000003 - 100000000)::BIGINT AS i64, (i % 250)::UTINYINT AS u8, (i * 99)::UINTEGER AS u32,
           (i * 18446744073709)::UBIGINT AS u64,
           CASE i % 6 WHEN 0 THEN 'inf'::FLOAT WHEN 1 THEN '-inf'::FLOAT WHEN 2 THEN -0.0::FLOAT
                      WHEN 3 THEN 0.0::FLOAT ELSE (i / 7)::FLOAT END AS f_inf,
           CASE i % 5 WHEN 0 THEN '-inf'::DOUBLE WHEN 1 THEN -0.0 ELSE i * 0.25 END AS d_noinf,
           CASE WHEN i % 4 = 0 THEN 'nan'::DOUBLE END AS d_nan_only,
           CASE i % 7 WHEN 0 THEN 'nan'::DOUBLE WHEN 1 THEN 'inf'::DOUBLE WHEN 2 THEN '-inf'::DOUBLE
                      WHEN 3 THEN -0.0 WHEN 4 THEN NULL ELSE i END AS d_all,
           NULL::INTEGER AS null_int, NULL::VARCHAR AS null_str, NULL::DOUBLE AS null_dbl,
           (i * 1.25)::DECIMAL(9, 2) AS dec, (i * 12345.678901)::DECIMAL(38, 10) AS dec38,
           DATE '1970-01-01' + (i * 40 - 3000)::INTEGER AS dt,
           TIMESTAMP '1999-12-31 23:59:59.999999' + INTERVAL (i * 17) HOUR AS ts,
           TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i * 3) MINUTE AS tstz,
           CASE i % 5 WHEN 0 THEN '' WHEN 1 THEN repeat('z', 300) || i WHEN 2 THEN 'ünï' || i
                      WHEN 3 THEN NULL ELSE chr(1) || i END AS s,
           CASE WHEN i % 9 = 0 THEN ''::BLOB ELSE ('\\x00\\xFF'::BLOB || i::VARCHAR::BLOB) END AS bl,
           {'a': CASE WHEN i % 8 = 0 THEN 'nan'::FLOAT ELSE i END, 'b': CASE WHEN i % 3 = 0 THEN '' ELSE 'q' || i END,
            'c': NULL::BIGINT} AS st,
           [i, NULL, -i]::BIGINT[] AS li, MAP {'k' || (i % 4): CASE WHEN i % 2 = 0 THEN 'nan'::DOUBLE ELSE i END} AS m
    FROM range(300) t(i)
"""
# Types DuckDB writes for us (engine/parquet_files.py `DUCKDB_WRITTEN`), with NULLs, extremes and nested leaves.
DUCKDB_TYPES = """
    SELECT i::INTEGER AS id, CASE WHEN i % 11 <> 5 THEN md5(i::VARCHAR)::UUID END AS u,
           CASE WHEN i % 7 <> 2 THEN to_months((i % 25)::INTEGER) + to_days(i::INTEGER) + to_milliseconds(i * 999)
           END AS iv,
           CASE WHEN i % 6 <> 1 THEN TIME '00:00:00' + to_microseconds(i * 287000001) END AS t,
           CASE WHEN i % 5 <> 3 THEN (TIME '01:00:00' + to_seconds(i * 7))::TIMETZ END AS ttz,
           (TIMESTAMP '1960-01-01' + to_seconds(i * 86399))::TIMESTAMP_S AS ts_s,
           (TIMESTAMP '2000-02-29' + to_milliseconds(i * 3600001))::TIMESTAMP_MS AS ts_ms,
           (TIMESTAMP '2262-01-01' + to_microseconds(i * 1000001))::TIMESTAMP_NS AS ts_ns,
           CASE WHEN i % 4 <> 0 THEN (i * 1000000007 - 150000000000)::HUGEINT END AS h,
           (i * 3)::UHUGEINT AS uh,
           CASE WHEN i % 9 = 0 THEN 'nan'::FLOAT ELSE i END AS f,
           {'u': md5((i + 1)::VARCHAR)::UUID, 'iv': to_days((i % 40)::INTEGER), 't': TIME '23:59:59.999999'} AS st,
           [(TIMESTAMP '2021-01-01' + to_milliseconds(i))::TIMESTAMP_MS] AS lt,
           CASE WHEN i % 8 <> 0 THEN ST_GeomFromWKB(ST_AsWKB(('POINT(' || i || ' ' || -i || ')')::GEOMETRY)) END AS g
    FROM range(300) t(i)
"""


@dataclass
class Lakes:
    """Our lake (`lake`) and DuckDB's own lake of the same rows (`ref`), both attached to one oracle connection."""

    spot: Spot
    con: duckdb.DuckDBPyConnection
    tmp: Path

    def load(self, name: str, sql: str, *, via_table: bool = False, where: str = "TRUE") -> str:
        """Write `sql`'s rows with `ducklake write` into lake.main.<name> and with DuckDB into ref.main.<name>; the
        input file's path. `via_table`: DuckDB creates the (empty) table and a source table in our lake, and we
        append `--query 'SELECT * FROM src_<name> WHERE <where>'` (rows in the form Spark reads them in,
        COMPATIBILITY.md)."""
        src = str(self.tmp / f"{name}.parquet")
        self.con.execute(f"COPY ({sql}) TO '{src}' (FORMAT parquet)")
        if via_table:
            self.con.execute(self.spot.attach())
            self.con.execute(f"CREATE TABLE lake.src_{name} AS SELECT * FROM read_parquet('{src}')")
            self.con.execute(f"CREATE TABLE lake.{name} AS SELECT * FROM read_parquet('{src}') LIMIT 0")
        self.con.execute("DETACH DATABASE IF EXISTS lake")
        lake = connect(self.spot.catalog)
        try:
            if via_table:
                run_write(lake, f"main.{name}", query=f"SELECT * FROM main.src_{name} WHERE {where}", mode="append")
            else:
                run_write(lake, f"main.{name}", source=[src], mode="create")
        finally:
            lake.close()
        self.con.execute(self.spot.attach())
        self.con.execute(f"CREATE TABLE ref.{name} AS SELECT * FROM read_parquet('{src}') WHERE {where}")
        return src


@pytest.fixture
def lakes(spot: Spot, tmp_path: Path, spark: SparkSession) -> Iterator[Lakes]:
    """Our empty lake on the backend under test, DuckDB's reference lake (SQLite catalog) beside it."""
    create_catalog(parse_catalog(spot.catalog, must_exist=False), data_path=str(spot.data_path))
    con = oracle_connect()
    ref = tmp_path / "ref"
    ref.mkdir()
    con.execute(f"ATTACH 'ducklake:sqlite:{ref}/cat.sqlite' AS ref (DATA_PATH '{ref}/data/')")
    try:
        yield Lakes(spot, con, tmp_path)
    finally:
        con.close()


def leaf_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    """Filterable leaves `(expression, type)`: top-level primitives and struct fields."""
    out = []
    for name, typ in con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {table})").fetchall():
        if typ.startswith("STRUCT("):
            for (field,) in con.execute(f'SELECT unnest(struct_keys(NULL::{typ}))').fetchall():
                out.append((f'"{name}"."{field}"', ""))
        elif not (typ.endswith("]") or typ.startswith("MAP(")):
            out.append((f'"{name}"', typ))
    return out


def probes(con: duckdb.DuckDBPyConnection, src: str, expr: str) -> list[str]:
    """Constants to compare a leaf with: its min, max, a middle value and the float specials, as typed literals."""
    typ = con.execute(f"SELECT typeof({expr}) FROM read_parquet('{src}') LIMIT 1").fetchall()[0][0]
    values = [v for (v,) in con.execute(
        f"SELECT DISTINCT CAST({expr} AS VARCHAR) FROM read_parquet('{src}') WHERE {expr} IS NOT NULL ORDER BY 1"
    ).fetchall()]
    picked = {values[0], values[-1], values[len(values) // 2]} if values and typ != "GEOMETRY" else set()
    if typ in ("FLOAT", "DOUBLE"):
        picked |= {"nan", "inf", "-inf", "-0.0", "0.0"}
    return [f"CAST('{v.replace(chr(39), chr(39) * 2)}' AS {typ})" for v in sorted(picked)]


def assert_filters_agree(con: duckdb.DuckDBPyConnection, name: str, src: str) -> int:
    """Every filter on every leaf counts the same rows in our lake as in the input's rows held in memory (no file
    pruning), and as in DuckDB's own lake unless that one is wrong: DuckDB's Parquet bloom filters hash -0.0 and 0.0
    apart, so `= -0.0` misses zeros in its own files."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE truth_{name} AS SELECT * FROM read_parquet('{src}')")
    checked = 0
    for expr, _ in leaf_columns(con, f"lake.{name}"):
        preds = ["IS NULL", "IS NOT NULL"] + [f"{op} {lit}" for lit in probes(con, src, expr)
                                              for op in ("=", "<", ">", "<=", ">=")]
        for pred in preds:
            ours, ref, truth = (con.execute(f"SELECT count(*) FROM {rel} WHERE {expr} {pred}").fetchall()[0][0]
                                for rel in (f"lake.{name}", f"ref.{name}", f"truth_{name}"))
            assert ours == truth, f"{expr} {pred}: ours {ours}, input {truth}"
            assert ref == truth or "-0.0" in pred, f"{expr} {pred}: DuckDB's lake {ref}, input {truth}"
            checked += 1
    return checked


def footer_stats(con: duckdb.DuckDBPyConnection, db: str, name: str) -> dict[str, tuple[Any, ...]]:
    """Per leaf path of the table's one data file: (has min/max, min, max, null count) from its footer."""
    import pyarrow.parquet as pq

    ((path,),) = con.execute(f"SELECT data_file FROM ducklake_list_files('{db}', '{name}')").fetchall()
    meta = pq.ParquetFile(path).metadata
    out = {}
    for i in range(meta.num_columns):
        col = meta.row_group(0).column(i)
        st = col.statistics
        has = bool(st is not None and st.has_min_max)
        out[col.path_in_schema] = (has, st.min if has else None, st.max if has else None,
                                   st.null_count if st is not None and st.has_null_count else None)
    return out


def catalog_stats(con: duckdb.DuckDBPyConnection, db: str, name: str) -> dict[str, tuple[Any, ...]]:
    """Per column name path: the file stats row and the table stats row DuckLake keeps."""
    meta = f"__ducklake_metadata_{db}"
    rows = con.execute(f"""
        WITH RECURSIVE cols AS (
            SELECT c.column_id, c.column_name AS path FROM {meta}.ducklake_column c
            JOIN {meta}.ducklake_table t USING (table_id)
            WHERE t.table_name = ? AND c.parent_column IS NULL AND c.end_snapshot IS NULL
            UNION ALL
            SELECT c.column_id, cols.path || '.' || c.column_name FROM {meta}.ducklake_column c
            JOIN cols ON c.parent_column = cols.column_id WHERE c.end_snapshot IS NULL)
        SELECT cols.path, f.value_count, f.null_count, f.min_value, f.max_value, f.contains_nan,
               s.contains_null, s.contains_nan, s.min_value, s.max_value
        FROM cols JOIN {meta}.ducklake_file_column_stats f USING (column_id)
        JOIN {meta}.ducklake_table_column_stats s USING (column_id)
        WHERE f.table_id = s.table_id AND s.table_id = (
            SELECT table_id FROM {meta}.ducklake_table WHERE table_name = ? AND end_snapshot IS NULL)""",
                       [name, name]).fetchall()
    return {r[0]: tuple(bool(x) if isinstance(x, bool) else x for x in r[1:]) for r in rows}


backends = pytest.mark.parametrize("spot", ORACLE_BACKENDS, indirect=True)
# Stats and footers are the same bytes and catalog rows on every catalog (no backend hook writes them): every type
# on SQLite in the default tier, on every catalog in the full tier; the NaN test covers the others by default.
sqlite_by_default = pytest.mark.parametrize("spot", backend_params(ORACLE_BACKENDS), indirect=True)


@backends
def test_nan_in_sparse_float_columns_is_found(lakes: Lakes) -> None:
    src = lakes.load("nan_sparse", NAN_SPARSE)
    con = lakes.con
    for expr, typ in (('"f32"', "FLOAT"), ('"f64"', "DOUBLE"), ('"st"."x"', "DOUBLE")):
        for db in ("lake", "ref"):
            got = con.execute(f"SELECT count(*) FROM {db}.nan_sparse WHERE {expr} >= 'nan'::{typ}").fetchone()
            assert got == (1,), (db, expr)
    got = con.execute("SELECT count(*) FROM lake.nan_sparse WHERE isnan(li[1])").fetchone()
    assert got == (1,)
    assert assert_filters_agree(con, "nan_sparse", src) > 30
    ours, theirs = footer_stats(con, "lake", "nan_sparse"), footer_stats(con, "ref", "nan_sparse")
    for path in ("f32", "f64", "st.x", "li.list.element"):
        assert not ours[path][0] and not theirs[path][0], path  # no min/max beside a NaN, as DuckDB writes it
    assert catalog_stats(con, "lake", "nan_sparse") == catalog_stats(con, "ref", "nan_sparse")


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_nan_after_the_first_row_group_starts_a_part_without_bounds(lakes: Lakes) -> None:
    # 50-row row groups: the writer is open (with float min/max) before the NaN rows arrive, so they go to a new part;
    # the parts are joined into one file, as DuckDB writes it, each row group keeping its own footer bounds.
    lakes.con.execute(lakes.spot.attach())
    lakes.con.execute("CALL lake.set_option('parquet_row_group_size', 50)")
    lakes.con.execute("CALL ref.set_option('parquet_row_group_size', 50)")
    src = lakes.load("nan_late", NAN_SPARSE)
    con = lakes.con
    for expr, typ in (('"f32"', "FLOAT"), ('"f64"', "DOUBLE"), ('"st"."x"', "DOUBLE")):
        assert con.execute(f"SELECT count(*) FROM lake.nan_late WHERE {expr} >= 'nan'::{typ}").fetchall() == [(1,)]
    files = "SELECT count(*) FROM ducklake_list_files(?, 'nan_late')"
    assert con.execute(files, ["lake"]).fetchall() == con.execute(files, ["ref"]).fetchall() == [(1,)]
    assert catalog_stats(con, "lake", "nan_late") == catalog_stats(con, "ref", "nan_late")
    assert assert_filters_agree(con, "nan_late", src) > 30


@sqlite_by_default
def test_every_type_filters_footers_and_stats_match_duckdb(lakes: Lakes) -> None:
    src = lakes.load("edges", EDGES)
    con = lakes.con
    assert assert_filters_agree(con, "edges", src) > 200
    ours, theirs = footer_stats(con, "lake", "edges"), footer_stats(con, "ref", "edges")
    assert set(ours) == set(theirs)
    for path, theirs_stats in theirs.items():
        # Equal, min/max values included; but pyarrow writes a column's statistics whole or not at all, so a float
        # column without min/max (it holds a NaN) has no footer null count either.
        assert ours[path] == theirs_stats or (ours[path] == (False, None, None, None) and not theirs_stats[0]), path
    assert catalog_stats(con, "lake", "edges") == catalog_stats(con, "ref", "edges")


@sqlite_by_default
def test_types_duckdb_writes_filters_footers_and_stats_match_duckdb(lakes: Lakes) -> None:
    src = lakes.load("exotic", DUCKDB_TYPES, via_table=True)
    con = lakes.con
    assert con.execute("SELECT * FROM lake.exotic EXCEPT ALL SELECT * FROM read_parquet(?)", [src]).fetchall() == []
    assert con.execute("SELECT count(*) FROM lake.exotic").fetchall() == [(300,)]
    assert assert_filters_agree(con, "exotic", src) > 150
    assert footer_stats(con, "lake", "exotic") == footer_stats(con, "ref", "exotic")
    assert catalog_stats(con, "lake", "exotic") == catalog_stats(con, "ref", "exotic")


# Small writes are read back for inlining through DuckDB when DuckDB wrote the files (pyarrow reads INTERVAL as bytes).
@pytest.mark.parametrize("spot", ["sqlite", "postgres"], indirect=True)
def test_small_write_of_every_type_is_inlined_as_duckdb_reads_it(lakes: Lakes) -> None:
    # GEOMETRY (like VARIANT) is never inlined by DuckDB 1.5.5: a one-row insert makes a data file.
    no_geometry = DUCKDB_TYPES.replace(" AS lt,", " AS lt").split("CASE WHEN i % 8 <> 0 THEN ST_GeomFromWKB")[0]
    src = lakes.load("tiny", no_geometry + " FROM range(300) t(i)", via_table=True, where="id < 7")
    con = lakes.con
    inlined = con.execute("SELECT count(*) FROM __ducklake_metadata_lake.ducklake_inlined_data_tables").fetchall()
    assert inlined[0][0] >= 1
    rows = con.execute("SELECT * FROM lake.tiny EXCEPT ALL SELECT * FROM read_parquet(?) WHERE id < 7",
                       [src]).fetchall()
    assert (rows, con.execute("SELECT count(*) FROM lake.tiny").fetchall()) == ([], [(7,)])


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_small_writes_with_geometry_are_files_as_duckdb_writes_them(lakes: Lakes) -> None:
    lakes.load("geo", DUCKDB_TYPES, via_table=True, where="id < 7")
    con = lakes.con
    count = "SELECT count(*) FROM __ducklake_metadata_{0}.ducklake_inlined_data_tables"
    files = ("SELECT count(*) FROM __ducklake_metadata_{0}.ducklake_data_file JOIN "
             "__ducklake_metadata_{0}.ducklake_table USING (table_id) WHERE table_name = 'geo'")
    assert con.execute(count.format("lake")).fetchall() == [(0,)]
    assert con.execute(files.format("lake")).fetchall() == con.execute(files.format("ref")).fetchall() == [(1,)]


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_duckdb_written_files_one_per_partition(lakes: Lakes) -> None:
    con = lakes.con
    con.execute(lakes.spot.attach())
    sql = f"SELECT *, ['eu', 'us', NULL][id % 3 + 1] AS region FROM ({DUCKDB_TYPES})"
    src = str(lakes.tmp / "parts.parquet")
    con.execute(f"COPY ({sql}) TO '{src}' (FORMAT parquet)")
    con.execute(f"CREATE TABLE lake.src_parts AS SELECT * FROM read_parquet('{src}')")
    con.execute(f"CREATE TABLE lake.parts AS SELECT * FROM read_parquet('{src}') LIMIT 0")
    con.execute("ALTER TABLE lake.parts SET PARTITIONED BY (region)")
    con.execute("CALL lake.set_option('target_file_size', '8KB', table_name => 'parts')")
    con.execute("CALL lake.set_option('parquet_row_group_size', 20, table_name => 'parts')")  # rotation checks
    con.execute("DETACH lake")
    lake = connect(lakes.spot.catalog)
    try:
        run_write(lake, "main.parts", query="SELECT * FROM main.src_parts", mode="append")
    finally:
        lake.close()
    con.execute(lakes.spot.attach())
    assert con.execute("SELECT * FROM lake.parts EXCEPT ALL SELECT * FROM read_parquet(?)", [src]).fetchall() == []
    assert con.execute("SELECT count(*) FROM lake.parts").fetchall() == [(300,)]
    files = [p for (p,) in con.execute("SELECT data_file FROM ducklake_list_files('lake', 'parts')").fetchall()]
    for region in ("eu", "us", "__HIVE_DEFAULT_PARTITION__"):
        assert sum(f"/region={region}/" in p for p in files) == 1, region  # DuckDB cuts no partition's file
    assert con.execute("SELECT count(*) FROM lake.parts WHERE region = 'eu' AND u IS NOT NULL").fetchall() == \
        con.execute("SELECT count(*) FROM read_parquet(?) WHERE region = 'eu' AND u IS NOT NULL", [src]).fetchall()
