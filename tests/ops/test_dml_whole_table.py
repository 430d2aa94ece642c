"""CREATE TABLE … PARTITIONED BY … AS, INSERT OVERWRITE and INSERT … SELECT from an earlier snapshot, through
`query`: DuckDB 1.5.5 reads the rows, the partition spec and the time travel we wrote."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ducklake_cli.api import connect
from ducklake_cli.ops.dml import run_change
from tests.support.oracle import oracle_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _attach(con: Any, tmp_path: Path) -> None:
    con.execute(f"ATTACH 'ducklake:sqlite:{tmp_path}/c.sqlite' AS lk (DATA_PATH '{tmp_path}/data/')")


def test_ctas_overwrite_and_insert_from_an_earlier_snapshot(tmp_path: Path, spark: SparkSession) -> None:
    con = oracle_connect()
    _attach(con, tmp_path)
    con.execute("CREATE TABLE lk.t AS SELECT range::INT AS id, 'r' || (range % 3) AS region FROM range(60)")
    first = con.execute("SELECT max(snapshot_id) FROM lk.snapshots()").fetchall()[0][0]
    con.execute("DELETE FROM lk.t WHERE id < 30")
    con.execute("DETACH lk")
    lake = connect(f"{tmp_path}/c.sqlite")
    try:
        made = run_change(lake, ["CREATE TABLE s.parts PARTITIONED BY (region, bucket(2, id)) AS "
                                 "SELECT * FROM t WHERE id >= 40"])
        assert made.inserted == 20 and made.data_files >= 3
        again = run_change(lake, [f"INSERT INTO t SELECT * FROM t VERSION AS OF {first} WHERE id < 5"])
        assert again.inserted == 5
        over = run_change(lake, ["INSERT OVERWRITE s.parts SELECT id, region FROM t WHERE id < 3"])
        assert over.inserted == 3
    finally:
        lake.close()
    _attach(con, tmp_path)
    assert con.execute("SELECT id FROM lk.t WHERE id < 30 ORDER BY id").fetchall() == [(i,) for i in range(5)]
    assert con.execute("SELECT id, region FROM lk.s.parts ORDER BY id").fetchall() == [
        (0, "r0"), (1, "r1"), (2, "r2")]
    before = over.snapshot_id - 1  # type: ignore[operator]
    assert con.execute(f"SELECT count(*), min(id) FROM lk.s.parts AT (VERSION => {before})").fetchall() == [(20, 40)]
    spec = con.execute(
        "SELECT c.column_name, p.transform FROM __ducklake_metadata_lk.ducklake_partition_column p "
        "JOIN __ducklake_metadata_lk.ducklake_column c ON c.table_id = p.table_id AND c.column_id = p.column_id "
        "JOIN __ducklake_metadata_lk.ducklake_table t ON t.table_id = p.table_id WHERE t.table_name = 'parts' "
        "AND c.end_snapshot IS NULL ORDER BY p.partition_key_index").fetchall()
    assert spec == [("region", "identity"), ("id", "bucket(2)")]
    con.close()
