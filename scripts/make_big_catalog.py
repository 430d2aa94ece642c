#!/usr/bin/env python
"""Build a large but real DuckLake (many snapshots, many data files) quickly, for benchmarks.

    python scripts/make_big_catalog.py /tmp/big/cat.sqlite --data-path /tmp/big/data --snapshots 10000 --files 10000
    python scripts/make_big_catalog.py --catalog postgresql://lake:lake@127.0.0.1:55432/big --data-path /tmp/big/data

How it works:

1. **Bootstrap with DuckDB itself** (the ``ducklake`` extension, loaded offline as in ``tests/fixtures/oracle.py``):
   ``ATTACH 'ducklake:…'``, ``CREATE TABLE main.events(id BIGINT, ts TIMESTAMP, v VARCHAR)`` (plus ``events_2`` …
   with ``--tables``), one ``INSERT`` of ``--rows-per-file`` rows per table (> the inlining limit, so it goes to a
   Parquet file), ``DETACH``. That yields a valid catalog, real Parquet files with field ids and DuckDB's own stats
   rows: ``1 + 2 × tables`` snapshots and ``tables`` data files.
2. **Data files.** ``--mode distinct`` (default): one DuckDB ``COPY … (FIELD_IDS {id: 1, ts: 2, v: 3},
   PARTITION_BY (k))`` writes every new file at once — byte-for-byte what DuckLake's INSERT writes for the same rows
   (same writer, same options), each file holding its own id range. The files are moved into the table directory as
   ``ducklake-<uuidv7>.parquet``; their stats rows are derived from the Parquet footers (pyarrow) and the derivation
   is checked against DuckDB's own stats rows of the bootstrap files first. ``--mode copy``: byte copies of the
   table's bootstrap file, reusing its stats rows (fastest; every file holds the same ids — row ids still differ,
   they come from ``row_id_start``).
3. **Catalog rows**, appended with plain SQL in one transaction (sqlite3 / psycopg), exactly what DuckDB writes for
   an INSERT: ``ducklake_snapshot`` (schema_version and next_catalog_id unchanged, next_file_id advanced),
   ``ducklake_snapshot_changes`` (``inserted_into_table:<tid>``), ``ducklake_data_file`` (exact size and footer
   length, ``row_id_start`` = the table's next row id, path relative to the table directory), one
   ``ducklake_file_column_stats`` row per column, then ``ducklake_table_stats`` / ``ducklake_table_column_stats``
   updated once at the end.

``--snapshots N`` and ``--files M`` count what is *appended* after the bootstrap. The M files are spread evenly over
the N snapshots (snapshot j inserts ``floor((j+1)·M/N) − floor(j·M/N)`` files, into table ``j mod tables``); a
snapshot that gets no file (only when M < N) is an inlined insert instead, as DuckDB writes one for a small INSERT:
``--inline-rows`` rows (≤ 10, the default inlining limit) into ``ducklake_inlined_data_<tid>_<sv>``, change
``inlined_insert:<tid>``, next_file_id + 1.

Staging: DuckDB's partitioned COPY creates one directory per file; it writes into ``--staging-dir``, by default
``/dev/shm`` when it has room (much faster than a disk for 10 000 tiny directories), else the data path; the staging
tree is removed at the end.

Snapshot times: all snapshots (the bootstrap ones included — they are rewritten) are spaced ``--interval`` seconds
apart and end at the generation time, so the history lies in the past and ``AT (TIMESTAMP => …)`` works on it.

Data: chunk k (k = 0 … tables + M − 1; chunk t < tables is table t's bootstrap file) holds ids
``k·R … k·R + R − 1`` with ``ts = 2024-01-01 + id seconds`` and ``v = 'v' || id``; inlined rows take ids after the
last chunk. Totals: snapshots = 1 + 2·tables + N; rows = (tables + M)·R + (inlined snapshots)·inline_rows.

Limits: the data path must be a local directory; a PostgreSQL database must not hold a DuckLake yet (no --force for
it). ``--force`` removes an existing SQLite catalog file and the table directories this script would write.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import secrets
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]

COLUMNS_SQL = "id BIGINT, ts TIMESTAMP, v VARCHAR"
FIELD_IDS = "{id: 1, ts: 2, v: 3}"  # DuckDB gives a new table's columns the ids 1, 2, 3 in order
INLINING_LIMIT = 10  # DuckDB's default data_inlining_row_limit
BASE_TS = dt.datetime(2024, 1, 1)
STAGING_PREFIX = ".make_big_catalog-staging-"


def chunk_select(first_chunk: int, last_chunk: int, rows: int) -> str:
    """SELECT of the rows of chunks ``first_chunk … last_chunk - 1`` (``rows`` each) plus the chunk number ``k``."""
    return (
        "SELECT i AS id, TIMESTAMP '2024-01-01 00:00:00' + to_seconds(i) AS ts, 'v' || i AS v, "
        f"i // {rows} AS k FROM range({first_chunk * rows}, {last_chunk * rows}) t(i)"
    )


def table_name(index: int) -> str:
    """Name of the ``index``-th generated table: ``events``, ``events_2``, ``events_3`` …"""
    return "events" if index == 0 else f"events_{index + 1}"


def uuid7() -> str:
    """A UUIDv7 string (48-bit Unix milliseconds, version 7, RFC 4122 variant), as DuckDB names its files."""
    value = (int(time.time() * 1000) & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= secrets.randbits(12) << 64
    value |= 0b10 << 62
    value |= secrets.randbits(62)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def duckdb_time_text(ts: dt.datetime) -> str:
    """A UTC time as DuckDB renders TIMESTAMPTZ into a SQLite catalog: ``2026-11-21 22:36:24.341506+00``."""
    text = ts.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    if ts.microsecond:
        text += f".{ts.microsecond:06d}".rstrip("0")
    return text + "+00"


def duckdb_value_text(value: Any) -> str:
    """A Parquet min/max statistic (as pyarrow decodes it) rendered like DuckLake's stats strings."""
    if isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        if value.microsecond:
            text += f".{value.microsecond:06d}".rstrip("0")
        return text
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def typed_key(column_type: str) -> Callable[[str], Any]:
    """Sort key for a stats string of a DuckLake column type (for merging min/max into table stats)."""
    if column_type.startswith(("int", "uint")):
        return int
    if column_type.startswith("timestamp"):
        return lambda text: dt.datetime.fromisoformat(text.removesuffix("+00"))
    return lambda text: text.encode("utf-8")  # strings compare bytewise


