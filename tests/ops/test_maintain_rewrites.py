"""flush, compact, rewrite and checkpoint against the oracle: after each, DuckDB 1.5.5 reads the same rows with the
same row ids at the latest snapshot and at every surviving older one as before, our reader agrees, and DuckDB keeps
writing to the lake; compaction of 1,000 small files leaves at most ceil(total / target) files."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ducklake_cli.api import Lake, connect
from ducklake_cli.ops.checkpoint import plan_checkpoint
from ducklake_cli.ops.flush import plan_flush
from ducklake_cli.ops.rewrite import plan_compact, plan_rewrite
from tests.support.cli import REPO
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot
from tests.support.tiers import is_full

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

TABLES = ("main.t", "main.p")


def build(con: duckdb.DuckDBPyConnection) -> None:
    """Small files, inlined rows (one deleted), a file 98% deleted, a file deleted whole, schema changes and a
    partitioned table: something for every verb."""
    con.execute("CREATE TABLE lake.t (id INTEGER, s VARCHAR, d DATE)")
    for i in range(12):
        con.execute(f"INSERT INTO lake.t SELECT i, 'v' || i, DATE '2024-01-01' + i::INTEGER "
                    f"FROM range({i * 100}, {i * 100 + 50}) r(i)")
    for i in range(3):
        con.execute(f"INSERT INTO lake.t VALUES ({5000 + i}, 'inlined', NULL)")
    con.execute("DELETE FROM lake.t WHERE id = 5001")
    con.execute("DELETE FROM lake.t WHERE id BETWEEN 300 AND 349")
    con.execute("DELETE FROM lake.t WHERE id BETWEEN 400 AND 448")
    con.execute("ALTER TABLE lake.t ADD COLUMN x INTEGER DEFAULT 7")
    con.execute("ALTER TABLE lake.t RENAME COLUMN s TO label")
    for i in range(3):
        con.execute(f"INSERT INTO lake.t SELECT i, 'w', NULL, i FROM range({9000 + i * 100}, {9030 + i * 100}) r(i)")
    con.execute("INSERT INTO lake.t VALUES (7777, 'inlined after', NULL, 1)")
    con.execute("CREATE TABLE lake.p (id INTEGER, region VARCHAR)")
    con.execute("ALTER TABLE lake.p SET PARTITIONED BY (region)")
    for i in range(6):
        con.execute(f"INSERT INTO lake.p SELECT i, ['eu', 'us'][i % 2 + 1] FROM range({i * 40}, {i * 40 + 40}) r(i)")


def snapshot_rows(con: duckdb.DuckDBPyConnection) -> dict[tuple[int, str], list[tuple[Any, ...]]]:
    """Every table's rows with rowid at every snapshot, as DuckDB reads them."""
    out = {}
    for (sid,) in con.execute("SELECT snapshot_id FROM lake.snapshots() ORDER BY 1").fetchall():
        for table in TABLES:
            try:
                rows = con.execute(f"SELECT rowid, * FROM lake.{table} AT (VERSION => {sid}) ORDER BY rowid").fetchall()
            except Exception:  # the table does not exist yet at that snapshot
                continue
            out[(sid, table)] = rows
    return out


@pytest.fixture
def lake_env(spot: Spot, spark: SparkSession) -> Iterator[tuple[Spot, duckdb.DuckDBPyConnection, Lake]]:
    """A DuckDB-written lake, the attached oracle and our Lake on it."""
    con = oracle_connect()
    con.execute(spot.attach())
    build(con)
    lake = connect(spot.catalog)
    try:
        yield spot, con, lake
    finally:
        lake.close()
        con.close()


def reattach(spot: Spot, con: duckdb.DuckDBPyConnection) -> None:
    """See the catalog as it is now."""
    con.execute("DETACH lake")
    con.execute(spot.attach())


def ours(lake: Lake, table: str, snapshot: int | None = None) -> list[tuple[Any, ...]]:
    """Our reader's rows with rowid first, sorted by it."""
    df = lake.table(table, snapshot=snapshot, with_rowid=True)
    cols = ["rowid", *[c for c in df.columns if c != "rowid"]]
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=lambda r: r[0])


