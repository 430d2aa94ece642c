"""Flushing inlined file deletions on DuckLake 1.1 (spec versions §3.6, §3.1): with `write_deletion_vectors` the
deletions of two snapshots become one Puffin container (a cumulative blob per snapshot), read at every snapshot as
before the flush; without it a Parquet delete file whose `row_group_count` is its footer's. `restore` records the
row groups of the delete files it writes too."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.support.cli import run_main

pytestmark = pytest.mark.spark


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run_main(capsys, *args)
    assert code == 0, (args, err)
    return out


def _lake(capsys: pytest.CaptureFixture[str], tmp_path: Path, *, vectors: bool) -> str:
    catalog = str(tmp_path / "c.sqlite")
    steps = [("create-catalog", catalog, "--data-path", str(tmp_path / "data"), "--format-version", "1.1"),
             ("query", catalog, "CREATE TABLE t AS SELECT id AS i FROM range(100)")]
    if vectors:
        steps.append(("options", catalog, "--set", "write_deletion_vectors=true"))
    steps += [("query", catalog, "DELETE FROM t WHERE i < 3"),  # inlined file deletions, two snapshots
              ("query", catalog, "DELETE FROM t WHERE i BETWEEN 50 AND 51")]
    for args in steps:
        _cli(capsys, *args)
    return catalog


def _counts(capsys: pytest.CaptureFixture[str], catalog: str, snapshots: list[int]) -> str:
    return _cli(capsys, "query", catalog, " UNION ALL ".join(
        f"SELECT {sid} AS snap, count(*) AS n, sum(i) AS s FROM t VERSION AS OF {sid}" for sid in snapshots),
        "--format", "csv")


def _delete_rows(catalog: str) -> list[tuple[object, ...]]:
    con = sqlite3.connect(catalog)
    try:
        return con.execute("SELECT format, begin_snapshot, partial_max, delete_count, footer_size, row_group_count, "
                           "path FROM ducklake_delete_file WHERE end_snapshot IS NULL").fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("vectors", [True, False])
def test_flushed_deletions_on_1_1(tmp_path: Path, vectors: bool, spark: Any,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    catalog = _lake(capsys, tmp_path, vectors=vectors)
    con = sqlite3.connect(catalog)
    snapshots = [int(r[0]) for r in con.execute("SELECT snapshot_id FROM ducklake_snapshot WHERE snapshot_id > 0 "
                                                "ORDER BY snapshot_id")]
    con.close()
    before = _counts(capsys, catalog, snapshots)
    _cli(capsys, "maintain", "flush", catalog, "--yes")
    assert _counts(capsys, catalog, snapshots) == before
    (fmt, begin, partial_max, count, footer, groups, path), = _delete_rows(catalog)
    table_dir = tmp_path / "data" / "main" / "t"
    if vectors:
        assert (fmt, count, groups) == ("puffin", 5, None) and str(path).endswith(".puffin")
        assert (table_dir / str(path)).read_bytes()[:4] == b"PFA1" and footer and int(footer) > 16
        assert (begin, partial_max) == (snapshots[-2], snapshots[-1])
    else:
        assert fmt == "parquet" and count == 5
        assert groups == pq.ParquetFile(table_dir / str(path)).metadata.num_row_groups


def test_restore_records_the_row_groups_of_its_delete_files(tmp_path: Path, spark: Any,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    catalog = str(tmp_path / "c.sqlite")
    for args in (("create-catalog", catalog, "--data-path", str(tmp_path / "data"), "--format-version", "1.1"),
                 ("query", catalog, "CREATE TABLE t AS SELECT id AS i FROM range(100)"),
                 ("query", catalog, "DELETE FROM t WHERE i < 40"),
                 ("query", catalog, "DELETE FROM t WHERE i >= 80")):
        _cli(capsys, *args)
    _cli(capsys, "restore", catalog, "t", "--to-snapshot", "2", "--yes")
    rows = [r for r in _delete_rows(catalog) if r[0] == "parquet"]
    assert rows and all(r[5] == pq.ParquetFile(tmp_path / "data" / "main" / "t" / str(r[6])).metadata.num_row_groups
                        for r in rows)
