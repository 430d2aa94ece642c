"""The partition vocabulary (ducklake_cli/catalog/partitions.py) against DuckDB 1.5.5: murmur3, bucket(N), the
calendar parts, key texts and hive directories of lakes DuckDB partitions itself, and the writer's Arrow key
computation (engine/parquet_files.split_partitions). No Spark."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ducklake_cli.catalog.models import ColumnInfo
from ducklake_cli.catalog.partitions import (
    DAY_NS,
    EPOCH_ORDINAL,
    PartitionRequest,
    bucket_of,
    calendar_part,
    hive_dir,
    hive_key_aliases,
    hive_key_names,
    hive_value,
    key_text,
    murmur3_32,
    parse_partition_by,
    resolve_partition,
    transform_text,
)
from ducklake_cli.engine.parquet_files import split_partitions
from ducklake_cli.engine.writer import partition_keys
from ducklake_cli.errors import UsageError
from tests.support.oracle import attach_clause, oracle_connect


@pytest.fixture(scope="module")
def duck() -> Iterator[duckdb.DuckDBPyConnection]:
    con = oracle_connect()
    yield con
    con.close()


def _column(cid: int, name: str, typ: str) -> ColumnInfo:
    return ColumnInfo(cid, name, typ, True, None, None, None, None, cid, 1)


def _lake_files(tmp: Path, table: str) -> tuple[list[ColumnInfo], list[tuple[int, str]], list[tuple[str, list[Any]]]]:
    """(columns, partition fields, [(file path relative to the table dir, stored key texts)]) of a DuckDB lake."""
    con = sqlite3.connect(tmp / "cat.sqlite")
    try:
        (tid,) = con.execute("SELECT table_id FROM ducklake_table WHERE table_name = ?", (table,)).fetchone()
        cols = [_column(*r) for r in con.execute(
            "SELECT column_id, column_name, column_type FROM ducklake_column WHERE table_id = ? AND end_snapshot IS "
            "NULL AND parent_column IS NULL ORDER BY column_order", (tid,))]
        fields = [(int(c), str(t)) for c, t in con.execute(
            "SELECT column_id, transform FROM ducklake_partition_column WHERE table_id = ? "
            "ORDER BY partition_key_index", (tid,))]
        files = []
        for fid, path in con.execute("SELECT data_file_id, path FROM ducklake_data_file WHERE table_id = ? "
                                     "ORDER BY data_file_id", (tid,)).fetchall():
            values = dict(con.execute("SELECT partition_key_index, partition_value FROM ducklake_file_partition_value "
                                      "WHERE data_file_id = ?", (fid,)).fetchall())
            files.append((str(path), [values[i] for i in range(len(fields))]))
        return cols, fields, files
    finally:
        con.close()


def _make_lake(duck: duckdb.DuckDBPyConnection, tmp: Path, ddl: str, partition: str, insert: str) -> None:
    duck.execute(attach_clause("sqlite", tmp / "cat.sqlite", tmp / "data", alias="pl",
                               extra_options="DATA_INLINING_ROW_LIMIT 0"))
    try:
        duck.execute(f"CREATE TABLE pl.t ({ddl})")
        duck.execute(f"ALTER TABLE pl.t SET PARTITIONED BY ({partition})")
        duck.execute(f"INSERT INTO pl.t {insert}")
    finally:
        duck.execute("DETACH pl")


def _rows(duck: duckdb.DuckDBPyConnection, tmp: Path, path: str) -> Any:
    return duck.execute("SELECT * FROM read_parquet(?, hive_partitioning = false)",
                        [str(tmp / "data" / "main" / "t" / path)]).to_arrow_table()


# ----- murmur3 and bucket(N) -------------------------------------------------------------------------------------

def test_murmur3_matches_duckdb(duck: duckdb.DuckDBPyConnection) -> None:
    rng = random.Random(12)
    for n in [*range(17), 63, 64, 65, 1000]:
        data = bytes(rng.randrange(256) for _ in range(n))
        hexed = "".join(f"\\x{b:02X}" for b in data)
        assert murmur3_32(data) == duck.execute(f"SELECT murmur3_32('{hexed}'::BLOB)").fetchone()[0]  # type: ignore[index]


BUCKETED = {
    "TINYINT": "i - 20", "SMALLINT": "i * 999 - 20000", "INTEGER": "i * 100003 - 2000000",
    "BIGINT": "i * 10000000019 - 200000000000", "UTINYINT": "i * 5", "USMALLINT": "i * 1601",
    "UINTEGER": "i * 100000007", "UBIGINT": "i::UBIGINT * 450000000000000017", "BOOLEAN": "i % 2 = 0",
    "VARCHAR": "'s' || i || ' é🦆/x'", "DATE": "DATE '1969-12-01' + (i * 37)::INTEGER",
    "TIMESTAMP": "TIMESTAMP '1969-12-31 23:00:00' + INTERVAL (i * 3601001) MILLISECOND",
    "TIMESTAMPTZ": "TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i * 3601) SECOND",
    "DECIMAL(4,1)": "i * 2.5 - 20", "DECIMAL(18,3)": "i * 1234.567 - 9999", "DECIMAL(30,3)": "i * 1.125 - 10",
    "FLOAT": "CASE WHEN i = 3 THEN '-0.0'::DOUBLE ELSE i / 4 - 2 END", "DOUBLE": "i / 3 - 2",
}


@pytest.mark.parametrize("typ", list(BUCKETED))
def test_bucket_of_matches_duckdb_keys(typ: str, tmp_path: Path, duck: duckdb.DuckDBPyConnection) -> None:
    _make_lake(duck, tmp_path, f"v {typ}", "bucket(5, v)",
               f"SELECT CASE WHEN i = 30 THEN NULL ELSE ({BUCKETED[typ]})::{typ} END FROM range(31) r(i)")
    cols, fields, files = _lake_files(tmp_path, "t")
    assert fields == [(1, "bucket(5)")]
    assert len(files) >= (2 if typ == "BOOLEAN" else 5)  # true and false share bucket 1 of 5
    keys = partition_keys(cols, fields)
    for path, (stored,) in files:
        rows = _rows(duck, tmp_path, path)
        assert {key_text(bucket_of(v, cols[0].type, 5), "bucket", cols[0].type) for v in rows.column(0).to_pylist()} \
            == {stored}, (typ, path)
        # the writer's Arrow path groups the rows under the same key (DuckDB's file holds one bucket)
        assert [k for k, _ in split_partitions(rows.to_batches()[0], keys)] == [(stored,)]
        assert path.startswith(hive_dir(hive_key_names({1: "v"}, fields), [stored]))


# ----- calendar parts, identity keys and hive directories --------------------------------------------------------

def _ns(v: dt.date) -> int:
    if isinstance(v, dt.datetime):
        whole = (v.toordinal() - EPOCH_ORDINAL) * 86_400 + v.hour * 3_600 + v.minute * 60 + v.second
        return whole * 1_000_000_000 + v.microsecond * 1000
    return (v.toordinal() - EPOCH_ORDINAL) * DAY_NS


_CALENDAR_ROWS = ("SELECT CASE WHEN i = 0 THEN NULL ELSE TIMESTAMP '1968-02-27 21:30:00' + INTERVAL (i * 1000003) "
                  "SECOND END, CASE WHEN i = 1 THEN NULL ELSE DATE '1969-11-30' + (i * 11)::INTEGER END "
                  "FROM range(120) r(i)")


@pytest.mark.parametrize("spec", ["year(ts), month(ts), day(ts), hour(ts)", "year(d), month(d), day(d)"])
def test_calendar_parts_match_duckdb(spec: str, tmp_path: Path, duck: duckdb.DuckDBPyConnection) -> None:
    _make_lake(duck, tmp_path, "ts TIMESTAMP, d DATE", spec, _CALENDAR_ROWS)
    cols, fields, files = _lake_files(tmp_path, "t")
    names = hive_key_names({1: "ts", 2: "d"}, fields)
    assert names == ["year", "month", "day", "hour"][:len(fields)]
    keys = partition_keys(cols, fields)
    assert len(files) > 30
    for path, stored in files:
        rows = _rows(duck, tmp_path, path)
        ts, d = rows.column(0).to_pylist(), rows.column(1).to_pylist()
        for (cid, transform), text in zip(fields, stored, strict=True):
            values = ts if cid == 1 else d
            assert {None if v is None else str(calendar_part(_ns(v), transform)) for v in values} == {text}
        assert [k for k, _ in split_partitions(rows.to_batches()[0], keys)] == [tuple(stored)]
        assert path.startswith(hive_dir(names, stored)), (path, stored)


@pytest.mark.parametrize(("spec", "want"), [
    ("year(ts), year(d)", ["year", "year_d"]),
    ("year(ts), year", ["year", "year_year"]),  # a column named like a transform, after it
    ("year, year(ts)", ["year", "year_ts"]),  # and before it
    ("bucket(2, year), bucket(3, year), month(d)", ["bucket", "bucket_year", "month"]),
    ("YEAR, d", ["year", "d"]),  # identity keys only: the columns
])
def test_hive_names_of_a_repeated_name_match_duckdb(spec: str, want: list[str], tmp_path: Path,
                                                      duck: duckdb.DuckDBPyConnection) -> None:
    """DuckDB names keys in order, each by its transform (its column for identity) unless an earlier key took that
    name, then `<transform>_<column>`."""
    _make_lake(duck, tmp_path, "ts TIMESTAMP, d DATE, year INTEGER", spec,
               _CALENDAR_ROWS.replace(" FROM range", ", (i % 3)::INTEGER FROM range"))
    _, fields, files = _lake_files(tmp_path, "t")
    names = hive_key_names({1: "ts", 2: "d", 3: "year"}, fields)
    assert names == want
    assert all(path.startswith(hive_dir(names, stored)) for path, stored in files), files[:3]


IDENTITY = {
    "VARCHAR": "CASE WHEN i = 1 THEN 'a/b c=d%' WHEN i = 2 THEN '' ELSE 'é🦆' || i END",
    "DATE": "DATE '0099-01-01' + (i * 400)::INTEGER", "BOOLEAN": "i % 2 = 0",
    "DECIMAL(9,3)": "i * 1.5 - 2", "TIMESTAMP": "TIMESTAMP '2024-02-29 12:34:56.789' + INTERVAL (i) HOUR",
    "TIMESTAMPTZ": "TIMESTAMPTZ '2024-02-29 12:34:56.5+00' + INTERVAL (i) HOUR", "DOUBLE": "i / 8 - 0.25",
    "BIGINT": "i * -12345678901",
}


@pytest.mark.parametrize("typ", list(IDENTITY))
def test_identity_key_text_and_hive_dir_match_duckdb(typ: str, tmp_path: Path,
                                                     duck: duckdb.DuckDBPyConnection) -> None:
    _make_lake(duck, tmp_path, f"v {typ}, n INTEGER", "v",
               f"SELECT CASE WHEN i = 0 THEN NULL ELSE ({IDENTITY[typ]})::{typ} END, i FROM range(6) r(i)")
    cols, fields, files = _lake_files(tmp_path, "t")
    keys = partition_keys(cols, fields)
    assert len(files) == (3 if typ == "BOOLEAN" else 6)
    for path, (stored,) in files:
        rows = _rows(duck, tmp_path, path)
        assert {key_text(v, "identity", cols[0].type) for v in rows.column(0).to_pylist()} == {stored}, typ
        assert [k for k, _ in split_partitions(rows.to_batches()[0], keys)] == [(stored,)]
        assert path.startswith(hive_dir(["v"], [stored])), (path, stored)


# ----- names and `--partition-by` --------------------------------------------------------------------------------

def test_partition_by_items_and_names() -> None:
    reqs = parse_partition_by(["region, day(ts)", "bucket(8, `id`)", 'YEAR("ts")'])
    assert reqs == [PartitionRequest("region", "identity"), PartitionRequest("ts", "day"),
                    PartitionRequest("id", "bucket(8)", 8), PartitionRequest("ts", "year")]
    cols = [_column(1, "region", "varchar"), _column(2, "ts", "timestamp"), _column(3, "id", "int64")]
    fields = resolve_partition(cols, reqs)
    assert fields == [(1, "identity"), (2, "day"), (3, "bucket(8)"), (2, "year")]
    assert [transform_text(t, {1: "region", 2: "ts", 3: "id"}[c]) for c, t in fields] == [
        "region", "day(ts)", "bucket(8, id)", "year(ts)"]
    assert hive_key_aliases({1: "region", 2: "ts", 3: "id"}, fields) == {
        "region": 0, "identity_region": 0, "day": 1, "day_ts": 1, "bucket": 2, "bucket_id": 2, "year": 3,
        "year_ts": 3}
    assert hive_value("__HIVE_DEFAULT_PARTITION__") is None and hive_value("eu") == "eu"
    # ducklake_add_data_files reads a path's transformed keys without the identity keys taking names
    assert hive_key_names({1: "year", 2: "ts"}, [(1, "identity"), (2, "year")]) == ["year", "year_ts"]
    assert hive_key_names({1: "year", 2: "ts"}, [(1, "identity"), (2, "year")], identity_claims=False) == [
        "year", "year"]
    for bad, message in ((["bucket(0, id)"], "positive"), (["f(x, y)"], "is not a column")):
        with pytest.raises(UsageError, match=message):
            parse_partition_by(bad)
    for req, message in ((PartitionRequest("region", "year"), "needs a date"),
                         (PartitionRequest("nope", "identity"), "no column")):
        with pytest.raises(UsageError, match=message):
            resolve_partition(cols, [req])
    with pytest.raises(UsageError, match="needs a date"):
        resolve_partition([_column(1, "d", "date")], [PartitionRequest("d", "hour")])
