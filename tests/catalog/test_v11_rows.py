"""DuckLake 1.1's per-file and inlined rows without Spark (spec versions §3.1, §3.3, §3.5): the companions'
`_ducklake_` system columns read, counted, restored, verified and copied; the exactness flags as written and merged;
`row_group_count` and flags of registered files; and 1.0 catalogs left without any of it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.models import LeafStats
from ducklake_cli.catalog.stats import (
    ColumnStats,
    bound_is_exact,
    duckdb_string_exact,
    exact_flag,
    joined_file_stats,
)
from ducklake_cli.catalog.versions import system_columns
from ducklake_cli.catalog.writes import blocks_inlining
from ducklake_cli.lake import Lake
from tests.support.cli import run_main
from tests.support.oracle import attach_clause, oracle_connect
from tests.support.v11 import migrate_v11, v10_shape_problems

# ----- the rules, alone -----------------------------------------------------------------------------------------


def test_exact_flag_is_null_without_a_bound_true_for_values_and_the_writers_for_strings() -> None:
    assert exact_flag(None, True, "int32") is None and exact_flag(None, False, "varchar") is None
    assert exact_flag("1", False, "int64") is True  # compared by value: always exact (DuckDB forces it)
    assert exact_flag("2024-01-01", False, "date") is True and exact_flag("1", False, "boolean") is True
    assert exact_flag("abc", True, "varchar") is True and exact_flag("abc", False, "varchar") is False
    assert exact_flag("00FF", False, "blob") is False


def test_a_string_bound_answers_min_max_only_when_flagged_exact() -> None:
    assert bound_is_exact(None, "int32") and bound_is_exact(False, "decimal(9,2)")  # numbers count regardless
    assert not bound_is_exact(None, "varchar") and not bound_is_exact(False, "varchar")
    assert bound_is_exact(True, "varchar") and bound_is_exact(1, "blob") and bound_is_exact("true", "json")


def test_duckdb_cuts_string_bounds_at_256_bytes() -> None:
    assert duckdb_string_exact("x" * 255, "varchar") and not duckdb_string_exact("x" * 256, "varchar")
    assert duckdb_string_exact("é" * 127, "varchar") and not duckdb_string_exact("é" * 128, "varchar")
    assert duckdb_string_exact("AA" * 255, "blob") and not duckdb_string_exact("AA" * 256, "blob")
    assert duckdb_string_exact("9" * 400, "int64")  # not a string: never cut


def test_merged_table_bounds_carry_the_exactness_of_the_side_that_won() -> None:
    exact = ColumnStats.of_file(LeafStats(1, 2, 0, "b", "m", None), "varchar")
    cut = ColumnStats.of_file(LeafStats(1, 2, 0, "a", "k", None, None, False, False), "varchar")
    merged = exact.merge(cut)
    assert (merged.min, merged.min_exact, merged.max, merged.max_exact) == ("a", False, "m", True)
    assert merged.row(v11=True) | {} == {"contains_null": False, "contains_nan": None, "min_value": "a",
                                          "max_value": "m", "min_is_exact": False, "max_is_exact": True}
    assert "min_is_exact" not in merged.row()  # 1.0: never named
    same = cut.merge(ColumnStats.of_file(LeafStats(1, 1, 0, "a", "a", None), "varchar"))
    assert same.min_exact  # an equal bound from an exact file: the value exists
    stored = ColumnStats.of_row("varchar", False, None, "a", "z", min_exact=None, max_exact=True)
    assert not stored.min_exact and stored.max_exact  # NULL flag on a string: not exact
    assert ColumnStats.of_row("int32", False, None, "1", "2").row(v11=True)["min_is_exact"] is True


def test_joined_files_keep_the_exactness_of_the_part_with_the_widest_bound() -> None:
    parts = [LeafStats(1, 1, 0, "b", "y", None, 10, True, False), LeafStats(1, 1, 0, "a", "x", None, 10, False, True)]
    joined = joined_file_stats(parts, "varchar")
    assert (joined.min_value, joined.min_exact, joined.max_value, joined.max_exact) == ("a", False, "y", False)


def test_plain_row_id_columns_inline_on_1_1_only() -> None:
    for name in ("row_id", "begin_snapshot", "END_SNAPSHOT", "_ducklake_internal_row_id"):
        assert blocks_inlining(name, v11=False)
    assert not any(blocks_inlining(n, v11=True) for n in ("row_id", "begin_snapshot", "end_snapshot"))
    assert blocks_inlining("_DuckLake_row_id", v11=True)


# ----- catalogs -------------------------------------------------------------------------------------------------

_STATEMENTS = [
    "CREATE TABLE lake.t (id INTEGER, s VARCHAR)",
    "INSERT INTO lake.t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
    "UPDATE lake.t SET s = 'z' WHERE id = 2",
    "DELETE FROM lake.t WHERE id = 3",
    "INSERT INTO lake.t VALUES (4, 'd')",
]


def _duckdb_lake(tmp: Path) -> tuple[str, Path]:
    """A 1.0 SQLite lake written by DuckDB 1.5.5 whose rows are all inlined (with updates and deletes)."""
    catalog, data = tmp / "lake.sqlite", tmp / "data"
    data.mkdir()
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data, extra_options="DATA_INLINING_ROW_LIMIT 10"))
        for sql in _STATEMENTS:
            con.execute(sql)
        con.execute("DETACH lake")
    finally:
        con.close()
    return str(catalog), data


def _companion(catalog: str) -> str:
    with sqlite3.connect(catalog) as db:
        return str(db.execute("SELECT table_name FROM ducklake_inlined_data_tables").fetchone()[0])


def _columns(catalog: str, table: str) -> list[str]:
    with sqlite3.connect(catalog) as db:
        return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]


def _live_inlined(catalog: str) -> list[tuple[int, ...]]:
    lake = Lake.open(catalog)
    try:
        with lake.reader() as r:
            sid = r.latest_snapshot().snapshot_id
            t = next(t for t in r.tables(sid) if t.name == "t")
            return sorted(tuple(row) for it in t.inlined_tables for row in r.inlined_rows(sid, it, t.columns))
    finally:
        lake.close()


def test_migrated_companions_are_read_counted_and_restored_by_their_1_1_names(tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]
                                                                              ) -> None:
    catalog, _ = _duckdb_lake(tmp_path)
    before = _live_inlined(catalog)
    migrate_v11(catalog)
    name = _companion(catalog)
    assert _columns(catalog, name)[:3] == list(s.INLINED_SYSTEM_V11)
    assert _live_inlined(catalog) == before  # the same rows, by the renamed columns
    code, out, err = run_main(capsys, "inspect", catalog, "t", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["live_rows"] == 3
    code, _, err = run_main(capsys, "verify", catalog)
    assert code == 0, err
    # Restore to before the update and delete: rows ended and inserted again through the prefixed columns.
    code, _, err = run_main(capsys, "restore", catalog, "t", "--to-snapshot", "2", "--yes")
    assert code == 0, err
    assert sorted(tuple(map(str, r[1:])) for r in _live_inlined(catalog)) == [("1", "a"), ("2", "b"), ("3", "c")]


def test_system_columns_are_probed_on_a_1_1_dev1_catalog(tmp_path: Path) -> None:
    catalog, _ = _duckdb_lake(tmp_path)
    name = _companion(catalog)
    lake = Lake.open(catalog)
    try:
        with lake.connection() as conn:
            assert system_columns(conn, lake.backend, "1.1-dev1", name) == s.INLINED_SYSTEM_V10
            assert system_columns(conn, lake.backend, None, name) == s.INLINED_SYSTEM_V10
            assert system_columns(conn, lake.backend, "1.1", name) == s.INLINED_SYSTEM_V11  # trusted, not probed
    finally:
        lake.close()
    migrate_v11(catalog)
    lake = Lake.open(catalog)
    try:
        with lake.connection() as conn:
            assert system_columns(conn, lake.backend, "1.1-dev1", name) == s.INLINED_SYSTEM_V11
    finally:
        lake.close()


def test_verify_names_a_companion_without_the_versions_system_columns(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    catalog, _ = _duckdb_lake(tmp_path)
    migrate_v11(catalog)
    name = _companion(catalog)
    with sqlite3.connect(catalog) as db:  # undo the rename by hand: a 1.1 catalog with a 1.0-named companion
        for new, old in zip(s.INLINED_SYSTEM_V11, s.INLINED_SYSTEM_V10, strict=True):
            db.execute(f"ALTER TABLE {name} RENAME COLUMN {new} TO {old}")
    code, out, err = run_main(capsys, "verify", catalog, "--format", "json")
    assert code == 4 and "broken_inlined_table" in out and "_ducklake_row_id" in out


def test_copy_catalog_keeps_1_1_companions_and_their_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog, _ = _duckdb_lake(tmp_path)
    migrate_v11(catalog)
    before = _live_inlined(catalog)
    dest = str(tmp_path / "copy.duckdb")
    code, _, err = run_main(capsys, "copy-catalog", catalog, dest)
    assert code == 0, err
    lake = Lake.open(dest)
    try:
        with lake.connection() as conn:
            names = lake.backend.column_names(conn, _companion(catalog))
        assert tuple(str(n) for n in names[:3]) == s.INLINED_SYSTEM_V11
    finally:
        lake.close()
    assert [tuple(map(str, r)) for r in _live_inlined(dest)] == [tuple(map(str, r)) for r in before]


def _parquet(path: Path, rows: int, *, groups: int) -> None:
    table = pa.table({"id": pa.array(range(rows), pa.int32()),
                      "s": pa.array([("w" * 300) + str(i) for i in range(rows)], pa.string())})
    pq.write_table(table, path, row_group_size=max(1, rows // groups))


@pytest.mark.parametrize("v11", [True, False], ids=["1.1", "1.0"])
def test_registered_files_record_row_groups_and_inexact_footer_strings_on_1_1_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], v11: bool) -> None:
    catalog, data = str(tmp_path / "c.sqlite"), tmp_path / "data"
    args = ["create-catalog", catalog, "--data-path", str(data)] + (["--format-version", "1.1"] if v11 else [])
    code, _, err = run_main(capsys, *args)
    assert code == 0, err
    code, _, err = run_main(capsys, "query", catalog, "CREATE TABLE t (id INTEGER, s VARCHAR)")
    assert code == 0, err
    (tmp_path / "in").mkdir()
    files = [tmp_path / "in" / "a.parquet", tmp_path / "in" / "b.parquet"]
    _parquet(files[0], 30, groups=3)
    _parquet(files[1], 10, groups=1)
    code, _, err = run_main(capsys, "register", catalog, "t", str(tmp_path / "in" / "*.parquet"))
    assert code == 0, err
    with sqlite3.connect(catalog) as db:
        if not v11:
            assert v10_shape_problems(catalog, data) == []
            return
        got = dict(db.execute("SELECT path, row_group_count FROM ducklake_data_file").fetchall())
        assert got == {str(f): pq.read_metadata(f).num_row_groups for f in files} and set(got.values()) == {3, 1}
        flags = set(db.execute("SELECT c.column_name, f.min_is_exact, f.max_is_exact FROM ducklake_file_column_stats "
                               "f JOIN ducklake_column c USING (column_id)").fetchall())
        assert flags == {("id", 1, 1), ("s", 0, 0)}
        table = set(db.execute("SELECT c.column_name, t.min_is_exact, t.max_is_exact FROM "
                               "ducklake_table_column_stats t JOIN ducklake_column c USING (column_id)").fetchall())
        assert table == {("id", 1, 1), ("s", 0, 0)}
    # copy-catalog carries the 1.1 columns through.
    dest = str(tmp_path / "copy.sqlite")
    code, _, err = run_main(capsys, "copy-catalog", catalog, dest)
    assert code == 0, err
    with sqlite3.connect(catalog) as a, sqlite3.connect(dest) as b:
        for sql in ("SELECT path, row_group_count FROM ducklake_data_file ORDER BY 1",
                    "SELECT data_file_id, column_id, min_is_exact, max_is_exact FROM ducklake_file_column_stats "
                    "ORDER BY 1, 2", "SELECT column_id, min_is_exact, max_is_exact FROM ducklake_table_column_stats"):
            assert a.execute(sql).fetchall() == b.execute(sql).fetchall(), sql
