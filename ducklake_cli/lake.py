"""An open DuckLake: catalog connection, metadata readers that carry the resolved data path, the Spark session,
and one-snapshot commits. Every operation works on a `Lake`; `api.py` is the public facade over it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING, Any, Self

from ducklake_cli.catalog.backends import Backend, backend_for
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.catalog.url import CatalogTarget, parse_catalog
from ducklake_cli.engine.planning.plan_cache import PlanCache
from ducklake_cli.errors import DuckLakeError
from ducklake_cli.storage.files import ensure_dir

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

    from ducklake_cli.catalog.transaction import Transaction
    from ducklake_cli.engine.session import SparkSession, SparkSettings


class LakeReader(MetadataReader):
    """A metadata reader that also knows the lake's root data path (resolved once per reader)."""

    def __init__(self, conn: Connection, backend: Backend, data_path_override: str | None) -> None:
        super().__init__(conn, backend)
        self._override = data_path_override

    @cached_property
    def data_path(self) -> str:
        """The root data path: the override if given, else the stored one (a relative local path is taken from
        the working directory, as DuckDB does)."""
        import os

        from ducklake_cli.storage.files import split_protocol

        root = self._override or ensure_dir(self.metadata().data_path)
        if split_protocol(root)[0] == "file" and "://" not in root and not os.path.isabs(root):
            root = ensure_dir(os.path.abspath(root).replace(os.sep, "/"))
        return root


LOCK_WAIT_S = 15.0  # how long opening a catalog file another process has locked is retried


class Lake:
    """An open DuckLake: its catalog connection settings, data path override and storage options."""

    def __init__(
        self,
        target: CatalogTarget,
        *,
        data_path: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        read_only: bool = False,
        spark_settings: SparkSettings | None = None,
    ) -> None:
        self.target = target
        self.spark_settings = spark_settings
        self.backend: Backend = backend_for(target)
        self.data_path_override = ensure_dir(data_path) if data_path else None
        self.storage_options: dict[str, Any] = dict(storage_options or {})
        self.read_only = read_only
        self._engine: Engine | None = None
        self._data_path: str | None = None
        # Scan plans and DataFrames of committed snapshots, reused by this lake's later statements.
        self.plan_cache = PlanCache()
        self._spark: SparkSession | None = None

    def __repr__(self) -> str:
        return f"Lake({self.target.display()})"

    @classmethod
    def open(
        cls,
        catalog: str | CatalogTarget,
        *,
        data_path: str | None = None,
        metadata_schema: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        read_only: bool = False,
        spark_settings: SparkSettings | None = None,
    ) -> Self:
        """Open a DuckLake from a path, URL or `ducklake:` ATTACH string and check that it is a v1.0 catalog."""
        target = catalog if isinstance(catalog, CatalogTarget) else parse_catalog(catalog)
        lake = cls(target.with_schema(metadata_schema), data_path=data_path, storage_options=storage_options,
                   read_only=read_only, spark_settings=spark_settings)
        try:
            with lake.reader():
                pass
        except DuckLakeError:
            lake.close()
            raise
        return lake

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine, created on first use."""
        if self._engine is None:
            self._engine = self.backend.create_engine(read_only=self.read_only)
        return self._engine

    @contextmanager
    def connection(self, *, write: bool = False) -> Iterator[Connection]:
        """A catalog connection in one transaction (committed when `write` and no error)."""
        import time

        from sqlalchemy.exc import DBAPIError

        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                conn = self.engine.connect()
                break
            except DBAPIError as exc:
                # A DuckDB catalog file is locked while another process writes it: wait a little, like SQLite.
                if "lock" in str(exc).lower() and time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
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
    def reader(self) -> Iterator[LakeReader]:
        """A metadata reader on one read transaction; the catalog's metadata is checked on entry."""
        with self.connection() as conn:
            reader = LakeReader(conn, self.backend, self.data_path_override)
            reader.metadata()
            self._data_path = reader.data_path
            yield reader

    @property
    def data_path(self) -> str:
        """The root data path as the last reader resolved it (opening the lake resolves it first)."""
        if self._data_path is None:
            with self.reader():
                pass
        assert self._data_path is not None
        return self._data_path

    def commit(self, build: Callable[[Transaction], None], *, author: str | None = None,
               message: str | None = None) -> int | None:
        """Run `build` in a write transaction and commit one snapshot (retried on races); None if it staged
        nothing."""
        from ducklake_cli.catalog.transaction import commit

        return commit(lambda: self.connection(write=True), self.backend, build, author=author, message=message)

    def spark(self) -> SparkSession:
        """The Spark session this lake's reads run on (started on first use, kept while it runs)."""
        from ducklake_cli.engine.session import SparkSettings, build_session, running

        if self._spark is None or not running(self._spark):
            self._spark = build_session(self.spark_settings or SparkSettings(), storage_options=self.storage_options)
        return self._spark

    def close(self) -> None:
        """Release the catalog connections (a DuckDB file is unlocked)."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
        self.plan_cache.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
