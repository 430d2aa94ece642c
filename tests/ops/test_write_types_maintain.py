"""Every type DuckDB stores survives our flush, compact, rewrite and checkpoint: DuckDB-made tables with a UUID key,
intervals, times, 128-bit integers, second/milli/nano timestamps, geometry and nested uuid/interval leaves (files,
inlined rows, deletes) are rewritten by `ducklake maintain`, and DuckDB 1.5.5 then reads every snapshot with the same
rows and row ids; the files we wrote have DuckDB's Parquet layout for each type. Tables with VARIANT or TIMESTAMP_NS
columns are left alone (a note; an error when named), since Spark holds variants as JSON text and nanosecond
timestamps as microseconds."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ducklake_cli.api import connect
from ducklake_cli.errors import UsageError
from ducklake_cli.ops.checkpoint import plan_checkpoint
from ducklake_cli.ops.flush import plan_flush
from ducklake_cli.ops.rewrite import plan_compact, plan_rewrite
from tests.support.oracle import oracle_connect
from tests.support.spot import ORACLE_BACKENDS, Spot

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

COLUMNS = """k UUID, iv INTERVAL, t TIME, ttz TIMETZ, ts_s TIMESTAMP_S, ts_ms TIMESTAMP_MS,
    h HUGEINT, uh UHUGEINT, f FLOAT, st STRUCT(u UUID, i INTERVAL, t TIME), lu UUID[], m MAP(VARCHAR, TIMESTAMP_MS),
    n INTEGER"""
# DuckDB never inlines geometry or variant: table x has geometry and the nested columns, table y has inlined rows (no
# nested columns: catalog/inlined.py cannot decode nested uuid/interval/time values from SQLite yet).
NESTED = re.compile(r"st STRUCT\(.*?\), lu UUID\[\], m MAP\(.*?\),\s*")
SPATIAL = "g GEOMETRY"
TABLES = ("x", "y", "w", "z")  # compact and rewrite leave alone w: VARIANT (JSON text in Spark), z: TIMESTAMP_NS
# with nanosecond digits (microseconds in Spark)


def rows_sql(lo: int, hi: int, *, spatial: bool = True) -> str:
    """DuckDB rows numbered lo..hi-1 with every column filled (a NULL every 7th row). Values are those whose form in
    Spark (COMPATIBILITY.md) holds them exactly: 128-bit integers a DOUBLE holds (DuckDB's own files keep them as
    DOUBLE)."""
    def nullable(expr: str) -> str:
        return f"CASE WHEN i % 7 = 3 THEN NULL ELSE {expr} END"

    extra = f"""{nullable("ST_GeomFromWKB(ST_AsWKB(('POINT(' || i || ' ' || (i * 2) || ')')::GEOMETRY))")} AS g,
        """ if spatial else ""
    nested = f"""{nullable("{'u': md5((i + 1)::VARCHAR)::UUID, 'i': to_days(i::INTEGER), 't': TIME '01:02:03'}")} AS st,
        {nullable("[md5((i + 2)::VARCHAR)::UUID, NULL]")} AS lu,
        {nullable("MAP {'k': (TIMESTAMP '2021-06-01' + to_milliseconds(i))::TIMESTAMP_MS}")} AS m,
        """ if spatial else ""
    return f"""SELECT
        md5(i::VARCHAR)::UUID AS k,
        {nullable("to_months((i % 13)::INTEGER) + to_days((i % 40)::INTEGER) + to_milliseconds(i * 1001)")} AS iv,
        {nullable("TIME '00:00:00' + to_microseconds(i * 1234567)")} AS t,
        {nullable("('12:34:56.' || lpad((i % 1000)::VARCHAR, 3, '0') || '+00')::TIMETZ")} AS ttz,
        {nullable("(TIMESTAMP '2020-01-01' + to_seconds(i * 3601))::TIMESTAMP_S")} AS ts_s,
        {nullable("(TIMESTAMP '2020-01-01' + to_milliseconds(i * 3601001))::TIMESTAMP_MS")} AS ts_ms,
        {nullable("(i * 1000000007 - 5000)::HUGEINT")} AS h,
        {nullable("(i * 3)::UHUGEINT")} AS uh,
        {nullable("CASE i % 11 WHEN 0 THEN 'nan'::FLOAT WHEN 1 THEN 'inf'::FLOAT ELSE i / 4 END")} AS f,
        {nested}        {extra}i::INTEGER AS n
    FROM range({lo}, {hi}) r(i)"""


def build(con: duckdb.DuckDBPyConnection) -> None:
    """Files, inlined rows, deletes in both, and a partitioned copy keyed by an interval-free column."""
    for table, spatial in (("x", True), ("y", False)):
        columns = COLUMNS.replace("n INTEGER", SPATIAL + ", n INTEGER") if spatial else NESTED.sub("", COLUMNS)
        con.execute(f"CREATE TABLE lake.{table} ({columns})")
        for i in range(4):
            con.execute(f"INSERT INTO lake.{table} {rows_sql(i * 40, i * 40 + 40, spatial=spatial)}")
        for i in range(3):
            con.execute(f"INSERT INTO lake.{table} {rows_sql(1000 + i * 3, 1003 + i * 3, spatial=spatial)}")
        con.execute(f"DELETE FROM lake.{table} WHERE n % 9 = 4 OR n = 1004")
        con.execute(f"DELETE FROM lake.{table} WHERE n BETWEEN 80 AND 118")
    con.execute("CREATE TABLE lake.w (n INTEGER, v VARIANT)")
    for i in range(3):
        con.execute(f"INSERT INTO lake.w SELECT i, CASE i % 3 WHEN 0 THEN i::VARIANT WHEN 1 THEN DATE '2020-01-01' "
                    f"+ i::INTEGER ELSE {{'a': i}}::VARIANT END FROM range({i * 30}, {i * 30 + 30}) r(i)")
    con.execute("DELETE FROM lake.w WHERE n BETWEEN 30 AND 59")
    con.execute("CREATE TABLE lake.z (n INTEGER, ts_ns TIMESTAMP_NS)")
    for i in range(3):
        con.execute(f"INSERT INTO lake.z SELECT i, make_timestamp_ns(1600000000000000000 + i * 1000000007) "
                    f"FROM range({i * 30}, {i * 30 + 30}) r(i)")
    con.execute("DELETE FROM lake.z WHERE n BETWEEN 30 AND 59")


def text_rows(con: duckdb.DuckDBPyConnection, table: str, snapshot: int | None = None) -> list[tuple[Any, ...]]:
    """rowid and every column as DuckDB's text (NaN compares equal as text)."""
    at = f" AT (VERSION => {snapshot})" if snapshot is not None else ""
    return con.execute(f"SELECT rowid, CAST(COLUMNS(*) AS VARCHAR) FROM {table}{at} ORDER BY rowid").fetchall()


