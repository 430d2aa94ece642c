"""Defaults and sort order on write (issue #14, item 5): an append lacking a column gets its DEFAULT as DuckDB's
INSERT gives it, and a table with sort keys (set by DuckDB) gets sorted output from `write`, `maintain flush`,
`maintain compact` and `maintain rewrite`, as DuckDB sorts: one order over all files of an insert (row ids follow
it), within each file when partitioned, expressions allowed, inserts unsorted under `sort_on_insert=false` (flush
and compaction still sort)."""

from __future__ import annotations

import datetime as dt
import glob
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ducklake_cli.api import Lake, connect
from ducklake_cli.errors import InputError
from ducklake_cli.ops.flush import plan_flush
from ducklake_cli.ops.rewrite import plan_compact, plan_rewrite
from ducklake_cli.ops.write import run_write
from tests.support.oracle import FreshAttach, oracle_connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark

CATALOG = "ducklake_metadata"


class Twin(FreshAttach):
    """A lake DuckDB made (its own catalog, so DuckDB sets defaults and sort keys), written to by us."""

    def __init__(self, tmp_path: Path, spark: SparkSession) -> None:
        self.catalog = str(tmp_path / "cat.sqlite")
        self.data = tmp_path / "data"
        self.spark = spark
        self.con = oracle_connect()
        self.attach()
        self.lake: Lake = connect(self.catalog)

    def attach_sql(self) -> str:
        """DuckDB's ATTACH of this lake, with its own metadata catalog name."""
        return (f"ATTACH 'ducklake:sqlite:{self.catalog}' AS lake (DATA_PATH '{self.data}/', "
                f"METADATA_CATALOG '{CATALOG}')")

    def write(self, table: str, df: DataFrame, **kwargs: Any) -> Any:
        """Our write of a frame."""
        self.con.execute("DETACH DATABASE IF EXISTS lake")
        try:
            return run_write(self.lake, table, frame=df, **kwargs)
        finally:
            self.lake.close()

    def file_rows(self, table: str) -> list[list[tuple[Any, ...]]]:
        """Each live data file's rows (user columns, file order), in row-id order of the files."""
        import pyarrow.parquet as pq

        files = self.sql(f"SELECT f.path, t.table_name FROM {CATALOG}.ducklake_data_file f JOIN "
                         f"{CATALOG}.ducklake_table t USING (table_id) WHERE t.table_name = '{table}' AND "
                         "f.end_snapshot IS NULL AND t.end_snapshot IS NULL "
                         "ORDER BY f.row_id_start NULLS LAST, f.data_file_id")
        out = []
        for path, _ in files:
            (found,) = glob.glob(f"{self.data}/**/{path}", recursive=True)
            t = pq.read_table(found)
            keep = [n for n in t.column_names if not n.startswith("_ducklake_internal")]
            out.append([tuple(r.values()) for r in t.select(keep).to_pylist()])
        return out


@pytest.fixture
def twin(tmp_path: Path, spark: SparkSession) -> Iterator[Twin]:
    """A fresh DuckDB-made lake per test (SQLite catalog)."""
    t = Twin(tmp_path, spark)
    try:
        yield t
    finally:
        t.con.close()
        t.lake.close()


