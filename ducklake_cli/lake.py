"""An open DuckLake: catalog connection, metadata readers that carry the resolved data path, the Spark session,
and one-snapshot commits. Every operation works on a `Lake`; `api.py` is the public facade over it."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ducklake_cli.catalog.backends import Backend, backend_for
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.catalog.url import CatalogTarget, parse_catalog
from ducklake_cli.engine.planning.plan_cache import PlanCache
from ducklake_cli.errors import DuckLakeError
from ducklake_cli.storage.files import ensure_dir

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

    from ducklake_cli.catalog.models import LakeMetadata
    from ducklake_cli.catalog.transaction import Transaction
    from ducklake_cli.engine.session import SparkSession, SparkSettings


class LakeReader(MetadataReader):
    """A metadata reader that also knows the lake's root data path (resolved once per reader)."""

    def __init__(self, conn: Connection, backend: Backend, data_path_override: str | None,
                 legacy_version: str | None = None) -> None:
        super().__init__(conn, backend)
        self._override = data_path_override
        self._legacy_version = legacy_version

    def _read_metadata(self) -> LakeMetadata:
        """As stored; an older catalog read through its migrated copy keeps its own version."""
        meta = super()._read_metadata()
        return dataclasses.replace(meta, version=self._legacy_version) if self._legacy_version else meta

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


def _check_v11_layout(conn: Connection, backend: Backend, version: str) -> None:
    """Read a 1.1 or 1.1-dev1 catalog only when it has every table and column 1.1 adds (`migrate.missing_v11`)."""
    from ducklake_cli.catalog.migrate import missing_v11
    from ducklake_cli.errors import UnsupportedVersionError

    missing = missing_v11(conn, backend)
    if missing:
        raise UnsupportedVersionError(
            f"{backend.target.display()} says DuckLake {version} but lacks {', '.join(missing[:4])} (a nightly "
            "build's or a fork's catalog); nothing was read or changed",
            hint="run `ducklake upgrade --to 1.1` (it adds what is missing and backs up first)")


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
        # The catalog's own format version, once opened (`open`).
        self.version: str | None = None
        # The catalog's own format version when it is older than 1.0: reads then go to a private copy migrated
        # to 1.0 (`_migrated`), and nothing may be written.
        self.legacy_version: str | None = None
        self.catalog_backend: Backend = self.backend  # the catalog's own backend, also while reading a copy
        self._migrated: tempfile.TemporaryDirectory[str] | None = None
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
        """Open a DuckLake from a path, URL or `ducklake:` ATTACH string and check its format version: 1.0 and 1.1
        are read and written; 1.1-dev1 is read in place; 0.2-0.4 is read (from a private copy migrated to 1.0); every
        write to those is refused; any other version is refused."""
        target = catalog if isinstance(catalog, CatalogTarget) else parse_catalog(catalog)
        lake = cls(target.with_schema(metadata_schema), data_path=data_path, storage_options=storage_options,
                   read_only=read_only, spark_settings=spark_settings)
        try:
            lake._check_version()
        except DuckLakeError:
            lake.release()
            raise
        return lake

    @property
    def format_version(self) -> str:
        """The catalog's DuckLake format version (an older catalog's own, not its migrated copy's)."""
        from ducklake_cli.catalog.versions import CURRENT

        return self.version or CURRENT

    @property
    def v11(self) -> bool:
        """Whether the catalog has DuckLake 1.1's tables and rules."""
        from ducklake_cli.catalog.versions import is_v11

        return is_v11(self.format_version)

    def refuse_writes(self) -> None:
        """Stop a command that will write before it does any work, when the catalog's version is read only here."""
        from ducklake_cli.catalog.versions import refusal

        if self.version is not None:
            refused = refusal(self.version, where=self.target.display(), writing=True)
            if refused is not None:
                raise refused

    def _check_version(self) -> None:
        """Refuse a version this tool cannot read; read an older one through a migrated private copy; then read
        the metadata once (on the same connection for a catalog read in place)."""
        from ducklake_cli.catalog.versions import IN_PLACE, is_v11, read_version, refusal

        with self.connection() as conn:
            version = read_version(conn, self.backend)
            refused = refusal(version, where=self.target.display(), writing=False)
            if refused is not None:
                raise refused
            if is_v11(version):
                _check_v11_layout(conn, self.backend, str(version))
            if version in IN_PLACE:
                self.version = version
                reader = LakeReader(conn, self.backend, self.data_path_override)
                reader.metadata()
                self._data_path = reader.data_path
                return
        self._read_migrated(str(version))
        with self.reader():
            pass

    def _read_migrated(self, version: str) -> None:
        """Copy the catalog (read in one consistent transaction) into a temporary SQLite file, migrate the copy
        to 1.0, and read from it from now on."""
        from ducklake_cli.catalog.copy import migrated_copy

        workdir = tempfile.TemporaryDirectory(prefix="ducklake-legacy-")
        path = Path(workdir.name) / "catalog.sqlite"
        try:
            with self.connection(consistent=True) as conn:
                migrated_copy(conn, self.backend, path)
        except BaseException:
            workdir.cleanup()
            raise
        self.close()
        self._migrated, self.legacy_version, self.version = workdir, version, version
        self.backend = backend_for(CatalogTarget(backend="sqlite", path=path, label=self.target.display()))

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine, created on first use."""
        if self._engine is None:
            self._engine = self.backend.create_engine(read_only=self.read_only)
        return self._engine

    @contextmanager
    def connection(self, *, write: bool = False, consistent: bool = False) -> Iterator[Connection]:
        """A catalog connection in one transaction (committed when `write` and no error; `consistent`: every
        statement sees the same catalog state, on servers too)."""
        import time

        from sqlalchemy.exc import DBAPIError

        if write:
            self.refuse_writes()

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
        if consistent and self.backend.consistent_isolation:
            conn = conn.execution_options(isolation_level=self.backend.consistent_isolation)
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
            reader = LakeReader(conn, self.backend, self.data_path_override, self.legacy_version)
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

    def release(self) -> None:
        """Close, and remove the private migrated copy of an older catalog."""
        self.close()
        if self._migrated is not None:
            self._migrated.cleanup()
            self._migrated = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