def every_snapshot(con: duckdb.DuckDBPyConnection) -> dict[tuple[int, str], list[tuple[Any, ...]]]:
    """Both tables at every snapshot where they exist."""
    out = {}
    for (sid,) in con.execute("SELECT snapshot_id FROM lake.snapshots() ORDER BY 1").fetchall():
        for table in TABLES:
            try:
                out[(sid, table)] = text_rows(con, f"lake.{table}", sid)
            except Exception:  # before the table existed
                continue
    return out


def layout(path: str) -> list[tuple[str, str, str]]:
    """Each Parquet leaf's path, physical and logical type."""
    import pyarrow.parquet as pq

    schema = pq.ParquetFile(path).schema
    return [(c.path, c.physical_type, str(c.logical_type)) for c in (schema.column(i) for i in range(len(schema)))]


def live_files(con: duckdb.DuckDBPyConnection, spot: Spot, table: str) -> list[str]:
    """Absolute paths of a table's current data files."""
    rows = con.execute("SELECT f.path, f.path_is_relative, t.path, s.path FROM "
                       "__ducklake_metadata_lake.ducklake_data_file f JOIN __ducklake_metadata_lake.ducklake_table t "
                       "USING (table_id) JOIN __ducklake_metadata_lake.ducklake_schema s USING (schema_id) "
                       "WHERE f.end_snapshot IS NULL AND t.end_snapshot IS NULL AND t.table_name = ?",
                       [table]).fetchall()
    return [str(spot.data_path / s / t / p) if rel else p for p, rel, t, s in rows]