@pytest.mark.parametrize("spot", ["sqlite", "postgres"], indirect=True)
def test_flush_compact_rewrite_keep_every_snapshot(lake_env: tuple[Spot, duckdb.DuckDBPyConnection, Lake]) -> None:
    spot, con, lake = lake_env
    before = snapshot_rows(con)
    files_before = con.execute("SELECT count(*) FROM __ducklake_metadata_lake.ducklake_data_file "
                               "WHERE end_snapshot IS NULL").fetchone()[0]
    con.execute("DETACH lake")
    eu = plan_compact(lake, table="p", partition=["region=eu"])
    assert eu.groups and all(g.partition_values == ("eu",) for g in eu.groups)
    for make in (plan_flush, plan_compact, plan_rewrite):
        plan = make(lake)
        assert not plan.is_empty(), make.__name__
        plan.apply(lake)
        assert make(lake).is_empty(), f"{make.__name__} twice"  # idempotent
    con.execute(spot.attach())
    after = snapshot_rows(con)
    assert {k: v for k, v in after.items() if k in before} == before
    latest = max(sid for sid, _ in after)
    changes = [c for (c,) in con.execute("SELECT changes FROM lake.snapshots() ORDER BY snapshot_id").fetchall()]
    assert {"flushed_inlined", "merge_adjacent", "rewrite_delete"} <= {k for c in changes[-4:] for k in c}
    files_after = con.execute("SELECT count(*) FROM __ducklake_metadata_lake.ducklake_data_file "
                              "WHERE end_snapshot IS NULL").fetchone()[0]
    assert files_after < files_before
    inlined = con.execute("SELECT count(*) FROM __ducklake_metadata_lake.ducklake_inlined_data_tables").fetchone()[0]
    assert inlined >= 1
    for table in TABLES:
        assert ours(lake, table) == [tuple(r) for r in after[(latest, table)]]
    # Our reader at a sample of snapshots (DuckDB compared every one above); at every snapshot on SQLite in the
    # full tier (tests/support/tiers.py).
    oldest_t = min(sid for sid, t in after if t == "main.t" and after[(sid, t)])
    every = spot.backend == "sqlite" and is_full()
    for (sid, table), rows in sorted(after.items()):
        if every or (table == "main.t" and sid in (oldest_t, oldest_t + 13, latest - 4)):
            assert ours(lake, table, sid) == [tuple(r) for r in rows], (sid, table)
    # DuckDB goes on writing: inserts, deletes (also in merged and rewritten files) and an update.
    con.execute("INSERT INTO lake.t VALUES (1, 'again', NULL, 2)")
    con.execute("DELETE FROM lake.t WHERE id % 5 = 0")
    con.execute("UPDATE lake.t SET label = 'u' WHERE id % 7 = 0")
    n, = con.execute("SELECT count(*) FROM lake.t").fetchone()
    assert n == len([r for r in after[(latest, "main.t")] if r[1] % 5 != 0]) + 1
    con.execute("DETACH lake")
    assert len(ours(lake, "main.t")) == n


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_checkpoint_runs_every_step_and_then_has_nothing_to_do(
        lake_env: tuple[Spot, duckdb.DuckDBPyConnection, Lake]) -> None:
    spot, con, lake = lake_env
    con.execute("CALL lake.set_option('expire_older_than', '1 second')")
    con.execute("CALL lake.set_option('delete_older_than', '1 second')")
    expected = {t: con.execute(f"SELECT rowid, * FROM lake.{t} ORDER BY rowid").fetchall() for t in TABLES}
    con.execute("DETACH lake")
    import time

    time.sleep(1.5)
    report = plan_checkpoint(lake).apply(lake)
    steps = report.extra["steps"]
    assert {"flush", "expire", "compact", "rewrite"} <= set(steps)
    assert steps["expire"]["snapshots_expired"] > 20
    # Files scheduled by one run are old enough for the next run's cleanup; a few runs reach a fixed point.
    for _ in range(4):
        time.sleep(1.5)
        plan = plan_checkpoint(lake)
        if plan.is_empty():
            break
        plan.apply(lake)
    else:
        pytest.fail("checkpoint kept finding work")
    con.execute(spot.attach())
    for t in TABLES:
        assert con.execute(f"SELECT rowid, * FROM lake.{t} ORDER BY rowid").fetchall() == expected[t]
    con.execute("DETACH lake")
    for t in TABLES:
        assert ours(lake, t) == [tuple(r) for r in expected[t]]
    referenced = set()
    con.execute(spot.attach())
    for (path,) in con.execute("SELECT path FROM __ducklake_metadata_lake.ducklake_data_file UNION ALL "
                               "SELECT path FROM __ducklake_metadata_lake.ducklake_delete_file").fetchall():
        referenced.add(Path(path).name)
    on_disk = {p.name for p in spot.data_path.rglob("*.parquet")}
    assert on_disk == referenced  # cleanup and orphans removed every file nothing references
    con.execute("DETACH lake")


def test_compact_a_thousand_small_files(tmp_path: Path, spark: SparkSession) -> None:
    cat = tmp_path / "big.sqlite"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_big_catalog.py"), str(cat), "--files", "1000",
                    "--snapshots", "1000", "--rows-per-file", "20"], check=True, capture_output=True)
    con = oracle_connect()
    attach = f"ATTACH 'ducklake:sqlite:{cat}' AS lake (READ_ONLY)"
    con.execute(attach)
    query = "SELECT count(*), sum(rowid), sum(hash(rowid, COLUMNS(*))) FROM lake.events"
    want = con.execute(query).fetchone()
    sizes = con.execute("SELECT sum(file_size_bytes), count(*) FROM __ducklake_metadata_lake.ducklake_data_file "
                        "WHERE end_snapshot IS NULL").fetchone()
    con.execute("DETACH lake")
    target = 64 * 1024
    with connect(str(cat)) as lake:
        plan = plan_compact(lake, target_size=str(target))
        plan.apply(lake)
    con.execute(attach)
    assert con.execute(query).fetchone() == want
    live = con.execute("SELECT count(*) FROM __ducklake_metadata_lake.ducklake_data_file "
                       "WHERE end_snapshot IS NULL").fetchone()[0]
    assert live <= math.ceil(sizes[0] / target) < sizes[1]
    con.close()
