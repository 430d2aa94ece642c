"""Awkward identifiers (upper case, spaces, quotes, dots, unicode, reserved words) in schema, table and column
names, inlined and in files, read on every catalog backend as DuckDB reads them; awkward metadata schemas."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import ducklake_cli
from ducklake_cli.engine.planning.scan_plan import plan_scan
from ducklake_cli.ops import inspect as inspect_ops
from tests.support.diff import assert_same_table, duckdb_lake_rows, spark_table_rows
from tests.support.oracle import oracle_connect, sql_str
from tests.support.spot import ORACLE_BACKENDS, Spot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def q(name: str) -> str:
    """A double-quoted identifier."""
    return '"' + name.replace('"', '""') + '"'


# Column names: upper case (PostgreSQL folds those DuckDB leaves unquoted), spaces, quotes, a dot, unicode,
# reserved words; DuckDB forbids two names differing only in case, so `Id` and `ID` live in different tables.
COLUMNS = ["Id", "x y", 'Sel"ect', "it's", "a.b", "Größe", "select", "ORDER", "CamelCase", "lower"]
TYPES = ["INTEGER", "VARCHAR", "DOUBLE", "VARCHAR", "BIGINT", "VARCHAR", "INTEGER", "DATE", "BOOLEAN", "DECIMAL(9,2)"]
# (schema, table): schemas and tables named as awkwardly; `main` too.
TABLES = [("s2", "My Table"), ("main", "CamelCase"), ("My \"Schema\".v1", "t.dots ü"), ("group", "select")]
INLINE_LIMIT = 10


def _values(i: int) -> str:
    return (f"({i}, 'v {i}''s', {i} / 4, NULL, {i * 1000}, 'ß{i}', {i % 3}, DATE '2024-01-01' + {i}, "
            f"{'true' if i % 2 else 'false'}, {i}.25)")


def _build(spot: Spot, extra: str = "", tables: list[tuple[str, str]] = TABLES) -> None:
    """Each table: a few inlined rows, then a file of rows, a delete, an update (DuckDB's own writes)."""
    cols = ", ".join(f"{q(c)} {t}" for c, t in zip(COLUMNS, TYPES, strict=True))
    con = oracle_connect()
    try:
        con.execute(spot.attach("lake", f"DATA_INLINING_ROW_LIMIT {INLINE_LIMIT}{extra}"))
        for n, (schema, table) in enumerate(tables):
            name = f"lake.{q(schema)}.{q(table)}"
            if schema != "main":
                con.execute(f"CREATE SCHEMA lake.{q(schema)}")
            # `Id` here, `ID` in the next table: the same name to DuckDB, a different one to PostgreSQL.
            own = cols.replace(q("Id"), q("ID")) if n % 2 else cols
            con.execute(f"CREATE TABLE {name} ({own})")
            con.execute(f"INSERT INTO {name} VALUES {', '.join(_values(i) for i in range(4))}")
            con.execute(f"INSERT INTO {name} VALUES {', '.join(_values(i) for i in range(100, 130))}")
            con.execute(f"DELETE FROM {name} WHERE {q('select')} = 1 AND {q('Id')} < 110")
            con.execute(f"UPDATE {name} SET {q('x y')} = 'upd', {q(COLUMNS[2])} = -1 WHERE {q('Id')} IN (2, 120)")
        con.execute("DETACH lake")
    finally:
        con.close()


def _last_snapshot(spot: Spot, extra: str = "") -> int:
    con = oracle_connect()
    try:
        con.execute(spot.attach("lake", "READ_ONLY" + extra))
        sid = int(con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()[0])  # type: ignore[index]
        con.execute("DETACH lake")
    finally:
        con.close()
    return sid


@pytest.mark.spark
@pytest.mark.parametrize("spot", ORACLE_BACKENDS, indirect=True)
def test_awkward_identifiers_read_as_duckdb(spot: Spot, spark: SparkSession) -> None:
    _build(spot)
    last = _last_snapshot(spot)
    snapshots = [last - 2, last]  # inlined rows + a file with deletes; after the update
    expected = duckdb_lake_rows(spot, snapshots)
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake, contextlib.closing(lake):
        for sid in snapshots:
            assert len(expected[sid]) == len(TABLES)
            counts = {f"{t.schema}.{t.table}": t.live_rows for t in
                      inspect_ops.summary(lake, at=inspect_ops.SnapshotSelector(snapshot_id=sid)).tables}
            assert counts == {name: len(rows) for name, (_, rows) in expected[sid].items()}
            for schema, table in TABLES:
                want = expected[sid][f"{schema}.{table}"]
                df = lake.table(f"{q(schema)}.{q(table)}", snapshot=sid, spark=spark)
                assert_same_table(want, spark_table_rows(df), f"[{spot.backend}] {schema}.{table} @ {sid}")


# Metadata schemas: a quote, a double quote, a dot, unicode and a space, a reserved word, upper case.
METADATA_SCHEMAS = ["'q' s", 'My"Meta', "ü m.x", "select", "Upper"]


@pytest.mark.parametrize(("spot", "metadata_schema"), [
    *(("postgres", m) for m in METADATA_SCHEMAS), ("duckdb", METADATA_SCHEMAS[0]), ("duckdb", METADATA_SCHEMAS[2]),
], indirect=["spot"])
def test_awkward_metadata_schema(spot: Spot, metadata_schema: str) -> None:
    """Without Spark: counts and decoded inlined rows of two tables (`Id`, `ID`) under an awkward schema."""
    extra = f", METADATA_SCHEMA {sql_str(metadata_schema)}"
    tables = TABLES[:2]
    _build(spot, extra, tables)
    con = oracle_connect()
    try:
        con.execute(spot.attach("lake", "READ_ONLY" + extra))
        want = {f"{s}.{t}": int(con.execute(f"SELECT count(*) FROM lake.{q(s)}.{q(t)}").fetchone()[0])  # type: ignore[index]
                for s, t in tables}
        con.execute("DETACH lake")
    finally:
        con.close()
    with ducklake_cli.connect(spot.catalog, read_only=True, metadata_schema=metadata_schema) as lake, \
            contextlib.closing(lake):
        assert {f"{t.schema}.{t.table}": t.live_rows for t in inspect_ops.summary(lake).tables} == want
        with lake.reader() as r:
            sid = r.latest_snapshot().snapshot_id
            for s, t in tables:
                table = r.find_table(sid, f"{q(s)}.{q(t)}")
                plan = plan_scan(r, table=table, snapshot_id=sid, data_path=r.data_path, schemas=r.schemas(sid))
                id_col = f"c{table.columns[0].column_id}"
                got = sorted(v for part in plan.inlined for v in part.rows.column(id_col).to_pylist())
                assert got == [0, 2, 3, 120], f"{s}.{t}"  # 1 deleted; 2 and 120 updated (re-inlined)


@pytest.mark.spark
@pytest.mark.parametrize("spot", ORACLE_BACKENDS, indirect=True)
def test_write_inlines_into_duckdb_made_table(spot: Spot, spark: SparkSession, tmp_path: Path) -> None:
    """Our writer appends inlined rows to an inlined table DuckDB made (PostgreSQL: columns `id`, `Sel"ect`)."""
    from ducklake_cli.ops.write import run_write

    con = oracle_connect()
    try:
        con.execute(spot.attach("lake", f"DATA_INLINING_ROW_LIMIT {INLINE_LIMIT}"))
        con.execute('CREATE SCHEMA lake.s2')
        con.execute('CREATE TABLE lake.s2."My Table" ("Id" INTEGER, "Sel""ect" VARCHAR, "Größe" DOUBLE)')
        con.execute('INSERT INTO lake.s2."My Table" VALUES (1, \'a\', 1.5), (2, NULL, NULL)')
        source = tmp_path / "more.parquet"
        select = "SELECT i::INTEGER AS \"Id\", 'w' || i AS \"Sel\"\"ect\", i / 2 AS \"Größe\" FROM range(3, 6) r(i)"
        con.execute(f"COPY ({select}) TO {sql_str(str(source))} (FORMAT parquet)")
        con.execute("DETACH lake")
        with ducklake_cli.connect(spot.catalog) as lake, contextlib.closing(lake):
            result = run_write(lake, "s2.My Table", source=[str(source)])
        assert result.inlined_rows == 3
        con.execute(spot.attach("lake", "READ_ONLY"))
        rows = con.execute('SELECT "Id", "Sel""ect", "Größe" FROM lake.s2."My Table" ORDER BY 1').fetchall()
        # The rows joined DuckDB's inlined table: no new one, no schema change (as DuckDB's own INSERT).
        inlined_tables = con.execute("SELECT count(*) FROM __ducklake_metadata_lake.ducklake_inlined_data_tables"
                                     ).fetchone()
        versions = con.execute("SELECT count(DISTINCT schema_version) FROM ducklake_snapshots('lake')").fetchone()
        con.execute("DETACH lake")
    finally:
        con.close()
    assert rows == [(1, "a", 1.5), (2, None, None), (3, "w3", 1.5), (4, "w4", 2.0), (5, "w5", 2.5)]
    assert inlined_tables == (1,) and versions == (3,)  # schema versions: empty, schema s2, the table


@pytest.mark.spark
@pytest.mark.parametrize("spot", ["mysql"], indirect=True)
def test_mysql_awkward_names_round_trip(spot: Spot, spark: SparkSession, tmp_path: Path) -> None:
    """MySQL (our writer only, which never inlines there): an awkward metadata database, schema, table and column
    names."""
    import pymysql

    from ducklake_cli.catalog.url import parse_catalog
    from ducklake_cli.ops.create import create_catalog
    from ducklake_cli.ops.write import run_write
    from tests.support.services import mysql_connect_args

    meta = f"ü m'q {tmp_path.name[-12:]}"  # a database of its own (names are server-wide), dropped at the end
    target = parse_catalog(spot.catalog).with_schema(meta)
    cols = ['"Id"', '"Sel""ect"', '"x`y"', '"select"', '"a.b"']
    select = ", ".join(f"{e} AS {c}" for e, c in zip(["i::INTEGER", "'s' || i", "i * 2", "i % 3", "i / 4"], cols,
                                                        strict=True))
    con = oracle_connect()
    try:
        small, big = tmp_path / "small.parquet", tmp_path / "big.parquet"
        con.execute(f"COPY (SELECT {select} FROM range(3) r(i)) TO {sql_str(str(small))} (FORMAT parquet)")
        con.execute(f"COPY (SELECT {select} FROM range(100, 140) r(i)) TO {sql_str(str(big))} (FORMAT parquet)")
        want = sorted(tuple(r) for r in con.execute(
            f"SELECT * FROM read_parquet([{sql_str(str(small))}, {sql_str(str(big))}])").fetchall())
    finally:
        con.close()
    try:
        create_catalog(target, data_path=str(spot.data_path))
        with ducklake_cli.connect(target) as lake, contextlib.closing(lake):
            run_write(lake, "My Schema.Tab'le", source=[str(small)], mode="create")
            run_write(lake, "My Schema.Tab'le", source=[str(big)])
            got = sorted(tuple(r) for r in lake.table('"My Schema"."Tab\'le"', spark=spark).collect())
            assert [t.live_rows for t in inspect_ops.summary(lake).tables] == [43]
        assert got == want
    finally:
        admin = pymysql.connect(**mysql_connect_args(spot.catalog))
        try:
            with admin.cursor() as cur:
                cur.execute("DROP DATABASE IF EXISTS `" + meta.replace("`", "``") + "`")
        finally:
            admin.close()
