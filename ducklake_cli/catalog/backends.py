"""One small hook class per catalog backend: engines, DDL type names, timestamps, table listing, errors."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import TryCast
from sqlalchemy.sql.functions import FunctionElement

from ducklake_cli.catalog.duckdb_storage import NEW_FILE_STORAGE, duckdb_file_storage, installed_duckdb
from ducklake_cli.catalog.schema import BIGINT, BOOLEAN, TIMESTAMPTZ, UUID, VARCHAR, VARCHAR_NN
from ducklake_cli.catalog.types import INT_TYPES, decimal_parts
from ducklake_cli.catalog.url import CatalogTarget
from ducklake_cli.errors import (
    AuthenticationError,
    CatalogNotFoundError,
    CatalogUnreachableError,
    DuckLakeError,
    UnsupportedVersionError,
    UsageError,
)

if TYPE_CHECKING:
    from sqlalchemy import URL, ColumnElement, Connection, Engine

    from ducklake_cli.catalog.models import ColumnInfo

# Stats texts compared in catalog SQL: plain decimal integers of at most this many digits (inside BIGINT everywhere),
# and dates and timestamps in canonical form (no trailing zero in the fraction, so equal times are equal texts).
PLAIN_INT_DIGITS = 18
_PATTERNS = {
    "digits": "^[0-9]+$",
    "int": f"^-?[0-9]{{1,{PLAIN_INT_DIGITS}}}$",
    "date": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
    "timestamp": "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{0,5}[1-9])?$",
}


class Backend:
    """Behaviour shared by all backends; subclasses override what differs."""

    name: ClassVar[str]
    ddl_types: ClassVar[dict[str, str]] = {
        BIGINT: "BIGINT", VARCHAR: "VARCHAR", VARCHAR_NN: "VARCHAR NOT NULL", BOOLEAN: "BOOLEAN",
        UUID: "UUID", TIMESTAMPTZ: "TIMESTAMPTZ",
    }
    # Type of each DuckLake column inside an inlined-data table is backend-specific too (spec §4).
    transactional_ddl: ClassVar[bool] = True  # CREATE TABLE rolls back with its transaction (atomic inlined tables)
    # Isolation under which every statement of a transaction sees one catalog state (None: the default does).
    consistent_isolation: ClassVar[str | None] = None

    def __init__(self, target: CatalogTarget) -> None:
        self.target = target

    @property
    def metadata_schema(self) -> str | None:
        """Schema (PostgreSQL) or database (MySQL) holding the catalog tables; None = connection default."""
        return self.target.metadata_schema

    def url(self) -> URL:
        """SQLAlchemy URL for the target."""
        raise NotImplementedError

    def engine_kwargs(self, *, read_only: bool) -> dict[str, Any]:
        """Extra `create_engine` arguments."""
        return {}

    def create_engine(self, *, read_only: bool) -> Engine:
        """A SQLAlchemy engine for this catalog (drivers are imported here, lazily)."""
        from sqlalchemy import create_engine

        kwargs = self.engine_kwargs(read_only=read_only)
        if self.metadata_schema:
            kwargs.setdefault("execution_options", {})["schema_translate_map"] = {None: self.metadata_schema}
        return create_engine(self.url(), **kwargs)

    def encode_timestamp(self, value: dt.datetime) -> object:
        """Python value to bind for a TIMESTAMPTZ column."""
        return value

    def decode_timestamp(self, value: object) -> dt.datetime | None:
        """A TIMESTAMPTZ column's value as an aware UTC datetime."""
        if value is None:
            return None
        if isinstance(value, dt.datetime):
            return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
        return parse_timestamp_text(str(value))

    def list_tables(self, conn: Connection) -> set[str]:
        """Names of all tables in the metadata schema."""
        from sqlalchemy import inspect

        return set(inspect(conn).get_table_names(schema=self.metadata_schema))

    def inlined_value_sql(self, quoted_column: str, column: ColumnInfo) -> str:
        """How to select an inlined-data column so its value can be decoded (default: as stored)."""
        return quoted_column

    # Integer-like DuckLake types stored as BIGINT in SQLite/MySQL inlined tables (uint64 may not fit).
    _INT_STORED: ClassVar[frozenset[str]] = (INT_TYPES | {"boolean"}) - {"uint64"}

    def inlined_column_type(self, ducklake_type: str, duckdb_type: str) -> str:
        """DDL type of a column of an inlined-data table (spec §4; SQLite's choices by default)."""
        if ducklake_type in self._INT_STORED:
            return "BIGINT"
        return "BLOB" if ducklake_type == "blob" else "VARCHAR"

    def inlined_value(self, ducklake_type: str, text: str | None, raw: Any) -> tuple[str, Any]:
        """(SQL expression around the bind parameter `:v`, value) storing one inlined value."""
        if text is None:
            return ":v", None
        if ducklake_type in self._INT_STORED:
            return ":v", int(raw)
        return ":v", bytes(raw) if ducklake_type == "blob" else text

    def create_schema_sql(self) -> str | None:
        """Statement creating the metadata schema, when one is configured."""
        if not self.metadata_schema:
            return None
        return f"CREATE SCHEMA IF NOT EXISTS {self.quote(self.metadata_schema)}"

    def lock_snapshots_sql(self) -> str | None:
        """Statement that blocks concurrent commits until the transaction ends (None: the database serialises
        writers itself, as SQLite and DuckDB files do)."""
        return None

    def column_names(self, conn: Connection, table: str) -> list[str]:
        """Column names of one existing table, in order (from an empty result, so every backend answers alike)."""
        from sqlalchemy import text

        return list(conn.execute(text(f"SELECT * FROM {self.qualify(table)} WHERE 1 = 0")).keys())

    def migration_refusal(self, conn: Connection) -> str | None:
        """Why this connection may not migrate the catalog (read-only, missing ALTER/CREATE rights); None: it may.
        Local files are checked for writability before they are opened."""
        return None

    def legacy_inlined_types_sql(self, conn: Connection, table: str, columns: Sequence[tuple[str, str, str]]
                                 ) -> list[str]:
        """Statements giving an inlined-data table's user columns `(name, DuckLake type, DuckDB type)` today's
        storage types where an older writer stored them otherwise (DuckLake 1.1's migration; only PostgreSQL has
        such tables: none elsewhere)."""
        return []

    def legacy_inlined_session_sql(self) -> list[str]:
        """Session settings the conversions of `legacy_inlined_types_sql` assume."""
        return []

    def rename_table_sql(self, old: str, new: str) -> str:
        """Statement renaming a table within the metadata schema."""
        return f"ALTER TABLE {self.qualify(old)} RENAME TO {self.quote(new)}"

    def qualify(self, table: str) -> str:
        """A quoted, schema-qualified table name for raw SQL."""
        quoted = self.quote(table)
        return f"{self.quote(self.metadata_schema)}.{quoted}" if self.metadata_schema else quoted

    def quote(self, ident: str) -> str:
        """Quote an identifier."""
        return '"' + ident.replace('"', '""') + '"'

    def plain_int(self, text: ColumnElement[Any]) -> ColumnElement[Any]:
        """SQL for a stored text as a BIGINT when it is a plain decimal integer (`-?[0-9]{1,18}`), else NULL."""
        from sqlalchemy import BigInteger, case

        return case((self.text_form(text, "int"), self.to_int(text, BigInteger())))

    def to_int(self, text: ColumnElement[Any], sql_type: Any) -> ColumnElement[Any]:
        """A text (already checked to be digits) cast to an integer type."""
        from sqlalchemy import cast

        return cast(text, sql_type)

    def text_form(self, text: ColumnElement[Any], form: str) -> ColumnElement[bool]:
        """SQL: whether a stored text has the form ("digits", "int", "date" or "timestamp", see `_PATTERNS`)."""
        return text.op("~")(_PATTERNS[form])

    def translate_connect_error(self, exc: Exception) -> DuckLakeError:
        """Map a driver error raised while connecting to one of our errors (never echoing secrets)."""
        text = str(getattr(exc, "orig", exc) or exc).strip().splitlines()[0] if str(exc) else type(exc).__name__
        return CatalogUnreachableError(f"cannot open catalog {self.target.display()}: {text}")


