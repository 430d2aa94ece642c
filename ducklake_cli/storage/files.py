"""File-system access through fsspec (local and S3), imported lazily."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ducklake_cli.errors import StorageError

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem


def split_protocol(path: str) -> tuple[str, str]:
    """`s3://b/k` → (`s3`, `b/k`); plain paths are local."""
    if "://" in path:
        proto, rest = path.split("://", 1)
        return proto.lower(), rest
    return "file", path


def filesystem(path: str, storage_options: Mapping[str, Any] | None = None) -> AbstractFileSystem:
    """The fsspec file system for a path (s3/s3a share one implementation)."""
    import fsspec

    proto, _ = split_protocol(path)
    if proto == "s3a":
        proto = "s3"
    return fsspec.filesystem(proto, **dict(storage_options or {}))


def read_int_column(path: str, column: str, storage_options: Mapping[str, Any] | None = None) -> list[int]:
    """Read one BIGINT column of a Parquet file (e.g. `_ducklake_internal_snapshot_id`)."""
    import pyarrow.parquet as pq

    fs = filesystem(path, storage_options)
    try:
        with fs.open(path, "rb") as fh:
            table = pq.read_table(fh, columns=[column])
    except (OSError, KeyError, ValueError) as exc:
        raise StorageError(f"cannot read column {column!r} of {path}: {exc}") from exc
    return [v for v in table.column(0).to_pylist() if v is not None]
