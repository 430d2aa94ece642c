"""A delete whose commit lands one snapshot later than planned (another writer committed to another table in
between) writes its partial delete file again with the snapshot it really got: time travel stays exact."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ducklake_cli.api import connect
from ducklake_cli.ops.dml import run_change
from tests.support.oracle import oracle_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _attach(con: Any, tmp_path: Path) -> None:
    con.execute(f"ATTACH 'ducklake:sqlite:{tmp_path}/c.sqlite' AS lk (DATA_PATH '{tmp_path}/data/')")


def test_partial_delete_file_is_retagged_after_a_race_on_another_table(tmp_path: Path, spark: SparkSession) -> None:
    con = oracle_connect()
    _attach(con, tmp_path)
    con.execute("CREATE TABLE lk.t AS SELECT range::INT AS id FROM range(100)")
    con.execute("CREATE TABLE lk.other(x INT)")
    con.execute("DELETE FROM lk.t WHERE id < 20")  # the file's first delete file
    con.execute("DETACH lk")
    lake = connect(f"{tmp_path}/c.sqlite")
    with lake.reader() as r:
        planned = r.latest_snapshot().snapshot_id + 1
    original = lake.commit

    def racing_commit(build: Any, **kwargs: Any) -> Any:
        if not raced:
            raced.append(True)
            other = oracle_connect()
            _attach(other, tmp_path)
            other.execute("INSERT INTO lk.other SELECT range FROM range(50)")
            other.close()
        return original(build, **kwargs)

    raced: list[bool] = []
    lake.commit = racing_commit  # type: ignore[method-assign]
    got = run_change(lake, ["DELETE FROM t WHERE id >= 50 AND id < 70"])
    lake.close()
    assert (got.snapshot_id, got.deleted) == (planned + 1, 20)
    _attach(con, tmp_path)
    counts = {s: con.execute(f"SELECT count(*) FROM lk.t AT (VERSION => {s})").fetchall()[0][0]
              for s in (planned - 1, planned, planned + 1)}
    assert counts == {planned - 1: 80, planned: 80, planned + 1: 60}
    changes = con.execute(f"SELECT changes FROM lk.snapshots() WHERE snapshot_id = {planned + 1}").fetchall()[0][0]
    assert changes == {"tables_deleted_from": ["1"]}
    con.close()
