"""Per-snapshot metrics (`inspect --snapshots`) checked against DuckDB on DuckDB-built lakes: per table, the rows
added less the rows deleted equal the change of DuckDB's count, and the files and bytes added less those removed
equal the change of what `ducklake_list_files` lists, at every snapshot (flushed and merged files included).
Each snapshot's rows against DuckDB's `table_changes`: test_history_changes.py."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from ducklake_cli.catalog.history import Metrics
from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.lake import Lake
from ducklake_cli.ops import inspect as inspect_ops
from tests.support.cli import run_main
from tests.support.copy_lakes import HISTORY, METRICS_HISTORY, attach_sql, build_lake, live_state

NAMES = {1: ("t",), 2: ("u", "w")}


@pytest.fixture(scope="module")
def lake_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """METRICS_HISTORY built by DuckDB (inlined rows and deletions, updates, a full-file delete, a rename, a drop)."""
    return build_lake(tmp_path_factory.mktemp("metrics"), METRICS_HISTORY)


def per_table(listing: inspect_ops.SnapshotList) -> dict[int, dict[int, Metrics]]:
    """Snapshot → table id → metrics, from the op's result."""
    return {s.snapshot_id: {m.table_id: m.metrics for m in s.tables} for s in listing.snapshots}


def check_against_duckdb(catalog: Path) -> None:
    """Running sums of our metrics equal DuckDB's live rows, files and bytes at every snapshot."""
    state = live_state(attach_sql("sqlite", catalog), NAMES)
    with Lake.open(parse_catalog(str(catalog)), read_only=True) as lake:
        metrics = per_table(inspect_ops.snapshots(lake))
    running: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    checked = 0
    for snap in sorted(metrics):
        for tid, m in metrics[snap].items():
            r = running[tid]
            r[0] += m.rows_added - m.rows_deleted
            r[1] += m.data_files_added - m.data_files_removed
            r[2] += m.delete_files_added - m.delete_files_removed
            r[3] += m.bytes_added - m.bytes_removed
            assert m.files_added == m.data_files_added + m.delete_files_added
            assert m.rows_added >= m.inlined_rows_added and m.rows_deleted >= m.inlined_rows_deleted
        if snap in state:
            for tid in NAMES:
                expected = state[snap].get(tid, (0, 0, 0, 0))
                assert tuple(running[tid]) == expected, f"snapshot {snap}, table {tid}"
                checked += 1
    assert checked >= 30


def test_metrics_follow_duckdb_at_every_snapshot(lake_path: Path) -> None:
    check_against_duckdb(lake_path)


def test_totals_hold_through_flush_and_compaction(tmp_path: Path) -> None:
    # Rows of flushed and merged files count at the snapshots they embed: exact at every snapshot.
    check_against_duckdb(build_lake(tmp_path / "lake", HISTORY))


def test_json_keeps_its_fields_and_adds_metrics(lake_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "inspect", str(lake_path), "--snapshots", "--format", "json")
    assert code == 0, err
    listed = json.loads(out)
    assert [s["snapshot_id"] for s in listed] == list(range(len(METRICS_HISTORY) + 1))
    first_insert = listed[2]
    assert set(first_insert) == {"snapshot_id", "snapshot_time", "schema_version", "changes", "author",
                                 "commit_message", "commit_extra_info", "metrics", "tables"}
    assert first_insert["metrics"]["rows_added"] == 10 and first_insert["metrics"]["files_added"] == 1
    assert first_insert["metrics"]["bytes_added"] > 0
    assert first_insert["tables"] == [{"table_id": 1, "schema": "main", "table": "t", **first_insert["metrics"]}]
    renamed = next(s for s in listed if "tables_dropped" in s["changes"])
    assert renamed["tables"][0]["table"] == "w" and renamed["metrics"]["files_removed"] >= 1


def test_table_snapshots_are_the_ones_that_changed_it(lake_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "inspect", str(lake_path), "t", "--snapshots", "--format", "json")
    assert code == 0, err
    ids = [s["snapshot_id"] for s in json.loads(out)]
    assert ids == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, len(METRICS_HISTORY)]
    # A dropped table is found by its last name; CSV has one number a column.
    code, out, err = run_main(capsys, "inspect", str(lake_path), "w", "--snapshots", "--format", "csv")
    assert code == 0, err
    head, *rows = out.strip().splitlines()
    assert head.endswith("rows_added,rows_deleted,files_added,files_removed,bytes_added,bytes_removed")
    assert [int(r.split(",")[0]) for r in rows] == list(range(13, 22))
    code, _, err = run_main(capsys, "inspect", str(lake_path), "nope", "--snapshots")
    assert code == 1 and "does not exist" in err
