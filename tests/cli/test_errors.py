"""Bad input: one line on stderr, exit 1, no traceback, and a SQLite catalog left byte-identical."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import run_cli
from tests.fixtures.lakes import build_lake


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """A small DuckDB-written SQLite lake."""
    cat = tmp_path / "cat.sqlite"
    build_lake("sqlite", str(cat), tmp_path / "data", "catalog_example")
    return cat


def _assert_one_line_error(res: object, *needles: str) -> None:
    rc, err = res.returncode, res.stderr  # type: ignore[attr-defined]
    assert rc == 1, (rc, err)
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("error: ") and "Traceback" not in err
    for n in needles:
        assert n in err, err


def test_missing_file(tmp_path: Path) -> None:
    res = run_cli("inspect", str(tmp_path / "nope.sqlite"))
    _assert_one_line_error(res, "does not exist")
    assert not (tmp_path / "nope.sqlite").exists()


def test_unreachable_server() -> None:
    res = run_cli("inspect", "postgresql://lake:hunter2@127.0.0.1:9/lakecat")  # port 9: nothing listens
    _assert_one_line_error(res, "cannot reach PostgreSQL")
    assert "hunter2" not in res.stderr + res.stdout


@pytest.mark.parametrize("server", ["pg_url", "mysql_url"])
def test_wrong_password(server: str, request: pytest.FixtureRequest) -> None:
    parts = urlsplit(request.getfixturevalue(server))
    bad = parts._replace(netloc=f"lake:wrong-Secret-9@{parts.hostname}:{parts.port}").geturl()
    res = run_cli("inspect", bad)
    _assert_one_line_error(res, "refused the credentials")
    assert "wrong-Secret-9" not in res.stderr + res.stdout


def test_not_a_ducklake_sqlite(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE users(id INTEGER)").connection.commit()
    before = _digest(other)
    _assert_one_line_error(run_cli("inspect", str(other)), "holds no DuckLake catalog")
    assert _digest(other) == before


def test_not_a_ducklake_postgres(pg_url: str) -> None:
    _assert_one_line_error(run_cli("inspect", pg_url), "holds no DuckLake catalog")


def test_unsupported_version(lake: Path) -> None:
    con = sqlite3.connect(lake)
    con.execute("UPDATE ducklake_metadata SET value = '0.3' WHERE key = 'version'")
    con.commit()
    con.close()
    before = _digest(lake)
    _assert_one_line_error(run_cli("inspect", str(lake)), "'0.3'", "not supported")
    assert _digest(lake) == before


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["nosuch"], "table main.nosuch does not exist"),
        (["nosuch.t"], "table nosuch.t does not exist"),
        (["tt"], "did you mean main.t"),
        (["--snapshot", "99"], "snapshot 99 does not exist"),
        (["--as-of", "2001-01-01"], "no snapshot at or before"),
        (["--as-of", "yesterday-ish"], "not an ISO 8601 time"),
    ],
)
def test_unknown_objects_leave_catalog_identical(lake: Path, args: list[str], needle: str) -> None:
    before = _digest(lake)
    res = run_cli("inspect", str(lake), *args)
    if "ISO" in needle:
        assert res.returncode == 2 and needle in res.stderr and res.stderr.count("\n") == 1
    else:
        _assert_one_line_error(res, needle)
    assert _digest(lake) == before


@pytest.mark.parametrize("url", ["ftp://host/x", "postgresql://u:p@/db", "postgresql://u:p@h:port/db", "mysql://u@h"])
def test_malformed_url(url: str) -> None:
    _assert_one_line_error(run_cli("inspect", url), "")


def test_create_catalog_refuses_existing_sqlite(lake: Path, tmp_path: Path) -> None:
    before = _digest(lake)
    _assert_one_line_error(run_cli("create-catalog", str(lake), "--data-path", str(tmp_path / "d")), "already holds")
    assert _digest(lake) == before


def test_debug_shows_traceback(tmp_path: Path) -> None:
    res = run_cli("inspect", str(tmp_path / "nope.sqlite"), "--debug")
    assert res.returncode != 0 and "Traceback" in res.stderr


def test_no_secret_from_profile_in_errors(tmp_path: Path) -> None:
    cfg = tmp_path / "ducklake.toml"
    cfg.write_text('[profiles.prod]\ncatalog = "postgresql://lake:${PGPASS}@127.0.0.1:9/db"\n')
    env = {"DUCKLAKE_CONFIG": str(cfg), "PGPASS": "topsecret-42"}
    res = run_cli("inspect", "prod", env=env)
    _assert_one_line_error(res, "cannot reach PostgreSQL")
    assert "topsecret-42" not in res.stderr + res.stdout
    missing = run_cli("inspect", "prod", env={"DUCKLAKE_CONFIG": str(cfg)})
    _assert_one_line_error(missing, "${PGPASS}", "not set")
    assert os.environ.get("PGPASS") is None
