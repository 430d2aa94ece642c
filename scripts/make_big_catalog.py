#!/usr/bin/env python
"""Build a large but real DuckLake (many snapshots, many data files) quickly, for benchmarks.

    python scripts/make_big_catalog.py /tmp/big/cat.sqlite --data-path /tmp/big/data --snapshots 10000 --files 10000
    python scripts/make_big_catalog.py --catalog postgresql://lake:lake@127.0.0.1:55432/big --data-path /tmp/big/data

How it works:

1. **Bootstrap with DuckDB itself** (the ``ducklake`` extension, loaded offline by ``ducklake_cli.duckdb_extensions``):
   ``ATTACH 'ducklake:…'``, ``CREATE TABLE main.events(id BIGINT, ts TIMESTAMP, v VARCHAR)`` (plus ``events_2`` …
   with ``--tables``), one ``INSERT`` of ``--rows-per-file`` rows per table (> the inlining limit, so it goes to a
   Parquet file), ``DETACH``. That yields a valid catalog, real Parquet files with field ids and DuckDB's own stats
   rows: ``1 + 2 × tables`` snapshots and ``tables`` data files.
2. **Data files.** ``--mode distinct`` (default): one DuckDB ``COPY … (FIELD_IDS {id: 1, ts: 2, v: 3},
   PARTITION_BY (k))`` writes every new file at once — byte-for-byte what DuckLake's INSERT writes for the same rows
   (same writer, same options), each file holding its own id range. The files are moved into the table directory as
   ``ducklake-<uuidv7>.parquet``; their stats are derived from the Parquet footers (pyarrow and the library's
   ``encode_stat``) and the derivation is checked against DuckDB's own stats rows of the bootstrap files first.
   ``--mode copy``: byte copies of the table's bootstrap file, reusing its stats rows (fastest; every file holds the
   same ids — row ids still differ, they come from ``row_id_start``).
3. **Catalog rows** go through the library's catalog layer (``ducklake_cli.catalog.bulk``): every appended snapshot
   is staged by the same ``Transaction``/``TableWrite`` code as a ``ducklake write`` commit (``ducklake_snapshot``,
   ``ducklake_snapshot_changes`` ``inserted_into_table:<tid>``, ``ducklake_data_file`` with exact size and footer
   length and ``row_id_start`` = the table's next row id, one ``ducklake_file_column_stats`` row per column), the
   rows are sent per catalog table in one transaction, and the table stats are merged once at the end.

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
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ducklake_cli.catalog.backends import backend_for
from ducklake_cli.catalog.bulk import BulkAppend
from ducklake_cli.catalog.create import existing_catalog_tables
from ducklake_cli.catalog.models import LeafStats, NewDataFile, TableInfo
from ducklake_cli.catalog.paths import new_data_file_name, table_dir
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.catalog.stats import encode_stat, render_value
from ducklake_cli.catalog.url import CatalogTarget, parse_catalog
from ducklake_cli.duckdb_extensions import connect as duckdb_connect
from ducklake_cli.lake import Lake

COLUMNS_SQL = "id BIGINT, ts TIMESTAMP, v VARCHAR"
FIELD_IDS = "{id: 1, ts: 2, v: 3}"  # DuckDB gives a new table's columns the ids 1, 2, 3 in order
INLINING_LIMIT = 10  # DuckDB's default data_inlining_row_limit
BASE_TS = dt.datetime(2024, 1, 1)
STAGING_PREFIX = ".make_big_catalog-staging-"
EXTENSIONS = ("ducklake", "sqlite", "postgres")


def chunk_select(first_chunk: int, last_chunk: int, rows: int) -> str:
    """SELECT of the rows of chunks ``first_chunk … last_chunk - 1`` (``rows`` each) plus the chunk number ``k``."""
    return (
        "SELECT i AS id, TIMESTAMP '2024-01-01 00:00:00' + to_seconds(i) AS ts, 'v' || i AS v, "
        f"i // {rows} AS k FROM range({first_chunk * rows}, {last_chunk * rows}) t(i)"
    )


def table_name(index: int) -> str:
    """Name of the ``index``-th generated table: ``events``, ``events_2``, ``events_3`` …"""
    return "events" if index == 0 else f"events_{index + 1}"


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
    def target(self) -> CatalogTarget:
        """The catalog as the library parses it (a SQLite file or a PostgreSQL database)."""
        return parse_catalog(self.catalog, must_exist=False)

    @property
    def is_postgres(self) -> bool:
        """True when the catalog is a PostgreSQL database."""
        return self.target.backend == "postgres"

    def validate(self) -> None:
        """Raise ``SystemExit`` with a message for inconsistent numbers."""
        problems = []
        if self.target.backend not in ("sqlite", "postgres"):
            problems.append("the catalog must be a SQLite file or a PostgreSQL database")
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
# Step 1: bootstrap with DuckDB


def attach_sql(options: Options, read_only: bool = False) -> str:
    """DuckDB's ``ATTACH 'ducklake:…' AS lake`` statement for the catalog (a libpq URI for PostgreSQL)."""
    target = options.target
    if target.backend == "postgres":
        where = "postgres:" + backend_for(target).url().set(drivername="postgresql").render_as_string(False)
    else:
        where = f"sqlite:{target.path}"
    data = str(options.data_path).rstrip("/") + "/"
    extra = ", READ_ONLY" if read_only else ""
    return f"ATTACH {_sql_str('ducklake:' + where)} AS lake (DATA_PATH {_sql_str(data)}{extra})"


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def prepare_targets(options: Options) -> None:
    """Refuse (or with --force, clear) an existing catalog file / table directories; PostgreSQL must be empty."""
    if options.is_postgres:
        backend = backend_for(options.target)
        engine = backend.create_engine(read_only=True)
        try:
            with engine.connect() as conn:
                found = existing_catalog_tables(conn, backend)
        finally:
            engine.dispose()
        if found:
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
    con = duckdb_connect(extensions=EXTENSIONS)
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
class TableState:
    """A bootstrapped table: the library's view of it, its directory and its bootstrap file."""

    info: TableInfo
    directory: Path
    bootstrap_file: Path
    bootstrap_facts: NewDataFile  # as DuckDB registered it

    @property
    def name(self) -> str:
        """The table's name."""
        return self.info.name

    @property
    def types(self) -> dict[int, str]:
        """DuckLake type of each column id."""
        return {c.column_id: c.type for c in self.info.columns}


