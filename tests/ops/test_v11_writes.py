"""DuckLake 1.1's per-file and inlined rows as our Spark writes make them (spec versions §3.1, §3.3, §3.5): inserts,
updates and deletes of inlined rows in `_ducklake_`-named companions (a user column named `row_id` inlines), their
flush, Parquet writes and compaction with `row_group_count` equal to each file's footer, exactness flags on file and
table stats, and inexact string bounds that still prune but never answer MIN/MAX. The same commands on a 1.0 catalog
name none of it, and DuckDB 1.5.5 reads what they wrote."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ducklake_cli.catalog import schema as s
from tests.support.cli import run_main
from tests.support.oracle import attach_clause, oracle_connect
from tests.support.v11 import v10_shape_problems

pytestmark = pytest.mark.spark

LONG = "w" * 300  # a string DuckDB's Parquet writer would cut in its stats


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run_main(capsys, *args)
    assert code == 0, (args, err)
    return out


def _rows(catalog: str, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(catalog) as db:
        return [tuple(r) for r in db.execute(sql).fetchall()]


def _query(capsys: pytest.CaptureFixture[str], catalog: str, sql: str) -> list[list[Any]]:
    import json

    return [list(r.values()) for r in json.loads(_cli(capsys, "query", catalog, sql, "--format", "json"))]


def _lake(tmp: Path, capsys: pytest.CaptureFixture[str], version: str) -> tuple[str, Path]:
    catalog, data = str(tmp / "lake.sqlite"), tmp / "data"
    _cli(capsys, "create-catalog", catalog, "--data-path", str(data), "--format-version", version)
    _cli(capsys, "options", catalog, "--set", "data_inlining_row_limit=10")
    return catalog, data


def _file_row_groups(catalog: str, data: Path) -> dict[str, tuple[Any, int]]:
    """Per live data file: the catalog's row_group_count and the footer's num_row_groups."""
    out = {}
    live = "SELECT path, row_group_count FROM ducklake_data_file WHERE end_snapshot IS NULL"
    for path, count in _rows(catalog, live):
        found = list(data.rglob(Path(path).name))
        assert len(found) == 1, path
        out[path] = (count, pq.read_metadata(found[0]).num_row_groups)
    return out


def _sequence(capsys: pytest.CaptureFixture[str], catalog: str) -> None:
    """Inlined inserts, an update and a delete of them, a flush, Parquet inserts (long strings), a compaction."""
    _cli(capsys, "query", catalog, "CREATE TABLE t (id INTEGER, row_id INTEGER, s VARCHAR)")
    _cli(capsys, "query", catalog, "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, NULL)")
    _cli(capsys, "query", catalog, "UPDATE t SET s = 'z' WHERE id = 2")
    _cli(capsys, "query", catalog, "DELETE FROM t WHERE id = 3")


def _more(capsys: pytest.CaptureFixture[str], catalog: str) -> None:
    _cli(capsys, "maintain", "flush", catalog, "--yes")
    for lo in (100, 200):
        _cli(capsys, "query", catalog, f"INSERT INTO t SELECT id, id, '{LONG}' || id FROM range({lo}, {lo + 50}) "
                                       "AS r(id)")
    _cli(capsys, "maintain", "compact", catalog, "--yes")


def test_1_1_rows_inlined_flushed_written_and_compacted(tmp_path: Path, spark: Any,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    catalog, data = _lake(tmp_path, capsys, "1.1")
    _sequence(capsys, catalog)
    # A user `row_id` no longer keeps rows out of the catalog; the companion leads with 1.1's names.
    (companion,) = _rows(catalog, "SELECT table_name FROM ducklake_inlined_data_tables")
    cols = [r[1] for r in _rows(catalog, f"PRAGMA table_info({companion[0]})")]
    assert cols == [*s.INLINED_SYSTEM_V11, "id", "row_id", "s"]
    assert _rows(catalog, "SELECT count(*) FROM ducklake_data_file") == [(0,)]
    stored = _rows(catalog, f"SELECT _ducklake_row_id, _ducklake_begin_snapshot, _ducklake_end_snapshot, id, row_id, s "
                            f"FROM {companion[0]} ORDER BY _ducklake_row_id, _ducklake_begin_snapshot")
    assert [(r[0], r[2] is None, r[3], r[5]) for r in stored] == [
        (0, True, 1, "a"), (1, False, 2, "b"), (1, True, 2, "z"), (2, False, 3, None)]
    assert sorted(_query(capsys, catalog, "SELECT id, row_id, s FROM t")) == [[1, 10, "a"], [2, 20, "z"]]
    # The inlined rows' table stats: values exact, the all-NULL bound NULL.
    table_flags = _rows(catalog, "SELECT c.column_name, t.min_value, t.min_is_exact, t.max_is_exact FROM "
                                 "ducklake_table_column_stats t JOIN ducklake_column c USING (column_id) ORDER BY 1")
    assert table_flags == [("id", "1", 1, 1), ("row_id", "10", 1, 1), ("s", "a", 1, 1)]
    # The change feed reads the inlined rows' snapshots from the prefixed columns (snapshot 3: the update).
    import json

    feed = json.loads(_cli(capsys, "changes", catalog, "t", "--from", "3", "--to", "4", "--format", "json"))
    assert sorted((r["snapshot_id"], r["change_type"], r["id"], r["s"]) for r in feed) == [
        (3, "update_postimage", 2, "z"), (3, "update_preimage", 2, "b"), (4, "delete", 3, None)]

    _more(capsys, catalog)
    assert sorted(_query(capsys, catalog, "SELECT id, s FROM t WHERE id < 100")) == [[1, "a"], [2, "z"]]
    assert _query(capsys, catalog, "SELECT count(*), max(s) FROM t WHERE id >= 100") == [[100, LONG + "249"]]
    groups = _file_row_groups(catalog, data)
    assert groups and all(got == want for got, want in groups.values()), groups
    # Our writer computes whole string bounds: exact; NULL without a bound.
    flags = _rows(catalog, "SELECT c.column_name, f.min_value IS NULL, f.min_is_exact, f.max_is_exact FROM "
                           "ducklake_file_column_stats f JOIN ducklake_column c USING (column_id) "
                           "JOIN ducklake_data_file d USING (data_file_id) WHERE d.end_snapshot IS NULL")
    assert {(n, exact) for n, null, exact, _ in flags if not null} == {("id", 1), ("row_id", 1), ("s", 1)}
    assert all(lo == hi for _, null, lo, hi in flags if not null)

    # Hand-made inexact string bounds (as a registered footer or DuckDB's 256-byte cut leaves them): a lower
    # bound below every value and an upper bound above. Pruning still keeps the right files, and MIN/MAX come
    # from the data.
    with sqlite3.connect(catalog) as db:
        db.execute("UPDATE ducklake_file_column_stats SET min_value = 'a', max_value = 'x', min_is_exact = 0, "
                   "max_is_exact = 0 WHERE column_id = (SELECT column_id FROM ducklake_column WHERE column_name = 's')"
                   " AND min_value LIKE 'w%'")
        db.execute("UPDATE ducklake_table_column_stats SET min_value = 'a', max_value = 'x', min_is_exact = 0, "
                   "max_is_exact = 0 WHERE column_id = (SELECT column_id FROM ducklake_column WHERE column_name = 's')")
    assert _query(capsys, catalog, "SELECT min(s), max(s) FROM t WHERE id >= 100") == [[LONG + "100", LONG + "249"]]
    assert _query(capsys, catalog, f"SELECT count(*) FROM t WHERE s = '{LONG}149'") == [[1]]
    assert _query(capsys, catalog, "SELECT count(*) FROM t WHERE s > 'zz'") == [[0]]
    # A rewrite recomputes the table's bounds from the live files with their flags ('a' and 'z' from the flushed file).
    _cli(capsys, "query", catalog, "DELETE FROM t WHERE id >= 200")
    _cli(capsys, "maintain", "rewrite", catalog, "--delete-threshold", "0.1", "--yes")
    assert _rows(catalog, "SELECT min_value, max_value, min_is_exact, max_is_exact FROM ducklake_table_column_stats "
                          "WHERE column_id = 3") == [("a", "z", 1, 1)]
    assert all(got == want for got, want in _file_row_groups(catalog, data).values())

    # Files DuckDB writes (a UUID column): its string bounds are cut at 256 bytes, so not exact; short ones are.
    _cli(capsys, "query", catalog, "CREATE TABLE u (id UUID, s VARCHAR, c VARCHAR)")
    _cli(capsys, "query", catalog,
         "INSERT INTO u SELECT uuid(), repeat('q', 300) || id, 'c' || id FROM range(20) r(id)")
    flags = _rows(catalog, "SELECT c.column_name, f.min_is_exact, f.max_is_exact FROM ducklake_file_column_stats f "
                           "JOIN ducklake_column c ON c.column_id = f.column_id AND c.table_id = f.table_id "
                           "WHERE c.column_name IN ('s', 'c') AND c.table_id = (SELECT table_id FROM ducklake_table "
                           "WHERE table_name = 'u') ORDER BY 1")
    assert flags == [("c", 1, 1), ("s", 0, 0)]
    groups = _file_row_groups(catalog, data)
    assert all(got == want for got, want in groups.values()), groups

    # A restore brings the deleted file back as a copy with the same row groups and flags.
    ((before,),) = _rows(catalog, "SELECT max(snapshot_id) FROM ducklake_snapshot")
    _cli(capsys, "query", catalog, "DELETE FROM u")
    _cli(capsys, "restore", catalog, "u", "--to-snapshot", str(before), "--yes")
    assert _query(capsys, catalog, "SELECT count(*) FROM u") == [[20]]
    copies = _rows(catalog, "SELECT d.row_group_count, f.min_is_exact, f.max_is_exact FROM ducklake_data_file d "
                            "JOIN ducklake_file_column_stats f USING (data_file_id) WHERE d.end_snapshot IS NULL AND "
                            "d.table_id = (SELECT table_id FROM ducklake_table WHERE table_name = 'u') ORDER BY 2, 3")
    assert len({r[0] for r in copies}) == 1 and copies[0][0] is not None  # checked against the footer below
    assert [r[1:] for r in copies] == [(0, 0), (1, 1), (1, 1)]
    groups = _file_row_groups(catalog, data)
    assert all(got == want for got, want in groups.values()), groups
    _cli(capsys, "verify", catalog, "--deep")


def test_1_0_rows_as_today_and_read_by_duckdb(tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    catalog, data = _lake(tmp_path, capsys, "1.0")
    _cli(capsys, "query", catalog, "CREATE TABLE t (id INTEGER, k INTEGER, s VARCHAR)")
    _cli(capsys, "query", catalog, "INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, NULL)")
    _cli(capsys, "query", catalog, "UPDATE t SET s = 'z' WHERE id = 2")
    _cli(capsys, "query", catalog, "DELETE FROM t WHERE id = 3")
    (companion,) = _rows(catalog, "SELECT table_name FROM ducklake_inlined_data_tables")
    cols = [r[1] for r in _rows(catalog, f"PRAGMA table_info({companion[0]})")]
    assert cols[:3] == list(s.INLINED_SYSTEM_V10)
    _more(capsys, catalog)
    assert v10_shape_problems(catalog, data) == []
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data))
        got = con.execute("SELECT id, s FROM lake.t ORDER BY id").fetchall()
    finally:
        con.close()
    assert got[:2] == [(1, "a"), (2, "z")] and len(got) == 102
