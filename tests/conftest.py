"""Shared fixtures: real services, the DuckDB oracle, and one catalog location per backend."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest_plugins = ["tests.fixtures.services", "tests.fixtures.oracle"]

ORACLE_BACKENDS = ["sqlite", "duckdb", "postgres"]
ALL_BACKENDS = [*ORACLE_BACKENDS, "mysql"]
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Spot:
    """Where a test's catalog lives: what our CLI takes, what the DuckDB oracle attaches, the data path."""

    backend: str
    catalog: str
    oracle_target: str
    data_path: Path

    def attach(self, alias: str = "lake", extra: str = "") -> str:
        """DuckDB's ATTACH statement for this catalog."""
        from tests.fixtures.oracle import attach_clause

        return attach_clause(self.backend, self.oracle_target, self.data_path, alias=alias, extra_options=extra)


@pytest.fixture(autouse=True, scope="session")
def _private_state_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Commands in tests never find the developer's own `ducklake spark start` server or warm process: the state
    dir (`$XDG_STATE_HOME/ducklake`) is the session's own unless a test names another."""
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("xdg-state"))


@pytest.fixture
def spot(request: pytest.FixtureRequest, tmp_path: Path) -> Spot:
    """A fresh, empty catalog location for the backend given by indirect parametrisation."""
    backend = request.param
    data = tmp_path / "data"
    if backend == "sqlite":
        path = str(tmp_path / "cat.sqlite")
        return Spot(backend, path, path, data)
    if backend == "duckdb":
        path = str(tmp_path / "cat.ducklake")
        return Spot(backend, path, path, data)
    if backend == "postgres":
        url = request.getfixturevalue("pg_url")
        return Spot(backend, url, url, data)
    if backend == "mysql":
        url = request.getfixturevalue("mysql_url")
        return Spot(backend, url, url, data)
    raise ValueError(backend)


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m ducklake_cli ARGS` as a user would, capturing stdout and stderr."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("DUCKLAKE_CATALOG", "DUCKLAKE_CONFIG")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "ducklake_cli", *args], capture_output=True, text=True, cwd=cwd or REPO,
        env=full_env, timeout=120, check=False,
    )


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`ducklake ARGS` in this process (Spark is the test session's): exit code, and what it printed since the
    last read of `capsys` (stdout, stderr)."""
    from ducklake_cli.cli.app import main

    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