def read_tables(reader: MetadataReader, options: Options) -> list[TableState]:
    """The bootstrapped tables, read with the library's catalog reader."""
    latest = reader.latest_snapshot().snapshot_id
    data_path = reader.metadata().data_path
    schemas = {sc.schema_id: sc for sc in reader.schemas(latest)}
    tables: list[TableState] = []
    for t in range(options.tables):
        info = reader.find_table(latest, table_name(t))
        directory = Path(table_dir(data_path, schemas[info.schema_id], info))
        (f,) = reader.data_files(latest, [info.table_id])
        stats = reader.file_column_stats(info.table_id, [f.data_file_id])[f.data_file_id]
        facts = NewDataFile(f.path, f.record_count, f.file_size_bytes, int(f.footer_size or 0), (), tuple(
            LeafStats(st.column_id, int(st.value_count or 0), int(st.null_count or 0), st.min_value, st.max_value,
                      st.contains_nan, st.column_size_bytes) for st in sorted(stats, key=lambda st: st.column_id)))
        tables.append(TableState(info, directory, directory / f.path if f.path_is_relative else Path(f.path), facts))
    return tables


# --------------------------------------------------------------------------------------------------------------
# Step 3: file facts from Parquet footers


def parquet_facts(path: Path, types: dict[int, str]) -> NewDataFile:
    """Size, footer length and DuckLake stats of a flat Parquet file, from its footer (``types``: by field id)."""
    import pyarrow.parquet as pq

    size = path.stat().st_size
    with path.open("rb") as fh:
        fh.seek(size - 8)
        tail = fh.read(8)
    if tail[4:] != b"PAR1":
        raise ValueError(f"{path}: not a Parquet file")
    md = pq.read_metadata(path)
    arrow_schema = md.schema.to_arrow_schema()
    stats: list[LeafStats] = []
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
        kind = types[column_id]
        stats.append(LeafStats(column_id, values, nulls, encode_stat(lo, kind) if known else None,
                               encode_stat(hi, kind) if known else None, None, size_bytes))
    stats.sort(key=lambda s: s.column_id)
    return NewDataFile(path.name, md.num_rows, size, int.from_bytes(tail[:4], "little"), (), tuple(stats))


def check_stats_derivation(tables: list[TableState]) -> None:
    """Our footer-derived facts of each bootstrap file must equal the rows DuckDB wrote for it."""
    for t in tables:
        ours = parquet_facts(t.bootstrap_file, t.types)
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


def place_files(options: Options, tables: list[TableState], staging: Path,
                jobs: list[tuple[int, int]]) -> list[NewDataFile]:
    """Put chunk files into their table directories (``jobs``: (chunk, table index) pairs), in parallel.

    Returns each file's facts (path ``ducklake-<uuidv7>.parquet``, relative to the table directory), in order.
    """

    def one(job: tuple[int, int]) -> NewDataFile:
        chunk, index = job
        t = tables[index]
        name = new_data_file_name()
        target = t.directory / name
        if options.mode == "distinct":
            place_file(next((staging / f"k={chunk}").iterdir()), target, move=True)
            return parquet_facts(target, t.types)
        place_file(t.bootstrap_file, target, move=False)
        return replace(t.bootstrap_facts, path=name)

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(one, jobs, chunksize=64))


