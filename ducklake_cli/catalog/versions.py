"""DuckLake catalog format versions: every string that exists, who writes and attaches each, what this tool does
with each, and how a catalog's version is read (spec versions §1)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from sqlalchemy import text

from ducklake_cli.catalog import schema as s
from ducklake_cli.errors import NotADuckLakeError, UnsupportedVersionError

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ducklake_cli.catalog.backends import Backend


class Support(Enum):
    """What this tool does with a catalog of one version."""

    CURRENT = "read and write"
    CURRENT_DEV = "read in place when it has 1.1's columns; writes refused; `ducklake upgrade --to 1.1` finishes it"
    LEGACY = "read only; `ducklake upgrade` moves it to 1.0"
    LEGACY_DEV = "read only; attach it once with the DuckDB release named to finish its migration"
    TOO_OLD = "not read; attach it once with DuckDB 1.3 or 1.4 first"


@dataclass(frozen=True)
class FormatVersion:
    """One DuckLake catalog version string and its place in the world."""

    version: str
    written_by: str
    attached_by: str  # which DuckDB releases attach it as it is (no migration)
    support: Support

    @property
    def needs_migration(self) -> bool:
        """Whether this tool needs the catalog migrated before writing to it (DuckDB 1.5.2+ too, unless it is
        a 1.1 catalog: 2.0 reads those, 1.5 never)."""
        return self.support is not Support.CURRENT



CURRENT = s.FORMAT_VERSION  # what new catalogs get by default
WRITABLE = (s.FORMAT_VERSION, s.LATEST_VERSION)  # read and written in place
V11 = ("1.1-dev1", s.LATEST_VERSION)  # the versions with 1.1's tables and rules (DuckDB's SupportsV1_1Metadata)
IN_PLACE = (*WRITABLE, "1.1-dev1")  # read in place; anything older is read through a copy migrated to 1.0
# Oldest first; the order migrations run in.
KNOWN: dict[str, FormatVersion] = {v.version: v for v in (
    FormatVersion("0.1", "DuckDB 1.3.0", "DuckDB 1.3.0", Support.TOO_OLD),
    FormatVersion("0.2", "DuckDB 1.3.1-1.3.2", "DuckDB 1.3.1-1.3.2 (1.4 migrates it on attach)", Support.LEGACY),
    FormatVersion("0.3-dev1", "DuckDB 1.3 extension builds after 2025-08", "DuckDB 1.3 extension builds after 2025-08",
                  Support.LEGACY_DEV),
    FormatVersion("0.3", "DuckDB 1.4.x", "DuckDB 1.4.x", Support.LEGACY),
    FormatVersion("0.4-dev1", "DuckDB nightly builds of early 2026", "DuckDB nightly builds of early 2026",
                  Support.LEGACY_DEV),
    FormatVersion("0.4", "DuckDB 1.5.0-1.5.1", "DuckDB 1.5.0-1.5.1", Support.LEGACY),
    FormatVersion("1.0", "DuckDB 1.5.2 and later 1.5.x", "DuckDB 1.5.2 and later, DuckDB 2.0", Support.CURRENT),
    FormatVersion("1.1-dev1", "DuckDB nightly builds of Jun-Oct 2026", "no release", Support.CURRENT_DEV),
    FormatVersion("1.1", "DuckDB 2.0", "DuckDB 2.0 (not DuckDB 1.5)", Support.CURRENT),
)}
# The dev strings' migrations end at these releases (DuckDB re-runs the step before them tolerantly).
_DEV_FINISHED_BY = {"0.3-dev1": "DuckDB 1.4.x", "0.4-dev1": "DuckDB 1.5.0 or 1.5.1"}


def format_version(version: str | None) -> FormatVersion | None:
    """What is known of a version string (None: unknown, e.g. a fork's own string)."""
    return KNOWN.get(version or "")


def is_v11(version: str | None) -> bool:
    """Whether a catalog of this version has DuckLake 1.1's tables and follows its rules."""
    return version in V11


def order(version: str) -> int:
    """Position of a known version in migration order."""
    return list(KNOWN).index(version)


def read_version(conn: Connection, backend: Backend) -> str | None:
    """The catalog's `version` row (global scope), also from a 0.1 catalog whose metadata has no scope column;
    refuses a database without DuckLake tables."""
    present = backend.list_tables(conn)
    if "ducklake_metadata" not in present or "ducklake_snapshot" not in present:
        raise NotADuckLakeError(
            f"{backend.target.display()} holds no DuckLake catalog (no ducklake_metadata table)",
            hint="create one with `ducklake create-catalog`, or check --metadata-schema",
        )
    table = backend.qualify("ducklake_metadata")
    columns = backend.column_names(conn, "ducklake_metadata")
    scoped = " AND scope IS NULL" if "scope" in columns else ""
    found = conn.execute(text(f"SELECT value FROM {table} WHERE {backend.quote('key')} = 'version'{scoped}")).first()
    return None if found is None else str(found[0])


def refusal(version: str | None, *, where: str, writing: bool) -> UnsupportedVersionError | None:
    """The one-line error for a catalog this command cannot serve (None: it can)."""
    known = format_version(version)
    if known is None:
        return UnsupportedVersionError(
            f"{where} has DuckLake catalog version {version!r}, which no DuckDB release writes (a fork's or a "
            "newer format); nothing was read or changed",
            hint="open it with the tool that wrote it; `ducklake` reads 0.2-1.1 and writes 1.0 and 1.1")
    if known.support is Support.TOO_OLD:
        return UnsupportedVersionError(
            f"{where} is a DuckLake {version} catalog ({known.written_by}), older than this tool reads",
            hint="attach it once with DuckDB 1.3.1+ or 1.4 (they migrate 0.1 on attach), then run `ducklake upgrade`")
    if writing and known.support is Support.CURRENT_DEV:
        return UnsupportedVersionError(
            f"{where} is a DuckLake {version} catalog (a development version of 1.1, read only here)",
            hint="run `ducklake upgrade --to 1.1` first (it adds what the nightly build did not, and backs up)")
    if writing and known.support is Support.LEGACY_DEV:
        return UnsupportedVersionError(
            f"{where} is a DuckLake {version} catalog (a development version, read only here)",
            hint=f"attach it once with {_DEV_FINISHED_BY[version or '']} to finish its migration, then run "
            "`ducklake upgrade`")
    if writing and known.support is Support.LEGACY:
        return UnsupportedVersionError(
            f"{where} is a DuckLake {version} catalog ({known.written_by}); this tool reads it but writes only 1.0",
            hint="run `ducklake upgrade` first (it plans, backs up and verifies; DuckDB 1.5.2+ and 2.0 read the "
            "result, DuckDB 1.4 and older do not)")
    return None


def v11_only(what: str, *, where: str) -> UnsupportedVersionError:
    """The one-line refusal of a DuckLake 1.1 feature asked of a 1.0 catalog (nothing is written)."""
    return UnsupportedVersionError(
        f"{what} needs a DuckLake 1.1 catalog; {where} is 1.0, so nothing was changed",
        hint="run `ducklake upgrade --to 1.1` first (DuckDB 1.5 cannot read the result, DuckDB 2.0 can)")


def system_columns(conn: Connection, backend: Backend, version: str | None, table_name: str) -> tuple[str, str, str]:
    """The (row id, begin snapshot, end snapshot) column names of one existing inlined-data table (spec versions
    §3.3): 1.1's `_ducklake_` names on a 1.1 catalog, 1.0's on older ones; probed on a 1.1-dev1 catalog (which nightly
    wrote it decides) or when the version is not known (`None`)."""
    if version is not None and version != "1.1-dev1":
        return s.inlined_system_columns(is_v11(version))
    names = backend.column_names(conn, table_name)
    first = str(names[0]).lower() if names else ""
    return s.INLINED_SYSTEM_V11 if first == s.INLINED_SYSTEM_V11[0] else s.INLINED_SYSTEM_V10
