"""`restore` on DuckDB-built lakes: restoring to each earlier snapshot makes DuckDB read the new snapshot as it
reads that snapshot, every older snapshot reads as before (restores of restores too), DuckDB's expire + cleanup
never deletes a file a restored snapshot reads, and what cannot be restored is refused with nothing changed."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ducklake_cli.catalog.restore import file_states
from ducklake_cli.errors import CommitConflictError, DuckLakeError, NotFoundError, StorageError
from ducklake_cli.lake import Lake
from ducklake_cli.ops.restore import plan_restore
from tests.support.oracle import oracle_connect
from tests.support.restore_lakes import (
    INLINED_DELETES,
    NESTED_RENAMED,
    SCENARIOS,
    Scenario,
    attach,
    build,
    oracle_reads,
)
from tests.support.services import pg_database, require_env

_RESTORE_CHANGES = {"tables_inserted_into", "tables_deleted_from", "tables_altered", "inlined_insert",
                    "inlined_delete"}


def _targets(snapshots: list[int]) -> list[int]:
    """Every earlier snapshot, alternating oldest and newest (so restores start from restored states), then the
    original latest (undo them all)."""
    order, out = sorted(snapshots)[:-1], []
    while order:
        out.append(order.pop(0))
        if order:
            out.append(order.pop())
    return [*out, max(snapshots)]


def _chain(catalog: str, before: dict[int, Counter[Any]], table: str = "t") -> dict[int, int]:
    """Restore to each target in turn; the new snapshot of each restore → its target."""
    made: dict[int, int] = {}
    current = max(before)
    with Lake.open(catalog) as lake:
        for n in _targets(list(before)):
            plan = plan_restore(lake, table, snapshot_id=n)
            counts = plan.report().extra  # rows from metadata and delete files; `before` has a column-names entry
            assert (counts["rows_before"], counts["rows_after"]) == (sum(before[current].values()) - 1,
                                                                     sum(before[n].values()) - 1), n
            if plan.is_empty():
                continue
            result = plan.apply(lake)
            made[result.extra["snapshot_id"]] = current = n
    return made


def _check(before: dict[int, Counter[Any]], after: dict[int, Counter[Any]], made: dict[int, int],
           changes: list[Any]) -> None:
    for sid, rows in before.items():
        assert after.get(sid) == rows, f"snapshot {sid} reads differently after the restores"
    for sid, n in made.items():
        assert after.get(sid) == before[n], f"snapshot {sid} (restore to {n}) differs: extra " \
            f"{after.get(sid, Counter()) - before[n]}, missing {before[n] - after.get(sid, Counter())}"
    parsed = dict(changes)
    for sid in made:
        assert parsed[sid] and set(parsed[sid]) <= _RESTORE_CHANGES, parsed[sid]
        assert all(v == ["1"] for v in parsed[sid].values())


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_restore_each_snapshot_reads_as_it(tmp_path: Path, scenario: Scenario) -> None:
    catalog, data = str(tmp_path / "lake.sqlite"), tmp_path / "data"
    before = build("sqlite", catalog, data, scenario)
    made = _chain(catalog, before)
    assert len(made) >= len(before) - 2  # every earlier snapshot but the ones that already read as the latest
    after, changes = oracle_reads("sqlite", catalog, data)
    _check(before, after, made, changes)


def test_restore_nested_columns_of_a_renamed_table(tmp_path: Path) -> None:
    """Struct fields added, renamed and dropped, inlined rows, and the table renamed since: it keeps its name."""
    catalog, data = str(tmp_path / "lake.sqlite"), tmp_path / "data"
    before = build("sqlite", catalog, data, NESTED_RENAMED, "t2", "t")
    made = _chain(catalog, before, "t2")
    after, changes = oracle_reads("sqlite", catalog, data, "t2", "t")
    _check(before, after, made, changes)


@pytest.mark.postgres
def test_restore_postgres_catalog(tmp_path: Path) -> None:
    scenario = next(s for s in SCENARIOS if s.name == "inlined_flush")
    with pg_database(require_env("DUCKLAKE_TEST_PG")) as url:
        data = tmp_path / "data"
        before = build("postgres", url, data, scenario)
        made = _chain(url, before)
        after, changes = oracle_reads("postgres", url, data)
        _check(before, after, made, changes)


def _duck(catalog: str, data: Path, *statements: str) -> list[Any]:
    con = oracle_connect()
    try:
        con.execute(attach("sqlite", catalog, data))
        rows: list[Any] = []
        for sql in statements:
            rows = con.execute(sql).fetchall()
        return rows
    finally:
        con.close()


def test_duckdb_expire_and_cleanup_keep_what_a_restore_reads(tmp_path: Path) -> None:
    """The restored snapshot reads files ended before it: they come back as copies, so expiring every older
    snapshot and cleaning up (DuckDB's own functions) deletes none of them."""
    catalog, data = str(tmp_path / "lake.sqlite"), tmp_path / "data"
    before = build("sqlite", catalog, data, SCENARIOS[0])
    with Lake.open(catalog) as lake:
        plan = plan_restore(lake, "t", snapshot_id=3)
        assert [f.action for f in plan.report().files].count("copy") >= 1
        plan.apply(lake)
    _duck(catalog, data, "CALL ducklake_expire_snapshots('lake', older_than => now())",
          "CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
    after, _ = oracle_reads("sqlite", catalog, data)
    assert list(after) == [max(after)]
    assert after[max(after)] == before[3]


def _snapshot_count(catalog: str) -> int:
    with Lake.open(catalog) as lake, lake.reader() as r:
        return r.snapshot_count()


def test_refusals_change_nothing(tmp_path: Path) -> None:
    catalog, data = str(tmp_path / "lake.sqlite"), tmp_path / "data"
    build("sqlite", catalog, data, SCENARIOS[0])
    times = _duck(catalog, data, "SELECT snapshot_id, snapshot_time FROM ducklake_snapshots('lake') ORDER BY 1")
    _duck(catalog, data, "CALL ducklake_expire_snapshots('lake', versions => [2, 3])",
          "CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
    count = _snapshot_count(catalog)
    with Lake.open(catalog) as lake:
        with pytest.raises(NotFoundError, match="snapshot 3 does not exist: it was expired"):
            plan_restore(lake, "t", snapshot_id=3)
        with pytest.raises(NotFoundError, match=r"snapshot\(s\) 2–3 after it were expired"):
            plan_restore(lake, "t", as_of=times[3][1])
        with pytest.raises(NotFoundError, match="did not exist at snapshot 0"):
            plan_restore(lake, "t", snapshot_id=0)
        with pytest.raises(NotFoundError, match="does not exist at snapshot"):
            plan_restore(lake, "nope", snapshot_id=4)
        # A file snapshot 4 reads, gone from storage (deleted behind the catalog's back): named, nothing changed.
        with lake.reader() as r:
            needed = {st.data.path for st in file_states(r, 1, 4).values()}
        victim = next(p for p in (data / "main" / "t").iterdir() if p.name in needed)
        os.remove(victim)
        with pytest.raises(StorageError, match=victim.name):
            plan_restore(lake, "t", snapshot_id=4)
    assert _snapshot_count(catalog) == count


def test_inlined_deletions_are_flushed_first(tmp_path: Path) -> None:
    """A file with inlined deletions is refused (DuckDB's later flush would overlap the delete file restore ends
    and misread older snapshots); once DuckDB flushed, every restore and a later flush keep every snapshot."""
    catalog, data = str(tmp_path / "lake.sqlite"), tmp_path / "data"
    build("sqlite", catalog, data, INLINED_DELETES)
    count = _snapshot_count(catalog)
    with Lake.open(catalog) as lake, pytest.raises(DuckLakeError, match="inlined deletions") as refused:
        plan_restore(lake, "t", snapshot_id=1)
    assert refused.value.exit_code == 1 and "ducklake_flush_inlined_data" in (refused.value.hint or "")
    assert _snapshot_count(catalog) == count
    _duck(catalog, data, "CALL ducklake_flush_inlined_data('lake')")
    before, _ = oracle_reads("sqlite", catalog, data)
    with Lake.open(catalog) as lake:  # 1 ends the file and its delete file; 3 copies it back with its deletes
        made = {plan_restore(lake, "t", snapshot_id=n).apply(lake).extra["snapshot_id"]: n for n in (1, 3)}
    _duck(catalog, data, "DELETE FROM lake.t WHERE id = 4", "CALL ducklake_flush_inlined_data('lake')")
    after, changes = oracle_reads("sqlite", catalog, data)
    _check(before, after, made, changes)


@pytest.mark.parametrize(("name", "target", "statements"), [
    ("inlined_flush", 4, ("INSERT INTO t VALUES (900, 'n', 9.0)", "DELETE FROM t WHERE id % 2 = 1",
                          "UPDATE t SET x = x + 100 WHERE id > 100", "CALL ducklake_flush_inlined_data('lake')",
                          "CALL ducklake_merge_adjacent_files('lake')", "INSERT INTO t VALUES (901, 'm', 1.0)")),
    ("schema_partitions", 9, ("INSERT INTO t VALUES (900, 'n', 9.0, 1)", "DELETE FROM t WHERE id % 2 = 1",
                              "UPDATE t SET x = x + 100 WHERE id > 45", "ALTER TABLE t ADD COLUMN z INTEGER",
                              "INSERT INTO t VALUES (901, 'm', 1.0, 0, 5)",
                              "CALL ducklake_merge_adjacent_files('lake')")),
])
def test_duckdb_writes_on_after_a_restore(tmp_path: Path, name: str, target: int,
                                          statements: tuple[str, ...]) -> None:
    """DuckDB keeps writing to a restored table (inserts, deletes, updates, ALTER, flush, compaction) and reads
    what the same statements give on a plain copy of the restored rows."""
    catalog, data = str(tmp_path / "lake.sqlite"), tmp_path / "data"
    build("sqlite", catalog, data, next(s for s in SCENARIOS if s.name == name))
    with Lake.open(catalog) as lake:
        plan_restore(lake, "t", snapshot_id=target).apply(lake)
    con = oracle_connect()
    try:
        con.execute(attach("sqlite", catalog, data))
        if name == "schema_partitions":  # the comment as at the snapshot
            assert con.execute("SELECT comment FROM duckdb_tables() WHERE database_name = 'lake'").fetchall() == [
                ("first",)]
        con.execute(f"CREATE TABLE memory.main.t AS SELECT * FROM lake.t AT (VERSION => {target})")
        for sql in statements:
            con.execute("USE lake")
            con.execute(sql)
            con.execute("USE memory")
            if "ducklake_" not in sql:
                con.execute(sql)
            got = Counter(con.execute("SELECT * FROM lake.t").fetchall())
            want = Counter(con.execute("SELECT * FROM memory.main.t").fetchall())
            assert got == want, f"after {sql!r}: extra {got - want}, missing {want - got}"
    finally:
        con.close()


def test_other_writers(tmp_path: Path) -> None:
    """A commit to another table between plan and apply does not matter; one to the table refuses (exit 3)."""
    catalog, data = str(tmp_path / "lake.sqlite"), tmp_path / "data"
    before = build("sqlite", catalog, data, SCENARIOS[0])
    with Lake.open(catalog) as lake:
        plan = plan_restore(lake, "t", snapshot_id=3)
        _duck(catalog, data, "CREATE TABLE lake.u(a INTEGER)", "INSERT INTO lake.u VALUES (1)")
        done = plan.apply(lake).extra["snapshot_id"]
        plan = plan_restore(lake, "t", snapshot_id=2)
        _duck(catalog, data, "INSERT INTO lake.t VALUES (1000, 'z', 0.5)")
        with pytest.raises(CommitConflictError, match="another writer changed main.t"):
            plan.apply(lake)
    after, _ = oracle_reads("sqlite", catalog, data)
    assert after[done] == before[3] and max(after) == done + 1


def _ours(catalog: str, spark: Any, snapshot: int) -> Counter[Any]:
    from ducklake_cli.catalog.snapshots import SnapshotSelector
    from ducklake_cli.ops.query import table_dataframe
    from tests.support.restore_lakes import _norm

    with Lake.open(catalog) as lake:
        df = table_dataframe(lake, "t", at=SnapshotSelector(snapshot), spark=spark)
        rows = Counter(tuple(_norm(v) for v in r) for r in df.collect())
        rows[("__columns__", *df.columns)] = 1
        return rows


@pytest.mark.spark
@pytest.mark.parametrize(("name", "target"), [
    ("inlined_flush", 4),  # copies of flushed files, inlined rows again in an older inlined table
    ("schema_partitions", 4),  # a copy of a file older than a defaulted column reads the default
])
def test_our_reader_reads_a_restored_snapshot(tmp_path: Path, spark: Any, name: str, target: int) -> None:
    catalog, data = str(tmp_path / "lake.sqlite"), tmp_path / "data"
    before = build("sqlite", catalog, data, next(s for s in SCENARIOS if s.name == name))
    with Lake.open(catalog) as lake:
        new = plan_restore(lake, "t", snapshot_id=target).apply(lake).extra["snapshot_id"]
    assert _ours(catalog, spark, new) == before[target]


@pytest.mark.s3
def test_restore_s3_lake(tmp_path: Path) -> None:
    """On object storage the copies are made server-side and the new delete files written there."""
    import os

    from tests.support.restore_lakes import read_snapshots
    from tests.support.services import s3_prefix

    catalog = tmp_path / "lake.sqlite"
    with s3_prefix(require_env("DUCKLAKE_TEST_S3"), require_env("DUCKLAKE_TEST_S3_KEY"),
                   require_env("DUCKLAKE_TEST_S3_SECRET"), os.environ.get("DUCKLAKE_TEST_S3_BUCKET", "lake")) as s3:
        def duck() -> Any:
            con = oracle_connect()
            con.execute(f"CREATE SECRET (TYPE s3, KEY_ID '{s3.key}', SECRET '{s3.secret}', ENDPOINT "
                        f"'{s3.host_port}', URL_STYLE 'path', USE_SSL false, REGION '{s3.region}')")
            con.execute(f"ATTACH 'ducklake:sqlite:{catalog}' AS lake (DATA_PATH '{s3.url}', "
                        "DATA_INLINING_ROW_LIMIT 0)")
            return con

        con = duck()
        for sql in SCENARIOS[1].statements:
            con.execute(sql.replace("TABLE t", "TABLE lake.t").replace("INTO t", "INTO lake.t")
                        .replace("UPDATE t", "UPDATE lake.t").replace("FROM t", "FROM lake.t"))
        before = read_snapshots(con)
        con.close()
        made = {}
        with Lake.open(str(catalog), storage_options=s3.storage_options()) as lake:
            for n in (3, max(before)):
                plan = plan_restore(lake, "t", snapshot_id=n)
                made[plan.apply(lake).extra["snapshot_id"]] = n
        con = duck()
        after = read_snapshots(con)
        con.close()
    assert all(after[sid] == rows for sid, rows in before.items())
    assert all(after[sid] == before[n] for sid, n in made.items())


def test_restore_registered_file(tmp_path: Path) -> None:
    """A file registered in place (DuckDB's `ducklake_add_data_files`) comes back as a copy in the table's
    directory, keeping its name mapping (and a name that is not DuckLake's own)."""
    import duckdb

    ext = tmp_path / "ext.parquet"
    duckdb.sql(f"COPY (SELECT i AS id, 'r' || i AS s FROM range(10) r(i)) TO '{ext}'")
    catalog, data = str(tmp_path / "lake.sqlite"), tmp_path / "data"
    before = build("sqlite", catalog, data, Scenario("registered", (
        "CREATE TABLE t(id BIGINT, s VARCHAR)", f"CALL ducklake_add_data_files('lake', 't', '{ext}')",
        "DELETE FROM t WHERE id < 3", "INSERT INTO t VALUES (100, 'x')", "DELETE FROM t WHERE id < 50")))
    made = _chain(catalog, before)
    after, changes = oracle_reads("sqlite", catalog, data)
    _check(before, after, made, changes)
    assert any(p.name.startswith("ext-") for p in (data / "main" / "t").iterdir())
