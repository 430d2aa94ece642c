"""Legacy DuckLake lakes (catalog versions 0.2, 0.3, 0.4) written by the real old DuckDB releases, their copies
migrated to 1.0 by DuckDB 1.5.5 (the oracle), and what both read at every snapshot.

Each release runs in its own venv (duckdb + the ducklake/sqlite/postgres extension wheels of that release), built
once per machine under ``${XDG_CACHE_HOME:-~/.cache}/ducklake-cli/legacy-venvs/duckdb-<release>/`` (~3 s each from
the registry pip is configured with) and reused while its marker is current; xdist workers share one build through an
fcntl lock, and the marker is written last. The lake is made by ``tests/support/legacy_build.py`` running in that venv
(stdlib + duckdb only), ~1-3 s per lake.

The scenario (``legacy_build.scenario``) is the same for every (release, backend), except where the release cannot:

=========  ==========  ================================================================================================
release    backend     what differs (every lake: ~47 snapshots; inserts, deletes with delete files, updates, a table
                       partitioned by identity + year/month then re-partitioned, added/renamed/dropped columns and
                       struct fields, a view, table/column/view comments, a registered external Parquet file with a
                       delete, a dropped table, a second schema, four files merged into one, two expired snapshots)
=========  ==========  ================================================================================================
1.3.2      sqlite      no inlining (1.3 refuses DATA_INLINING_ROW_LIMIT off DuckDB catalogs); a table rename
1.3.2      postgres    the same
1.3.2      duckdb      inlined rows and deletions of inlined rows; no table rename (1.3/1.4 bug, below); the compaction
                       runs first, in a session without inlining (1.3 cannot merge files of a table created while
                       inlining was on)
1.4.4      all three   inlined rows and deletions of inlined rows; no table rename (renaming an inlining table makes
                       a column-less inlined-data table: PostgreSQL refuses the commit, SQLite/DuckDB keep it and the
                       release then cannot read the table)
1.5.1      all three   inlined rows, deletions of inlined rows, inlined deletions of file rows (few delete files); a
                       table rename
=========  ==========  ================================================================================================

The reference for what a lake holds is ``LegacyLake.writer_reads``: every table at every snapshot as the writing
release read it before detaching. In a new session the old releases fail on their own inlining lakes (``REREAD_BUGS``),
so ``legacy_reads`` is reliable only for lakes without inlined data (``rereadable``).

DuckDB 1.5.5 migrates 0.3 and 0.4 catalogs on every backend, but not 0.2 on SQLite or PostgreSQL ("Unsupported ALTER
TABLE type - SQLite/Postgres tables only support …"): those go through ``duckdb_file_copy`` first. Its migrated twin
reads like the writer at every snapshot, except time travel to before a compaction of a 0.2/0.3 lake
(``known_migration_loss``).

Fixtures (import them into a test module, or name this module in a conftest's ``pytest_plugins``): ``legacy_lake``
(session: ``legacy_lake(release, backend)``, built once per worker, shared read-only) and ``legacy_lake_copy``
(``legacy_lake_copy(release, backend)``: a private copy for a test that changes it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import venv
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import duckdb
import pytest
from pytest import ParameterSet

from tests.support.legacy_build import ducklake_uri, json_reads
from tests.support.oracle import oracle_connect, postgres_dsn, sql_str
from tests.support.services import pg_database, require_env
from tests.support.spot import Spot
from tests.support.tiers import FULL

RELEASES = ("1.3.2", "1.4.4", "1.5.1")
# The catalog version string each release writes.
VERSIONS = {"1.3.2": "0.2", "1.4.4": "0.3", "1.5.1": "0.4"}
BACKENDS = ("sqlite", "duckdb", "postgres")
BUILD_SCRIPT = Path(__file__).with_name("legacy_build.py")
# DuckDB 1.5.5's error migrating a 0.2 catalog held in SQLite or PostgreSQL.
MIGRATION_FAILURE = "Unsupported ALTER TABLE type"

_PACKAGES = ("duckdb", "duckdb-extension-ducklake", "duckdb-extension-sqlite", "duckdb-extension-postgres")
_MARKER = "ready.json"
_CATALOG_FILES = {"sqlite": "cat.sqlite", "duckdb": "cat.ducklake"}


# ---------------------------------------------------------------------------------------------------------------
# the venvs


def venvs_dir() -> Path:
    """Where the legacy venvs live."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "ducklake-cli" / "legacy-venvs"