# --------------------------------------------------------------------------------------------------------------
# Options


@dataclass(frozen=True)
class Options:
    """What to build (see the module docstring and ``--help``)."""

    catalog: str
    data_path: Path
    snapshots: int = 10000
    files: int = 10000
    tables: int = 1
    rows_per_file: int = 100
    inline_rows: int = 1
    mode: str = "distinct"
    interval: float = 1.0
    force: bool = False
    verify: bool = False
    staging_dir: Path | None = None

    @property
    def is_postgres(self) -> bool:
        """True when the catalog is a PostgreSQL URL."""
        return self.catalog.startswith(("postgresql://", "postgres://", "postgresql+"))

    def validate(self) -> None:
        """Raise ``SystemExit`` with a message for inconsistent numbers."""
        problems = []
        if self.snapshots < 0 or self.files < 0:
            problems.append("--snapshots and --files must be >= 0")
        if self.files > 0 and self.snapshots == 0:
            problems.append("--files > 0 needs --snapshots > 0 (every file is added by some snapshot)")
        if self.tables < 1:
            problems.append("--tables must be >= 1")
        if self.rows_per_file <= INLINING_LIMIT:
            problems.append(f"--rows-per-file must be > {INLINING_LIMIT} (DuckDB inlines smaller inserts)")
        if not 1 <= self.inline_rows <= INLINING_LIMIT:
            problems.append(f"--inline-rows must be 1..{INLINING_LIMIT}")
        if self.mode not in ("distinct", "copy"):
            problems.append("--mode must be distinct or copy")
        if self.interval <= 0:
            problems.append("--interval must be > 0")
        if problems:
            raise SystemExit("make_big_catalog: " + "; ".join(problems))

    def files_in_snapshot(self, j: int) -> int:
        """How many data files appended snapshot ``j`` (0-based) inserts; 0 means an inlined insert."""
        n, m = self.snapshots, self.files
        return (j + 1) * m // n - j * m // n


# --------------------------------------------------------------------------------------------------------------
# Catalog access: sqlite3 or psycopg, with bulk inserts


