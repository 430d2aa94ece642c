"""MySQL/MariaDB catalogs take every write (DuckDB's own connector cannot): our reader returns the written rows,
and the catalog rows, copied into a SQLite catalog, are read by DuckDB 1.5.5 with identical results."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pymysql
import pytest

from ducklake_cli.api import connect
from ducklake_cli.catalog.backends import format_timestamp_text
from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.ops.create import create_catalog
from ducklake_cli.ops.write import run_write
from tests.ops.test_write_differential import EVENTS, NESTED, PRIMITIVES, assert_same_rows
from tests.support.oracle import attach_clause, oracle_connect
from tests.support.services import mysql_connect_args
from tests.support.spot import Spot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def copy_mysql_catalog_to_sqlite(mysql_url: str, sqlite_path: Path) -> None:
    """Copy every `ducklake_*` row into a SQLite catalog made by our create-catalog (same 28 tables)."""
    src = pymysql.connect(**mysql_connect_args(mysql_url))
    dst = sqlite3.connect(sqlite_path)
    try:
        with src.cursor() as cur:
            cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
            for (name,) in cur.fetchall():
                cur.execute(f"SELECT * FROM `{name}`")
                rows = [tuple(format_timestamp_text(v.replace(tzinfo=dt.UTC)) if isinstance(v, dt.datetime) else v
                              for v in r) for r in cur.fetchall()]
                dst.execute(f'DELETE FROM "{name}"')
                if rows:
                    dst.executemany(f'INSERT INTO "{name}" VALUES ({", ".join("?" * len(rows[0]))})', rows)
        dst.commit()
    finally:
        src.close()
        dst.close()


@pytest.mark.parametrize("spot", ["mysql"], indirect=True)
def test_every_write_on_a_mysql_catalog(spot: Spot, tmp_path: Path, spark: SparkSession) -> None:
    create_catalog(parse_catalog(spot.catalog), data_path=str(spot.data_path))
    con = oracle_connect()
    inputs = {}
    for name, sql in (("prims", PRIMITIVES), ("nested", NESTED), ("events", EVENTS),
                      ("few", "SELECT * FROM (" + EVENTS + ") WHERE id < 3")):
        inputs[name] = str(tmp_path / f"{name}.parquet")
        con.execute(f"COPY ({sql}) TO '{inputs[name]}' (FORMAT parquet)")
    with connect(spot.catalog) as lake:
        run_write(lake, "prims", source=[inputs["prims"]], mode="create")
        run_write(lake, "s2.nested", source=[inputs["nested"]])
        run_write(lake, "ev", source=[inputs["events"]], partition_by=["region", "day(ts)", "bucket(3, id)"])
        run_write(lake, "ev", source=[inputs["few"]])  # small: Parquet on MySQL (no inlining, see COMPATIBILITY.md)
        run_write(lake, "prims", source=[inputs["prims"]], mode="overwrite")
        ours = {t: sorted(tuple(r) for r in lake.table(t).collect()) for t in ("prims", "s2.nested", "ev")}
    assert len(ours["prims"]) == 300 and len(ours["ev"]) == 503 and len(ours["s2.nested"]) == 120

    lite = tmp_path / "copy.sqlite"
    create_catalog(parse_catalog(str(lite), must_exist=False), data_path=str(spot.data_path))
    copy_mysql_catalog_to_sqlite(spot.catalog, lite)
    con.execute(attach_clause("sqlite", lite, spot.data_path, alias="lake"))
    assert_same_rows(con, "SELECT * FROM lake.main.prims", f"SELECT * FROM read_parquet('{inputs['prims']}')")
    assert_same_rows(con, "SELECT * FROM lake.s2.nested", f"SELECT * FROM read_parquet('{inputs['nested']}')")
    assert_same_rows(con, "SELECT * FROM lake.main.ev",
                     f"SELECT * FROM read_parquet(['{inputs['events']}', '{inputs['few']}'])")
    assert len(con.execute("SELECT * FROM lake.snapshots()").fetchall()) == 6
    assert con.execute("SELECT count(*) FROM lake.main.prims AT (VERSION => 4)").fetchone() == (300,)
    con.close()
