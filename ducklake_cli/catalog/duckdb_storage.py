"""The storage format of DuckDB database files (spec ducklake-versions §4): read from the header bytes, mapped to the
oldest DuckDB release that reads it, and the format new DuckDB-file catalogs get."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ducklake_cli.catalog.url import DUCKDB_MAGIC

# What new DuckDB-file catalogs are stored as: the oldest DuckDB we support (1.5.5) reads it, and DuckDB 1.5's own
# ducklake extension creates the same (DuckDB 2.0's default storage is unreadable before 2.0).
NEW_FILE_STORAGE = "v1.5.0"
# What a copy of an older catalog (0.2-0.4, e.g. `upgrade`'s backup) is stored as: the DuckDB releases that wrote
# those versions (1.3, 1.4, 1.5.0) read it; they cannot read v1.5.0 files.
LEGACY_FILE_STORAGE = "v1.0.0"

# The oldest DuckDB release that reads each storage number of a database file (spec ducklake-versions §4): the
# main header's version (bytes 12-19) and the serialization version of the newer database header. Numbers above
# the last known one are DuckDB 2.0's (which writes 999 and 69).
_HEADER_VERSIONS = {64: (0, 10), 65: (1, 2), 66: (1, 3), 67: (1, 4), 68: (1, 5)}
_SERIALIZATIONS = {1: (0, 10), 2: (1, 0), 3: (1, 1), 4: (1, 2), 5: (1, 3), 6: (1, 4), 7: (1, 5)}
_NEWEST_KNOWN = (2, 0)
_HEADER_BLOCK = 4096  # the main header, then two database headers, each in its own block


@dataclass(frozen=True)
class DuckDBStorage:
    """The storage format of a DuckDB database file, as its headers say."""

    header_version: int
    serialization: int | None

    @property
    def needs(self) -> tuple[int, int]:
        """(major, minor) of the oldest DuckDB release that reads the file."""
        newer = self.header_version > max(_HEADER_VERSIONS)  # older ones: DuckDB's own error says which
        by_header = _HEADER_VERSIONS.get(self.header_version, _NEWEST_KNOWN if newer else (0, 0))
        if self.serialization is None:
            return by_header
        return max(by_header, _SERIALIZATIONS.get(self.serialization, _NEWEST_KNOWN))

    def describe(self) -> str:
        """`storage version 999 (DuckDB 2.0+ format)`; the serialization too when it is what needs the newer
        DuckDB (a file an older DuckDB made, later written by 2.0 with STORAGE_VERSION 'latest')."""
        major, minor = self.needs
        text = f"storage version {self.header_version}"
        if self.serialization is not None and _HEADER_VERSIONS.get(self.header_version, _NEWEST_KNOWN) < self.needs:
            text += f", serialization {self.serialization}"
        return f"{text} (DuckDB {major}.{minor}+ format)"


def duckdb_file_storage(path: Path) -> DuckDBStorage | None:
    """The storage of a DuckDB database file, read from its header bytes; None when it is not one."""
    try:
        with path.open("rb") as fh:
            head = fh.read(3 * _HEADER_BLOCK)
    except OSError:
        return None
    if len(head) < 20 or head[8:12] != DUCKDB_MAGIC:
        return None
    version = int.from_bytes(head[12:20], "little")
    # Each database header: checksum, iteration, meta block, free list, block count, block size, vector size,
    # serialization version (8 bytes each); the one with the higher iteration is current.
    headers = [head[at + 8:at + 64] for at in (_HEADER_BLOCK, 2 * _HEADER_BLOCK) if len(head) >= at + 64]
    if not headers or version < min(_HEADER_VERSIONS):  # before 0.10 the field did not exist
        return DuckDBStorage(version, None)
    current = max(headers, key=lambda h: int.from_bytes(h[:8], "little"))
    return DuckDBStorage(version, int.from_bytes(current[48:56], "little"))


def installed_duckdb() -> tuple[str, tuple[int, int]]:
    """The installed duckdb's version: its text and (major, minor)."""
    import duckdb

    text = duckdb.__version__
    major, minor = (int("".join(ch for ch in part if ch.isdigit()) or 0) for part in text.split(".")[:2])
    return text, (major, minor)
