"""Multi-snapshot lakes built by DuckDB 1.5.5 for the restore tests, and the oracle check: DuckDB reads the
restored snapshot as it reads snapshot N, and every older snapshot as before."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from tests.support.oracle import attach_clause, oracle_connect

TABLE = "t"


@dataclass(frozen=True)
class Scenario:
    """A named list of DuckDB statements on table `t` (each its own snapshot), with the inlining row limit."""

    name: str
    statements: tuple[str, ...]
    inline_limit: int = 0


def _rows(a: int, b: int, tag: str) -> str:
    return f"SELECT i, '{tag}' || i, i * 1.5 FROM range({a}, {b}) r(i)"


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("appends_deletes", (
        "CREATE TABLE t(id INTEGER, s VARCHAR, x DOUBLE)",
        f"INSERT INTO t {_rows(0, 50, 'a')}",
        f"INSERT INTO t {_rows(50, 100, 'b')}",
        "DELETE FROM t WHERE id % 7 = 0",
        "DELETE FROM t WHERE id BETWEEN 50 AND 99",
        f"INSERT INTO t {_rows(100, 130, 'c')}",
        "DELETE FROM t WHERE id % 5 = 1",
    )),
    Scenario("updates", (
        "CREATE TABLE t(id INTEGER, s VARCHAR, x DOUBLE)",
        f"INSERT INTO t {_rows(0, 60, 'a')}",
        "UPDATE t SET x = x + 1 WHERE id % 3 = 0",
        "UPDATE t SET s = s || '!' WHERE id < 20",
        "DELETE FROM t WHERE id % 4 = 2",
        "UPDATE t SET x = -x WHERE id % 3 = 0",
        f"INSERT INTO t {_rows(60, 70, 'b')}",
    )),
    Scenario("inlined_flush", (
        "CREATE TABLE t(id INTEGER, s VARCHAR, x DOUBLE)",
        "INSERT INTO t VALUES (1, 'a', 1.0), (2, 'b', 2.0), (3, 'c', 3.0)",
        "DELETE FROM t WHERE id = 2",
        "UPDATE t SET s = 'cc' WHERE id = 3",
        f"INSERT INTO t {_rows(100, 130, 'f')}",
        "DELETE FROM t WHERE id IN (1, 100)",
        "INSERT INTO t VALUES (4, 'd', 4.0)",
        "CALL ducklake_flush_inlined_data('lake')",
        "DELETE FROM t WHERE id IN (3, 101)",
        # inlined deletions of file rows are flushed before any restore (restore refuses otherwise: DuckDB's flush)
        "CALL ducklake_flush_inlined_data('lake')",
        "INSERT INTO t VALUES (5, 'e', 5.0)",
    ), inline_limit=10),
    Scenario("compaction_rewrite", (
        "CREATE TABLE t(id INTEGER, s VARCHAR, x DOUBLE)",
        f"INSERT INTO t {_rows(0, 20, 'a')}",
        f"INSERT INTO t {_rows(20, 40, 'b')}",
        f"INSERT INTO t {_rows(40, 60, 'c')}",
        "CALL ducklake_merge_adjacent_files('lake')",
        "DELETE FROM t WHERE id % 3 = 0",
        f"INSERT INTO t {_rows(60, 80, 'd')}",
        "DELETE FROM t WHERE id < 35",
        "CALL ducklake_rewrite_data_files('lake', 't', delete_threshold => 0.1)",
        f"INSERT INTO t {_rows(80, 85, 'e')}",
        "CALL ducklake_merge_adjacent_files('lake')",
    )),
    Scenario("schema_partitions", (
        "CREATE TABLE t(id INTEGER, s VARCHAR, x DOUBLE)",
        "COMMENT ON TABLE t IS 'first'",
        f"INSERT INTO t {_rows(0, 20, 'a')}",
        "ALTER TABLE t ADD COLUMN k INTEGER DEFAULT 7",
        "INSERT INTO t SELECT i, 'b' || i, i * 2.0, i % 3 FROM range(20, 40) r(i)",
        "ALTER TABLE t RENAME COLUMN s TO label",
        "ALTER TABLE t ALTER COLUMN id TYPE BIGINT",
        "ALTER TABLE t SET PARTITIONED BY (k)",
        "INSERT INTO t SELECT i, 'c' || i, i * 3.0, i % 2 FROM range(40, 60) r(i)",
        "ALTER TABLE t DROP COLUMN x",
        "COMMENT ON TABLE t IS 'later'",
        "COMMENT ON COLUMN t.label IS 'text'",
        "ALTER TABLE t SET SORTED BY (id DESC)",
        "DELETE FROM t WHERE id % 4 = 0",
        "INSERT INTO t SELECT i, 'd' || i, i % 2 FROM range(60, 70) r(i)",
        "ALTER TABLE t RESET PARTITIONED BY",
        "DELETE FROM t",
        "INSERT INTO t SELECT i, 'e' || i, 1 FROM range(70, 75) r(i)",
        "BEGIN; DELETE FROM t; INSERT INTO t SELECT i, 'f' || i, 2 FROM range(80, 85) r(i); COMMIT",
    )),
)

# Nested columns (struct fields added, renamed, dropped), inlined rows, and a table renamed from t to t2.
NESTED_RENAMED = Scenario("nested_renamed", (
    "CREATE TABLE t(id INTEGER, st STRUCT(a INTEGER, b VARCHAR))",
    "INSERT INTO t VALUES (1, {'a': 1, 'b': 'x'}), (2, {'a': 2, 'b': 'y'})",
    "ALTER TABLE t ADD COLUMN st.c DOUBLE",
    "INSERT INTO t VALUES (3, {'a': 3, 'b': 'z', 'c': 1.5})",
    "ALTER TABLE t RENAME COLUMN st.b TO bb",
    "ALTER TABLE t RENAME TO t2",
    "UPDATE t2 SET id = id + 10 WHERE id = 1",
    "ALTER TABLE t2 DROP COLUMN st.a",
    "INSERT INTO t2 VALUES (4, {'bb': 'q', 'c': 2.5})",
), inline_limit=5)


# A file with inlined deletions (snapshot 3) and a delete file (snapshot 4): restore refuses until DuckDB flushes.
INLINED_DELETES = Scenario("inlined_deletes", (
    "CREATE TABLE t(id INTEGER, s VARCHAR)",
    "INSERT INTO t SELECT i, 'v' || i FROM range(20) r(i)",
    "DELETE FROM t WHERE id % 5 = 1",
    "DELETE FROM t WHERE id % 2 = 1",
), inline_limit=5)


def attach(backend: str, catalog: str, data: Path, scenario: Scenario | None = None) -> str:
    """The ATTACH statement (the inlining limit set when the lake is created)."""
    extra = f"DATA_INLINING_ROW_LIMIT {scenario.inline_limit}" if scenario is not None else ""
    return attach_clause(backend, catalog, data, "lake", extra)


def build(backend: str, catalog: str, data: Path, scenario: Scenario,
          *names: str) -> dict[int, Counter[tuple[Any, ...]]]:
    """Create the lake and run the scenario, one snapshot per statement; DuckDB's reading of every snapshot."""
    con = oracle_connect()
    try:
        con.execute(attach(backend, catalog, data, scenario))
        con.execute("USE lake")
        for sql in scenario.statements:
            con.execute(sql)
        con.execute("USE memory")
        return read_snapshots(con, *(names or (TABLE,)))
    finally:
        con.close()