def _key(release: str) -> str:
    # A venv is current while Python, the packages and the builder's install step are the same.
    return json.dumps({"python": sys.version, "packages": [f"{p}=={release}" for p in _PACKAGES], "layout": 1},
                      sort_keys=True)


def _ready(root: Path, release: str) -> bool:
    marker = root / _MARKER
    try:
        return json.loads(marker.read_text())["key"] == _key(release)
    except (OSError, ValueError, KeyError):
        return False


def legacy_python(release: str) -> Path:
    """The interpreter of the cached venv holding DuckDB `release` and its extensions (built when missing)."""
    if release not in VERSIONS:
        raise ValueError(f"unknown release {release!r}; expected one of {RELEASES}")
    root = venvs_dir() / f"duckdb-{release}"
    python = root / "bin" / "python"
    if _ready(root, release):
        return python
    root.parent.mkdir(parents=True, exist_ok=True)
    with (root.parent / f"duckdb-{release}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be building it: wait, then look again
        if not _ready(root, release):
            _build_venv(root, release)
    return python


def _build_venv(root: Path, release: str) -> None:
    started = time.monotonic()
    shutil.rmtree(root, ignore_errors=True)
    venv.EnvBuilder(with_pip=False, clear=True).create(root)
    python = root / "bin" / "python"
    # This venv's pip installs into the new one (`--python`): no pip bootstrap there (saves seconds).
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--disable-pip-version-check", *(f"{p}=={release}" for p in _PACKAGES)],
        capture_output=True, text=True, timeout=900, check=False, env=_env())
    if pip.returncode != 0:
        raise RuntimeError(f"building {root} failed:\n{pip.stdout[-3000:]}\n{pip.stderr[-3000:]}")
    installed = _run(python, "install", "--ext-dir", str(root / "extensions"))
    if installed["release"] != release:
        raise RuntimeError(f"{root} holds duckdb {installed['release']}, not {release}")
    tmp = root / (_MARKER + ".tmp")
    tmp.write_text(json.dumps({"key": _key(release), "seconds": round(time.monotonic() - started, 1),
                               "extensions": installed["extensions"]}))
    tmp.replace(root / _MARKER)


def venv_build_seconds(release: str) -> float:
    """How long building the venv of `release` took (from its marker)."""
    legacy_python(release)
    return float(json.loads((venvs_dir() / f"duckdb-{release}" / _MARKER).read_text())["seconds"])


def _env() -> dict[str, str]:
    # The old interpreter must not see the main venv's packages or this checkout.
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