# --------------------------------------------------------------------------------------------------------------
# Step 4: catalog rows, through the library's catalog layer


def inlined_rows(t: TableState, first_id: int, count: int) -> tuple[list[list[tuple[str | None, Any]]],
                                                                     list[LeafStats]]:
    """``count`` rows with ids from ``first_id`` as (DuckDB text, value) per column, and their stats."""
    rows: list[list[tuple[str | None, Any]]] = []
    stats: list[LeafStats] = []
    for i in range(first_id, first_id + count):
        raw = {"id": i, "ts": BASE_TS + dt.timedelta(seconds=i), "v": f"v{i}"}
        row = []
        for c in t.info.columns:
            row.append((render_value(raw[c.name], c.type), raw[c.name]))
            text = encode_stat(raw[c.name], c.type)
            stats.append(LeafStats(c.column_id, 1, 0, text, text, None))
        rows.append(row)
    return rows, stats


def append_snapshots(bulk: BulkAppend, options: Options, tables: list[TableState], staging: Path,
                     times: list[dt.datetime]) -> dict[str, Any]:
    """Place the data files and stage every appended snapshot; returns counters."""
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

    counts: dict[str, Any] = {"files": 0, "inlined_snapshots": 0, "inlined_rows": 0,
                              "files_per_table": {t.name: 1 for t in tables},
                              "rows": {t.name: t.bootstrap_facts.record_count for t in tables}}
    # A row to look up with a filter: in distinct mode one id of the middle appended file (found once),
    # in copy mode id 7 of table 0 (found once per copy of its bootstrap file).
    probe_chunk = options.tables + options.files // 2 if options.mode == "distinct" and options.files else 0
    counts["probe"] = {"table": tables[0].name, "id": probe_chunk * options.rows_per_file + 7}
    inline_id = (options.tables + options.files) * options.rows_per_file  # ids of inlined rows start here
    for index, chunks in plan:
        t = tables[index]
        when = times[bulk.latest.snapshot_id + 1]
        if chunks:
            if probe_chunk in chunks:
                counts["probe"]["table"] = t.name
            files = [next(placed) for _ in chunks]
            bulk.insert_files(t.info, files, when)
            counts["rows"][t.name] += sum(f.record_count for f in files)
            counts["files"] += len(chunks)
            counts["files_per_table"][t.name] += len(chunks)
        else:
            values, stats = inlined_rows(t, inline_id, options.inline_rows)
            bulk.insert_inlined(t.info, values, stats, when)
            inline_id += options.inline_rows
            counts["inlined_rows"] += options.inline_rows
            counts["rows"][t.name] += options.inline_rows
            counts["inlined_snapshots"] += 1
    return counts


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
        with Lake.open(options.target) as lake, lake.connection(write=True) as conn:
            bulk = BulkAppend(conn, lake.backend)
            tables = read_tables(bulk.reader, options)
            with _timed(timings, "check_stats_derivation"):
                if options.mode == "distinct":
                    check_stats_derivation(tables)
            bootstrap_snapshots = bulk.latest.snapshot_id + 1
            total = bootstrap_snapshots + options.snapshots
            end = dt.datetime.now(dt.UTC)
            times = [end - dt.timedelta(seconds=options.interval * (total - 1 - i)) for i in range(total)]
            with _timed(timings, "place_files_and_rows"):
                counts = append_snapshots(bulk, options, tables, staging, times)
            with _timed(timings, "write_catalog"):
                bulk.retime(dict(enumerate(times[:bootstrap_snapshots])))
                bulk.finish()
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
        "rows": counts["rows"],
        "total_rows": sum(counts["rows"].values()),
        "probe": {**counts["probe"], "matches": 1 if options.mode == "distinct"
                  else counts["files_per_table"][tables[0].name]},
        "timings_s": timings,
    }
    if options.verify:
        with _timed(timings, "verify_duckdb"):
            summary["duckdb"] = verify_with_duckdb(options, summary)
    return summary


# --------------------------------------------------------------------------------------------------------------
# Verification with DuckDB


def verify_with_duckdb(options: Options, expected: dict[str, Any]) -> dict[str, Any]:
    """Open the lake with DuckDB; its row counts, snapshot count and a filtered lookup must match ``expected``."""
    con = duckdb_connect(extensions=EXTENSIONS)
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
    is_pg = parse_catalog(catalog, must_exist=False).backend == "postgres"
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