class Catalog:
    """A write transaction on the catalog database, hiding the sqlite3 / psycopg differences."""

    def __init__(self, options: Options) -> None:
        self.postgres = options.is_postgres
        self.con: Any
        if self.postgres:
            import psycopg

            self.con = psycopg.connect(_plain_pg_url(options.catalog))
        else:
            self.con = sqlite3.connect(options.catalog, isolation_level=None)
            self.con.execute("BEGIN IMMEDIATE")
        self._types: dict[str, dict[str, str]] = {}

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a SELECT (``?`` placeholders)."""
        cur = self.con.execute(self._sql(sql), tuple(params))
        return [tuple(r) for r in cur.fetchall()]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement (``?`` placeholders)."""
        self.con.execute(self._sql(sql), tuple(params))

    def column_types(self, table: str) -> dict[str, str]:
        """Declared column types of a catalog table, lower-cased (``bytea``, ``varchar`` …)."""
        if table not in self._types:
            if self.postgres:
                rows = self.query(
                    "SELECT column_name, data_type FROM information_schema.columns "
                    "WHERE table_name = ? AND table_schema = current_schema()", [table])
            else:
                rows = [(r[1], r[2]) for r in self.query(f'PRAGMA table_info("{table}")')]
            self._types[table] = {str(n): str(t).lower() for n, t in rows}
        return self._types[table]

    def bool_value(self, value: bool | None) -> Any:
        """A BOOLEAN catalog column value (SQLite stores 0/1)."""
        if value is None or self.postgres:
            return value
        return int(value)

    def time_value(self, ts: dt.datetime) -> Any:
        """A TIMESTAMPTZ catalog column value (SQLite: DuckDB's text form)."""
        return ts if self.postgres else duckdb_time_text(ts)

    def insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Bulk insert (``COPY FROM STDIN`` on PostgreSQL, ``executemany`` on SQLite)."""
        if not rows:
            return
        cols = ", ".join(f'"{c}"' for c in columns)
        if self.postgres:
            with self.con.cursor() as cur, cur.copy(f'COPY "{table}" ({cols}) FROM STDIN') as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            marks = ", ".join("?" for _ in columns)
            self.con.executemany(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', rows)

    def commit(self) -> None:
        """Commit the transaction."""
        if self.postgres:
            self.con.commit()
        else:
            self.con.execute("COMMIT")

    def close(self) -> None:
        """Roll back anything uncommitted and close."""
        if not self.postgres and self.con.in_transaction:
            self.con.execute("ROLLBACK")
        self.con.close()


def _plain_pg_url(url: str) -> str:
    """``postgresql+psycopg://…`` → ``postgresql://…`` (libpq accepts only the plain scheme)."""
    scheme, _, rest = url.partition("://")
    return "postgresql://" + rest if scheme.startswith("postgres") else url


# --------------------------------------------------------------------------------------------------------------
# Step 1: bootstrap with DuckDB


def oracle_connect() -> Any:
    """DuckDB with the ducklake/sqlite/postgres extensions loaded offline (tests/fixtures/oracle.py)."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from tests.fixtures.oracle import oracle_connect as connect

    return connect()


def attach_sql(options: Options, alias: str = "lake", read_only: bool = False) -> str:
    """The ``ATTACH 'ducklake:…'`` statement for the catalog."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from tests.fixtures.oracle import attach_clause

    backend = "postgres" if options.is_postgres else "sqlite"
    sql = attach_clause(backend, options.catalog, options.data_path, alias=alias)
    return sql[:-1] + ", READ_ONLY)" if read_only else sql


def prepare_targets(options: Options) -> None:
    """Refuse (or with --force, clear) an existing catalog file / table directories; PostgreSQL must be empty."""
    if options.is_postgres:
        import psycopg

        with psycopg.connect(_plain_pg_url(options.catalog)) as con:
            row = con.execute("SELECT to_regclass('ducklake_metadata') IS NOT NULL").fetchone()
        if row and row[0]:
            raise SystemExit("make_big_catalog: that PostgreSQL database already holds a DuckLake; use an empty one")
    else:
        cat = Path(options.catalog)
        if cat.exists():
            if not options.force:
                raise SystemExit(f"make_big_catalog: {cat} exists (use --force to replace it)")
            cat.unlink()
            for suffix in ("-journal", "-wal", "-shm"):
                Path(str(cat) + suffix).unlink(missing_ok=True)
        cat.parent.mkdir(parents=True, exist_ok=True)
    for i in range(options.tables):
        tdir = options.data_path / "main" / table_name(i)
        if tdir.exists() and any(tdir.iterdir()):
            if not options.force:
                raise SystemExit(f"make_big_catalog: {tdir} is not empty (use --force to clear it)")
            shutil.rmtree(tdir)
    options.data_path.mkdir(parents=True, exist_ok=True)


def bootstrap(options: Options, staging: Path) -> None:
    """Create the lake with DuckDB (tables + one Parquet insert each); write the new files (distinct mode).

    The new files come from one partitioned COPY (``staging/k=<chunk>/data_0.parquet``). Should DuckDB ever split a
    chunk over several files (it closes writers beyond ``partitioned_write_max_open_files``), that chunk is written
    again on its own, so every chunk ends up as exactly one file.
    """
    con = oracle_connect()
    try:
        con.execute(attach_sql(options))
        for t in range(options.tables):
            name = table_name(t)
            con.execute(f"CREATE TABLE lake.main.{name}({COLUMNS_SQL})")
            con.execute(f"INSERT INTO lake.main.{name} SELECT id, ts, v FROM "
                        f"({chunk_select(t, t + 1, options.rows_per_file)})")
        con.execute("DETACH lake")
        if options.mode == "distinct" and options.files:
            con.execute(f"SET partitioned_write_max_open_files = {min(options.files, 1000)}")
            first, rows = options.tables, options.rows_per_file
            con.execute(f"COPY (SELECT id, ts, v, k FROM ({chunk_select(first, first + options.files, rows)})) "
                        f"TO '{staging}' (FORMAT parquet, FIELD_IDS {FIELD_IDS}, PARTITION_BY (k))")
            for k in range(first, first + options.files):
                chunk_dir = staging / f"k={k}"
                found = list(chunk_dir.iterdir()) if chunk_dir.is_dir() else []
                if len(found) != 1:
                    for f in found:
                        f.unlink()
                    chunk_dir.mkdir(exist_ok=True)
                    con.execute(f"COPY (SELECT id, ts, v FROM ({chunk_select(k, k + 1, rows)})) "
                                f"TO '{chunk_dir / 'data_0.parquet'}' (FORMAT parquet, FIELD_IDS {FIELD_IDS})")
    finally:
        con.close()