def test_an_append_gives_missing_columns_their_default_as_duckdb_insert_does(twin: Twin) -> None:
    twin.sql("CREATE TABLE lake.t (a INT, b VARCHAR DEFAULT 'it''s', c TIMESTAMPTZ DEFAULT now(), "
             "d INT NOT NULL DEFAULT 7, e DECIMAL(10,2) DEFAULT 1.5, f BLOB DEFAULT '\\x01a', "
             "g DATE DEFAULT DATE '2020-01-02', h VARCHAR, i BOOLEAN DEFAULT true, "
             "j TIMESTAMP DEFAULT '2020-01-01 10:00:00', k VARCHAR DEFAULT 'NULL')",
             "ALTER TABLE lake.t ADD COLUMN l INT DEFAULT 5",
             "INSERT INTO lake.t (a) VALUES (1)")
    before = dt.datetime.now(dt.UTC)
    twin.write("t", twin.spark.createDataFrame([(2,)], "a int"))  # inlined
    twin.write("t", twin.spark.createDataFrame([(3,), (4,)], "a int"), inline=False)  # a Parquet file
    after = dt.datetime.now(dt.UTC)
    rows = twin.sql("SELECT * FROM lake.t ORDER BY a")
    assert [r[0] for r in rows] == [1, 2, 3, 4]
    theirs = rows[0][1:2] + rows[0][3:]
    assert theirs == ("it's", 7, Decimal("1.50"), b"\x01a", dt.date(2020, 1, 2), None, True,
                      dt.datetime(2020, 1, 1, 10), None, 5)
    for r in rows[1:]:
        assert r[1:2] + r[3:] == theirs
        assert before - dt.timedelta(seconds=1) <= r[2] <= after  # now(): the write's time, as DuckDB's INSERT
    assert rows[2][2] == rows[3][2]  # once per write


def test_missing_not_null_column_without_default_and_an_uncomputable_default_are_refused(twin: Twin) -> None:
    twin.sql("CREATE TABLE lake.u (a INT, g INT NOT NULL)",
             "CREATE TABLE lake.v (a INT, z VARCHAR DEFAULT current_setting('TimeZone'))")
    snapshots = twin.sql("SELECT max(snapshot_id) FROM lake.snapshots()")
    with pytest.raises(InputError, match="lacks column 'g', which is NOT NULL and has no DEFAULT"):
        twin.write("u", twin.spark.createDataFrame([(1,)], "a int"))
    with pytest.raises(InputError, match=r"lacks column 'z', whose DEFAULT current_setting\('TimeZone'\)"):
        twin.write("v", twin.spark.createDataFrame([(1,)], "a int"))
    assert twin.sql("SELECT max(snapshot_id) FROM lake.snapshots()") == snapshots


def _unsorted(n: int) -> list[tuple[int | None, str | None]]:
    return [(None if i % 7 == 0 else (i * 37) % 11, None if i % 5 == 0 else f"v{(i * 13) % 17}") for i in range(n)]


def test_write_sorts_by_the_sort_keys_over_all_files_and_within_partitions(twin: Twin) -> None:
    rows = _unsorted(60)
    twin.sql("CREATE TABLE lake.s (a INT, b VARCHAR)", "ALTER TABLE lake.s SET SORTED BY (a DESC NULLS FIRST, b)",
             "CREATE TABLE lake.e (a INT, b VARCHAR)", "ALTER TABLE lake.e SET SORTED BY ((a % 3), lower(b) DESC)",
             "CREATE TABLE lake.p (a INT, b VARCHAR, k INT)", "ALTER TABLE lake.p SET PARTITIONED BY (k)",
             "ALTER TABLE lake.p SET SORTED BY (b NULLS FIRST)",
             "CREATE TABLE lake.n (a INT, b VARCHAR)", "ALTER TABLE lake.n SET SORTED BY (a)",
             "CALL lake.set_option('sort_on_insert', 'false', table_name => 'n')",
             "CREATE TABLE lake.i (a INT, b VARCHAR)", "ALTER TABLE lake.i SET SORTED BY (a DESC)")
    frame = twin.spark.createDataFrame(rows, "a int, b string").repartition(3)
    twin.write("s", frame, inline=False)
    files = twin.file_rows("s")
    expect = twin.sql("SELECT a, b FROM lake.s ORDER BY a DESC NULLS FIRST, b")
    assert [r for f in files for r in f] == expect  # one order across the files, in row-id order
    assert twin.sql("SELECT a, b FROM lake.s ORDER BY rowid") == expect
    distinct = [(i, f"B{i:02}" if i % 2 else f"b{i:02}") for i in range(12)]  # no ties under the keys
    twin.write("e", twin.spark.createDataFrame(distinct, "a int, b string"), inline=False)
    assert twin.sql("SELECT a, b FROM lake.e ORDER BY rowid") == \
        twin.sql("SELECT a, b FROM lake.e ORDER BY (a % 3), lower(b) DESC, b")
    twin.write("p", twin.spark.createDataFrame([(a, b, i % 3) for i, (a, b) in enumerate(rows)],
                                               "a int, b string, k int").repartition(2), inline=False)
    for f in twin.file_rows("p"):
        assert [r[1] for r in f] == sorted((r[1] for r in f), key=lambda b: (b is not None, b or ""))
    twin.write("n", twin.spark.createDataFrame(rows, "a int, b string").coalesce(1), inline=False)
    assert [r for f in twin.file_rows("n") for r in f] == rows  # sort_on_insert=false: as given
    twin.write("i", twin.spark.createDataFrame([(2, "x"), (9, "y"), (5, "z")], "a int, b string"))  # inlined
    assert twin.sql("SELECT a FROM lake.i ORDER BY rowid") == [(9,), (5,), (2,)]


