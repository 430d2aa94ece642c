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
    import datetime as dt

    from pyspark.sql import DataFrame, SparkSession
    from sqlalchemy import Connection, Engine

    from ducklake_cli.engine.session import SparkSettings


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
    def reader(self) -> Iterator[MetadataReader]:
        """A metadata reader on one read transaction."""
        with self.connection() as conn:
            yield MetadataReader(conn, self.backend)

    def data_path(self, reader: MetadataReader) -> str:
        """The root data path: the override if given, else the stored one (a relative local path is taken from
        the working directory, as DuckDB does)."""
        import os

        from ducklake_cli.storage.files import split_protocol

        root = self.data_path_override or ensure_dir(reader.metadata().data_path)
        if split_protocol(root)[0] == "file" and "://" not in root and not os.path.isabs(root):
            root = ensure_dir(os.path.abspath(root).replace(os.sep, "/"))
        return root

    def spark(self) -> SparkSession:
        """The Spark session this lake's reads run on (started on first use)."""
        from ducklake_cli.engine.session import SparkSettings, build_session

        return build_session(self.spark_settings or SparkSettings(), storage_options=self.storage_options)

    def table(
        self, name: str, *, snapshot: int | None = None, as_of: dt.datetime | None = None,
        spark: SparkSession | None = None, with_rowid: bool = False,
    ) -> DataFrame:
        """A table (`name` in schema main, or `schema.name`) at a snapshot as a Spark DataFrame."""
        from ducklake_cli.ops.query import table_dataframe

        return table_dataframe(self, name, snapshot=snapshot, as_of=as_of, spark=spark, with_rowid=with_rowid)

    def sql(
        self, query: str, *, snapshot: int | None = None, as_of: dt.datetime | None = None,
        spark: SparkSession | None = None,
    ) -> DataFrame:
        """Spark SQL over the lake's tables (`schema.table`, `VERSION AS OF n`, `TIMESTAMP AS OF '…'`)."""
        from ducklake_cli.ops.query import sql_dataframe

        return sql_dataframe(self, query, snapshot=snapshot, as_of=as_of, spark=spark)

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
    spark_settings: SparkSettings | None = None,
) -> Lake:
    """Open a DuckLake from a path, URL or `ducklake:` ATTACH string and check that it is a v1.0 catalog."""
    target = catalog if isinstance(catalog, CatalogTarget) else parse_catalog(catalog)
    lake = Lake(target.with_schema(metadata_schema), data_path=data_path, storage_options=storage_options,
                read_only=read_only, spark_settings=spark_settings)
    try:
        with lake.reader() as r:
            r.metadata()
    except DuckLakeError:
        lake.close()
        raise
    return lake
