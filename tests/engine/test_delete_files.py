"""DuckDB's per-file delete outcomes, computed on executors (pure pyarrow; no Spark)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from ducklake_cli.engine.delete_files import DeleteJob, TargetFile, outcomes, write_parquet_delete


def _job(tmp_path: Path, files: dict[int, TargetFile], limit: int = 10) -> DeleteJob:
    return DeleteJob(str(tmp_path) + "/", files, limit, 7)


def test_at_most_the_limit_per_statement_is_inlined(tmp_path: Path) -> None:
    f = TargetFile(1, "/d/f.parquet", 100)
    got = outcomes(f, {0: list(range(10)), 1: list(range(20, 26))}, _job(tmp_path, {1: f}))
    assert [(o.kind, o.deleted) for o in got] == [("inline", 10), ("inline", 6)]


def test_first_delete_file_has_two_columns(tmp_path: Path) -> None:
    f = TargetFile(1, "/d/f.parquet", 100)
    (o,) = outcomes(f, {0: list(range(30))}, _job(tmp_path, {1: f}))
    assert (o.kind, o.count, o.begin_snapshot, o.partial_max) == ("file", 30, 7, None)
    table = pq.read_table(tmp_path / o.path)
    assert table.column_names == ["file_path", "pos"] and table.column("pos").to_pylist() == list(range(30))


def test_second_delete_file_keeps_old_positions_with_their_snapshot(tmp_path: Path) -> None:
    rel, _, _, _ = write_parquet_delete(str(tmp_path) + "/", "/d/f.parquet", list(range(20)), None, {})
    f = TargetFile(1, "/d/f.parquet", 100, str(tmp_path / rel), "parquet", 4)
    (o,) = outcomes(f, {0: list(range(30, 45))}, _job(tmp_path, {1: f}))
    assert (o.kind, o.deleted, o.count, o.begin_snapshot, o.partial_max) == ("file", 15, 35, 4, 7)
    table = pq.read_table(tmp_path / o.path)
    pairs = list(zip(table.column("pos").to_pylist(), table.column(2).to_pylist(), strict=True))
    assert pairs == [(p, 4) for p in range(20)] + [(p, 7) for p in range(30, 45)]


def test_file_with_every_row_deleted_is_ended(tmp_path: Path) -> None:
    rel, _, _, _ = write_parquet_delete(str(tmp_path) + "/", "/d/f.parquet", list(range(40)), None, {})
    f = TargetFile(1, "/d/f.parquet", 100, str(tmp_path / rel), "parquet", 4)
    (o,) = outcomes(f, {0: list(range(40, 100))}, _job(tmp_path, {1: f}))
    assert o.kind == "end"


def test_rows_deleted_inline_before_do_not_count_towards_an_empty_file(tmp_path: Path) -> None:
    # DuckDB: a file with 3 inlined deletions that loses its other 97 rows gets a delete file, not an end.
    g = TargetFile(2, "/d/g.parquet", 100)
    (o,) = outcomes(g, {0: list(range(3, 100))}, _job(tmp_path, {2: g}))
    assert (o.kind, o.count) == ("file", 97)
