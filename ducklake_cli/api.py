"""The Python API: `connect(...) -> Lake`. The CLI is a thin client of it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.backends import Backend, backend_for
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.catalog.url import CatalogTarget, parse_catalog
from ducklake_cli.errors import DuckLakeError
from ducklake_cli.storage.paths import ensure_dir

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine


class Lake:
    """An open DuckLake: its catalog connection settings, data path override and storage options."""

    def __init__(
        self,
        target: CatalogTarget,
        *,
        data_path: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        read_only: bool = False,
    ) -> None:
        self.target = target
        self.backend: Backend = backend_for(target)
        self.data_path_override = ensure_dir(data_path) if data_path else None
        self.storage_options: dict[str, Any] = dict(storage_options or {})
        self.read_only = read_only
        self._engine: Engine | None = None

    def __repr__(self) -> str:
        return f"Lake({self.target.display()})"

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine, created on first use."""
        if self._engine is None:
            self._engine = self.backend.create_engine(read_only=self.read_only)
        return self._engine

    @contextmanager
    def connection(self, *, write: bool = False) -> Iterator[Connection]:
        """A catalog connection in one transaction (committed when `write` and no error)."""
        from sqlalchemy.exc import DBAPIError

        try:
            conn = self.engine.connect()
        except DBAPIError as exc:
            raise self.backend.translate_connect_error(exc) from exc
        trans = conn.begin()
        try:
            yield conn
            if write:
                trans.commit()
            else:
                trans.rollback()
        except BaseException:
            trans.rollback()
            raise
        finally:
            conn.close()

    @contextmanager
    def reader(self) -> Iterator[MetadataReader]:
        """A metadata reader on one read transaction."""
        with self.connection() as conn:
            yield MetadataReader(conn, self.backend)

    def data_path(self, reader: MetadataReader) -> str:
        """The root data path: the override if given, else the stored one."""
        return self.data_path_override or ensure_dir(reader.metadata().data_path)

    def close(self) -> None:
        """Release the catalog connections (a DuckDB file is unlocked)."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __enter__(self) -> Lake:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(
    catalog: str | CatalogTarget,
    *,
    data_path: str | None = None,
    metadata_schema: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    read_only: bool = False,
) -> Lake:
    """Open a DuckLake from a path, URL or `ducklake:` ATTACH string and check that it is a v1.0 catalog."""
    target = catalog if isinstance(catalog, CatalogTarget) else parse_catalog(catalog)
    lake = Lake(target.with_schema(metadata_schema), data_path=data_path, storage_options=storage_options,
                read_only=read_only)
    try:
        with lake.reader() as r:
            r.metadata()
    except DuckLakeError:
        lake.close()
        raise
    return lake
