"""The Python API's row-level changes (`Lake.write/delete/update/merge`) on the caller's Spark session: results,
rows as DuckDB reads them, and bad input that leaves the catalog byte-identical."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ducklake_cli import api
from ducklake_cli.errors import InputError, NotFoundError, QueryError, UsageError
from tests.support.oracle import attach_clause, oracle_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture
def lake(tmp_path: Path, spark: SparkSession) -> Iterator[tuple[api.Lake, Path, Path]]:
    """t(id INT, v VARCHAR) with ids 0..99 in one file, written by DuckDB; opened through the API."""
    catalog, data = tmp_path / "cat.sqlite", tmp_path / "data"
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data))
        con.execute("CREATE TABLE lake.t (id INT, v VARCHAR)")
        con.execute("INSERT INTO lake.t SELECT i, 'v' || i FROM range(100) r(i)")
        con.execute("CREATE VIEW lake.vw AS SELECT * FROM lake.t")
        con.execute("DETACH lake")
    finally:
        con.close()
    with api.connect(str(catalog)) as opened:
        yield opened, catalog, data


def _rows(catalog: Path, data: Path, sql: str = "SELECT rowid, id, v FROM lake.t ORDER BY id") -> list[tuple[Any, ...]]:
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data))
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _hash(catalog: Path) -> str:
    return hashlib.sha256(catalog.read_bytes()).hexdigest()


def test_delete_update(lake: tuple[api.Lake, Path, Path]) -> None:
    """delete() and update() each commit one snapshot; updated rows keep their row ids."""
    lk, catalog, data = lake
    got = lk.delete("t", "id >= 90", message="retention")
    assert (got.snapshot_id, got.deleted, got.updated, got.inserted) == (4, 10, 0, 0)
    got = lk.update("main.t", {"v": "upper(v) || '!'"}, "id < 3", author="api")
    assert (got.snapshot_id, got.deleted, got.updated) == (5, 0, 3)
    rows = _rows(catalog, data)
    assert rows[:4] == [(0, 0, "V0!"), (1, 1, "V1!"), (2, 2, "V2!"), (3, 3, "v3")] and len(rows) == 90
    assert _rows(catalog, data, "SELECT commit_message, author FROM lake.snapshots() WHERE snapshot_id >= 4 "
                                "ORDER BY snapshot_id") == [("retention", None), (None, "api")]


def test_write_merge_and_merge(lake: tuple[api.Lake, Path, Path], spark: SparkSession) -> None:
    """write(mode="merge") upserts; merge() deletes matched rows and inserts the rest; write() appends."""
    lk, catalog, data = lake
    upd = spark.createDataFrame([(5, "five"), (100, "hundred")], "id INT, v STRING").coalesce(1)
    got = lk.write(upd, "t", mode="merge", on=["id"])
    assert (got.updated, got.inserted, got.deleted) == (1, 1, 0)
    gone = spark.createDataFrame([(6, "x"), (7, "y"), (200, "new")], "id INT, v STRING").coalesce(1)
    got = lk.merge(gone, "t", on=["id"], when_matched="delete", when_not_matched="insert")
    assert (got.deleted, got.updated, got.inserted) == (2, 0, 1)
    got = lk.merge(gone.where("id = 200"), "t", on=["id"], when_matched="update", when_not_matched=None)
    assert (got.updated, got.inserted) == (1, 0)
    appended = lk.write(spark.createDataFrame([(300, "a")], "id INT, v STRING"), "t")
    assert appended.rows == 1
    rows = {r[1]: r[2] for r in _rows(catalog, data)}
    assert rows[5] == "five" and rows[100] == "hundred" and rows[200] == "new" and rows[300] == "a"
    assert 6 not in rows and 7 not in rows and len(rows) == 101
    assert [r[0] for r in _rows(catalog, data) if r[1] == 5] == [5]  # the upserted row kept its row id


@pytest.mark.parametrize("call", ["unknown where", "unknown set", "type in set", "duplicate keys", "null key",
                                  "view", "where syntax", "missing table", "bad action"])
def test_bad_input(call: str, lake: tuple[api.Lake, Path, Path], spark: SparkSession) -> None:
    """Each raises our one-line error, and the catalog is byte-identical."""
    lk, catalog, _ = lake
    before = _hash(catalog)
    dup = spark.createDataFrame([(1, "a"), (1, "b")], "id INT, v STRING")
    null = spark.createDataFrame([(None, "a")], "id INT, v STRING")
    calls = {
        "unknown where": (QueryError, lambda: lk.delete("t", "nope = 1")),
        "unknown set": (QueryError, lambda: lk.update("t", {"nope": "1"})),
        "type in set": (QueryError, lambda: lk.update("t", {"id": "'abc'"}, "id = 1")),
        "duplicate keys": (InputError, lambda: lk.merge(dup, "t", on=["id"])),
        "null key": (InputError, lambda: lk.write(null, "t", mode="merge", on=["id"])),
        "view": (QueryError, lambda: lk.delete("vw", "id = 1")),
        "where syntax": (QueryError, lambda: lk.delete("t", "id = = 1")),
        "missing table": (NotFoundError, lambda: lk.merge(dup, "nope", on=["id"])),
        "bad action": (UsageError, lambda: lk.merge(dup, "t", on=["id"], when_matched="upsert")),
    }
    kind, run = calls[call]
    with pytest.raises(kind) as info:
        run()
    assert "\n" not in info.value.message
    if call == "duplicate keys":
        assert "id=1" in info.value.message
    assert _hash(catalog) == before
