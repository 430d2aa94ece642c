"""CATALOG argument parsing: paths (sniffed), URLs, DuckDB ATTACH strings."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest

from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.errors import CatalogNotFoundError, InvalidCatalogError


def test_sniffs_sqlite_and_duckdb_by_header_not_extension(tmp_path: Path) -> None:
    sq = tmp_path / "lake.ducklake"  # misleading extension on purpose
    sqlite3.connect(sq).execute("CREATE TABLE x(a)").connection.commit()
    dd = tmp_path / "lake.db"
    duckdb.connect(str(dd)).execute("CREATE TABLE x(a INT)").close()
    assert parse_catalog(str(sq)).backend == "sqlite"
    assert parse_catalog(str(dd)).backend == "duckdb"


def test_new_file_backend_follows_extension(tmp_path: Path) -> None:
    assert parse_catalog(str(tmp_path / "n.ducklake"), must_exist=False).backend == "duckdb"
    assert parse_catalog(str(tmp_path / "n.sqlite"), must_exist=False).backend == "sqlite"
    assert parse_catalog(f"duckdb:///{tmp_path}/n.db", must_exist=False).backend == "duckdb"


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(CatalogNotFoundError):
        parse_catalog(str(tmp_path / "nope.sqlite"))


def test_not_a_database_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("hello, not a database at all")
    with pytest.raises(InvalidCatalogError):
        parse_catalog(str(junk))


@pytest.mark.parametrize(
    ("raw", "backend", "host", "port", "db", "user"),
    [
        ("postgresql://lake:pw@db.example:5433/lakecat", "postgres", "db.example", 5433, "lakecat", "lake"),
        ("postgresql+psycopg://lake@h/c", "postgres", "h", None, "c", "lake"),
        ("postgres://u:p%40ss@h:1/d", "postgres", "h", 1, "d", "u"),
        ("mysql://lake:pw@127.0.0.1:3306/cat", "mysql", "127.0.0.1", 3306, "cat", "lake"),
        ("mysql+pymysql://lake:pw@h/cat", "mysql", "h", None, "cat", "lake"),
        ("ducklake:postgres:dbname=cat host=h port=6543 user=u password=secret", "postgres", "h", 6543, "cat", "u"),
        ("ducklake:mysql:db=cat host=h user=u", "mysql", "h", None, "cat", "u"),
    ],
)
def test_server_forms(raw: str, backend: str, host: str, port: int | None, db: str, user: str) -> None:
    t = parse_catalog(raw)
    assert (t.backend, t.host, t.port, t.database, t.user) == (backend, host, port, db, user)


def test_password_is_never_displayed() -> None:
    t = parse_catalog("postgresql://lake:s3cr3t@h:5432/db")
    assert t.password == "s3cr3t"
    assert "s3cr3t" not in t.display()
    assert "s3cr3t" not in repr(t)
    assert "***" in t.display()


def test_attach_file_forms(tmp_path: Path) -> None:
    p = tmp_path / "c.sqlite"
    sqlite3.connect(p).execute("CREATE TABLE x(a)").connection.commit()
    assert parse_catalog(f"ducklake:sqlite:{p}").backend == "sqlite"
    assert parse_catalog(f"ducklake:{tmp_path / 'new.ducklake'}", must_exist=False).backend == "duckdb"


def test_metadata_schema_in_url_query() -> None:
    t = parse_catalog("postgresql://u:p@h/db?metadata_schema=lake&sslmode=disable")
    assert t.metadata_schema == "lake"
    assert dict(t.query) == {"sslmode": "disable"}


@pytest.mark.parametrize(
    "raw",
    ["ftp://x/y", "postgresql://u:p@/db", "postgresql://u:p@h:notaport/db", "mysql://u@h", "ducklake:", "  ",
     "ducklake:postgres:host=h user=u"],
)
def test_malformed(raw: str) -> None:
    with pytest.raises(InvalidCatalogError):
        parse_catalog(raw)
