"""Turn a CATALOG argument (path, URL or DuckDB ATTACH string) into a typed target."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ducklake_cli.errors import CatalogNotFoundError, InvalidCatalogError

BackendName = Literal["sqlite", "duckdb", "postgres", "mysql"]

SQLITE_MAGIC = b"SQLite format 3\x00"
DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of a DuckDB database file
DUCKDB_SUFFIXES = {".duckdb", ".ducklake", ".ddb"}


@dataclass(frozen=True)
class CatalogTarget:
    """Where a catalog lives: backend, connection parts and the metadata schema."""

    backend: BackendName
    path: Path | None = None
    host: str | None = None
    port: int | None = None
    database: str | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    query: tuple[tuple[str, str], ...] = ()
    metadata_schema: str | None = None
    label: str | None = field(default=None, compare=False)  # shown instead (a private copy names its original)

    @property
    def is_file(self) -> bool:
        """True for SQLite and DuckDB file catalogs."""
        return self.path is not None

    def display(self) -> str:
        """A printable form with the password hidden."""
        if self.label is not None:
            return self.label
        if self.path is not None:
            return f"{self.backend}:{self.path}"
        auth = ""
        if self.user:
            auth = quote(self.user, safe="") + (":***" if self.password else "") + "@"
        port = f":{self.port}" if self.port else ""
        return f"{self.backend}://{auth}{self.host or ''}{port}/{self.database or ''}"

    def with_schema(self, metadata_schema: str | None) -> CatalogTarget:
        """The same target with another metadata schema (None keeps the current one)."""
        if metadata_schema is None:
            return self
        return CatalogTarget(
            backend=self.backend, path=self.path, host=self.host, port=self.port,
            database=self.database, user=self.user, password=self.password,
            query=self.query, metadata_schema=metadata_schema,
        )


def sniff_file(path: Path) -> BackendName | None:
    """Tell SQLite from DuckDB by the file header; None when it is neither."""
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError:
        return None
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head[8:12] == DUCKDB_MAGIC:
        return "duckdb"
    return None


def _file_target(raw: str, *, forced: BackendName | None, must_exist: bool) -> CatalogTarget:
    path = Path(raw).expanduser()
    if path.is_dir():
        raise InvalidCatalogError(f"catalog {raw!r} is a directory, not a catalog file")
    if path.exists() and path.stat().st_size > 0:
        sniffed = sniff_file(path)
        if sniffed is None:
            raise InvalidCatalogError(
                f"{raw!r} is neither a SQLite nor a DuckDB database file",
                hint="pass a DuckLake catalog: a .sqlite/.db/.ducklake file, a postgresql:// or mysql:// URL",
            )
        return CatalogTarget(backend=sniffed, path=path.resolve())
    if must_exist:
        raise CatalogNotFoundError(
            f"catalog file {raw!r} does not exist",
            hint="create one with `ducklake create-catalog PATH --data-path DIR`",
        )
    backend: BackendName = forced or ("duckdb" if path.suffix.lower() in DUCKDB_SUFFIXES else "sqlite")
    return CatalogTarget(backend=backend, path=path.resolve())


def _server_target(backend: BackendName, raw: str) -> CatalogTarget:
    parts = urlsplit(raw)
    try:
        port = parts.port
    except ValueError as exc:
        raise InvalidCatalogError(f"malformed catalog URL: bad port in {_mask_url(raw)!r}") from exc
    if not parts.hostname:
        raise InvalidCatalogError(f"malformed catalog URL: no host in {_mask_url(raw)!r}")
    database = unquote(parts.path.lstrip("/")) or None
    if not database:
        raise InvalidCatalogError(f"malformed catalog URL: no database name in {_mask_url(raw)!r}")
    query = tuple(parse_qsl(parts.query))
    schema = dict(query).get("metadata_schema")
    return CatalogTarget(
        backend=backend, host=parts.hostname, port=port, database=database,
        user=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password is not None else None,
        query=tuple((k, v) for k, v in query if k != "metadata_schema"),
        metadata_schema=schema,
    )


def _kv_target(backend: BackendName, dsn: str) -> CatalogTarget:
    """libpq-style `key=value …` connection strings, as DuckDB's postgres/mysql ATTACH takes them."""
    pairs: dict[str, str] = {}
    for m in re.finditer(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", dsn):
        value = m.group(2)
        if value.startswith("'"):
            value = value[1:-1].replace("\\'", "'")
        pairs[m.group(1).lower()] = value
    if not pairs:
        raise InvalidCatalogError(f"malformed {backend} connection string in ATTACH form")
    port = pairs.get("port")
    if port is not None and not port.isdigit():
        raise InvalidCatalogError(f"malformed {backend} connection string: port {port!r} is not a number")
    database = pairs.get("dbname") or pairs.get("database") or pairs.get("db")
    if not database:
        raise InvalidCatalogError(f"malformed {backend} connection string: no dbname/database")
    return CatalogTarget(
        backend=backend, host=pairs.get("host", "localhost"), port=int(port) if port else None,
        database=database, user=pairs.get("user"),
        password=pairs.get("password") or pairs.get("passwd"),
    )


_SCHEMES: dict[str, BackendName] = {
    "sqlite": "sqlite", "duckdb": "duckdb",
    "postgresql": "postgres", "postgres": "postgres", "pgsql": "postgres",
    "mysql": "mysql", "mariadb": "mysql",
}


def _mask_url(raw: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", raw)


def parse_catalog(raw: str, *, must_exist: bool = True) -> CatalogTarget:
    """Parse a path, URL or `ducklake:` ATTACH string. Profiles are resolved before this (config)."""
    text = raw.strip()
    if not text:
        raise InvalidCatalogError("empty CATALOG argument")
    if text.startswith("ducklake:"):
        rest = text[len("ducklake:"):]
        kind, _, tail = rest.partition(":")
        if kind == "sqlite" and tail:
            return _file_target(tail, forced="sqlite", must_exist=must_exist)
        if kind == "duckdb" and tail:
            return _file_target(tail, forced="duckdb", must_exist=must_exist)
        if kind in ("postgres", "postgresql", "mysql") and tail:
            backend: BackendName = "mysql" if kind == "mysql" else "postgres"
            if "://" in tail:
                return _server_target(backend, tail)
            return _kv_target(backend, tail)
        if not rest:
            raise InvalidCatalogError("ATTACH string 'ducklake:' names no catalog")
        return _file_target(rest, forced="duckdb", must_exist=must_exist)
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        base = scheme.split("+", 1)[0]
        backend_name = _SCHEMES.get(base)
        if backend_name is None:
            raise InvalidCatalogError(
                f"unsupported catalog URL scheme {scheme!r}",
                hint="use sqlite:///path, duckdb:///path, postgresql://… or mysql://…",
            )
        if backend_name in ("sqlite", "duckdb"):
            path = text.split("://", 1)[1]
            if path.startswith("/"):
                path = path[1:]  # sqlite:///rel/path → rel/path; sqlite:////abs → /abs
            if not path:
                raise InvalidCatalogError(f"malformed catalog URL {text!r}: no file path")
            return _file_target(unquote(path), forced=backend_name, must_exist=must_exist)
        return _server_target(backend_name, text)
    return _file_target(text, forced=None, must_exist=must_exist)