def _run(python: Path, command: str, *args: str) -> dict[str, Any]:
    """Run a `legacy_build.py` command under `python`; its JSON result."""
    with tempfile.TemporaryDirectory(prefix="legacy-") as tmp:
        out = Path(tmp) / "out.json"
        done = subprocess.run([str(python), str(BUILD_SCRIPT), command, *args, "--out", str(out)],
                              capture_output=True, text=True, timeout=600, check=False, env=_env())
        if done.returncode != 0:
            raise RuntimeError(f"legacy_build.py {command} under {python} failed:\n{done.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(out.read_text())
        return result


def run_legacy(release: str, command: str, *args: str) -> dict[str, Any]:
    """A `legacy_build.py` command run by DuckDB `release` (its extension directory passed along)."""
    python = legacy_python(release)
    return _run(python, command, *args, "--ext-dir", str(python.parent.parent / "extensions"))


# ---------------------------------------------------------------------------------------------------------------
# lakes


@dataclass(frozen=True)
class LegacyLake:
    """A lake as built (or migrated): its catalog for our CLI and for DuckDB, data path and snapshots."""

    release: str  # the DuckDB release that wrote it
    backend: str  # sqlite | duckdb | postgres
    version: str  # ducklake_metadata's version string
    catalog: str  # what our CLI takes: the file path, or the postgresql:// URL
    attach: str  # DuckDB's 'ducklake:…' string
    data_path: Path
    snapshots: tuple[int, ...]  # every live snapshot id
    tables: tuple[str, ...]  # "schema.table" live at the last snapshot
    expired: tuple[int, ...] = ()  # the snapshot ids the scenario expired
    features: dict[str, int] = field(default_factory=dict, compare=False)  # what the catalog holds (legacy_build)
    root: Path | None = None  # the directory holding its own catalog file, data and external files (None: shared)
    # What the writing release read in its own session, before detaching: snapshot → "schema.table" → sorted JSON rows
    writer_reads: dict[int, dict[str, list[str]]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def spot(self) -> Spot:
        """The lake as a `Spot`, for the helpers that take one."""
        return Spot(self.backend, self.catalog, self.catalog, self.data_path)

    def attach_sql(self, alias: str = "lake", options: str = "") -> str:
        """DuckDB's ATTACH statement for the lake (the data path as the catalog stores it)."""
        return f"ATTACH {sql_str(self.attach)} AS {alias}" + (f" ({options})" if options.strip() else "")


def _target(backend: str, catalog: str) -> str:
    """What DuckDB is given for a catalog: the file, or the libpq DSN of a postgresql:// URL."""
    return postgres_dsn(catalog) if backend == "postgres" else catalog


def _catalog_for(backend: str, workdir: Path, pg_url: str | None) -> str:
    if backend == "postgres":
        if not pg_url:
            raise ValueError("a PostgreSQL lake needs pg_url (a fresh database)")
        return pg_url
    if backend not in _CATALOG_FILES:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    return str(workdir / _CATALOG_FILES[backend])


def build_legacy_lake(release: str, backend: str, workdir: Path, *, pg_url: str | None = None) -> LegacyLake:
    """Build the scenario lake with DuckDB `release` in the new directory `workdir` (catalog file, ``data/``,
    ``external/``); a PostgreSQL catalog goes into `pg_url`, a fresh empty database."""
    workdir.mkdir(parents=True, exist_ok=False)
    catalog = _catalog_for(backend, workdir, pg_url)
    data = workdir / "data"
    built = run_legacy(release, "build", "--backend", backend, "--target", _target(backend, catalog),
                       "--data-path", f"{data}/", "--workdir", str(workdir))
    if built["version"] != VERSIONS[release]:
        raise AssertionError(f"DuckDB {release} wrote version {built['version']!r}, not {VERSIONS[release]!r}")
    return LegacyLake(release, backend, built["version"], catalog, ducklake_uri(backend, _target(backend, catalog)),
                      data, tuple(built["snapshots"]), tuple(built["tables"]), tuple(built["expired"]),
                      dict(built["features"]), workdir, _int_keys(built["reads"]))


def _int_keys(reads: dict[str, dict[str, list[str]]]) -> dict[int, dict[str, list[str]]]:
    return {int(sid): tables for sid, tables in reads.items()}


# What the old releases fail with when they read their own inlining lakes again in a new session (in the writing
# session they read them fine): 1.3 on any table created while inlining was on, then every read (the database is
# invalidated); 1.4 and 1.5 on a table whose inlining column was renamed ('Referenced column "name" not found'), at
# every snapshot, and on some tables at the snapshots where another table was altered.
REREAD_BUGS = re.compile(r"Attempting to dereference an optional pointer|database has been invalidated"
                         r"|Failed to read inlined data from DuckLake: Referenced column .* not found"
                         r"|Table with name \w+ does not exist at version \d+")


def rereadable(lake: LegacyLake) -> bool:
    """Whether the writing release reads every table at every snapshot again in a new session (``REREAD_BUGS``):
    only the lakes without inlined data."""
    return lake.features.get("inlined_rows", 0) == 0


def known_migration_loss(lake: LegacyLake) -> set[tuple[int, str]]:
    """(snapshot, "schema.table") that DuckDB 1.5.5's migrated twin reads unlike the writer: 0.2/0.3 record which
    rows of a merged file each snapshot added in ``partial_file_info`` ('2:12|3:24|…'), which the 0.3 → 0.4 step
    drops (it keeps only 'partial_max:N'), so time travel to before the merge sees the whole merged file."""
    if lake.version not in ("0.2", "0.3"):
        return set()
    merged = len(lake.writer_reads[lake.snapshots[-1]]["main.logs"])
    return {(sid, "main.logs") for sid, tables in lake.writer_reads.items()
            if 0 < len(tables.get("main.logs", ())) < merged}


def read_differences(want: dict[int, dict[str, list[str]]], got: dict[int, dict[str, list[str]]]
                     ) -> set[tuple[int, str]]:
    """The (snapshot, "schema.table") read differently by two ``json_reads``-shaped results."""
    return {(sid, table) for sid in set(want) | set(got)
            for table in set(want.get(sid, {})) | set(got.get(sid, {}))
            if want.get(sid, {}).get(table) != got.get(sid, {}).get(table)}


def needs_file_copy(lake: LegacyLake) -> bool:
    """Whether DuckDB 1.5.5 cannot migrate the catalog in place (0.2 in SQLite or PostgreSQL)."""
    return lake.version == "0.2" and lake.backend in ("sqlite", "postgres")


def duckdb_file_copy(lake: LegacyLake, workdir: Path) -> LegacyLake:
    """The lake's metadata copied into a new DuckDB-file catalog in `workdir` by the lake's own release (same
    version string, same data files), e.g. for DuckDB 1.5.5 to migrate a 0.2 SQLite or PostgreSQL catalog."""
    workdir.mkdir(parents=True, exist_ok=True)
    dest = workdir / _CATALOG_FILES["duckdb"]
    copied = run_legacy(lake.release, "file-copy", "--backend", lake.backend,
                        "--target", _target(lake.backend, lake.catalog), "--dest", str(dest))
    return replace(lake, backend="duckdb", version=copied["version"], catalog=str(dest),
                   attach=ducklake_uri("duckdb", str(dest)), root=None)


def _copy_catalog_file(source: str, dest: Path) -> None:
    shutil.copyfile(source, dest)
    wal = Path(source + ".wal")
    if wal.exists():
        shutil.copyfile(wal, Path(f"{dest}.wal"))


def _admin_url(url: str) -> str:
    return urlsplit(url)._replace(path="/postgres").geturl()


def _database(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def pg_template_copy(source_url: str, dest_url: str) -> None:
    """Replace the database of `dest_url` by a copy of `source_url`'s (``CREATE DATABASE … TEMPLATE``)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(_admin_url(dest_url), autocommit=True) as con:
        con.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(_database(dest_url))))
        # A template must have no sessions: end any a reader of ours left open. An autovacuum worker (a superuser
        # process we may not end) is told to exit by CREATE DATABASE itself.
        con.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                    "AND pid <> pg_backend_pid() AND usename = current_user AND backend_type = 'client backend'",
                    [_database(source_url)])
        con.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(_database(dest_url)), sql.Identifier(_database(source_url))))


def _copy_catalog(lake: LegacyLake, workdir: Path, pg_url: str | None) -> str:
    """An exact copy of the lake's catalog (in `workdir`, or in the database of `pg_url`); its CLI catalog string."""
    workdir.mkdir(parents=True, exist_ok=True)
    if lake.backend == "postgres":
        if not pg_url:
            raise ValueError("copying a PostgreSQL lake needs pg_url (a fresh database, replaced by the copy)")
        pg_template_copy(lake.catalog, pg_url)
        return pg_url
    dest = workdir / _CATALOG_FILES[lake.backend]
    _copy_catalog_file(lake.catalog, dest)
    return str(dest)


def with_catalog(lake: LegacyLake, catalog: str) -> LegacyLake:
    """The same lake (data files, snapshots, what the writer read) with another catalog of the same backend."""
    return replace(lake, catalog=catalog, attach=ducklake_uri(lake.backend, _target(lake.backend, catalog)), root=None)


def catalog_copy(lake: LegacyLake, workdir: Path, *, pg_url: str | None = None) -> LegacyLake:
    """An exact copy of the lake's catalog (a file in `workdir`, or the PostgreSQL database `pg_url`, which is
    replaced by a template copy), sharing the lake's data files."""
    return with_catalog(lake, _copy_catalog(lake, workdir, pg_url))


def duckdb_migrated_twin(lake: LegacyLake, workdir: Path, *, pg_url: str | None = None) -> LegacyLake:
    """`catalog_copy` migrated to 1.0 by DuckDB 1.5.5 (``AUTOMATIC_MIGRATION``). Raises DuckDB's error when the
    migration fails."""
    return migrate_in_place(catalog_copy(lake, workdir, pg_url=pg_url))


def legacy_cases(default: Container[tuple[str, str]] | None = None) -> list[ParameterSet]:
    """Every (release, backend) as parameters `release, backend`, those not in `default` (when given) in the full
    tier only; the tests of one lake share a worker, so it is built once per run."""
    out = []
    for release in RELEASES:
        for backend in BACKENDS:
            marks = [pytest.mark.xdist_group(f"legacy-{release}-{backend}")]
            if backend == "postgres":
                marks.append(pytest.mark.postgres)
            if default is not None and (release, backend) not in default:
                marks.append(FULL)
            out.append(pytest.param(release, backend, marks=marks, id=f"{release}-{backend}"))
    return out


def migrate_in_place(lake: LegacyLake) -> LegacyLake:
    """The lake's own catalog migrated to 1.0 by DuckDB 1.5.5 (``AUTOMATIC_MIGRATION``): only for a private copy.
    Raises DuckDB's error when the migration fails."""
    con = oracle_connect()
    try:
        con.execute(f"ATTACH {sql_str(lake.attach)} AS twin (AUTOMATIC_MIGRATION true)")
        version = con.execute("SELECT value FROM __ducklake_metadata_twin.ducklake_metadata "
                              "WHERE key = 'version' AND scope IS NULL").fetchall()[0][0]
        snapshots = tuple(int(r[0]) for r in con.execute(
            "SELECT snapshot_id FROM __ducklake_metadata_twin.ducklake_snapshot ORDER BY 1").fetchall())
        con.execute("DETACH twin")
    finally:
        con.close()
    return replace(lake, version=str(version), snapshots=snapshots)


def oracle_twin(lake: LegacyLake, workdir: Path, *, pg_url: str | None = None) -> LegacyLake:
    """`duckdb_migrated_twin`, through `duckdb_file_copy` (in ``workdir/file-copy``) where 1.5.5 needs it."""
    if needs_file_copy(lake):
        return duckdb_migrated_twin(duckdb_file_copy(lake, workdir / "file-copy"), workdir / "twin")
    return duckdb_migrated_twin(lake, workdir, pg_url=pg_url)


def private_copy(lake: LegacyLake, workdir: Path, *, pg_url: str | None = None) -> LegacyLake:
    """A copy of the lake with its own catalog, data and external files in `workdir` (a PostgreSQL catalog in the
    database of `pg_url`, replaced by a template copy), pointed at them: for a test that changes its lake."""
    if lake.root is None:
        raise ValueError("only a lake built by build_legacy_lake can be copied")
    catalog = _copy_catalog(lake, workdir, pg_url)
    for name in ("data", "external"):
        if (lake.root / name).exists():
            shutil.copytree(lake.root / name, workdir / name)
    _repoint(lake.backend, catalog, str(lake.root), str(workdir))
    return replace(lake, catalog=catalog, attach=ducklake_uri(lake.backend, _target(lake.backend, catalog)),
                   data_path=workdir / "data", root=workdir)


# Catalog rows naming files by absolute path (the registered external file).
_PATH_TABLES = ("ducklake_data_file", "ducklake_delete_file", "ducklake_files_scheduled_for_deletion")


def _repoint(backend: str, catalog: str, old_root: str, new_root: str) -> None:
    """Move a copied catalog's data path and absolute file paths from `old_root` to `new_root` (plain SQL on the
    metadata tables, no ducklake extension: an old DuckDB-file catalog keeps its storage version)."""
    statements = [("UPDATE ducklake_metadata SET value = replace(value, ?, ?) WHERE key = 'data_path'")]
    statements += [f"UPDATE {t} SET path = replace(path, ?, ?) WHERE NOT path_is_relative" for t in _PATH_TABLES]
    params = [f"{old_root}/", f"{new_root}/"]
    if backend == "postgres":
        import psycopg

        with psycopg.connect(catalog) as pg:
            for s in statements:
                pg.execute(s.replace("?", "%s"), params)
        return
    con: Any = sqlite3.connect(catalog) if backend == "sqlite" else duckdb.connect(catalog)
    try:
        for s in statements:
            con.execute(s, params)
        con.commit()
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------------------------
# reads


def legacy_read_attempt(lake: LegacyLake) -> tuple[dict[int, dict[str, list[str]]], dict[tuple[int, str], str]]:
    """What the lake's own release reads in a new session: every live snapshot → "schema.table" → its rows as
    sorted JSON texts, and (snapshot, "schema.table") → the error of each read that failed (left out of the first)."""
    result = run_legacy(lake.release, "reads", "--uri", lake.attach)
    errors = {(int(sid), table): error for sid, tables in result["errors"].items() for table, error in tables.items()}
    return _int_keys(result["reads"]), errors


def legacy_reads(lake: LegacyLake) -> dict[int, dict[str, list[str]]]:
    """`legacy_read_attempt`'s reads; fails when a read failed."""
    reads, errors = legacy_read_attempt(lake)
    if errors:
        shown = "\n".join(f"  snapshot {sid} {table}: {error}" for (sid, table), error in sorted(errors.items())[:5])
        raise RuntimeError(f"DuckDB {lake.release} failed {len(errors)} reads of {lake.catalog}:\n{shown}")
    return reads


def oracle_json_reads(attach: str) -> dict[int, dict[str, list[str]]]:
    """`legacy_reads` as DuckDB 1.5.5 reads the (1.0) catalog `attach`: comparable with the legacy release's."""
    con = oracle_connect()
    try:
        con.execute(f"ATTACH {sql_str(attach)} AS lake (READ_ONLY)")
        try:
            return _int_keys(json_reads(con))
        finally:
            con.execute("DETACH lake")
    finally:
        con.close()


def _row_key(row: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(repr(v) for v in row)


def oracle_reads(attach: str, snapshots: Sequence[int], *,
                 data_path: str | os.PathLike[str] | None = None) -> dict[int, dict[str, tuple[list[str], list[Any]]]]:
    """DuckDB 1.5.5's reads of a (1.0) catalog: snapshot → "schema.table" → (column names, canonical rows sorted),
    the rows in `tests.support.diff`'s canonical form (comparable with our reader's through `diff`)."""
    from tests.support.diff import ORACLE_ALIAS, duckdb_table_rows, tables_at

    options = ["READ_ONLY"] + ([f"DATA_PATH {sql_str(os.fspath(data_path))}"] if data_path is not None else [])
    con = oracle_connect()
    try:
        con.execute(f"ATTACH {sql_str(attach)} AS {ORACLE_ALIAS} ({', '.join(options)})")
        try:
            out: dict[int, dict[str, tuple[list[str], list[Any]]]] = {}
            for sid in snapshots:
                out[sid] = {}
                for schema, table in tables_at(con, sid):
                    names, rows = duckdb_table_rows(
                        con, f'{ORACLE_ALIAS}."{schema}"."{table}" AT (VERSION => {int(sid)})')
                    out[sid][f"{schema}.{table}"] = (names, sorted(rows, key=_row_key))
            return out
        finally:
            con.execute(f"DETACH {ORACLE_ALIAS}")
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------------------------
# built once per session


class LegacyLakes:
    """Legacy lakes built once per test session (per xdist worker), one per (release, backend): `get` hands out the
    shared lake (read-only), `copy` a private copy of it."""

    def __init__(self, root: Path, stack: contextlib.ExitStack) -> None:
        self._root = root
        self._stack = stack  # drops the PostgreSQL databases at the end of the session
        self._built: dict[tuple[str, str], LegacyLake] = {}

    def get(self, release: str, backend: str) -> LegacyLake:
        """The lake DuckDB `release` built on `backend` (built on first use); never change it."""
        key = (release, backend)
        if key not in self._built:
            pg_url = self._stack.enter_context(pg_database(require_env("DUCKLAKE_TEST_PG"))) \
                if backend == "postgres" else None
            self._built[key] = build_legacy_lake(release, backend, self._root / f"{release}-{backend}", pg_url=pg_url)
        return self._built[key]

    def copy(self, release: str, backend: str, dest: Path, *, pg_url: str | None = None) -> LegacyLake:
        """A private copy of the lake in the new directory `dest` (a PostgreSQL catalog in `pg_url`)."""
        dest.mkdir(parents=True, exist_ok=False)
        return private_copy(self.get(release, backend), dest, pg_url=pg_url)


@pytest.fixture(scope="session")
def legacy_lakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LegacyLakes]:
    """The session's legacy lakes."""
    with contextlib.ExitStack() as stack:
        yield LegacyLakes(tmp_path_factory.mktemp("legacy-lakes"), stack)


@pytest.fixture(scope="session")
def legacy_lake(legacy_lakes: LegacyLakes) -> Callable[[str, str], LegacyLake]:
    """``legacy_lake(release, backend)``: the shared lake, built once per session; tests must not change it."""
    return legacy_lakes.get


@pytest.fixture
def legacy_lake_copy(legacy_lakes: LegacyLakes, tmp_path: Path) -> Iterator[Callable[[str, str], LegacyLake]]:
    """``legacy_lake_copy(release, backend)``: a private copy of the shared lake for this test (a PostgreSQL copy in
    its own database, dropped afterwards)."""
    with contextlib.ExitStack() as stack:
        count = 0

        def make(release: str, backend: str) -> LegacyLake:
            nonlocal count
            count += 1
            pg_url = stack.enter_context(pg_database(require_env("DUCKLAKE_TEST_PG"))) \
                if backend == "postgres" else None
            return legacy_lakes.copy(release, backend, tmp_path / f"legacy-{release}-{backend}-{count}", pg_url=pg_url)

        yield make


@pytest.fixture
def pg_urls() -> Iterator[list[str]]:
    """Two fresh PostgreSQL databases, made only when a test asks (its lake is on PostgreSQL)."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(pg_database(require_env("DUCKLAKE_TEST_PG"))) for _ in range(2)]


def two_catalog_urls(backend: str, request: pytest.FixtureRequest) -> list[str | None]:
    """Where two copies of a lake go: two fresh PostgreSQL databases for a PostgreSQL lake, else files (None)."""
    if backend != "postgres":
        return [None, None]
    return list(request.getfixturevalue("pg_urls"))