def staging_root(options: Options) -> Path:
    """Where DuckDB's COPY writes the new files first: ``--staging-dir``, else a RAM disk with room, else the data path.

    A tmpfs is much faster for the 1 directory + 1 file per chunk that a partitioned COPY creates.
    """
    if options.staging_dir is not None:
        return options.staging_dir
    needed = options.files * (64 * options.rows_per_file + 16384) + (64 << 20)
    shm = Path("/dev/shm")
    if options.mode == "distinct" and shm.is_dir() and os.access(shm, os.W_OK):
        st = os.statvfs(shm)
        if st.f_bavail * st.f_frsize > 2 * needed:
            return shm
    return options.data_path


def remove_tree(root: Path) -> None:
    """``rm -rf`` a staging tree of many small directories, in parallel (rmdir is slow on some disks)."""
    if not root.exists():
        return
    subdirs = [p for p in root.iterdir() if p.is_dir()]
    with ThreadPoolExecutor(max_workers=32) as pool:
        list(pool.map(lambda p: shutil.rmtree(p, ignore_errors=True), subdirs, chunksize=64))
    shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------------------------------------------
# Step 2: read what DuckDB wrote


@dataclass
class ColumnStatsRow:
    """One ``ducklake_file_column_stats`` row without its file/table ids."""

    column_id: int
    column_size_bytes: int
    value_count: int
    null_count: int
    min_value: str | None
    max_value: str | None
    contains_nan: bool | None = None
    extra_stats: str | None = None


@dataclass
class FileFacts:
    """A data file's catalog facts: size, footer length, rows and per-column stats."""

    file_size_bytes: int
    footer_size: int
    record_count: int
    stats: list[ColumnStatsRow]


@dataclass
class TableState:
    """A bootstrapped table and its running stats while rows are appended."""

    table_id: int
    name: str
    directory: Path
    column_types: dict[int, str]
    column_names: dict[int, str]
    inlined_table: str
    bootstrap_file: Path
    bootstrap_facts: FileFacts
    record_count: int
    next_row_id: int
    file_size_bytes: int
    col_stats: dict[int, list[Any]] = field(default_factory=dict)  # column_id -> [contains_null, nan, min, max]


def read_tables(cat: Catalog, options: Options) -> tuple[list[TableState], tuple[int, int, int, int]]:
    """The bootstrapped tables and the latest snapshot (id, schema_version, next_catalog_id, next_file_id)."""
    data_path = cat.query("SELECT value FROM ducklake_metadata WHERE key = 'data_path' AND scope IS NULL")[0][0]
    latest = cat.query("SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot "
                       "ORDER BY snapshot_id DESC LIMIT 1")[0]
    tables: list[TableState] = []
    for t in range(options.tables):
        name = table_name(t)
        tid, tpath, trel, spath, srel = cat.query(
            "SELECT t.table_id, t.path, t.path_is_relative, s.path, s.path_is_relative FROM ducklake_table t "
            "JOIN ducklake_schema s USING (schema_id) WHERE t.table_name = ? AND s.schema_name = 'main' "
            "AND t.end_snapshot IS NULL", [name])[0]
        schema_dir = data_path + spath if srel else spath
        directory = Path(schema_dir + tpath if trel else tpath)
        cols = cat.query("SELECT column_id, column_name, column_type FROM ducklake_column WHERE table_id = ? "
                         "AND end_snapshot IS NULL AND parent_column IS NULL ORDER BY column_order", [tid])
        inlined = cat.query("SELECT table_name FROM ducklake_inlined_data_tables WHERE table_id = ? "
                            "ORDER BY schema_version DESC LIMIT 1", [tid])[0][0]
        (fid, fpath, frel, count, size, footer), = cat.query(
            "SELECT data_file_id, path, path_is_relative, record_count, file_size_bytes, footer_size "
            "FROM ducklake_data_file WHERE table_id = ?", [tid])
        stats = [ColumnStatsRow(int(r[0]), int(r[1]), int(r[2]), int(r[3]), r[4], r[5],
                                None if r[6] is None else bool(r[6]), r[7])
                 for r in cat.query("SELECT column_id, column_size_bytes, value_count, null_count, min_value, "
                                    "max_value, contains_nan, extra_stats FROM ducklake_file_column_stats "
                                    "WHERE data_file_id = ? ORDER BY column_id", [fid])]
        rc, nrid, fsb = cat.query("SELECT record_count, next_row_id, file_size_bytes FROM ducklake_table_stats "
                                  "WHERE table_id = ?", [tid])[0]
        state = TableState(
            table_id=int(tid), name=name, directory=directory,
            column_types={int(c[0]): str(c[2]) for c in cols}, column_names={int(c[0]): str(c[1]) for c in cols},
            inlined_table=str(inlined), bootstrap_file=directory / fpath if frel else Path(fpath),
            bootstrap_facts=FileFacts(int(size), int(footer), int(count), stats),
            record_count=int(rc), next_row_id=int(nrid), file_size_bytes=int(fsb),
        )
        for cid, contains_null, nan, lo, hi in cat.query(
                "SELECT column_id, contains_null, contains_nan, min_value, max_value FROM ducklake_table_column_stats "
                "WHERE table_id = ?", [tid]):
            state.col_stats[int(cid)] = [bool(contains_null), nan, lo, hi]
        tables.append(state)
    return tables, (int(latest[0]), int(latest[1]), int(latest[2]), int(latest[3]))


