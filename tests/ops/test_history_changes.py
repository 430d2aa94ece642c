"""Per-snapshot row metrics (`inspect --snapshots`) equal DuckDB 1.5.5's `ducklake_table_changes(t, S, S)` at
every snapshot (rows_added = insert + update_postimage, rows_deleted = delete + update_preimage), on lakes DuckDB
builds alone: every DML twin sequence (setup, steps and cross-over steps, all DuckDB's: delete files rewritten in
place, deletion vectors, inlined rows and deletions, updates, merges, scripts) and the change-feed lake (flush,
merge, rewrite, column changes), on SQLite, DuckDB-file and PostgreSQL catalogs. No Spark: the metrics read the
catalog and the snapshot ids embedded in multi-snapshot files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.ops.test_dml_twins import SEQUENCES
from tests.support.dml_twins import Sequence_
from tests.support.feed_lakes import STEPS as FEED_STEPS
from tests.support.history_changes import (
    Counts,
    assert_rows_match_table_changes,
    duck_counts,
    duck_session,
    empty_spot,
    running_totals,
)
from tests.support.oracle import transaction
from tests.support.spot import ORACLE_BACKENDS, Spot


def build(spot: Spot, table: str, setup: Sequence[str], transactions: Sequence[Sequence[str]], *, alias: str,
          extra: str = "") -> tuple[Counts, dict[int, int]]:
    """DuckDB runs `setup` (a snapshot a statement), then each of `transactions` as one snapshot; then its
    table changes of `table` and its row count at every snapshot since the table's creation."""
    with duck_session(spot, alias, extra) as con:
        for statement in setup:
            con.execute(statement)
        for statements in transactions:
            transaction(con, list(statements))
        want = duck_counts(con, alias, table)
        rows = {s: con.execute(f"SELECT count(*) FROM {table} AT (VERSION => {s})").fetchall()[0][0] for s in want}
    return want, rows


CASES = [pytest.param(seq, backend, id=f"{seq.name}-{backend}") for backend in ORACLE_BACKENDS for seq in SEQUENCES]


@pytest.mark.parametrize(("seq", "backend"), CASES)
def test_dml_sequence(seq: Sequence_, backend: str, tmp_path: Path) -> None:
    with empty_spot(backend, tmp_path) as spot:
        want, rows = build(spot, seq.table, seq.setup, [st.duck for st in (*seq.steps, *seq.cross)], alias="lk")
        counts = assert_rows_match_table_changes(spot, seq.table, want)
    assert running_totals(counts) == rows


@pytest.mark.parametrize("backend", ORACLE_BACKENDS)
def test_feed_lake(backend: str, tmp_path: Path) -> None:
    """Flush and merge keep the rows at their embedded snapshots and show none at their own; at the rewrite
    DuckDB reports the moved rows as updated (and the file's inlined deletions as deleted again), where we show
    no change: the running sum stays DuckDB's count(*) at every snapshot."""
    steps = [(s,) if isinstance(s, str) else s for s in FEED_STEPS]
    with empty_spot(backend, tmp_path) as spot:
        want, rows = build(spot, "t", (), steps, alias="lake", extra="DATA_INLINING_ROW_LIMIT 10")
        counts = assert_rows_match_table_changes(spot, "t", want)
    assert running_totals(counts) == rows
    flush, merge, rewrite = (steps.index((f"CALL ducklake_{f}",)) + 1 for f in (
        "flush_inlined_data('lake')", "merge_adjacent_files('lake')",
        "rewrite_data_files('lake', delete_threshold => 0.0)"))
    assert counts[flush] == counts[merge] == counts[rewrite] == (0, 0)
    assert want[flush] == want[merge] == (0, 0) and want[rewrite][0] > 0  # DuckDB's own answers there
