"""Parquet footers: field ids and sizes, read through fsspec without reading data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ducklake_cli.errors import StorageError
from ducklake_cli.storage.files import filesystem, split_protocol


def top_level_field_ids(path: str, storage_options: Mapping[str, Any] | None = None) -> set[int]:
    """Field ids of the top-level columns of a Parquet file (from its footer)."""
    import pyarrow.parquet as pq

    fs = filesystem(path, storage_options)
    try:
        with fs.open(path, "rb") as fh:
            schema = pq.read_schema(fh)
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read the Parquet footer of {path}: {exc}") from exc
    out = set()
    for f in schema:
        raw = (f.metadata or {}).get(b"PARQUET:field_id")
        if raw is not None:
            out.add(int(raw))
    return out


@dataclass(frozen=True)
class Footer:
    """What a Parquet file's footer says: its Arrow schema, the Parquet metadata (row groups and their column
    statistics), the file's size and the length of the Thrift footer."""

    path: str
    schema: Any  # pyarrow.Schema
    metadata: Any  # pyarrow.parquet.FileMetaData
    file_size: int
    footer_size: int


def read_footer(path: str, storage_options: Mapping[str, Any] | None = None) -> Footer:
    """The footer of one Parquet file (only its tail is read)."""
    import pyarrow.parquet as pq

    fs = filesystem(path, storage_options)
    try:
        size = int(fs.size(path))
        with fs.open(path, "rb") as fh:
            fh.seek(max(size - 8, 0))
            tail = fh.read(8)
            if len(tail) < 8 or tail[4:] != b"PAR1":
                raise StorageError(f"{path} is not a Parquet file")
            fh.seek(0)
            pf = pq.ParquetFile(fh)
            return Footer(path, pf.schema_arrow, pf.metadata, size, int.from_bytes(tail[:4], "little"))
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read the Parquet footer of {path}: {exc}") from exc


def glob_files(pattern: str, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """The files a path or glob names, sorted, each spelled with the pattern's protocol (local ones absolute)."""
    import os

    proto, rest = split_protocol(pattern)
    if proto == "file":
        pattern = os.path.abspath(os.path.expanduser(rest)).replace(os.sep, "/")
    fs = filesystem(pattern, storage_options)
    fs.invalidate_cache()
    try:
        found = fs.glob(pattern) if any(ch in pattern for ch in "*?[") else (
            [pattern] if fs.isfile(pattern) else [])
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot list {pattern}: {exc}") from exc
    names = sorted(str(p) for p in found if fs.isfile(p))
    if proto == "file":
        return [n if n.startswith("/") else "/" + n for n in names]
    prefix = pattern.split("://", 1)[0] + "://"
    return [n if "://" in n else prefix + n for n in names]