# --------------------------------------------------------------------------------------------------------------
# Step 3: file facts from Parquet footers


def parquet_facts(path: Path) -> FileFacts:
    """Size, footer length and DuckLake stats rows of a flat Parquet file, from its footer."""
    import pyarrow.parquet as pq

    size = path.stat().st_size
    with path.open("rb") as fh:
        fh.seek(size - 8)
        tail = fh.read(8)
    if tail[4:] != b"PAR1":
        raise ValueError(f"{path}: not a Parquet file")
    md = pq.read_metadata(path)
    arrow_schema = md.schema.to_arrow_schema()
    stats: list[ColumnStatsRow] = []
    for c in range(md.num_columns):
        meta = arrow_schema.field(c).metadata or {}
        column_id = int(meta[b"PARQUET:field_id"])
        size_bytes = values = nulls = 0
        lo: Any = None
        hi: Any = None
        known = True
        for g in range(md.num_row_groups):
            col = md.row_group(g).column(c)
            size_bytes += col.total_compressed_size
            st = col.statistics
            if st is None or not st.has_null_count:
                raise ValueError(f"{path}: column {c} has no statistics")
            values += col.num_values - st.null_count
            nulls += st.null_count
            if st.has_min_max:
                lo = st.min if lo is None else min(lo, st.min)
                hi = st.max if hi is None else max(hi, st.max)
            elif col.num_values > st.null_count:
                known = False
        stats.append(ColumnStatsRow(
            column_id, size_bytes, values, nulls,
            duckdb_value_text(lo) if known and lo is not None else None,
            duckdb_value_text(hi) if known and hi is not None else None,
        ))
    stats.sort(key=lambda s: s.column_id)
    return FileFacts(size, int.from_bytes(tail[:4], "little"), md.num_rows, stats)


def check_stats_derivation(tables: list[TableState]) -> None:
    """Our footer-derived facts of each bootstrap file must equal the rows DuckDB wrote for it."""
    for t in tables:
        ours = parquet_facts(t.bootstrap_file)
        if ours != t.bootstrap_facts:
            raise SystemExit(f"make_big_catalog: stats derived from {t.bootstrap_file} differ from DuckDB's rows:\n"
                             f"  ours:   {ours}\n  DuckDB: {t.bootstrap_facts}")


def place_file(source: Path, target: Path, *, move: bool) -> None:
    """Put a data file at ``target``: move it (also across file systems) or byte-copy it."""
    if move:
        try:
            os.replace(source, target)
            return
        except OSError:
            pass  # other file system: copy, then remove the source
        shutil.copyfile(source, target)
        source.unlink()
    else:
        shutil.copyfile(source, target)


# --------------------------------------------------------------------------------------------------------------
# Step 4: catalog rows


SNAPSHOT_COLS = ("snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id")
CHANGES_COLS = ("snapshot_id", "changes_made", "author", "commit_message", "commit_extra_info")
DATA_FILE_COLS = ("data_file_id", "table_id", "begin_snapshot", "end_snapshot", "file_order", "path",
                  "path_is_relative", "file_format", "record_count", "file_size_bytes", "footer_size", "row_id_start",
                  "partition_id", "encryption_key", "mapping_id", "partial_max")