def test_flush_compact_and_rewrite_sort_by_the_current_sort_keys_and_keep_row_ids(twin: Twin) -> None:
    twin.sql("CREATE TABLE lake.f (a INT, b VARCHAR)", "CREATE TABLE lake.c (a INT, b VARCHAR)",
             "CREATE TABLE lake.r (a INT, b VARCHAR)", "CALL lake.set_option('data_inlining_row_limit', 0)",
             "INSERT INTO lake.r SELECT (i * 7) % 20, 'r' || i FROM range(20) t(i)",
             "DELETE FROM lake.r WHERE a < 5", "ALTER TABLE lake.r SET SORTED BY (a DESC)",
             "CALL lake.set_option('data_inlining_row_limit', 10)")
    for i in range(3):
        twin.sql(f"INSERT INTO lake.f VALUES ({i * 5 % 3}, 'f{i}'), ({i + 10}, NULL)",
                 "DELETE FROM lake.f WHERE a = 11",
                 "CALL lake.set_option('data_inlining_row_limit', 0)",
                 f"INSERT INTO lake.c VALUES ({i * 5 % 3}, 'c{i}'), ({i + 10}, NULL)",
                 "CALL lake.set_option('data_inlining_row_limit', 10)")
    twin.sql("ALTER TABLE lake.f SET SORTED BY (a DESC)", "ALTER TABLE lake.c SET SORTED BY (b NULLS FIRST, a)")
    by_rowid = {t: twin.sql(f"SELECT rowid, a, b FROM lake.{t} ORDER BY rowid") for t in ("f", "c", "r")}
    twin.con.execute("DETACH DATABASE IF EXISTS lake")
    plan_flush(twin.lake, table="f").apply(twin.lake)
    plan_compact(twin.lake, table="c").apply(twin.lake)
    plan_rewrite(twin.lake, table="r", threshold=0.1).apply(twin.lake)
    twin.lake.close()
    (flushed,) = twin.file_rows("f")  # deleted rows too (a partial delete file hides them), sorted
    assert [r[0] for r in flushed] == sorted((r[0] for r in flushed), reverse=True) and len(flushed) == 6
    (compacted,) = twin.file_rows("c")
    assert compacted == twin.sql("SELECT a, b FROM lake.c ORDER BY b NULLS FIRST, a")
    (rewritten,) = twin.file_rows("r")  # the deleted rows are gone, the rest sorted
    assert [r[0] for r in rewritten] == sorted((r[1] for r in by_rowid["r"]), reverse=True)
    for t, rows in by_rowid.items():  # unlike DuckDB's sorted compaction, row ids stay with their rows
        assert twin.sql(f"SELECT rowid, a, b FROM lake.{t} ORDER BY rowid") == rows
