"""Builds legacy DuckLake lakes with an old DuckDB release: run by ``tests/support/legacy_lakes.py`` as a script
inside that release's venv (``<venv>/bin/python legacy_build.py <command> …``), so it imports nothing beyond the
standard library and ``duckdb`` (never ``ducklake_cli``, never ``tests``).

Commands (each writes one JSON object to ``--out``):

* ``install``: INSTALL the venv's ``duckdb_extension_<name>`` wheel binaries into a private extension directory
  (a plain ``LOAD '<file>'`` fails for sqlite: its entry point is named ``sqlite_scanner``), so later connections
  LOAD them by name, offline.
* ``build``: create a lake on a fresh catalog and run the scenario (``SCENARIO``); report the catalog's version
  string, the live snapshot ids, the tables, and which features the catalog ended up holding.
* ``reads``: every live table at every live snapshot as this release reads it (rows as sorted ``to_json`` texts).
* ``file-copy``: copy a catalog's metadata tables into a new DuckDB-file catalog that this release created (so
  every column has the type this release gives a DuckDB catalog), keeping the version string.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

EXTENSIONS = ("ducklake", "sqlite", "postgres")
ALIAS = "lake"
META = f"__ducklake_metadata_{ALIAS}"
INLINE_LIMIT = 10  # rows: inserts and deletions up to this size are inlined where the release can


def release() -> str:
    """The running DuckDB release, e.g. ``1.4.4``."""
    return str(duckdb.__version__)


def wheel_extension_file(name: str) -> Path:
    """``<name>.duckdb_extension`` inside the ``duckdb_extension_<name>`` wheel of this venv."""
    mod = importlib.import_module(f"duckdb_extension_{name}")
    path = Path(next(iter(mod.__path__))) / "extensions" / f"v{release()}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise FileNotFoundError(f"extension binary not found: {path}")
    return path


def connect(ext_dir: str, database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """DuckDB with the extensions loaded from the private directory, in UTC."""
    con = duckdb.connect(database, config={"extension_directory": ext_dir, "autoinstall_known_extensions": False})
    for name in EXTENSIONS:
        con.execute(f"LOAD {name}")
    con.execute("SET TimeZone='UTC'")
    return con


def install(ext_dir: str) -> dict[str, Any]:
    """INSTALL every extension binary of the venv into ``ext_dir``."""
    con = duckdb.connect(config={"extension_directory": ext_dir, "autoinstall_known_extensions": False})
    try:
        for name in EXTENSIONS:
            con.execute(f"INSTALL '{wheel_extension_file(name)}'")
    finally:
        con.close()
    con = connect(ext_dir)  # proves the installed files load by name
    try:
        rows = con.execute("SELECT extension_name, extension_version FROM duckdb_extensions() WHERE loaded "
                           "AND install_path LIKE '%.duckdb_extension'").fetchall()
    finally:
        con.close()
    return {"release": release(), "extensions": {str(n): str(v) for n, v in rows}}


def sql_str(value: str) -> str:
    """SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def ducklake_uri(backend: str, target: str) -> str:
    """``ducklake:…`` for a catalog (``target``: a file path, or a libpq DSN for postgres)."""
    if backend == "sqlite":
        return f"ducklake:sqlite:{target}"
    if backend == "duckdb":
        return f"ducklake:{target}"
    if backend == "postgres":
        return f"ducklake:postgres:{target}"
    raise ValueError(f"unknown backend {backend!r}")


def inlining_works(backend: str) -> bool:
    """DuckDB 1.3.x inlines data on DuckDB-file catalogs only ("Data inlining is currently only supported on
    DuckDB catalogs"); 1.4 and later on every backend."""
    return backend == "duckdb" or not release().startswith("1.3.")


def table_rename_works(backend: str) -> bool:
    """DuckDB 1.3 and 1.4 rename an inlining table by creating a new inlined-data table without its columns
    (``CREATE TABLE … (row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, )``): PostgreSQL refuses the commit;
    SQLite and DuckDB accept it, but the release then cannot read the table ('Referenced column "id" not found')."""
    return release().startswith("1.5.") or not inlining_works(backend)


