"""DuckDB-built lakes with a varied history (inserts, deletes, updates, inlined rows and deletions, schema changes,
flush, compaction, views, macros) and DuckDB's reading of every table at every snapshot, for copy-catalog and the
per-snapshot metrics."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb

from tests.support.oracle import oracle_connect, sql_str

HISTORY = [
    "CREATE TABLE t(a INTEGER, b VARCHAR, c TIMESTAMPTZ, d BLOB, e BOOLEAN, f DECIMAL(18,3), g INTEGER[], "
    "h STRUCT(x INT, y VARCHAR))",
    "INSERT INTO t SELECT i, 's' || i, TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) HOUR, '\\x00\\xFF'::BLOB, "
    "i % 2 = 0, i / 7, [i, i + 1], {'x': i, 'y': 'q'} FROM range(10) r(i)",
    "INSERT INTO t VALUES (100, 'inl', TIMESTAMPTZ '2024-02-03 04:05:06.789+00', 'ab\\x01'::BLOB, true, 1.5, "
    "[1, NULL], {'x': NULL, 'y': 'é'})",
    "DELETE FROM t WHERE a < 3",
    "UPDATE t SET b = 'upd' WHERE a = 5",
    "DELETE FROM t WHERE a = 100",
    "ALTER TABLE t ADD COLUMN z BIGINT",
    "INSERT INTO t (a, z) VALUES (200, 9223372036854775807)",
    "CREATE TABLE u AS SELECT range AS k FROM range(5)",
    "INSERT INTO u VALUES (7)",
    "CALL ducklake_flush_inlined_data('lake')",
    "CALL ducklake_merge_adjacent_files('lake')",
    "CREATE VIEW v AS SELECT * FROM u",
    "INSERT INTO u VALUES (8)",
    "DELETE FROM u WHERE k = 8",
    "CREATE MACRO m(x) AS x + 1",
    "INSERT INTO t (a, b) VALUES (300, 'live inlined')",
    "DELETE FROM u WHERE k = 0",
    "ALTER TABLE u RENAME COLUMN k TO kk",
    "INSERT INTO u SELECT range FROM range(100, 120)",
    "UPDATE u SET kk = kk + 1000 WHERE kk >= 110",
]


def attach_sql(backend: str, target: str | os.PathLike[str], *, alias: str = "lake", data_path: str | None = None,
               inlining: int | None = None) -> str:
    """ATTACH for a lake (DATA_PATH only when given: otherwise DuckDB uses the stored one), read-only unless
    `inlining` is set (building)."""
    from tests.support.oracle import postgres_dsn

    if backend == "postgres":
        uri = f"ducklake:postgres:{postgres_dsn(str(target))}"
    else:
        uri = f"ducklake:sqlite:{target}" if backend == "sqlite" else f"ducklake:{target}"
    options = [f"DATA_PATH {sql_str(data_path)}"] if data_path else []
    options.append(f"DATA_INLINING_ROW_LIMIT {inlining}" if inlining is not None else "READ_ONLY")
    return f"ATTACH {sql_str(uri)} AS {alias} ({', '.join(options)})"


def build_history_lake(root: Path) -> Path:
    """A SQLite catalog built by DuckDB with HISTORY (inlining limit 3) and data under root/data; its path."""
    root.mkdir(parents=True, exist_ok=True)
    catalog = root / "cat.sqlite"
    con = oracle_connect()
    try:
        con.execute(attach_sql("sqlite", catalog, data_path=str(root / "data") + "/", inlining=3))
        con.execute("USE lake")
        for statement in HISTORY:
            con.execute(statement)
        con.execute("USE memory")
        con.execute("DETACH lake")
    finally:
        con.close()
    return catalog


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return sorted(con.execute(sql).fetchall(), key=repr)


def read_every_snapshot(attach: str, tables: tuple[str, ...] = ("t", "u")) -> dict[int, dict[str, Any]]:
    """DuckDB's rows of each table at every snapshot: {snapshot: {name: sorted rows, or "<missing>"}}."""
    con = oracle_connect()
    try:
        con.execute(attach)
        snapshots = [r[0] for r in con.execute("SELECT snapshot_id FROM ducklake_snapshots('lake') ORDER BY 1")
                     .fetchall()]
        out: dict[int, dict[str, Any]] = {}
        for n in snapshots:
            out[n] = {}
            for name in tables:
                try:
                    out[n][name] = _rows(con, f"SELECT * FROM lake.{name} AT (VERSION => {n})")
                except duckdb.Error:
                    out[n][name] = "<missing>"
        con.execute("USE memory")
        con.execute("DETACH lake")
    finally:
        con.close()
    return out


