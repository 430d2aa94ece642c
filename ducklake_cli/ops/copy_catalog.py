"""`copy-catalog`: copy a DuckLake catalog to an empty catalog on any backend, then verify it row for row."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import DBAPIError

from ducklake_cli.catalog.copy import TableCopy, check_empty, copy_rows, create_tables, drop_tables, plan_copy
from ducklake_cli.catalog.create import create_database_file
from ducklake_cli.catalog.duckdb_storage import LEGACY_FILE_STORAGE
from ducklake_cli.catalog.url import CatalogTarget
from ducklake_cli.catalog.versions import IN_PLACE
from ducklake_cli.errors import CatalogExistsError, DuckLakeError, InvalidCatalogError
from ducklake_cli.lake import Lake
from ducklake_cli.ops.create import normalise_data_path
from ducklake_cli.ops.results import Section

BATCH_SIZE = 5000


@dataclass(frozen=True)
class CopiedTable:
    """Rows of one table in the source and in the copy."""

    table: str
    source_rows: int
    copied_rows: int
    matches: bool


@dataclass(frozen=True)
class CopiedCatalog:
    """What `copy-catalog` copied and how the verification went."""

    source: str
    destination: str
    source_backend: str
    destination_backend: str
    data_path: str
    data_path_rewritten: bool
    tables: tuple[CopiedTable, ...]

    @property
    def rows(self) -> int:
        """Rows copied over all tables."""
        return sum(t.copied_rows for t in self.tables)

    def to_json(self) -> Any:
        """`{"source", "destination", …, "verified": true, "rows", "tables": [{"table", "source_rows",
        "copied_rows", "matches"}]}`."""
        return {
            "source": self.source, "destination": self.destination, "source_backend": self.source_backend,
            "destination_backend": self.destination_backend, "data_path": self.data_path,
            "data_path_rewritten": self.data_path_rewritten, "verified": all(t.matches for t in self.tables),
            "rows": self.rows,
            "tables": [{"table": t.table, "source_rows": t.source_rows, "copied_rows": t.copied_rows,
                        "matches": t.matches} for t in self.tables],
        }

    def sections(self) -> list[Section]:
        """Rows per table, source and copy."""
        return [Section("Copied tables", ("table", "source_rows", "copied_rows", "matches"),
                        tuple((t.table, t.source_rows, t.copied_rows, t.matches) for t in self.tables))]


def _same_place(a: CatalogTarget, b: CatalogTarget) -> bool:
    if a.path is not None or b.path is not None:
        return a.path is not None and b.path is not None and a.path.resolve() == b.path.resolve()
    return (a.backend, a.host, a.port, a.database, a.metadata_schema) == (b.backend, b.host, b.port, b.database,
                                                                           b.metadata_schema)


def copy_catalog(source: CatalogTarget, destination: CatalogTarget, *, data_path: str | None = None,
                 batch_size: int = BATCH_SIZE) -> CopiedCatalog:
    """Copy every catalog table from `source` into the empty `destination` in one transaction (MySQL: tables
    dropped again on failure), verify it, and commit only a verified copy."""
    if _same_place(source, destination):
        raise CatalogExistsError("the source and the destination are the same catalog; nothing was changed")
    if data_path is not None and not data_path.strip():
        raise InvalidCatalogError("--data-path must not be empty")
    new_root = normalise_data_path(data_path) if data_path else None
    if destination.path is not None and not destination.path.parent.is_dir():
        raise InvalidCatalogError(f"directory {destination.path.parent} does not exist")
    if destination.path is not None and destination.path.is_dir():
        raise InvalidCatalogError(f"the destination {destination.path} is a directory")
    src = Lake(source, read_only=True)  # as it is: an older version is copied as that version
    dst = Lake(destination)
    created_file = destination.path is not None and not destination.path.exists()
    created: list[str] = []
    try:
        with src.connection(consistent=True) as sconn:
            plan = plan_copy(sconn, src.backend)
            if plan.version not in IN_PLACE:  # a DuckDB file the release that wrote this version can still open
                create_database_file(dst.backend, storage_version=LEGACY_FILE_STORAGE)
            with dst.connection(write=True) as dconn:
                check_empty(dconn, dst.backend, any_table=destination.is_file)
                create_tables(dconn, dst.backend, plan, created)
                copies = copy_rows(sconn, src.backend, dconn, dst.backend, plan, new_root=new_root,
                                   batch=batch_size)
                _check(copies)
    except BaseException as exc:
        dst.close()
        _undo(dst, created, created_file)
        if isinstance(exc, DBAPIError):
            text = str(exc.orig or exc).strip().splitlines()[0]
            raise DuckLakeError(f"copying to {destination.display()} failed: {text}; nothing was changed") from exc
        raise
    finally:
        src.close()
        dst.close()
    return CopiedCatalog(
        source.display(), destination.display(), src.backend.name, dst.backend.name,
        new_root or plan.old_data_path, new_root is not None,
        tuple(CopiedTable(c.name, c.source.rows, c.copy.rows, c.matches) for c in copies),
    )


def _check(copies: list[TableCopy]) -> None:
    bad = [c for c in copies if not c.matches]
    if bad:
        first = bad[0]
        raise DuckLakeError(
            f"verification failed: {len(bad)} table(s) differ after copying, e.g. {first.name} "
            f"({first.source.rows} rows in the source, {first.copy.rows} in the copy); nothing was changed")


def _undo(dst: Lake, created: list[str], created_file: bool) -> None:
    """Leave the destination as it was: tables made by non-transactional DDL dropped, a new file removed."""
    if created and not dst.backend.transactional_ddl:
        with contextlib.suppress(Exception), dst.connection(write=True) as conn:
            drop_tables(conn, dst.backend, created)
        dst.close()
    path = dst.target.path
    if created_file and path is not None:
        for leftover in (path, path.with_name(path.name + ".wal")):
            leftover.unlink(missing_ok=True)
