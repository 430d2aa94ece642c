"""Smoke tests: each service fixture reaches its real server and cleans up after itself."""

from __future__ import annotations

import contextlib
from urllib.parse import urlsplit

import psycopg
import pymysql
import pytest

from tests.support.oracle import postgres_dsn
from tests.support.services import (
    S3Target,
    mysql_connect_args,
    mysql_database,
    pg_database,
    require_env,
    s3_prefix,
)


@pytest.mark.postgres
def test_pg_url_is_a_fresh_writable_database(pg_url: str) -> None:
    parts = urlsplit(pg_url)
    assert parts.scheme == "postgresql" and parts.username == "lake" and parts.password == "lake"
    with psycopg.connect(pg_url, autocommit=True) as con:
        assert con.execute("SELECT current_database()").fetchone() == (parts.path.lstrip("/"),)
        assert con.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)
        con.execute("CREATE TABLE t (id int PRIMARY KEY, name text)")
        con.execute("INSERT INTO t VALUES (1, 'ä–ü'), (2, 'b')")
        assert con.execute("SELECT name FROM t ORDER BY id").fetchall() == [("ä–ü",), ("b",)]


@pytest.mark.postgres
def test_pg_dsn_kv_connects(pg_url: str) -> None:
    dsn = postgres_dsn(pg_url)
    db = urlsplit(pg_url).path.lstrip("/")
    assert dsn == f"dbname={db} host=127.0.0.1 port={urlsplit(pg_url).port} user=lake password=lake"
    with psycopg.connect(dsn) as con:  # libpq parses the same syntax DuckDB's postgres extension does
        assert con.execute("SELECT current_database(), current_user").fetchone() == (db, "lake")


def test_pg_dsn_kv_quotes_awkward_values() -> None:
    assert postgres_dsn("postgresql://u%20x:p%27w@h:5/d") == r"dbname=d host=h port=5 user='u x' password='p\'w'"
    assert postgres_dsn("postgresql+psycopg://u:@h/d") == "dbname=d host=h user=u password=''"


@pytest.mark.mysql
def test_mysql_url_is_a_fresh_writable_database(mysql_url: str) -> None:
    parts = urlsplit(mysql_url)
    assert parts.scheme == "mysql" and parts.username == "lake" and parts.password == "lake"
    db = parts.path.lstrip("/")
    with pymysql.connect(**mysql_connect_args(mysql_url)) as con, con.cursor() as cur:
        cur.execute("SELECT DATABASE(), @@character_set_database")
        assert cur.fetchone() == (db, "utf8mb4")
        cur.execute("SHOW TABLES")
        assert cur.fetchall() == ()
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))")
        cur.execute("INSERT INTO t VALUES (1, %s), (2, 'b')", ("ä–ü🦆",))
        cur.execute("SELECT name FROM t ORDER BY id")
        assert cur.fetchall() == (("ä–ü🦆",), ("b",))


@pytest.mark.s3
def test_s3_bucket_prefix_roundtrip(s3_bucket: S3Target) -> None:
    assert s3_bucket.bucket == "lake" and s3_bucket.prefix and "/" not in s3_bucket.prefix
    assert s3_bucket.url == f"s3://lake/{s3_bucket.prefix}/"
    fs = s3_bucket.filesystem()
    root = f"{s3_bucket.bucket}/{s3_bucket.prefix}"
    assert not fs.exists(root)
    fs.pipe(f"{root}/a/b.parquet", b"PAR1-not-really")
    fs.pipe(f"{root}/c.txt", b"hello")
    assert fs.cat(f"{root}/a/b.parquet") == b"PAR1-not-really"
    assert sorted(fs.find(root)) == [f"{root}/a/b.parquet", f"{root}/c.txt"]


@pytest.mark.postgres
def test_pg_database_dropped_even_with_open_session() -> None:
    admin_url = require_env("DUCKLAKE_TEST_PG")
    with pg_database(admin_url) as url:
        name = urlsplit(url).path.lstrip("/")
        held = psycopg.connect(url)  # left open on purpose: DROP ... WITH (FORCE) must not block on it
    with psycopg.connect(admin_url) as admin:
        row = admin.execute("SELECT count(*) FROM pg_database WHERE datname = %s", (name,)).fetchone()
    assert row == (0,)
    with contextlib.suppress(psycopg.Error):
        held.close()


@pytest.mark.mysql
def test_mysql_database_dropped_even_with_open_session() -> None:
    admin_url = require_env("DUCKLAKE_TEST_MYSQL")
    with mysql_database(admin_url) as url:
        name = urlsplit(url).path.lstrip("/")
        held = pymysql.connect(**mysql_connect_args(url))
        with held.cursor() as cur:  # an open transaction holding a metadata lock on a table
            cur.execute("CREATE TABLE t (id INT)")
            cur.execute("BEGIN")
            cur.execute("SELECT * FROM t")
    with pymysql.connect(**mysql_connect_args(admin_url)) as admin, admin.cursor() as cur:
        cur.execute("SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s", (name,))
        assert cur.fetchone() == (0,)
    with contextlib.suppress(pymysql.err.Error):
        held.close()  # the fixture killed this session


@pytest.mark.s3
def test_s3_prefix_removed() -> None:
    endpoint, key, secret = (require_env(f"DUCKLAKE_TEST_S3{s}") for s in ("", "_KEY", "_SECRET"))
    with s3_prefix(endpoint, key, secret) as t:
        fs = t.filesystem()
        fs.pipe(f"{t.bucket}/{t.prefix}/x/y.bin", b"1")
    fs = t.filesystem()
    # No object keys left. Asked of S3 directly: SeaweedFS keeps the emptied prefix as a directory entry
    # (HEAD "<prefix>/" answers 200), so s3fs's exists()/find() on the prefix still report it.
    listing = fs.call_s3("list_objects_v2", Bucket=t.bucket, Prefix=t.prefix + "/")
    assert listing.get("KeyCount", 0) == 0, listing.get("Contents")
    assert fs.exists(t.bucket)  # only the prefix's objects go, never the bucket
