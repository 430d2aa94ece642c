"""`create-catalog`: a new, empty DuckLake v1.0 catalog."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ducklake_cli.catalog.create import create_catalog as create_tables
from ducklake_cli.catalog.schema import FORMAT_VERSION, LATEST_VERSION
from ducklake_cli.catalog.url import CatalogTarget
from ducklake_cli.errors import DuckLakeError, InvalidCatalogError, UsageError
from ducklake_cli.lake import Lake
from ducklake_cli.ops.results import Section
from ducklake_cli.storage.files import ensure_dir, split_protocol


@dataclass(frozen=True)
class CreatedCatalog:
    """What `create-catalog` made."""

    catalog: str
    backend: str
    data_path: str
    format_version: str

    def to_json(self) -> Any:
        """`{"catalog", "backend", "data_path", "format_version"}`."""
        return {"catalog": self.catalog, "backend": self.backend, "data_path": self.data_path,
                "format_version": self.format_version}

    def sections(self) -> list[Section]:
        """A one-row summary."""
        return [Section("Created", ("catalog", "backend", "data_path", "format_version"),
                        ((self.catalog, self.backend, self.data_path, self.format_version),))]


def normalise_data_path(data_path: str) -> str:
    """Absolute local paths, `/` separators and a trailing `/`, as DuckDB stores them."""
    proto, _ = split_protocol(data_path)
    if proto == "file":
        local = data_path[len("file://"):] if data_path.startswith("file://") else data_path
        return ensure_dir(os.path.abspath(os.path.expanduser(local)).replace(os.sep, "/"))
    if proto == "s3a":
        data_path = "s3://" + data_path.split("://", 1)[1]
    return ensure_dir(data_path)


FORMAT_VERSIONS = (FORMAT_VERSION, LATEST_VERSION)


def create_catalog(target: CatalogTarget, *, data_path: str, version: str = FORMAT_VERSION) -> CreatedCatalog:
    """Create the catalog tables and initial rows of DuckLake `version` (1.0 or 1.1) in one transaction; refuse to
    touch an existing catalog."""
    if version not in FORMAT_VERSIONS:
        raise UsageError(f"--format-version must be one of {', '.join(FORMAT_VERSIONS)}, not {version!r}; nothing "
                         "was created")
    if not data_path.strip():
        raise InvalidCatalogError("--data-path must not be empty")
    root = normalise_data_path(data_path)
    created_file = target.path is not None and not target.path.exists()
    if target.path is not None and not target.path.parent.is_dir():
        raise InvalidCatalogError(f"directory {target.path.parent} does not exist")
    lake = Lake(target, data_path=root)
    try:
        with lake.connection(write=True) as conn:
            create_tables(conn, lake.backend, data_path=root, version=version)
    except BaseException:
        lake.close()
        if created_file and target.path is not None:
            # A half-made file is worse than none: nothing was there before we started.
            for leftover in (target.path, target.path.with_name(target.path.name + ".wal")):
                leftover.unlink(missing_ok=True)
        raise
    lake.close()
    if split_protocol(root)[0] == "file":
        try:
            os.makedirs(root, exist_ok=True)
        except OSError as exc:
            raise DuckLakeError(f"catalog created, but the data directory {root} could not be made: {exc}") from exc
    return CreatedCatalog(target.display(), lake.backend.name, root, version)
