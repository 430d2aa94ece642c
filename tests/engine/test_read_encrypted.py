"""Encrypted lakes (`ATTACH … (ENCRYPTED)`, issue 11 item 7): reading their Parquet files is refused in one line
(exit 1, no traceback) that names no key; tables whose rows are all inlined in the catalog still read like DuckDB.

DuckDB's encrypted files carry no key metadata (the per-file keys live only in the catalog), so neither Spark's nor
pyarrow's Parquet decryption can open them as they stand."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import ducklake_cli
from ducklake_cli.errors import StorageError
from tests.support.cli import run_cli
from tests.support.diff import assert_same_table, duckdb_table_rows, oracle_lake, spark_table_rows
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BACKENDS = ["sqlite", "duckdb", pytest.param("postgres", marks=pytest.mark.postgres)]


def _build_encrypted(spot: Spot) -> list[str]:
    """An encrypted lake: table `t` in Parquet files with a delete file, table `small` inlined. Its keys."""
    con = oracle_connect()
    try:
        con.execute(spot.attach("lake", "ENCRYPTED"))
        for sql in ["CREATE TABLE lake.t (id INTEGER, secret VARCHAR)",
                    "INSERT INTO lake.t SELECT i, 'v' || i FROM range(100) r(i)",
                    "DELETE FROM lake.t WHERE id < 20",
                    "CREATE TABLE lake.small (id INTEGER, s VARCHAR)",
                    "INSERT INTO lake.small VALUES (1, 'a'), (2, NULL)"]:
            con.execute(sql)
        meta = "__ducklake_metadata_lake"
        keys = [str(k) for (k,) in con.execute(
            f"SELECT encryption_key FROM {meta}.ducklake_data_file UNION ALL "
            f"SELECT encryption_key FROM {meta}.ducklake_delete_file").fetchall()]
        con.execute("DETACH lake")
    finally:
        con.close()
    assert len(keys) == 2 and all(keys)
    return keys


@pytest.mark.parametrize("spot", BACKENDS, indirect=True)
def test_encrypted_files_are_refused_in_one_line_without_keys(spot: Spot) -> None:
    keys = _build_encrypted(spot)
    for sql in ["SELECT sum(id) FROM t WHERE secret <> 'x'"]:
        out = run_cli("query", spot.catalog, sql, "--format", "json")
        assert out.returncode == 1, (out.stdout, out.stderr)
        assert out.stdout == ""
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "encrypted" in lines[0] and "Traceback" not in out.stderr, out.stderr
        for key in keys:
            assert key not in out.stderr and key not in out.stdout
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake, pytest.raises(StorageError) as info:
        lake.table("t")
    assert all(key not in str(info.value) for key in keys)


@pytest.mark.spark
@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_encrypted_lake_inlined_table_matches_duckdb(spot: Spot, spark: SparkSession) -> None:
    _build_encrypted(spot)
    with oracle_lake(spot) as con:
        want = duckdb_table_rows(con, "oracle_lake.main.small")
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake:
        assert_same_table(want, spark_table_rows(lake.table("small", spark=spark)), "encrypted lake, inlined table")
