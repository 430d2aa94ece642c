"""`maintain flush` of inlined file deletions on twin lakes: DuckDB 1.5.5 flushes lake A
(`ducklake_flush_inlined_data`), we flush lake B (built by the same DuckDB statements); then every catalog table
matches row for row, the delete files hold the same positions and snapshots, DuckDB reads every snapshot of both
the same, `restore` works on what we flushed, and DuckDB goes on writing to it. No Spark.

Documented differences (nothing else may differ): file names (UUIDs), `snapshot_time`/`schedule_start`, the sizes
and footer sizes of the files the flush writes (pyarrow's Parquet writer, not DuckDB's) and so the table's
`file_size_bytes` and the new data files' `column_size_bytes`; and the order of `delete_file_id`s among one table's
new delete files (DuckDB numbers them in hash-map order)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ducklake_cli.catalog import schema as s
from ducklake_cli.lake import Lake
from ducklake_cli.ops.flush import plan_flush
from ducklake_cli.ops.restore import plan_restore
from tests.support.cli import run_main
from tests.support.dml_twins import twin_spots
from tests.support.oracle import oracle_connect, used
from tests.support.spot import ORACLE_BACKENDS, Spot

ALIAS = "lk"
META = f"__ducklake_metadata_{ALIAS}"
EXTRA = "DATA_INLINING_ROW_LIMIT 5"
TABLES = ("t", "p", "d", "x")

# t: inlined deletions of two files at several snapshots (one file with a 2-column delete file to merge), an UPDATE
# (inlined deletion + inlined row), inlined rows (one deleted); p: partitioned (files in hive directories); d: a
# Puffin deletion vector to merge (DuckDB writes Parquet all the same); x: auto_compact off, left alone.
SETUP = (
    "CREATE TABLE t(id INTEGER, s VARCHAR)",
    "INSERT INTO t SELECT i, 'a' || i FROM range(20) r(i)",
    "DELETE FROM t WHERE id IN (1, 6, 11)",
    "INSERT INTO t SELECT i, 'b' || i FROM range(100, 130) r(i)",
    "DELETE FROM t WHERE id >= 100 AND id < 115",
    "DELETE FROM t WHERE id IN (120, 121)",
    "DELETE FROM t WHERE id IN (12, 14)",
    "UPDATE t SET s = 'u' WHERE id = 3",
    "INSERT INTO t VALUES (900, 'x'), (901, 'y')",
    "DELETE FROM t WHERE id = 901",
    "CREATE TABLE p(id INTEGER, k INTEGER)",
    "ALTER TABLE p SET PARTITIONED BY (k)",
    "INSERT INTO p SELECT i, i % 2 FROM range(40) r(i)",
    "DELETE FROM p WHERE id IN (3, 8)",
    "CREATE TABLE x(id INTEGER)",
    "INSERT INTO x SELECT i FROM range(10) r(i)",
    "DELETE FROM x WHERE id = 1",
    "CALL lk.set_option('auto_compact', false, table_name => 'x')",
    "CREATE TABLE d(id INTEGER)",
    "INSERT INTO d SELECT i FROM range(30) r(i)",
    "CALL lk.set_option('write_deletion_vectors', true)",
    "DELETE FROM d WHERE id < 10",
    "DELETE FROM d WHERE id IN (20, 21)",
)
_UUID = re.compile(r"ducklake-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _run(con: duckdb.DuckDBPyConnection, spot: Spot, *statements: str) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    with used(con, spot.attach(ALIAS, EXTRA), ALIAS) as c:
        for sql in statements:
            rows = c.execute(sql).fetchall()
    return rows


def _catalog(con: duckdb.DuckDBPyConnection, spot: Spot) -> dict[str, tuple[list[str], list[tuple[Any, ...]]]]:
    """Every catalog table (spec tables, inlined-data and inlined-deletion tables) as DuckDB reads it."""
    out = {}
    with used(con, spot.attach(ALIAS, EXTRA), ALIAS) as c:
        inlined = [r[0] for r in c.execute(f"SELECT table_name FROM {META}.ducklake_inlined_data_tables").fetchall()]
        tids = [r[0] for r in c.execute(f"SELECT DISTINCT table_id FROM {META}.ducklake_table").fetchall()]
        for name in [n for n, _, _ in s.SPEC_TABLES] + inlined + [s.inlined_delete_table_name(t) for t in tids]:
            try:
                cur = c.execute(f"SELECT * FROM {META}.{name}")
            except duckdb.Error:
                continue
            out[name] = ([d[0] for d in cur.description], cur.fetchall())
    return out


def _normal(name: str, columns: list[str], rows: list[tuple[Any, ...]], new_from: int) -> list[tuple[Any, ...]]:
    """Rows with the documented differences taken out, sorted (delete file ids: compared apart)."""
    skip = {"snapshot_time", "schedule_start", "schema_uuid", "table_uuid"}
    if name == "ducklake_table_stats":
        skip.add("file_size_bytes")
    if name == "ducklake_delete_file":
        skip.add("delete_file_id")
    out = []
    for r in rows:
        d = dict(zip(columns, r, strict=True))
        if name == "ducklake_metadata" and d["key"] == "data_path":
            continue
        file_id = d.get("data_file_id") if name != "ducklake_delete_file" else d["delete_file_id"]
        new = name in ("ducklake_data_file", "ducklake_delete_file", "ducklake_file_column_stats") and \
            file_id is not None and file_id >= new_from
        skip_new = {"file_size_bytes", "footer_size", "column_size_bytes"} if new else set()
        out.append(tuple((k, _UUID.sub("ducklake-<uuid>", v) if k == "path" and isinstance(v, str) else v)
                         for k, v in d.items() if k not in skip | skip_new))
    return sorted(out, key=repr)


def _delete_contents(con: duckdb.DuckDBPyConnection, spot: Spot) -> dict[tuple[int, int], Any]:
    """Per (table id, data file id), the live delete file's columns, field ids and rows (`file_path` as the data
    file's path relative to the lake's data path)."""
    import pyarrow.parquet as pq

    out: dict[tuple[int, int], Any] = {}
    for n in TABLES:
        rows = _run(con, spot, f"SELECT l.data_file, l.delete_file, t.table_id, f.data_file_id FROM "
                               f"ducklake_list_files('{ALIAS}', '{n}') l, {META}.ducklake_table t, "
                               f"{META}.ducklake_data_file f WHERE t.table_name = '{n}' AND t.end_snapshot IS NULL "
                               "AND f.table_id = t.table_id AND l.data_file LIKE '%' || f.path "
                               "AND l.delete_file IS NOT NULL")
        for data_path, delete_path, tid, fid in rows:
            if not str(delete_path).endswith(".parquet"):
                out[(tid, fid)] = "puffin"
                continue
            f = pq.ParquetFile(delete_path)
            table = f.read()
            ids = [(fl.name, (fl.metadata or {}).get(b"PARQUET:field_id")) for fl in f.schema_arrow]
            assert set(table.column("file_path").to_pylist()) == {data_path}, (delete_path, data_path)
            snaps = table.column(2).to_pylist() if table.num_columns > 2 else None
            out[(tid, fid)] = (ids, table.column("pos").to_pylist(), snaps)
    return out


def _snapshots(con: duckdb.DuckDBPyConnection, spot: Spot,
               since: int = 0) -> dict[tuple[int, str], Counter[tuple[Any, ...]]]:
    """What DuckDB reads (rows with row ids) of every table at every snapshot (from `since` on)."""
    out = {}
    with used(con, spot.attach(ALIAS, EXTRA), ALIAS) as c:
        ids = [r[0] for r in c.execute(f"SELECT snapshot_id FROM ducklake_snapshots('{ALIAS}')").fetchall()]
        for sid in (i for i in ids if i >= since):
            for n in TABLES:
                try:
                    got = c.execute(f"SELECT rowid, * FROM {n} AT (VERSION => {sid})").fetchall()
                except duckdb.Error:
                    continue
                out[(sid, n)] = Counter(got)
    return out


def _compare(con: duckdb.DuckDBPyConnection, a: Spot, b: Spot, new_from: int) -> None:
    want, got = _catalog(con, a), _catalog(con, b)
    assert sorted(got) == sorted(want)
    for name in want:
        w = _normal(name, *want[name], new_from)
        g = _normal(name, *got[name], new_from)
        assert g == w, f"{name} differs:\n ours:   {[r for r in g if r not in w]}\n duckdb: " \
                       f"{[r for r in w if r not in g]}"
    ids = [sorted(r[0] for r in cat["ducklake_delete_file"][1]) for cat in (want, got)]
    assert ids[0] == ids[1]
    # file_size_bytes of the table stats grew by the flushed data files' sizes, and by nothing else
    old_bytes = []
    for cat in (want, got):
        stats = [dict(zip(cat["ducklake_table_stats"][0], r, strict=True)) for r in cat["ducklake_table_stats"][1]]
        files = [dict(zip(cat["ducklake_data_file"][0], r, strict=True)) for r in cat["ducklake_data_file"][1]]
        old_bytes.append({st["table_id"]: st["file_size_bytes"] - sum(f["file_size_bytes"] for f in files if
                                                                      f["table_id"] == st["table_id"]
                                                                      and f["data_file_id"] >= new_from)
                          for st in stats})
    assert old_bytes[0] == old_bytes[1]


@pytest.mark.parametrize("backend", ORACLE_BACKENDS)
def test_flush_deletions_as_duckdb_does(backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    con = oracle_connect()
    try:
        with twin_spots(backend, tmp_path) as (a, b):
            for spot in (a, b):
                _run(con, spot, *SETUP)
            latest, new_from = _run(con, a, f"SELECT snapshot_id, next_file_id FROM {META}.ducklake_snapshot "
                                            "ORDER BY snapshot_id DESC LIMIT 1")[0]
            # every snapshot on SQLite; elsewhere the catalog rows and delete files compared below imply it
            since = 0 if backend == "sqlite" else latest
            before = _snapshots(con, a, since)
            with Lake.open(b.catalog) as lake:  # refused while inlined deletions touch the files it would change
                with pytest.raises(Exception, match="inlined deletions"):
                    plan_restore(lake, "t", snapshot_id=3)
                plan = plan_flush(lake)
                assert plan.report().extra["deletions_flushed"] == 8 + 2 + 2  # t, p, d
                assert "x" not in " ".join(plan.report().notes)  # auto_compact off
            _run(con, a, f"CALL ducklake_flush_inlined_data('{ALIAS}')")
            if backend == "sqlite":  # the CLI too: plan and confirmation name the deletions
                code, _, err = run_main(capsys, "maintain", "flush", b.catalog, "--yes")
                said = " ".join(err.split())
                assert code == 0 and "12 inlined deletion(s) of 5 data file(s) into delete files" in said, said
            else:
                with Lake.open(b.catalog) as lake:
                    plan_flush(lake).apply(lake)
            _compare(con, a, b, new_from)
            assert _delete_contents(con, b) == _delete_contents(con, a)
            after = _snapshots(con, b, since)
            assert after == _snapshots(con, a, since)
            assert {k: v for k, v in after.items() if k[0] <= latest} == before
            with Lake.open(b.catalog) as lake:
                assert plan_flush(lake).is_empty()  # nothing left (x's deletions stay, as in DuckDB's lake)
                # restore now works: back to before any inlined deletion, and to between two of them
                for target in (2, 7):
                    done = plan_restore(lake, "t", snapshot_id=target).apply(lake).extra["snapshot_id"]
                    got = _run(con, b, f"SELECT rowid, * FROM t AT (VERSION => {done})")
                    assert Counter(got) == Counter(_run(con, a, f"SELECT rowid, * FROM t AT (VERSION => {target})"))
            # DuckDB goes on deleting from files whose delete files we wrote, on both lakes
            query = "SELECT rowid, * FROM p UNION ALL SELECT rowid, id, NULL FROM d ORDER BY ALL"
            ours, theirs = (_run(con, spot, "DELETE FROM p WHERE id > 30", "DELETE FROM d WHERE id > 24", query)
                            for spot in (b, a))
            assert ours == theirs
    finally:
        con.close()


def test_flush_conflicts_change_nothing_and_a_named_table_is_flushed_alone(tmp_path: Path) -> None:
    """Another writer's inlined deletion, or a delete file replacing one the flush merges, between plan and apply:
    exit-3 conflict, no catalog change, the delete files written for it removed. `--table` flushes that table."""
    from ducklake_cli.errors import CommitConflictError

    con = oracle_connect()
    try:
        with twin_spots("sqlite", tmp_path) as (a, _):
            _run(con, a, "CREATE TABLE t(id INTEGER)", "INSERT INTO t SELECT i FROM range(20) r(i)",
                 "DELETE FROM t WHERE id IN (1, 2)", "CREATE TABLE u(id INTEGER)",
                 "INSERT INTO u SELECT i FROM range(20) r(i)", "DELETE FROM u WHERE id = 3")
            for other in ("DELETE FROM t WHERE id = 5", "DELETE FROM t WHERE id >= 10"):  # inline; a delete file
                with Lake.open(a.catalog) as lake:
                    plan = plan_flush(lake, table="t")
                    _run(con, a, other)
                    files = sorted(p.name for p in a.data_path.rglob("*.parquet"))
                    snapshots = _run(con, a, f"SELECT count(*) FROM {META}.ducklake_snapshot")
                    with pytest.raises(CommitConflictError) as refused:
                        plan.apply(lake)
                    assert refused.value.exit_code == 3
                assert sorted(p.name for p in a.data_path.rglob("*.parquet")) == files
                assert _run(con, a, f"SELECT count(*) FROM {META}.ducklake_snapshot") == snapshots
                assert _run(con, a, f"SELECT count(*) FROM {META}.ducklake_inlined_delete_1")[0][0] == 3
            with Lake.open(a.catalog) as lake:
                plan_flush(lake, table="t").apply(lake)
            left = [_run(con, a, f"SELECT count(*) FROM {META}.{s.inlined_delete_table_name(i)}")[0][0]
                    for i in (1, 2)]
            assert left == [0, 1]  # u's deletion stays
            assert [r[0] for r in _run(con, a, "SELECT id FROM t ORDER BY id")] == [0, 3, 4, 6, 7, 8, 9]
    finally:
        con.close()