STATS_COLS = ("data_file_id", "table_id", "column_id", "column_size_bytes", "value_count", "null_count",
              "min_value", "max_value", "contains_nan", "extra_stats")


@dataclass
class Rows:
    """Catalog rows to append, per table."""

    snapshots: list[tuple[Any, ...]] = field(default_factory=list)
    changes: list[tuple[Any, ...]] = field(default_factory=list)
    data_files: list[tuple[Any, ...]] = field(default_factory=list)
    stats: list[tuple[Any, ...]] = field(default_factory=list)
    inlined: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)


def merge_column_stats(t: TableState, column_id: int, contains_null: bool, lo: str | None, hi: str | None) -> None:
    """Fold one file's (or inlined row's) column stats into the table's running stats, as DuckDB does."""
    cur = t.col_stats.setdefault(column_id, [False, None, lo, hi])
    key = typed_key(t.column_types[column_id])
    cur[0] = bool(cur[0]) or contains_null
    cur[2] = None if cur[2] is None or lo is None else min(cur[2], lo, key=key)
    cur[3] = None if cur[3] is None or hi is None else max(cur[3], hi, key=key)


def place_files(options: Options, tables: list[TableState], staging: Path,
                jobs: list[tuple[int, int]]) -> list[tuple[str, FileFacts]]:
    """Put chunk files into their table directories (``jobs``: (chunk, table index) pairs), in parallel.

    Returns each file's name (``ducklake-<uuidv7>.parquet``, relative to the table directory) and facts, in order.
    """

    def one(job: tuple[int, int]) -> tuple[str, FileFacts]:
        chunk, index = job
        t = tables[index]
        name = f"ducklake-{uuid7()}.parquet"
        target = t.directory / name
        if options.mode == "distinct":
            place_file(next((staging / f"k={chunk}").iterdir()), target, move=True)
            return name, parquet_facts(target)
        place_file(t.bootstrap_file, target, move=False)
        return name, t.bootstrap_facts

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(one, jobs, chunksize=64))


def build_rows(cat: Catalog, options: Options, tables: list[TableState], latest: tuple[int, int, int, int],
               staging: Path, times: list[dt.datetime]) -> tuple[Rows, dict[str, Any]]:
    """Place the data files and produce every appended catalog row; returns the rows and counters."""
    # Plan: appended snapshot j goes to table j mod tables and takes the next files_in_snapshot(j) chunks.
    plan: list[tuple[int, list[int]]] = []
    jobs: list[tuple[int, int]] = []
    chunk = options.tables  # chunks < tables are the bootstrap files
    for j in range(options.snapshots):
        index = j % len(tables)
        chunks = list(range(chunk, chunk + options.files_in_snapshot(j)))
        chunk += len(chunks)
        plan.append((index, chunks))
        jobs.extend((c, index) for c in chunks)
    placed = iter(place_files(options, tables, staging, jobs))

    snapshot_id, schema_version, next_catalog_id, next_file_id = latest
    rows = Rows()
    counts: dict[str, Any] = {"files": 0, "inlined_snapshots": 0, "inlined_rows": 0,
                              "files_per_table": {t.name: 1 for t in tables}}
    # A row to look up with a filter: in distinct mode one id of the middle appended file (found once),
    # in copy mode id 7 of table 0 (found once per copy of its bootstrap file).
    probe_chunk = options.tables + options.files // 2 if options.mode == "distinct" and options.files else 0
    counts["probe"] = {"table": tables[0].name, "id": probe_chunk * options.rows_per_file + 7}
    inline_id = (options.tables + options.files) * options.rows_per_file  # ids of inlined rows start here
    for index, chunks in plan:
        snapshot_id += 1
        t = tables[index]
        for c in chunks:
            name, facts = next(placed)
            if c == probe_chunk:
                counts["probe"]["table"] = t.name
            fid = next_file_id
            next_file_id += 1
            rows.data_files.append((fid, t.table_id, snapshot_id, None, None, name, cat.bool_value(True),
                                    "parquet", facts.record_count, facts.file_size_bytes, facts.footer_size,
                                    t.next_row_id, None, None, None, None))
            for s in facts.stats:
                rows.stats.append((fid, t.table_id, s.column_id, s.column_size_bytes, s.value_count,
                                   s.null_count, s.min_value, s.max_value, cat.bool_value(s.contains_nan),
                                   s.extra_stats))
                merge_column_stats(t, s.column_id, s.null_count > 0, s.min_value, s.max_value)
            t.next_row_id += facts.record_count
            t.record_count += facts.record_count
            t.file_size_bytes += facts.file_size_bytes
            counts["files"] += 1
            counts["files_per_table"][t.name] += 1
        if chunks:
            change = f"inserted_into_table:{t.table_id}"
        else:
            types = cat.column_types(t.inlined_table)
            ids = {name: cid for cid, name in t.column_names.items()}
            bucket = rows.inlined.setdefault(t.inlined_table, [])
            for _ in range(options.inline_rows):
                values = {"id": str(inline_id),
                          "ts": (BASE_TS + dt.timedelta(seconds=inline_id)).strftime("%Y-%m-%d %H:%M:%S"),
                          "v": f"v{inline_id}"}
                v_value: Any = values["v"].encode() if types.get("v") == "bytea" else values["v"]
                bucket.append((t.next_row_id, snapshot_id, None, inline_id, values["ts"], v_value))
                for col, text in values.items():
                    merge_column_stats(t, ids[col], False, text, text)
                t.next_row_id += 1
                t.record_count += 1
                inline_id += 1
                counts["inlined_rows"] += 1
            next_file_id += 1  # DuckDB advances next_file_id for an inlined-insert-only commit
            counts["inlined_snapshots"] += 1
            change = f"inlined_insert:{t.table_id}"
        rows.snapshots.append((snapshot_id, cat.time_value(times[snapshot_id]), schema_version, next_catalog_id,
                               next_file_id))
        rows.changes.append((snapshot_id, change, None, None, None))
    return rows, counts


