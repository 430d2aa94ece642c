"""Parquet footers: field ids and sizes, read through fsspec without reading data."""

from __future__ import annotations

import io
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


class _Prefix(io.RawIOBase):
    """The first `limit` bytes of an open binary file, as a file of its own (pyarrow reads its footer at the
    end of what it is shown)."""

    def __init__(self, raw: Any, limit: int) -> None:
        super().__init__()
        self.raw = raw
        self.limit = limit
        self.pos = 0

    def readable(self) -> bool:
        """Always."""
        return True

    def seekable(self) -> bool:
        """Always."""
        return True

    def tell(self) -> int:
        """The position within the prefix."""
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move within the prefix (its end is `limit`)."""
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.limit}[whence]
        self.pos = max(0, min(base + offset, self.limit))
        return self.pos

    def readinto(self, buffer: Any) -> int:
        """Read up to the end of the prefix."""
        want = min(len(buffer), self.limit - self.pos)
        if want <= 0:
            return 0
        self.raw.seek(self.pos)
        data = self.raw.read(want)
        buffer[:len(data)] = data
        self.pos += len(data)
        return len(data)


def read_footer(path: str, storage_options: Mapping[str, Any] | None = None, *, size: int | None = None) -> Footer:
    """The footer of one Parquet file (only its tail is read); with `size`, of the file its first `size` bytes
    make (a file with bytes appended after the size the catalog records)."""
    import pyarrow.parquet as pq

    fs = filesystem(path, storage_options)
    try:
        actual = int(fs.size(path))
        end = actual if size is None else size
        if size is not None and not 12 <= size <= actual:
            raise StorageError(f"{path} is {actual} bytes: its first {size} cannot be a Parquet file")
        with fs.open(path, "rb") as fh:
            fh.seek(max(end - 8, 0))
            tail = fh.read(8)
            if len(tail) < 8 or tail[4:] != b"PAR1":
                raise StorageError(f"{path} is not a Parquet file" if size is None else
                                   f"the first {end} bytes of {path} are not a Parquet file")
            if size is not None:  # a whole file also starts with the magic (a tail alone could be anything)
                fh.seek(0)
                if fh.read(4) != b"PAR1":
                    raise StorageError(f"the first {end} bytes of {path} are not a Parquet file")
            fh.seek(0)
            pf = pq.ParquetFile(fh if size is None else _Prefix(fh, end))
            return Footer(path, pf.schema_arrow, pf.metadata, end, int.from_bytes(tail[:4], "little"))
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read the Parquet footer of {path}: {exc}") from exc


def truncate_parquet(path: str, size: int, storage_options: Mapping[str, Any] | None = None, *,
                     expected: int | None = None) -> None:
    """Cut a file back to its first `size` bytes, which must be a whole Parquet file (bytes appended after the
    size the catalog records); `expected`: the size it must have now (nothing else touched it since it was
    checked). Local files are truncated in place; on object stores the prefix is written back as the object."""
    import os
    import shutil
    import tempfile

    read_footer(path, storage_options, size=size)  # raises unless the prefix is a Parquet file
    fs = filesystem(path, storage_options)
    try:
        actual = int(fs.size(path))
        if expected is not None and actual != expected:
            raise StorageError(f"{path} is {actual} bytes now, not the {expected} it was when checked; left as is")
        if actual == size:
            return
        proto, local = split_protocol(path)
        if proto == "file":
            os.truncate(local, size)
        else:
            with tempfile.TemporaryFile() as tmp:  # never read and write one object at once
                with fs.open(path, "rb") as src:
                    left = size
                    while left > 0:
                        chunk = src.read(min(left, 1 << 24))
                        if not chunk:
                            raise StorageError(f"{path} ended before {size} bytes; left as is")
                        tmp.write(chunk)
                        left -= len(chunk)
                tmp.seek(0)
                with fs.open(path, "wb") as dst:
                    shutil.copyfileobj(tmp, dst, 1 << 24)
        fs.invalidate_cache()
        if int(fs.size(path)) != size:
            raise StorageError(f"{path} is not {size} bytes after truncating it")
    except OSError as exc:
        raise StorageError(f"cannot truncate {path} to {size} bytes: {exc}") from exc


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
