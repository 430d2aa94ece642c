"""DuckLake path resolution (spec §3.4): data_path → schema → table → file."""

from __future__ import annotations

from typing import Protocol

from ducklake_cli.storage.files import ensure_dir


class PathRow(Protocol):
    """The path fields of a schema, table or file row (spec §3.4)."""

    @property
    def path(self) -> str | None: ...
    @property
    def path_is_relative(self) -> bool: ...


def below(base: str, row: PathRow) -> str:
    """The directory a schema or table row names below `base`: its own path (relative to `base` or absolute), or
    `base` itself when it has none."""
    if row.path is None:
        return ensure_dir(base)
    return ensure_dir(ensure_dir(base) + row.path if row.path_is_relative else row.path)


def schema_dir(data_path: str, schema: PathRow) -> str:
    """Directory of a schema."""
    return below(data_path, schema)


def table_dir(data_path: str, schema: PathRow | None, table: PathRow) -> str:
    """Directory of a table (directly below the data path when its schema row is unknown, e.g. dropped)."""
    return below(schema_dir(data_path, schema) if schema is not None else ensure_dir(data_path), table)


class FileRow(Protocol):
    """The path fields of a data or delete file row."""

    @property
    def path(self) -> str: ...
    @property
    def path_is_relative(self) -> bool: ...


def file_path(table_directory: str, f: FileRow) -> str:
    """Full path of a data or delete file."""
    return table_directory + f.path if f.path_is_relative else f.path


def relative_to_root(path: str, data_path: str) -> tuple[str, bool]:
    """A full path as DuckDB stores it in `ducklake_files_scheduled_for_deletion`: relative to the data path
    when it lies below it, else absolute."""
    root = ensure_dir(data_path)
    return (path[len(root):], True) if path.startswith(root) else (path, False)


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