def write_catalog(cat: Catalog, tables: list[TableState], rows: Rows, times: list[dt.datetime],
                  bootstrap_snapshots: int) -> None:
    """Append all rows and update the table stats, in the catalog's one transaction, then commit."""
    for sid in range(bootstrap_snapshots):
        cat.execute("UPDATE ducklake_snapshot SET snapshot_time = ? WHERE snapshot_id = ?",
                    [cat.time_value(times[sid]), sid])
    cat.insert("ducklake_snapshot", SNAPSHOT_COLS, rows.snapshots)
    cat.insert("ducklake_snapshot_changes", CHANGES_COLS, rows.changes)
    cat.insert("ducklake_data_file", DATA_FILE_COLS, rows.data_files)
    cat.insert("ducklake_file_column_stats", STATS_COLS, rows.stats)
    for table, inlined in rows.inlined.items():
        cat.insert(table, ("row_id", "begin_snapshot", "end_snapshot", "id", "ts", "v"), inlined)
    for t in tables:
        cat.execute("UPDATE ducklake_table_stats SET record_count = ?, next_row_id = ?, file_size_bytes = ? "
                    "WHERE table_id = ?", [t.record_count, t.next_row_id, t.file_size_bytes, t.table_id])
        for cid, (contains_null, nan, lo, hi) in sorted(t.col_stats.items()):
            cat.execute("UPDATE ducklake_table_column_stats SET contains_null = ?, contains_nan = ?, min_value = ?, "
                        "max_value = ? WHERE table_id = ? AND column_id = ?",
                        [cat.bool_value(contains_null), cat.bool_value(None if nan is None else bool(nan)), lo, hi,
                         t.table_id, cid])
    cat.commit()


# --------------------------------------------------------------------------------------------------------------
# Verification with DuckDB


def verify_with_duckdb(options: Options, expected: dict[str, Any]) -> dict[str, Any]:
    """Open the lake with DuckDB; its row counts, snapshot count and a filtered lookup must match ``expected``."""
    con = oracle_connect()
    try:
        con.execute(attach_sql(options, read_only=True))
        got: dict[str, Any] = {
            "snapshots": con.execute("SELECT count(*) FROM ducklake_snapshots('lake')").fetchone()[0],
            "rows": {name: con.execute(f"SELECT count(*) FROM lake.main.{name}").fetchone()[0]
                     for name in expected["rows"]},
        }
        probe = expected["probe"]
        found = con.execute(f"SELECT id, v FROM lake.main.{probe['table']} WHERE id = ?", [probe["id"]]).fetchall()
        got["probe_matches"] = len(found)
        con.execute("DETACH lake")
    finally:
        con.close()
    problems = []
    if got["snapshots"] != expected["snapshots"]:
        problems.append(f"DuckDB sees {got['snapshots']} snapshots, expected {expected['snapshots']}")
    if got["rows"] != expected["rows"]:
        problems.append(f"DuckDB counts rows {got['rows']}, expected {expected['rows']}")
    if found != [(probe["id"], f"v{probe['id']}")] * probe["matches"]:
        problems.append(f"DuckDB WHERE id = {probe['id']} gave {len(found)} rows, expected {probe['matches']}")
    if problems:
        raise SystemExit("make_big_catalog: verification failed: " + "; ".join(problems))
    return got


# --------------------------------------------------------------------------------------------------------------