@pytest.fixture
def lake_env(spot: Spot, spark: SparkSession) -> Iterator[tuple[Spot, duckdb.DuckDBPyConnection]]:
    """A DuckDB-written lake with tables x and y and the attached oracle (detach it before opening our Lake)."""
    con = oracle_connect()
    con.execute(spot.attach())
    build(con)
    try:
        yield spot, con
    finally:
        con.close()


@pytest.mark.parametrize("spot", ORACLE_BACKENDS, indirect=True)
def test_flush_compact_rewrite_every_type(lake_env: tuple[Spot, duckdb.DuckDBPyConnection]) -> None:
    spot, con = lake_env
    before = every_snapshot(con)
    duckdb_files = {t: live_files(con, spot, t) for t in TABLES}
    duckdb_layout = {t: layout(duckdb_files[t][0]) for t in TABLES}
    con.execute("DETACH lake")
    lake = connect(spot.catalog)
    for make in (plan_flush, plan_compact, plan_rewrite):
        plan = make(lake)
        assert not plan.is_empty(), make.__name__
        if make is not plan_flush:
            notes = plan.report().notes
            assert any("main.w alone" in n and "VARIANT" in n for n in notes), make.__name__
            assert any("main.z alone" in n and "TIMESTAMP_NS" in n for n in notes), make.__name__
        plan.apply(lake)
    with pytest.raises(UsageError, match="VARIANT"):
        plan_compact(lake, table="w")
    with pytest.raises(UsageError, match="TIMESTAMP_NS"):
        plan_rewrite(lake, table="z")
    lake.close()
    con.execute(spot.attach())
    after = every_snapshot(con)
    assert {k: v for k, v in after.items() if k in before} == before
    for table in ("w", "z"):
        assert sorted(live_files(con, spot, table)) == sorted(duckdb_files[table])
    for table in ("x", "y"):
        files = live_files(con, spot, table)
        ours = [f for f in files if f not in duckdb_files[table]]
        assert ours
        for f in ours:
            columns = layout(f)
            lineage = [c for c in columns if c[0].startswith("_ducklake_internal")]
            assert [c for c in columns if c not in lineage] == duckdb_layout[table]
    # DuckDB keeps writing: a UUID-keyed update and delete on our rewritten file.
    con.execute("UPDATE lake.x SET n = -n WHERE k = md5('5')::UUID")
    con.execute("DELETE FROM lake.x WHERE k = md5('6')::UUID")
    assert con.execute("SELECT n FROM lake.x WHERE k = md5('5')::UUID").fetchall() == [(-5,)]
    assert con.execute("SELECT count(*) FROM lake.x WHERE k = md5('6')::UUID").fetchone() == (0,)


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_checkpoint_every_type(lake_env: tuple[Spot, duckdb.DuckDBPyConnection]) -> None:
    spot, con = lake_env
    expected = {t: text_rows(con, f"lake.{t}") for t in TABLES}
    con.execute("DETACH lake")
    lake = connect(spot.catalog)
    report = plan_checkpoint(lake).apply(lake)
    assert {"flush", "compact", "rewrite"} <= set(report.extra["steps"])
    lake.close()
    con.execute(spot.attach())
    assert {t: text_rows(con, f"lake.{t}") for t in TABLES} == expected
