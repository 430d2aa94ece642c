"""Create a new DuckLake catalog (1.0 or 1.1) exactly as DuckDB's extension does (spec §1; versions §2.6)."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import Connection, insert

from ducklake_cli._version import __version__
from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import Backend, DuckDBBackend
from ducklake_cli.catalog.changes import format_changes, quote_name
from ducklake_cli.catalog.duckdb_storage import NEW_FILE_STORAGE
from ducklake_cli.errors import CatalogExistsError


def create_table_sql(backend: Backend, name: str, columns: list[tuple[str, str]], pk: str | None) -> str:
    """`CREATE TABLE` text for one spec table with the backend's type names."""
    cols = []
    for col, kind in columns:
        decl = f"{backend.quote(col)} {backend.ddl_types[kind]}"
        if col == pk:
            decl += " PRIMARY KEY"
        cols.append(decl)
    return f"CREATE TABLE {backend.qualify(name)}({', '.join(cols)})"


def existing_catalog_tables(conn: Connection, backend: Backend) -> set[str]:
    """The spec tables already present (any one of them means: not ours to create)."""
    wanted = {name for name, _, _ in s.SPEC_TABLES_V11}
    return wanted & backend.list_tables(conn)


def create_database_file(backend: Backend, *, storage_version: str = NEW_FILE_STORAGE) -> bool:
    """Make the empty database file of a new DuckDB-file catalog, stored for DuckDB `storage_version` (`v1.5.0`,
    the default, is read by the oldest DuckDB we support; `latest` is the installed DuckDB's own format, 2.0's
    unreadable before 2.0). Optional: connecting creates a missing file with the default. False, changing nothing,
    for other backends and for a file that exists (an existing file's storage is never changed)."""
    path = backend.target.path
    if not isinstance(backend, DuckDBBackend) or path is None or (path.exists() and path.stat().st_size > 0):
        return False
    backend.create_file(storage_version=storage_version)
    return True


def create_catalog(conn: Connection, backend: Backend, *, data_path: str, now: dt.datetime | None = None,
                   version: str = s.FORMAT_VERSION) -> None:
    """Create the tables of `version` (1.0: 28, 1.1: 29) and the initial rows in the open transaction of `conn`."""
    found = existing_catalog_tables(conn, backend)
    if found:
        raise CatalogExistsError(
            f"{backend.target.display()} already holds DuckLake catalog tables ({len(found)} found); "
            "nothing was changed",
            hint="inspect it with `ducklake inspect`, or pick an empty database or a new file",
        )
    schema_sql = backend.create_schema_sql()
    if schema_sql:
        conn.exec_driver_sql(schema_sql)
    for name, columns, pk in s.spec_tables(version):
        conn.exec_driver_sql(create_table_sql(backend, name, columns, pk))
    when = backend.encode_timestamp(now or dt.datetime.now(dt.UTC))
    conn.execute(insert(s.snapshot_t), [{
        "snapshot_id": 0, "snapshot_time": when, "schema_version": 0, "next_catalog_id": 1, "next_file_id": 0,
    }])
    conn.execute(insert(s.snapshot_changes_t), [{
        "snapshot_id": 0, "changes_made": format_changes([("created_schema", quote_name("main"))]),
        "author": None, "commit_message": None, "commit_extra_info": None,
    }])
    conn.execute(insert(s.metadata_t), [
        {"key": "version", "value": version, "scope": None, "scope_id": None},
        {"key": "created_by", "value": f"ducklake-cli {__version__}", "scope": None, "scope_id": None},
        {"key": "data_path", "value": data_path, "scope": None, "scope_id": None},
        {"key": "encrypted", "value": "false", "scope": None, "scope_id": None},
    ])
    conn.execute(insert(s.schema_t), [{
        "schema_id": 0, "schema_uuid": str(uuid.uuid4()), "begin_snapshot": 0, "end_snapshot": None,
        "schema_name": "main", "path": "main/", "path_is_relative": True,
    }])