# ---------------------------------------------------------------------------------------------------------------
# the scenario


def current_snapshot(con: duckdb.DuckDBPyConnection) -> int:
    """The lake's latest snapshot id."""
    row = con.execute(f"SELECT max(snapshot_id) FROM {META}.ducklake_snapshot").fetchone()
    assert row is not None
    return int(row[0])


@dataclass(frozen=True)
class Step:
    """Statements committing exactly one snapshot (several run as one transaction); ``quiet``: none."""

    statements: tuple[str, ...]
    label: str = ""
    quiet: bool = False
    mkdir: Path | None = None  # a directory to create first


def step(*statements: str, label: str = "", mkdir: Path | None = None) -> Step:
    """A step committing one snapshot."""
    return Step(statements, label, mkdir=mkdir)


def quiet(statement: str) -> Step:
    """A statement committing no snapshot (e.g. COPY of an external file)."""
    return Step((statement,), quiet=True)


def run(con: duckdb.DuckDBPyConnection, steps: Sequence[Step]) -> dict[str, int]:
    """Run the steps, checking each commits exactly one snapshot (none when quiet); the labelled snapshots."""
    labels: dict[str, int] = {}
    for s in steps:
        before = current_snapshot(con)
        if s.mkdir is not None:
            s.mkdir.mkdir(parents=True, exist_ok=True)
        if len(s.statements) == 1:
            con.execute(s.statements[0])
        else:
            con.execute("BEGIN")
            try:
                for sql in s.statements:
                    con.execute(sql)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        after = current_snapshot(con)
        want = before if s.quiet else before + 1
        if after != want:
            raise AssertionError(f"{s.statements!r} went from snapshot {before} to {after}, expected {want}")
        if s.label:
            labels[s.label] = after
    return labels


ITEM_ROWS = """SELECT i::INTEGER, CASE WHEN i % 10 = 9 THEN NULL ELSE 'item-' || i END, (i * 1.25)::DECIMAL(9,2),
  DATE '2024-01-01' + i::INTEGER, TIMESTAMP '2024-01-01 00:00:00' + INTERVAL (i) HOUR,
  TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i * 90) MINUTE, i % 2 = 0,
  CASE WHEN i % 10 = 8 THEN NULL ELSE {'a': i::INTEGER, 'b': 'b' || i} END,
  CASE WHEN i % 10 = 7 THEN NULL ELSE ['t' || (i % 3), 't' || (i % 5)] END
FROM range(@lo, @hi) r(i)"""

SMALL_ROWS = """(1, 'a', DATE '2024-02-01', TIMESTAMP '2024-02-01 10:00:00', TIMESTAMPTZ '2024-02-01 10:00:00+00',
   1.500, true, [1, 2], {'x': 1, 'y': 'one'}),
  (2, 'b', NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (3, 'c', DATE '1999-12-31', TIMESTAMP '1999-12-31 23:59:59.123456', TIMESTAMPTZ '1999-12-31 23:59:59+00',
   -2.250, false, [], {'x': NULL, 'y': 'three'}),
  (4, 'it''s', DATE '2024-02-29', TIMESTAMP '2024-02-29 00:00:00', TIMESTAMPTZ '2024-02-29 12:30:00+00',
   123456789.125, true, [4, NULL], {'x': 4, 'y': NULL}),
  (5, 'e', DATE '2024-03-01', TIMESTAMP '2024-03-01 00:00:00', TIMESTAMPTZ '2024-03-01 00:00:00+00',
   0.001, false, [5], NULL),
  (6, 'é ü', DATE '2024-03-02', TIMESTAMP '2024-03-02 00:00:00', TIMESTAMPTZ '2024-03-02 00:00:00+00',
   6.000, NULL, NULL, {'x': 6, 'y': 'six'})"""