@contextmanager
def _timed(timings: dict[str, float], name: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = round(time.perf_counter() - start, 3)


def build(options: Options) -> dict[str, Any]:
    """Build the lake; return a summary (totals, timings, and DuckDB's view with ``verify``)."""
    options.validate()
    timings: dict[str, float] = {}
    staging = staging_root(options) / f"{STAGING_PREFIX}{os.getpid()}"
    start = time.perf_counter()
    try:
        with _timed(timings, "prepare"):
            prepare_targets(options)
        with _timed(timings, "duckdb_bootstrap_and_copy"):
            bootstrap(options, staging)
        cat = Catalog(options)
        try:
            tables, latest = read_tables(cat, options)
            with _timed(timings, "check_stats_derivation"):
                if options.mode == "distinct":
                    check_stats_derivation(tables)
            bootstrap_snapshots = latest[0] + 1
            total = bootstrap_snapshots + options.snapshots
            end = dt.datetime.now(dt.UTC)
            times = [end - dt.timedelta(seconds=options.interval * (total - 1 - i)) for i in range(total)]
            with _timed(timings, "place_files_and_rows"):
                rows, counts = build_rows(cat, options, tables, latest, staging, times)
            with _timed(timings, "write_catalog"):
                write_catalog(cat, tables, rows, times, bootstrap_snapshots)
        finally:
            cat.close()
    finally:
        with _timed(timings, "remove_staging"):
            remove_tree(staging)
    timings["build_total"] = round(time.perf_counter() - start, 3)
    summary: dict[str, Any] = {
        "catalog": options.catalog if not options.is_postgres else "postgresql://…",
        "data_path": str(options.data_path),
        "mode": options.mode,
        "snapshots": total,
        "bootstrap_snapshots": bootstrap_snapshots,
        "appended_snapshots": options.snapshots,
        "data_files": options.tables + counts["files"],
        "appended_files": counts["files"],
        "inlined_snapshots": counts["inlined_snapshots"],
        "inlined_rows": counts["inlined_rows"],
        "files_per_table": counts["files_per_table"],
        "rows": {t.name: t.record_count for t in tables},
        "total_rows": sum(t.record_count for t in tables),
        "probe": {**counts["probe"], "matches": 1 if options.mode == "distinct"
                  else counts["files_per_table"][tables[0].name]},
        "timings_s": timings,
    }
    if options.verify:
        with _timed(timings, "verify_duckdb"):
            summary["duckdb"] = verify_with_duckdb(options, summary)
    return summary


def parse_args(argv: Sequence[str] | None = None) -> Options:
    """Command-line options → :class:`Options`."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("catalog_pos", nargs="?", metavar="CATALOG", help="SQLite catalog file to create "
                   "(or a postgresql:// URL)")
    p.add_argument("--catalog", dest="catalog_opt", help="same as CATALOG (e.g. postgresql://user:pw@host/db)")
    p.add_argument("--data-path", help="data directory (default: <sqlite file>.files/; required for PostgreSQL)")
    p.add_argument("--snapshots", type=int, default=10000, help="snapshots to append (default 10000)")
    p.add_argument("--files", type=int, default=10000, help="data files to append (default 10000)")
    p.add_argument("--tables", type=int, default=1, help="tables events, events_2, … (default 1)")
    p.add_argument("--rows-per-file", type=int, default=100, help="rows per data file, > 10 (default 100)")
    p.add_argument("--inline-rows", type=int, default=1, help="rows per inlined insert, 1..10 (default 1)")
    p.add_argument("--mode", choices=("distinct", "copy"), default="distinct",
                   help="distinct: every file its own id range (default); copy: byte copies of the bootstrap file")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between snapshot times (default 1)")
    p.add_argument("--force", action="store_true", help="replace an existing SQLite catalog and table directories")
    p.add_argument("--verify", action="store_true", help="afterwards, check counts and a filter with DuckDB")
    p.add_argument("--staging-dir", help="where DuckDB writes the new files first (default: /dev/shm when it has "
                   "room, else the data path)")
    a = p.parse_args(argv)
    if bool(a.catalog_pos) == bool(a.catalog_opt):
        p.error("give the catalog exactly once (CATALOG or --catalog)")
    catalog = a.catalog_pos or a.catalog_opt
    is_pg = catalog.startswith(("postgresql://", "postgres://", "postgresql+"))
    if a.data_path is None and is_pg:
        p.error("--data-path is required with a PostgreSQL catalog")
    data_path = Path(a.data_path) if a.data_path else Path(catalog + ".files")
    return Options(
        catalog=catalog if is_pg else str(Path(catalog).resolve()), data_path=data_path.resolve(),
        snapshots=a.snapshots, files=a.files, tables=a.tables, rows_per_file=a.rows_per_file,
        inline_rows=a.inline_rows, mode=a.mode, interval=a.interval, force=a.force, verify=a.verify,
        staging_dir=Path(a.staging_dir).resolve() if a.staging_dir else None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: build and print the summary as JSON."""
    summary = build(parse_args(argv))
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
