"""Parquet footers: field ids and sizes, read through fsspec without reading data."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ducklake_cli.errors import StorageError
from ducklake_cli.storage.files import filesystem


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
