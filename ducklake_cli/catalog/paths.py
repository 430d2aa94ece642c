"""DuckLake path resolution (spec §3.4): data_path → schema → table → file."""

from __future__ import annotations

from ducklake_cli.catalog.models import DataFile, DeleteFile, SchemaInfo, TableInfo
from ducklake_cli.storage.files import ensure_dir


def schema_dir(data_path: str, schema: SchemaInfo) -> str:
    """Directory of a schema."""
    if schema.path is None:
        return ensure_dir(data_path)
    return ensure_dir(ensure_dir(data_path) + schema.path if schema.path_is_relative else schema.path)


def table_dir(data_path: str, schema: SchemaInfo, table: TableInfo) -> str:
    """Directory of a table."""
    base = schema_dir(data_path, schema)
    if table.path is None:
        return base
    return ensure_dir(base + table.path if table.path_is_relative else table.path)


def file_path(table_directory: str, f: DataFile | DeleteFile) -> str:
    """Full path of a data or delete file."""
    return table_directory + f.path if f.path_is_relative else f.path


def uuid7() -> str:
    """A time-ordered UUID (version 7), as DuckDB names its files and tables."""
    import os
    import time
    import uuid

    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 68 & 0xFFF) << 64 | 0b10 << 62 | rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def new_data_file_name() -> str:
    """A fresh data file name, `ducklake-<uuidv7>.parquet`."""
    return f"ducklake-{uuid7()}.parquet"