METRICS_HISTORY = [
    "CREATE TABLE t(a INTEGER, b VARCHAR)",
    "INSERT INTO t SELECT i, 's' || i FROM range(10) r(i)",
    "INSERT INTO t VALUES (100, 'x'), (101, 'y')",
    "DELETE FROM t WHERE a < 2",
    "DELETE FROM t WHERE a = 100",
    "UPDATE t SET b = 'u' WHERE a = 5",
    "DELETE FROM t WHERE a < 4",
    "ALTER TABLE t ADD COLUMN z BIGINT",
    "INSERT INTO t (a, z) VALUES (200, 1)",
    "INSERT INTO t SELECT i, 'w', i FROM range(1000, 1020) r(i)",
    "DELETE FROM t WHERE a >= 1000",
    "UPDATE t SET z = 7 WHERE a >= 5",
    "CREATE TABLE u AS SELECT range AS k FROM range(5)",
    "DELETE FROM u WHERE k = 1",
    "INSERT INTO u SELECT range FROM range(10, 30)",
    "DELETE FROM u WHERE k IN (10, 11)",
    "DELETE FROM u WHERE k IN (12, 13, 14, 15)",
    "ALTER TABLE u RENAME TO w",
    "DELETE FROM w",
    "INSERT INTO w VALUES (1), (2)",
    "DROP TABLE w",
    "DELETE FROM t WHERE a = 101",
]


def build_lake(root: Path, statements: list[str], *, inlining: int = 3) -> Path:
    """A SQLite catalog built by DuckDB running `statements` (one snapshot each) with data under root/data."""
    root.mkdir(parents=True, exist_ok=True)
    catalog = root / "cat.sqlite"
    con = oracle_connect()
    try:
        con.execute(attach_sql("sqlite", catalog, data_path=str(root / "data") + "/", inlining=inlining))
        con.execute("USE lake")
        for statement in statements:
            con.execute(statement)
        con.execute("USE memory")
        con.execute("DETACH lake")
    finally:
        con.close()
    return catalog


def live_state(attach: str, tables: dict[int, tuple[str, ...]], *,
               last_only: bool = False) -> dict[int, dict[int, tuple[int, int, int, int]]]:
    """Per snapshot (or the last only) and table id (read by whichever of its names exists then): DuckDB's row
    count, live data files, live delete files and their bytes together, from `count(*)` and `ducklake_list_files`."""
    con = oracle_connect()
    out: dict[int, dict[int, tuple[int, int, int, int]]] = {}
    try:
        con.execute(attach)
        snapshots = [r[0] for r in con.execute("SELECT snapshot_id FROM ducklake_snapshots('lake') ORDER BY 1")
                     .fetchall()]
        for n in snapshots[-1:] if last_only else snapshots:
            out[n] = {}
            for tid, names in tables.items():
                for name in names:
                    try:
                        rows = con.execute(f"SELECT count(*) FROM lake.{name} AT (VERSION => {n})").fetchone()
                        files = con.execute(
                            "SELECT count(*), count(delete_file), coalesce(sum(data_file_size_bytes), 0) + "
                            f"coalesce(sum(delete_file_size_bytes), 0) FROM ducklake_list_files('lake', '{name}', "
                            f"snapshot_version => {n})").fetchone()
                    except duckdb.Error:
                        continue
                    assert rows is not None and files is not None
                    out[n][tid] = (int(rows[0]), int(files[0]), int(files[1]), int(files[2]))
                    break
        con.execute("USE memory")
        con.execute("DETACH lake")
    finally:
        con.close()
    return out


TYPED_HISTORY = [
    'CREATE TABLE k("MyCol" INTEGER, "Other Name" VARCHAR, ts TIMESTAMP, iv INTERVAL, u UUID, bl BLOB, js JSON, '
    "ui UBIGINT, hi HUGEINT, tt TIME, tz TIMETZ, f FLOAT, d DOUBLE, m MAP(VARCHAR, INTEGER), dt DATE, us USMALLINT, "
    "ti TINYINT, dc DECIMAL(38,10), l VARCHAR[], s STRUCT(\"A b\" INTEGER, c DOUBLE[]))",
    "INSERT INTO k VALUES (1, 'a''b\\n', TIMESTAMP '2024-01-01 01:02:03.456789', INTERVAL '1 year 2 days 3 seconds', "
    "'00000000-0000-0000-0000-00000000002a', '\\x00\\x01\\xFF'::BLOB, '{\"a\": [1, null]}', 18446744073709551615, "
    "-170141183460469231731687303715884105728, TIME '01:02:03.5', TIMETZ '01:02:03+05', 1.5, 'nan'::DOUBLE, "
    "MAP {'k': 1}, DATE '2000-02-29', 65535, -128, 1234567890123456789012345678.0123456789, ['x', NULL], "
    "{'A b': 7, 'c': [1.25, -0.0]})",
    "INSERT INTO k (\"MyCol\") VALUES (NULL), (3)",
    "DELETE FROM k WHERE \"MyCol\" = 3",
]
