"""Per-file catalog rows (stats, partition values) for many files are read in one pass over the table instead of an
IN list per chunk (catalog/queries.py `_per_file`): both ways give the same rows, on a DuckDB-written lake."""

from __future__ import annotations

from pathlib import Path

import pytest

import ducklake_cli
from ducklake_cli.catalog import queries
from tests.support.oracle import attach_clause, oracle_connect


def test_one_pass_equals_in_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", tmp_path / "cat.sqlite", tmp_path / "data"))
        con.execute("CREATE TABLE lake.t(k INTEGER, v VARCHAR)")
        con.execute("ALTER TABLE lake.t SET PARTITIONED BY (k)")
        for i in range(8):
            con.execute(f"INSERT INTO lake.t SELECT {i % 3}, 'v' || r FROM range({i * 20}, {i * 20 + 20}) t(r)")
        con.execute("DETACH lake")
    finally:
        con.close()
    with ducklake_cli.connect(str(tmp_path / "cat.sqlite")) as lake, lake.reader() as r:
        table = r.find_table(r.latest_snapshot().snapshot_id, "t")
        ids = [f.data_file_id for f in r.data_files(r.latest_snapshot().snapshot_id, [table.table_id])][:-1]
        assert len(ids) == 7

        def read() -> tuple[object, object]:
            stats = {fid: sorted(rows, key=lambda s: s.column_id)
                     for fid, rows in r.file_column_stats(table.table_id, ids).items()}
            return stats, dict(r.file_partition_values(table.table_id, ids))

        in_lists = read()
        monkeypatch.setattr(queries, "CHUNK", 3)  # 7 files > 3: one pass over the table's rows
        assert read() == in_lists
        assert set(in_lists[0]) == set(ids) and set(in_lists[1]) == set(ids)