EVENT_ROWS = """SELECT i::INTEGER, ['eu', 'us', 'apac'][1 + i % 3],
  TIMESTAMP '2023-11-15 08:00:00' + INTERVAL (i * 7) DAY, (i * 10.5)::DECIMAL(10,2) FROM range(@lo, @hi) r(i)"""


def rows(template: str, lo: int, hi: int) -> str:
    """A row generator for ids ``lo`` ≤ i < ``hi``."""
    return template.replace("@lo", str(lo)).replace("@hi", str(hi))


def scenario(workdir: Path, data_path: Path, backend: str) -> list[Step]:
    """The steps: several tables and snapshots covering inserts, deletes, updates, inlining, partitioning, schema
    evolution (also of struct fields), views, comments, a registered external file, a dropped table, compaction
    and expired snapshots, on the lake attached as ``lake``."""
    external = workdir / "external" / "ext.parquet"
    return [
        # items: every type, in data files (more rows than the inlining limit)
        step("CREATE TABLE lake.items (id INTEGER, name VARCHAR, price DECIMAL(9,2), day DATE, ts TIMESTAMP, "
             "tstz TIMESTAMPTZ, flag BOOLEAN, info STRUCT(a INTEGER, b VARCHAR), tags VARCHAR[])"),
        step("INSERT INTO lake.items " + rows(ITEM_ROWS, 0, 40)),
        step("INSERT INTO lake.items " + rows(ITEM_ROWS, 40, 80)),
        step("DELETE FROM lake.items WHERE id % 3 = 0"),  # over the inlining limit in each file: delete files
        step("UPDATE lake.items SET price = price + 1, name = upper(name) WHERE id % 5 = 1"),
        # small: inlined rows (where the release inlines), inlined deletions and updates
        step("CREATE TABLE lake.small (id INTEGER, s VARCHAR, d DATE, ts TIMESTAMP, tz TIMESTAMPTZ, "
             "amount DECIMAL(18,3), ok BOOLEAN, nums INTEGER[], st STRUCT(x INTEGER, y VARCHAR))"),
        step("INSERT INTO lake.small VALUES " + SMALL_ROWS, label="small_filled"),
        step("DELETE FROM lake.small WHERE id IN (2, 5)"),
        step("UPDATE lake.small SET s = 'changed', amount = amount * 2 WHERE id = 3"),
        # events: partitioned by identity + year/month transforms, then re-partitioned
        step("CREATE TABLE lake.events (id INTEGER, region VARCHAR, ts TIMESTAMP, amount DECIMAL(10,2))"),
        step("ALTER TABLE lake.events SET PARTITIONED BY (region, year(ts), month(ts))"),
        step("INSERT INTO lake.events " + rows(EVENT_ROWS, 0, 30)),
        step("DELETE FROM lake.events WHERE id % 4 = 0"),
        step("ALTER TABLE lake.events SET PARTITIONED BY (region)"),
        step("INSERT INTO lake.events " + rows(EVENT_ROWS, 30, 42)),
        # schema evolution on items and small
        step("ALTER TABLE lake.items ADD COLUMN qty BIGINT DEFAULT 7"),
        step("ALTER TABLE lake.items RENAME COLUMN name TO label"),
        step("ALTER TABLE lake.items ADD COLUMN info.c DOUBLE"),
        step("ALTER TABLE lake.items RENAME COLUMN info.b TO bee"),
        step("INSERT INTO lake.items (id, label, price, info, qty) VALUES "
             "(100, 'new-100', 9.99, {'a': 100, 'bee': 'x', 'c': 0.5}, 1), "
             "(101, NULL, NULL, {'a': NULL, 'bee': NULL, 'c': NULL}, NULL)"),
        step("ALTER TABLE lake.items DROP COLUMN flag"),
        step("ALTER TABLE lake.items DROP COLUMN info.a"),
        step("DELETE FROM lake.items WHERE id IN (3, 4)"),  # 2 rows of a file: inlined deletion where supported
        step("ALTER TABLE lake.small ADD COLUMN extra VARCHAR DEFAULT 'dflt'"),
        step("INSERT INTO lake.small (id, s, extra) VALUES (7, 'g', 'e7'), (8, NULL, NULL)"),
        step("ALTER TABLE lake.small RENAME COLUMN s TO label"),
        step("DELETE FROM lake.small WHERE id = 7"),
        # one snapshot changing two tables
        step("INSERT INTO lake.items (id, label, qty) VALUES (102, 'tx', 2)",
             "DELETE FROM lake.small WHERE id = 1"),
        # views and comments
        step("CREATE VIEW lake.v_items AS SELECT id, label, price FROM lake.items WHERE price > 10"),
        step("COMMENT ON TABLE lake.items IS 'every type'"),
        step("COMMENT ON COLUMN lake.items.label IS 'renamed from name'"),
        step("COMMENT ON VIEW lake.v_items IS 'the expensive items'"),
        # ext: an external Parquet file registered in place, then a delete on it
        quiet(f"COPY (SELECT i::INTEGER AS id, 'ext-' || i AS s, (i * 0.5)::DOUBLE AS v FROM range(8) r(i)) "
              f"TO {sql_str(str(external))} (FORMAT parquet)"),
        step("CREATE TABLE lake.ext (id INTEGER, s VARCHAR, v DOUBLE)"),
        step(f"CALL ducklake_add_data_files('{ALIAS}', 'ext', {sql_str(str(external))})"),
        # DuckDB <= 1.4 writes this delete file into the table's directory without creating it
        step("DELETE FROM lake.ext WHERE id = 3", mkdir=data_path / "main" / "ext"),
        # gone: created, filled, dropped
        step("CREATE TABLE lake.gone AS SELECT i::INTEGER AS id, 'g' || i AS s FROM range(3) r(i)"),
        step("DROP TABLE lake.gone"),
        # a second schema and a renamed table
        step("CREATE SCHEMA lake.s2"),
        step("CREATE TABLE lake.s2.notes (id INTEGER, note VARCHAR)"),
        step("INSERT INTO lake.s2.notes VALUES (1, 'first'), (2, 'second')", label="notes_filled"),
        *([] if not table_rename_works(backend) else [step("ALTER TABLE lake.s2.notes RENAME TO memo")]),
    ]