def _norm(value: Any) -> Any:
    """A value in one hashable, comparable form (structs as sorted pairs, lists as tuples, floats rounded)."""
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=False)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _norm(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_norm(v) for v in value)
    if isinstance(value, float):
        return round(value, 9)
    return value


def read_snapshots(con: duckdb.DuckDBPyConnection, table: str = TABLE,
                   *also: str) -> dict[int, Counter[tuple[Any, ...]]]:
    """Every snapshot at which `lake.<table>` (or, for a renamed table, a name in `also`) exists, read by DuckDB:
    its rows as a multiset (column names first)."""
    out: dict[int, Counter[tuple[Any, ...]]] = {}
    ids = [r[0] for r in con.execute("SELECT snapshot_id FROM ducklake_snapshots('lake') ORDER BY 1").fetchall()]
    for sid in ids:
        cur = None
        for name in (table, *also):
            try:
                cur = con.execute(f"SELECT * FROM lake.{name} AT (VERSION => {sid})")
                break
            except duckdb.Error:
                continue
        if cur is None:
            continue
        names = tuple(d[0] for d in cur.description or ())
        rows = Counter(tuple(_norm(v) for v in r) for r in cur.fetchall())
        rows[("__columns__", *names)] = 1
        out[sid] = rows
    return out


def oracle_reads(backend: str, catalog: str, data: Path,
                 *names: str) -> tuple[dict[int, Counter[tuple[Any, ...]]], list[Any]]:
    """DuckDB's reading of every snapshot, and its parsed `ducklake_snapshots()` change maps."""
    con = oracle_connect()
    try:
        con.execute(attach(backend, catalog, data))
        reads = read_snapshots(con, *(names or (TABLE,)))
        changes = con.execute("SELECT snapshot_id, changes FROM ducklake_snapshots('lake') ORDER BY 1").fetchall()
        return reads, changes
    finally:
        con.close()


def retarget_sqlite(catalog: Path, data: Path) -> None:
    """Point a copied SQLite catalog at its copied data directory."""
    import sqlite3

    db = sqlite3.connect(catalog)
    try:
        db.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", (str(data) + os.sep,))
        db.commit()
    finally:
        db.close()


def check_restored(before: dict[int, Counter[tuple[Any, ...]]], after: dict[int, Counter[tuple[Any, ...]]],
                   target: int, new: int, where: str) -> None:
    """The new snapshot reads as `target` did, and every snapshot that existed reads as before."""
    assert new in after, f"{where}: snapshot {new} not readable"
    assert after[new] == before[target], f"{where}: snapshot {new} differs from snapshot {target}: " \
        f"extra {after[new] - before[target]}, missing {before[target] - after[new]}"
    for sid, rows in before.items():
        assert after.get(sid) == rows, f"{where}: snapshot {sid} reads differently after the restore"


Restorer = Callable[[int], int | None]