def parse_timestamp_text(text: str) -> dt.datetime:
    """Parse DuckDB's text rendering of a TIMESTAMPTZ (`2026-11-21 22:36:24.341506+00`)."""
    value = text.strip()
    if value.endswith(("+00", "-00")) or (len(value) > 3 and value[-3] in "+-" and value[-2:].isdigit()):
        value = value + ":00"
    parsed = dt.datetime.fromisoformat(value)
    return parsed.replace(tzinfo=dt.UTC) if parsed.tzinfo is None else parsed.astimezone(dt.UTC)


def format_timestamp_text(value: dt.datetime) -> str:
    """DuckDB's text rendering of a TIMESTAMPTZ in UTC, as its sqlite scanner stores it."""
    utc = value.astimezone(dt.UTC)
    text = utc.strftime("%Y-%m-%d %H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "+00"


_D2, _D4 = "[0-9]" * 2, "[0-9]" * 4


class _Globs:
    """`text_form` with GLOB patterns (SQLite has no built-in regular expressions)."""

    def text_form(self, text: ColumnElement[Any], form: str) -> ColumnElement[bool]:
        """SQL: whether a stored text has the form ("digits", "int", "date" or "timestamp")."""
        from sqlalchemy import and_, func, or_

        if form == "digits":
            return and_(text != "", text.op("NOT GLOB")("*[^0-9]*"))
        if form == "int":
            digits = text.op("NOT GLOB")("*[^0-9]*")
            negative = and_(text.op("GLOB")("-[0-9]*"), func.substr(text, 2).op("NOT GLOB")("*[^0-9]*"))
            return and_(func.length(text).between(1, PLAIN_INT_DIGITS), or_(digits, negative))
        date = f"{_D4}-{_D2}-{_D2}"
        if form == "date":
            return text.op("GLOB")(date)
        clock = f"{date} {_D2}:{_D2}:{_D2}"
        fraction = and_(text.op("GLOB")(clock + ".*"), func.length(text).between(21, 26),
                        func.substr(text, 21).op("NOT GLOB")("*[^0-9]*"), text.op("NOT GLOB")("*0"))
        return or_(text.op("GLOB")(clock), fraction)


class SQLiteBackend(_Globs, Backend):
    """SQLite file catalogs; DuckDB's sqlite scanner stores booleans as BIGINT and timestamps/UUIDs as text."""

    name = "sqlite"
    ddl_types: ClassVar[dict[str, str]] = {**Backend.ddl_types, BOOLEAN: "BIGINT", UUID: "VARCHAR",
                                           TIMESTAMPTZ: "VARCHAR"}

    def url(self) -> URL:
        """`sqlite:` URL; read-only opens use SQLite's URI mode so nothing is ever created or changed."""
        from sqlalchemy import URL

        assert self.target.path is not None
        return URL.create("sqlite", database=str(self.target.path))

    def engine_kwargs(self, *, read_only: bool) -> dict[str, Any]:
        """Read-only engines open the file with `mode=ro`; NullPool releases it at once."""
        from sqlalchemy.pool import NullPool

        kwargs: dict[str, Any] = {"poolclass": NullPool}
        if read_only:
            import sqlite3

            path = self.target.path
            kwargs["creator"] = lambda: sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        return kwargs

    def create_engine(self, *, read_only: bool) -> Engine:
        """As for every backend, but each transaction starts with our own BEGIN: Python's sqlite3 driver opens one
        only before INSERT/UPDATE/DELETE, so DDL first in a transaction (a migration, a new inlined-data table)
        would otherwise be committed at once and not roll back with the rest."""
        from sqlalchemy import event

        engine = super().create_engine(read_only=read_only)

        def autocommit_driver(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # the driver opens no transaction by itself

        event.listen(engine, "connect", autocommit_driver)
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN"))
        return engine

    def encode_timestamp(self, value: dt.datetime) -> object:
        """SQLite holds TIMESTAMPTZ as DuckDB's text rendering."""
        return format_timestamp_text(value)

    def list_tables(self, conn: Connection) -> set[str]:
        """Table names from sqlite_master (cheaper than the inspector)."""
        rows = conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {r[0] for r in rows}

    def create_schema_sql(self) -> str | None:
        """SQLite has no schemas."""
        return None

    def translate_connect_error(self, exc: Exception) -> DuckLakeError:
        """SQLite errors while opening mean the file is unusable."""
        return CatalogUnreachableError(f"cannot open SQLite catalog {self.target.path}: {getattr(exc, 'orig', exc)}")


def _holds_variant(column: ColumnInfo) -> bool:
    return column.type == "variant" or any(_holds_variant(c) for c in column.children)


def _variants_as_json(expr: str, column: ColumnInfo, depth: int) -> str | None:
    """A DuckDB expression rebuilding `expr` with every VARIANT inside turned into its JSON text (a variant
    null is SQL NULL, as in files); None when the column holds no variant."""
    if not _holds_variant(column):
        return None
    if column.type == "variant":
        return f"CASE WHEN {expr} IS NULL THEN NULL ELSE CAST(CAST({expr} AS JSON) AS VARCHAR) END"
    var = f"__v{depth}"
    if column.type == "list":
        return f"list_transform({expr}, lambda {var}: {_variants_as_json(var, column.children[0], depth + 1)})"
    if column.type == "map":
        key, value = column.children
        parts = ", ".join(
            f"{name} := {_variants_as_json(_field(var, name), c, depth + 1) or _field(var, name)}"
            for name, c in (("key", key), ("value", value)))
        return f"map_from_entries(list_transform(map_entries({expr}), lambda {var}: struct_pack({parts})))"
    # struct_extract, not `expr.name`: a dotted name could resolve to a table's column instead.
    fields = ", ".join(
        f"{_quote(c.name)} := {_variants_as_json(_field(expr, c.name), c, depth) or _field(expr, c.name)}"
        for c in column.children)
    return f"CASE WHEN {expr} IS NULL THEN NULL ELSE struct_pack({fields}) END"


def _quote(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'


def _field(expr: str, name: str) -> str:
    return f"struct_extract({expr}, '" + name.replace("'", "''") + "')"


def _one_schema(name: str | None) -> tuple[None, str | None]:
    return None, name


class DuckDBBackend(Backend):
    """DuckDB file catalogs (duckdb 1.5.5 … 2.0.x through duckdb_engine). A new file gets `NEW_FILE_STORAGE`; an
    existing file is opened as it is stored (a plain connection never raises its storage version), and one the
    installed DuckDB cannot read is refused in one line before DuckDB tries."""

    name = "duckdb"

    def to_int(self, text: ColumnElement[Any], sql_type: Any) -> ColumnElement[Any]:
        """TRY_CAST: DuckDB may evaluate a cast before the CASE that guards it (a hoisted common expression)."""
        from sqlalchemy import try_cast

        return try_cast(text, sql_type)  # rendered for DuckDB below

    def url(self) -> URL:
        """`duckdb:` URL of the file."""
        from sqlalchemy import URL

        assert self.target.path is not None
        return URL.create("duckdb", database=str(self.target.path))

    def engine_kwargs(self, *, read_only: bool) -> dict[str, Any]:
        """NullPool so the file lock is released when we are done; read-only opens share the file."""
        from sqlalchemy.pool import NullPool

        return {"poolclass": NullPool, "connect_args": {"read_only": read_only}}

    def inlined_value_sql(self, quoted_column: str, column: ColumnInfo) -> str:
        """Native values as DuckDB text, which DuckDB casts back exactly (nested types included); VARIANT values,
        nested ones too, as the compact JSON the other backends' files give."""
        return f"CAST({_variants_as_json(quoted_column, column, 0) or quoted_column} AS VARCHAR)"

    def inlined_column_type(self, ducklake_type: str, duckdb_type: str) -> str:
        """Native DuckDB types, nested ones included."""
        return duckdb_type

    def inlined_value(self, ducklake_type: str, text: str | None, raw: Any) -> tuple[str, Any]:
        """DuckDB casts its own text rendering back."""
        return ":v", text

    def list_tables(self, conn: Connection) -> set[str]:
        """Table names of the main schema of the file."""
        rows = conn.exec_driver_sql(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = $1", (self.metadata_schema or "main",)
        )
        return {r[0] for r in rows}

    def create_engine(self, *, read_only: bool) -> Engine:
        """As for every backend, but the metadata schema is always one quoted name: duckdb_engine would read a
        dot in it as `database.schema`."""
        from sqlalchemy import event

        engine = super().create_engine(read_only=read_only)
        engine.dialect.identifier_preparer._separate = _one_schema  # type: ignore[attr-defined]
        event.listen(engine, "do_connect", self._before_connect)
        return engine

    def _before_connect(self, dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> None:
        """Before each connection: refuse a file the installed DuckDB cannot read; make a missing file with our
        storage first, by itself (a setting on the engine's connections would differ between connections to the
        same file, which DuckDB refuses, and would apply to existing files)."""
        path = self.target.path
        assert path is not None
        if path.exists() and path.stat().st_size > 0:
            self.check_storage()
        elif not cparams.get("read_only"):
            self.create_file(storage_version=NEW_FILE_STORAGE)

    def check_storage(self) -> None:
        """Raise the one-line error for a file stored for a newer DuckDB than the one installed."""
        assert self.target.path is not None
        storage = duckdb_file_storage(self.target.path)
        if storage is None:
            return
        installed, have = installed_duckdb()
        if storage.needs > have:
            raise self._storage_error(storage.describe(), installed, storage.needs)

    def _storage_error(self, storage: str, installed: str, needs: tuple[int, int]) -> UnsupportedVersionError:
        import shlex

        path = str(self.target.path)
        release = f"{needs[0]}.{needs[1]}"
        return UnsupportedVersionError(
            f"DuckDB catalog {path} uses {storage}, which the installed duckdb {installed} cannot open; nothing was "
            "read or changed",
            hint=f"install duckdb {release} (pip install 'duckdb>={release},<2.1'), or convert the file with DuckDB "
            f"{release}: ATTACH '{path.replace(chr(39), chr(39) * 2)}' AS old; ATTACH 'new.ducklake' AS new "
            f"(STORAGE_VERSION '{NEW_FILE_STORAGE}'); COPY FROM DATABASE old TO new; or, with duckdb {release} "
            f"installed, `ducklake copy-catalog {shlex.quote(path)} new.ducklake` (or lake.sqlite), whose new file "
            "DuckDB 1.5 reads",
        )

    def create_file(self, *, storage_version: str = NEW_FILE_STORAGE) -> None:
        """Create the empty database file, stored so that DuckDB `storage_version` (`v1.5.0`, …, `latest`: the
        installed DuckDB's own format) and later read it."""
        import duckdb

        try:
            duckdb.connect(str(self.target.path), config={"storage_compatibility_version": storage_version}).close()
        except duckdb.InvalidInputException as exc:
            raise UsageError(f"duckdb {installed_duckdb()[0]} cannot create DuckDB storage version "
                             f"{storage_version!r}: {str(exc).splitlines()[0]}") from exc

    def translate_connect_error(self, exc: Exception) -> DuckLakeError:
        """DuckDB lock and format errors as one line."""
        text = str(getattr(exc, "orig", exc)).splitlines()[0]
        if "lock" in text.lower():
            return CatalogUnreachableError(
                f"DuckDB catalog {self.target.path} is locked by another process",
                hint="a DuckDB file catalog can be written by one process at a time; detach it elsewhere first",
            )
        storage = duckdb_file_storage(self.target.path) if self.target.path is not None else None
        if storage is not None and ("version number" in text or "storage version" in text):
            # A storage number our table does not know (check_storage lets DuckDB decide those).
            return UnsupportedVersionError(
                f"DuckDB catalog {self.target.path} uses {storage.describe()}, which the installed duckdb "
                f"{installed_duckdb()[0]} cannot open: {text}",
                hint="open it with the DuckDB release that wrote it, or convert it there: ATTACH 'new.ducklake' AS "
                f"new (STORAGE_VERSION '{NEW_FILE_STORAGE}'); COPY FROM DATABASE old TO new")
        return CatalogUnreachableError(f"cannot open DuckDB catalog {self.target.path}: {text}")


class PostgresBackend(Backend):
    """PostgreSQL catalogs through psycopg 3."""

    name = "postgres"
    consistent_isolation = "REPEATABLE READ"

    def migration_refusal(self, conn: Connection) -> str | None:
        """A read-only session, a metadata schema we may not create tables in, or catalog tables another role owns
        (ALTER TABLE needs the owner)."""
        from sqlalchemy import text

        if conn.execute(text("SELECT current_setting('transaction_read_only')")).scalar() == "on":
            return "the PostgreSQL session is read-only (a standby, or default_transaction_read_only)"
        schema = conn.execute(text("SELECT COALESCE(:s, current_schema())"), {"s": self.metadata_schema}).scalar()
        if not conn.execute(text("SELECT has_schema_privilege(:s, 'CREATE')"), {"s": schema}).scalar():
            return f"user {self.target.user or '(current)'} may not create tables in schema {schema}"
        foreign = conn.execute(text(
            "SELECT c.relname, pg_get_userbyid(c.relowner) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = :s AND c.relkind = 'r' AND c.relname LIKE 'ducklake%' "
            "AND NOT pg_has_role(current_user, c.relowner, 'USAGE') ORDER BY c.relname"), {"s": schema}).all()
        if foreign:
            return (f"{len(foreign)} catalog table(s) belong to another role (e.g. {foreign[0][0]}, owned by "
                    f"{foreign[0][1]}); ALTER TABLE needs their owner: run the upgrade as {foreign[0][1]}")
        return None

    def url(self) -> URL:
        """`postgresql+psycopg` URL."""
        from sqlalchemy import URL

        t = self.target
        return URL.create("postgresql+psycopg", username=t.user, password=t.password, host=t.host, port=t.port,
                          database=t.database, query=dict(t.query))

    def engine_kwargs(self, *, read_only: bool) -> dict[str, Any]:
        """Bounded connect time so an unreachable server fails fast."""
        return {"connect_args": {"connect_timeout": 5}, "pool_pre_ping": False}

    def inlined_value_sql(self, quoted_column: str, column: ColumnInfo) -> str:
        """bytea (varchar, json, blob) as raw bytes; everything else as PostgreSQL text."""
        ducklake_type = column.type
        if ducklake_type in ("varchar", "json", "blob"):
            return quoted_column
        if ducklake_type == "interval":
            # PostgreSQL renders intervals as `-1 years +2 days …`, which DuckDB cannot parse: spell out parts.
            # Through text, so a VARCHAR column (our writer's before 1.5.5's layout was adopted) reads too.
            c = f"CAST(CAST({quoted_column} AS TEXT) AS INTERVAL)"
            return (f"CASE WHEN {quoted_column} IS NULL THEN NULL ELSE concat(extract(year from {c})::bigint, "
                    f"' years ', extract(month from {c})::bigint, ' months ', extract(day from {c})::bigint, "
                    f"' days ', (extract(epoch from ({c} - date_trunc('day', {c}))) * 1000000)::bigint, "
                    "' microseconds') END")
        return f"CAST({quoted_column} AS TEXT)"

    # Inlined-data column types exactly as DuckDB 1.5.5's postgres scanner creates them (information_schema):
    # native numbers, TIME, TIMETZ, INTERVAL, UUID and NUMERIC(p,s); bytea for strings and blobs; VARCHAR for
    # the rest (uint64, (u)int128, dates and timestamps, whose ranges PostgreSQL lacks, and nested types).
    _PG_INLINED: ClassVar[dict[str, str]] = {
        "boolean": "BOOLEAN", "int8": "SMALLINT", "int16": "SMALLINT", "uint8": "INTEGER", "int32": "INTEGER",
        "uint16": "INTEGER", "uint32": "BIGINT", "int64": "BIGINT", "float32": "REAL", "float64": "DOUBLE PRECISION",
        "time": "TIME", "timetz": "TIMETZ", "interval": "INTERVAL", "uuid": "UUID",
        "varchar": "BYTEA", "json": "BYTEA", "blob": "BYTEA",
    }

    def inlined_column_type(self, ducklake_type: str, duckdb_type: str) -> str:
        """What DuckDB's postgres scanner creates; a decimal keeps its precision and scale, as DuckDB reads a
        bare NUMERIC back as DOUBLE."""
        dec = decimal_parts(ducklake_type)
        if dec:
            return f"NUMERIC({dec[0]},{dec[1]})"
        return self._PG_INLINED.get(ducklake_type, "VARCHAR")

    def legacy_inlined_types_sql(self, conn: Connection, table: str, columns: Sequence[tuple[str, str, str]]
                                 ) -> list[str]:
        """DuckLake 0.3 stored inlined strings as text and dates and timestamps (also 128-bit and unsigned 64-bit
        integers) in native types; since 0.4 they are BYTEA and DuckDB's text. Converted in place, dates BC
        rendered as DuckDB does (`0044-03-15 (BC)`), timestamps with time zone in UTC (the caller sets the
        session's DateStyle and TimeZone: `legacy_inlined_session_sql`)."""
        from sqlalchemy import text as sa_text

        schema = self.metadata_schema
        found: dict[str, str] = dict(conn.execute(sa_text(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = :t AND "
            + ("table_schema = :s" if schema else "table_schema = current_schema()")),
            {"t": table, **({"s": schema} if schema else {})}).all())
        alters = []
        for name, ducklake_type, duckdb_type in columns:
            want, have, col = self.inlined_column_type(ducklake_type, duckdb_type), found.get(name), self.quote(name)
            if want == "BYTEA" and have in ("character varying", "text", "json", "jsonb"):
                alters.append(f"ALTER COLUMN {col} TYPE BYTEA USING convert_to({col}::text, 'UTF8')")
            elif want == "VARCHAR" and have in ("date", "timestamp without time zone", "timestamp with time zone",
                                                "numeric"):
                alters.append(f"ALTER COLUMN {col} TYPE VARCHAR USING regexp_replace({col}::text, "
                              "'^(\\S+)(.*) BC$', '\\1 (BC)\\2')")
        return [f"ALTER TABLE {self.qualify(table)} {', '.join(alters)}"] if alters else []

    def legacy_inlined_session_sql(self) -> list[str]:
        """The session settings `legacy_inlined_types_sql`'s conversions assume (for this transaction only)."""
        return ["SET LOCAL DateStyle = 'ISO, YMD'", "SET LOCAL TimeZone = 'UTC'"]

    def inlined_value(self, ducklake_type: str, text: str | None, raw: Any) -> tuple[str, Any]:
        """Strings and blobs as bytes; anything else as DuckDB's text, bound untyped (psycopg's `unknown`) so
        PostgreSQL parses it as the column's own type: native, or VARCHAR in tables older versions created."""
        if text is None:
            return ":v", None
        if ducklake_type == "blob":
            return ":v", bytes(raw)
        return ":v", text.encode("utf-8") if ducklake_type in ("varchar", "json") else text

    def list_tables(self, conn: Connection) -> set[str]:
        """Tables of the metadata schema (default: the first schema on the search path)."""
        if self.metadata_schema:
            rows = conn.exec_driver_sql(
                "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = %(s)s", {"s": self.metadata_schema}
            )
        else:
            rows = conn.exec_driver_sql(
                "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
            )
        return {r[0] for r in rows}

    def lock_snapshots_sql(self) -> str | None:
        """Writers insert snapshot rows: SHARE ROW EXCLUSIVE makes them wait, readers do not."""
        return f"LOCK TABLE {self.qualify('ducklake_snapshot')} IN SHARE ROW EXCLUSIVE MODE"

    def translate_connect_error(self, exc: Exception) -> DuckLakeError:
        """Password, missing database and network errors, each as one line."""
        text = str(getattr(exc, "orig", exc))
        low = text.lower()
        where = self.target.display()
        if "password authentication failed" in low or "no password supplied" in low:
            return AuthenticationError(f"PostgreSQL refused the credentials for {where}")
        if "does not exist" in low and "database" in low:
            return CatalogNotFoundError(f"database {self.target.database!r} does not exist on {where}")
        reason = "connection refused" if "refused" in low else ("timed out" if "timeout" in low else "no answer")
        return CatalogUnreachableError(f"cannot reach PostgreSQL at {where}: {reason}")


class MySQLBackend(Backend):
    """MySQL/MariaDB catalogs through PyMySQL (DuckDB's own connector cannot write them reliably)."""

    name = "mysql"
    transactional_ddl = False  # MySQL DDL commits implicitly
    consistent_isolation = "REPEATABLE READ"
    ddl_types: ClassVar[dict[str, str]] = {**Backend.ddl_types, VARCHAR: "TEXT", VARCHAR_NN: "TEXT NOT NULL",
                                           UUID: "VARCHAR(36)", TIMESTAMPTZ: "DATETIME(6)"}

    def url(self) -> URL:
        """`mysql+pymysql` URL."""
        from sqlalchemy import URL

        t = self.target
        query = dict(t.query)
        query.setdefault("charset", "utf8mb4")
        return URL.create("mysql+pymysql", username=t.user, password=t.password, host=t.host, port=t.port,
                          database=t.database, query=query)

    def engine_kwargs(self, *, read_only: bool) -> dict[str, Any]:
        """Bounded connect time; UTC session so DATETIME values mean UTC."""
        return {"connect_args": {"connect_timeout": 5, "init_command": "SET time_zone = '+00:00'"}}

    def encode_timestamp(self, value: dt.datetime) -> object:
        """DATETIME has no zone: store UTC wall time."""
        return value.astimezone(dt.UTC).replace(tzinfo=None)

    def inlined_column_type(self, ducklake_type: str, duckdb_type: str) -> str:
        """Our MySQL layout (DuckDB has none): BIGINT for integers, LONGBLOB for blobs, LONGTEXT otherwise."""
        if ducklake_type in self._INT_STORED:
            return "BIGINT"
        return "LONGBLOB" if ducklake_type == "blob" else "LONGTEXT"

    def text_form(self, text: ColumnElement[Any], form: str) -> ColumnElement[bool]:
        """SQL: whether a stored text has the form (MySQL's REGEXP)."""
        return text.op("REGEXP")(_PATTERNS[form])

    def quote(self, ident: str) -> str:
        """Backtick quoting."""
        return "`" + ident.replace("`", "``") + "`"

    def migration_refusal(self, conn: Connection) -> str | None:
        """A read-only server, or a user without ALTER, CREATE and DROP on the metadata database."""
        from sqlalchemy import text

        if conn.execute(text("SELECT @@global.read_only")).scalar() in (1, "1", "ON"):
            return "the MySQL server is read-only"
        db = self.metadata_schema or conn.execute(text("SELECT DATABASE()")).scalar()
        granted = {str(r[0]).upper() for r in conn.execute(text(
            "SELECT privilege_type FROM information_schema.user_privileges UNION "
            "SELECT privilege_type FROM information_schema.schema_privileges WHERE table_schema = :db"), {"db": db})}
        missing = [p for p in ("ALTER", "CREATE", "DROP") if p not in granted]
        if missing:
            return f"user {self.target.user or '(current)'} lacks {', '.join(missing)} on database {db}"
        return None

    def rename_table_sql(self, old: str, new: str) -> str:
        """MySQL's own spelling."""
        return f"RENAME TABLE {self.qualify(old)} TO {self.qualify(new)}"

    def lock_snapshots_sql(self) -> str | None:
        """InnoDB next-key locks on every snapshot row (and the gap after the last) block new snapshots."""
        return f"SELECT snapshot_id FROM {self.qualify('ducklake_snapshot')} FOR UPDATE"

    def create_schema_sql(self) -> str | None:
        """A MySQL schema is a database."""
        return f"CREATE DATABASE IF NOT EXISTS {self.quote(self.metadata_schema)}" if self.metadata_schema else None

    def list_tables(self, conn: Connection) -> set[str]:
        """Tables of the metadata database (default: the connection's database)."""
        if self.metadata_schema:
            rows = conn.exec_driver_sql(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %(s)s",
                {"s": self.metadata_schema},
            )
        else:
            rows = conn.exec_driver_sql(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
            )
        return {r[0] for r in rows}

    def translate_connect_error(self, exc: Exception) -> DuckLakeError:
        """Access denied, unknown database and network errors, each as one line."""
        orig = getattr(exc, "orig", exc)
        code = orig.args[0] if getattr(orig, "args", None) else None
        where = self.target.display()
        if code == 1045:
            return AuthenticationError(f"MySQL refused the credentials for {where}")
        if code == 1049:
            return CatalogNotFoundError(f"database {self.target.database!r} does not exist on {where}")
        return CatalogUnreachableError(f"cannot reach MySQL at {where}: no answer")


BACKENDS: dict[str, type[Backend]] = {
    "sqlite": SQLiteBackend, "duckdb": DuckDBBackend, "postgres": PostgresBackend, "mysql": MySQLBackend,
}


def backend_for(target: CatalogTarget) -> Backend:
    """The hook object for a target."""
    return BACKENDS[target.backend](target)


class _ByteOrder(FunctionElement[Any]):
    """A text expression compared by its bytes (code points), as Python compares strings, on every backend."""

    inherit_cache = True
    name = "byte_order"


@compiles(_ByteOrder)
def _byte_order(element: _ByteOrder, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.clauses, **kw))  # SQLite's BINARY, DuckDB's default


@compiles(_ByteOrder, "postgresql")
def _byte_order_postgres(element: _ByteOrder, compiler: Any, **kw: Any) -> str:
    return f'({compiler.process(element.clauses, **kw)}) COLLATE "C"'


@compiles(_ByteOrder, "mysql")
@compiles(_ByteOrder, "mariadb")
def _byte_order_mysql(element: _ByteOrder, compiler: Any, **kw: Any) -> str:
    # UTF-8 bytes whatever the column's character set: no PAD SPACE, no case folding, and they decode.
    return f"CAST(CONVERT({compiler.process(element.clauses, **kw)} USING utf8mb4) AS BINARY)"


def byte_order(text: ColumnElement[Any]) -> ColumnElement[Any]:
    """A text compared by its bytes (code points), as Python compares strings, on every backend (MySQL returns
    the bytes)."""
    return _ByteOrder(text)


@compiles(TryCast, "duckdb")
def _try_cast_duckdb(element: Any, compiler: Any, **kw: Any) -> str:
    return f"TRY_CAST({compiler.process(element.clause, **kw)} AS {compiler.process(element.typeclause, **kw)})"