def compaction() -> list[Step]:
    """logs: four files from four snapshots, compacted into one (by a catalog-wide merge)."""
    return [
        step("CREATE TABLE lake.logs (id BIGINT, msg VARCHAR)"),
        *(step(f"INSERT INTO lake.logs SELECT i, 'log-' || i FROM range({k * 12}, {k * 12 + 12}) r(i)",
               label=f"logs_{k}") for k in range(4)),
        step(f"CALL ducklake_merge_adjacent_files('{ALIAS}')"),
    ]


def build(backend: str, target: str, data_path: str, workdir: Path, ext_dir: str) -> dict[str, Any]:
    """Create the lake and run the scenario (compaction first, then the rest); expire two snapshots at the end."""
    (workdir / "external").mkdir(parents=True, exist_ok=True)
    attach = f"ATTACH {sql_str(ducklake_uri(backend, target))} AS {ALIAS}"
    inline = f"DATA_INLINING_ROW_LIMIT {INLINE_LIMIT}" if inlining_works(backend) else ""
    # DuckDB 1.3 cannot merge the files of a table created while inlining was on ("Compaction error - row id limit
    # is larger than the row count of the file"): there, the compaction runs in a first session without it.
    late_inline = bool(inline) and release().startswith("1.3.")
    con = connect(ext_dir)
    try:
        options = [f"DATA_PATH {sql_str(data_path)}", *([inline] if inline and not late_inline else [])]
        con.execute(f"{attach} ({', '.join(options)})")
        labels = run(con, compaction())
        if late_inline:
            con.execute(f"DETACH {ALIAS}")
            con.execute(f"{attach} ({inline})")
        labels.update(run(con, scenario(workdir, Path(data_path), backend)))
        expired = [labels["logs_1"], labels["small_filled"]]
        before = current_snapshot(con)
        con.execute(f"CALL ducklake_expire_snapshots('{ALIAS}', versions => {expired})")
        if current_snapshot(con) != before:
            raise AssertionError("ducklake_expire_snapshots committed a snapshot")
        # What the writer reads in its own session: DuckDB 1.3 cannot read the tables of its inlining DuckDB-file
        # lakes again once attached afresh ("INTERNAL Error: Attempting to dereference an optional pointer").
        writer_reads = json_reads(con)
        con.execute(f"DETACH {ALIAS}")
        con.execute(f"{attach} (READ_ONLY)")  # afresh: the postgres scanner lists tables as it found them on attach
        result = describe(con)
        result["expired"] = expired
        result["reads"] = writer_reads
        con.execute(f"DETACH {ALIAS}")
    finally:
        con.close()
    return result


def columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    """The column names of a metadata table of the lake attached as ``lake``."""
    query = "SELECT column_name FROM duckdb_columns() WHERE database_name = ? AND table_name = ?"
    return {str(r[0]) for r in con.execute(query, [META, table]).fetchall()}


def describe(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Version, live snapshots, tables and features of the lake attached as ``lake``."""
    one: Callable[[str], Any] = lambda sql: con.execute(sql).fetchall()[0][0]  # noqa: E731
    meta_tables = {str(r[0]) for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = ?", [META]).fetchall()}
    inlined = [t for t in meta_tables if t.startswith("ducklake_inlined_data_") and t != "ducklake_inlined_data_tables"]
    inlined_rows = sum(int(one(f'SELECT count(*) FROM {META}."{t}"')) for t in inlined)
    # the system columns are still called begin_snapshot/end_snapshot before DuckLake 1.1
    inlined_ended = sum(int(one(f'SELECT count(*) FROM {META}."{t}" WHERE end_snapshot IS NOT NULL')) for t in inlined)
    inlined_deletions = sum(int(one(f'SELECT count(*) FROM {META}."{t}"'))
                            for t in meta_tables if t.startswith("ducklake_inlined_delete_"))
    partial = "partial_max" if "partial_max" in columns(con, "ducklake_data_file") else "partial_file_info"
    features = {
        "data_files": int(one(f"SELECT count(*) FROM {META}.ducklake_data_file")),
        "delete_files": int(one(f"SELECT count(*) FROM {META}.ducklake_delete_file")),
        "inlined_rows": inlined_rows,
        "inlined_rows_deleted": inlined_ended,
        "inlined_file_deletions": inlined_deletions,
        "partitioned_files": int(one(f"SELECT count(DISTINCT data_file_id) FROM {META}.ducklake_file_partition_value")),
        "registered_files": int(one(f"SELECT count(*) FROM {META}.ducklake_data_file WHERE NOT path_is_relative")),
        "live_logs_files": int(one(f"SELECT count(*) FROM {META}.ducklake_data_file f JOIN {META}.ducklake_table t "
                                   f"USING (table_id) WHERE t.table_name = 'logs' AND f.end_snapshot IS NULL")),
        "partial_files": int(one(f"SELECT count(*) FROM {META}.ducklake_data_file WHERE {partial} IS NOT NULL")),
        "views": int(one(f"SELECT count(*) FROM {META}.ducklake_view")),
        "comments": int(one(f"SELECT count(*) FROM {META}.ducklake_tag WHERE key = 'comment'"))
        + int(one(f"SELECT count(*) FROM {META}.ducklake_column_tag WHERE key = 'comment'")),
        # a table version ended without a successor (a rename ends one and begins the next at the same snapshot)
        "dropped_tables": int(one(f"SELECT count(*) FROM {META}.ducklake_table t WHERE end_snapshot IS NOT NULL "
                                  f"AND NOT EXISTS (SELECT 1 FROM {META}.ducklake_table n "
                                  f"WHERE n.table_id = t.table_id AND n.begin_snapshot = t.end_snapshot)")),
        "renamed_tables": int(one(f"SELECT count(DISTINCT table_id) FROM {META}.ducklake_table t "
                                  f"WHERE EXISTS (SELECT 1 FROM {META}.ducklake_table n "
                                  f"WHERE n.table_id = t.table_id AND n.table_name <> t.table_name)")),
    }
    snapshots = [int(r[0]) for r in con.execute(
        f"SELECT snapshot_id FROM {META}.ducklake_snapshot ORDER BY 1").fetchall()]
    tables = [f"{s}.{t}" for s, t in con.execute(
        f"SELECT s.schema_name, t.table_name FROM {META}.ducklake_table t JOIN {META}.ducklake_schema s "
        f"USING (schema_id) WHERE t.end_snapshot IS NULL AND s.end_snapshot IS NULL ORDER BY 1, 2").fetchall()]
    return {
        "release": release(),
        "version": str(one(f"SELECT value FROM {META}.ducklake_metadata WHERE key = 'version'")),
        "data_path": str(one(f"SELECT value FROM {META}.ducklake_metadata WHERE key = 'data_path'")),
        "snapshots": snapshots,
        "tables": tables,
        "features": features,
    }


# ---------------------------------------------------------------------------------------------------------------
# reads, shared with the DuckDB 1.5.5 side (legacy_lakes.py imports these two functions)


def tables_at(con: duckdb.DuckDBPyConnection, snapshot_id: int, meta: str = META) -> list[tuple[str, str]]:
    """(schema, table) of every table live at ``snapshot_id``, from the catalog's validity ranges."""
    live = "{0}.begin_snapshot <= $1 AND ({0}.end_snapshot IS NULL OR {0}.end_snapshot > $1)"
    rows = con.execute(
        f"SELECT s.schema_name, t.table_name FROM {meta}.ducklake_table t JOIN {meta}.ducklake_schema s "
        f"ON s.schema_id = t.schema_id WHERE {live.format('t')} AND {live.format('s')} ORDER BY 1, 2",
        [snapshot_id]).fetchall()
    return [(str(s), str(t)) for s, t in rows]


def json_reads(con: duckdb.DuckDBPyConnection, alias: str = ALIAS,
               errors: dict[str, dict[str, str]] | None = None) -> dict[str, dict[str, list[str]]]:
    """Every live snapshot → "schema.table" → its rows as ``to_json`` texts, sorted (stable across releases). With
    `errors`, a read that fails is left out and its error's first line recorded there, likewise keyed ("*" for
    the snapshot's table list)."""
    meta = f"__ducklake_metadata_{alias}"
    query = f"SELECT snapshot_id FROM {meta}.ducklake_snapshot ORDER BY 1"
    snapshots = [int(r[0]) for r in con.execute(query).fetchall()]
    out: dict[str, dict[str, list[str]]] = {}
    for sid in snapshots:
        out[str(sid)] = {}
        try:
            tables = tables_at(con, sid, meta)
        except duckdb.Error as exc:  # e.g. the database was invalidated by a fatal error
            if errors is None:
                raise
            errors.setdefault(str(sid), {})["*"] = str(exc).strip().splitlines()[0]
            continue
        for s, t in tables:
            sql = f'SELECT to_json(x)::VARCHAR FROM (SELECT * FROM {alias}."{s}"."{t}" AT (VERSION => {sid})) x'
            try:
                out[str(sid)][f"{s}.{t}"] = sorted(str(r[0]) for r in con.execute(sql).fetchall())
            except duckdb.Error as exc:
                if errors is None:
                    raise
                errors.setdefault(str(sid), {})[f"{s}.{t}"] = str(exc).strip().splitlines()[0]
    return out


def reads(uri: str, ext_dir: str) -> dict[str, Any]:
    """``json_reads`` of the catalog at ``uri`` as this release reads it (attached read-only), and the reads that
    failed."""
    con = connect(ext_dir)
    try:
        con.execute(f"ATTACH {sql_str(uri)} AS {ALIAS} (READ_ONLY)")
        version = con.execute(f"SELECT value FROM {META}.ducklake_metadata WHERE key = 'version'").fetchall()[0][0]
        errors: dict[str, dict[str, str]] = {}
        result = {"release": release(), "version": str(version), "reads": json_reads(con, errors=errors),
                  "errors": errors}
        with contextlib.suppress(duckdb.Error):  # not after a fatal error
            con.execute(f"DETACH {ALIAS}")
    finally:
        con.close()
    return result


# ---------------------------------------------------------------------------------------------------------------
# a catalog copied into a DuckDB file


def file_copy(backend: str, target: str, dest: str, ext_dir: str) -> dict[str, Any]:
    """Copy the catalog's ``ducklake_*`` tables into the new DuckDB file ``dest``: this release first creates an
    empty lake there (its own column types), whose rows are then replaced by the source's, table by table."""
    con = connect(ext_dir)
    try:
        if backend == "sqlite":
            con.execute(f"ATTACH {sql_str(target)} AS src (TYPE sqlite, READ_ONLY)")
        elif backend == "postgres":
            con.execute(f"ATTACH {sql_str(target)} AS src (TYPE postgres, READ_ONLY)")
        else:
            con.execute(f"ATTACH {sql_str(target)} AS src (READ_ONLY)")
        source_tables = [str(r[0]) for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'src' AND table_name LIKE 'ducklake_%' "
            "ORDER BY 1").fetchall()]
        data_path = con.execute("SELECT value FROM src.ducklake_metadata WHERE key = 'data_path'").fetchall()[0][0]
        con.execute(f"ATTACH {sql_str('ducklake:' + dest)} AS fresh (DATA_PATH {sql_str(str(data_path))})")
        con.execute("DETACH fresh")
        con.execute(f"ATTACH {sql_str(dest)} AS dst")
        dest_tables = {str(r[0]) for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'dst'").fetchall()}
        con.execute("BEGIN")
        for name in source_tables:
            if name in dest_tables:
                con.execute(f'DELETE FROM dst."{name}"')
                con.execute(f'INSERT INTO dst."{name}" BY NAME SELECT * FROM src."{name}"')
            else:  # inlined-data tables: their columns have the table's own types already
                con.execute(f'CREATE TABLE dst."{name}" AS SELECT * FROM src."{name}"')
        for name in sorted(dest_tables - set(source_tables)):
            con.execute(f'DROP TABLE dst."{name}"')
        con.execute("COMMIT")
        version = con.execute("SELECT value FROM dst.ducklake_metadata WHERE key = 'version'").fetchall()[0][0]
        con.execute("DETACH dst")
        con.execute("DETACH src")
    finally:
        con.close()
    return {"release": release(), "version": str(version), "tables": source_tables}


def main(argv: Sequence[str]) -> int:
    """Command-line entry: one command, its JSON result written to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("install")
    p.add_argument("--ext-dir", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("build")
    p.add_argument("--backend", required=True, choices=("sqlite", "duckdb", "postgres"))
    p.add_argument("--target", required=True, help="catalog file, or libpq DSN for postgres")
    p.add_argument("--data-path", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--ext-dir", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("reads")
    p.add_argument("--uri", required=True, help="ducklake:… ATTACH string")
    p.add_argument("--ext-dir", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("file-copy")
    p.add_argument("--backend", required=True, choices=("sqlite", "duckdb", "postgres"))
    p.add_argument("--target", required=True, help="catalog file, or libpq DSN for postgres")
    p.add_argument("--dest", required=True)
    p.add_argument("--ext-dir", required=True)
    p.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.command == "install":
        result = install(args.ext_dir)
    elif args.command == "build":
        result = build(args.backend, args.target, args.data_path, Path(args.workdir), args.ext_dir)
    elif args.command == "reads":
        result = reads(args.uri, args.ext_dir)
    else:
        result = file_copy(args.backend, args.target, args.dest, args.ext_dir)
    Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
