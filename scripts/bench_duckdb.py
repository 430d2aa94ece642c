"""DuckDB side of `scripts/bench.py`: DuckDB with the extensions it needs, TPC-H data and queries, lake helpers.

Extensions come from the `duckdb-extension-<name>==1.5.5` wheels through the package's one offline loader,
`ducklake_cli.duckdb_extensions`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from ducklake_cli.duckdb_extensions import connect as connect_with

EXTENSIONS = ("ducklake", "sqlite", "tpch")
TPCH_TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")
_TABLE_WORD = re.compile(r"\b(" + "|".join(TPCH_TABLES) + r")\b", re.IGNORECASE)


def connect(database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """DuckDB with ducklake, sqlite and tpch loaded offline, in UTC."""
    return connect_with(database, EXTENSIONS)


def quote(text: str) -> str:
    """SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def attach(con: duckdb.DuckDBPyConnection, catalog: Path, data_path: Path, alias: str = "lake") -> None:
    """Attach a SQLite-catalog DuckLake with default settings."""
    data = str(data_path).rstrip("/") + "/"
    catalog.parent.mkdir(parents=True, exist_ok=True)
    con.execute(f"ATTACH {quote('ducklake:sqlite:' + str(catalog))} AS {alias} (DATA_PATH {quote(data)})")


def generate_tpch(con: duckdb.DuckDBPyConnection, sf: float) -> None:
    """TPC-H tables at scale factor `sf` in the connection's in-memory database (DuckDB's dbgen)."""
    con.execute(f"CALL dbgen(sf={sf})")


def tpch_queries(con: duckdb.DuckDBPyConnection) -> dict[int, str]:
    """The 22 TPC-H queries as DuckDB ships them (without the trailing semicolon)."""
    rows = con.execute("SELECT query_nr, query FROM tpch_queries() ORDER BY query_nr").fetchall()
    return {int(n): str(q).strip().rstrip(";").strip() for n, q in rows}


def spark_dialect(query: str) -> tuple[str, list[str]]:
    """The query as Spark SQL, and what was changed. DuckDB 1.5.5's texts use only `CAST('…' AS date)`, `date '…'`,
    `extract(year FROM …)`, `substring(… FROM … FOR …)` and `LIMIT`, which Spark SQL parses as they are; the rewrites
    below cover older dbgen texts (`interval` arithmetic on dates, `::` casts) should the extension's texts change."""
    changes: list[str] = []
    out = query
    interval = re.compile(r"(CAST\('[0-9-]+' AS date\)|date '[0-9-]+')\s*([+-])\s*"
                          r"INTERVAL\s*'?(\d+)'?\s*(year|month|day)s?", re.IGNORECASE)
    if interval.search(out):
        out = interval.sub(lambda m: f"{m.group(1)} {m.group(2)} INTERVAL {m.group(3)} {m.group(4).upper()}", out)
        changes.append("interval literal")
    casts = re.compile(r"'([0-9-]+)'::date", re.IGNORECASE)
    if casts.search(out):
        out = casts.sub(r"CAST('\1' AS date)", out)
        changes.append("`::date` cast")
    return out, changes


def tables_in(query: str) -> list[str]:
    """TPC-H tables a query names."""
    return sorted({m.group(1).lower() for m in _TABLE_WORD.finditer(query)})


def lake_files(con: duckdb.DuckDBPyConnection, alias: str, table: str) -> list[str]:
    """Data files of a table at the lake's latest snapshot (absolute paths)."""
    rows = con.execute(f"SELECT data_file FROM ducklake_list_files({quote(alias)}, {quote(table)})").fetchall()
    return [str(r[0]) for r in rows]


def latest_snapshot(con: duckdb.DuckDBPyConnection, alias: str) -> int:
    """The lake's current snapshot id."""
    row = con.execute(f"SELECT max(snapshot_id) FROM ducklake_snapshots({quote(alias)})").fetchone()
    assert row is not None
    return int(row[0])


def export_parquet(con: duckdb.DuckDBPyConnection, table: str, path: Path) -> None:
    """Write one in-memory table to a Parquet file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con.execute(f"COPY memory.main.{table} TO {quote(str(path))} (FORMAT parquet)")


def write_source(con: duckdb.DuckDBPyConnection, rows: int, path: Path) -> None:
    """`rows` × 10 columns of mixed types (the write benchmark's input) as one Parquet file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con.execute(f"""
        COPY (SELECT i AS id, (i % 1000)::INTEGER AS k, i * 0.5 AS x, (i % 100000 / 100.0)::DECIMAL(12, 2) AS amount,
                     'name-' || (i % 5000) AS name, DATE '2020-01-01' + (i % 2000)::INTEGER AS day,
                     TIMESTAMP '2020-01-01' + to_seconds(i) AS ts, i % 3 = 0 AS flag, (hash(i) % 1000000)::BIGINT AS h,
                     md5(i::VARCHAR)[:12] AS code
              FROM range({rows}) r(i))
        TO {quote(str(path))} (FORMAT parquet)""")


def cpu_count() -> int:
    """Cores available to this process."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
