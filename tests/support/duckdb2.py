"""A second venv with DuckDB 2.0, where the catalog layer and the CLI's metadata commands run against the newest DuckDB
our runtime dependency allows (the main venv keeps 1.5.5 as the oracle).

Built once per machine in `${XDG_CACHE_HOME:-~/.cache}/ducklake-cli/duckdb2-venv` (~20 s, from the registry pip is
configured with) and reused while its key (Python version, requirements) is unchanged. Our package is not installed
there: each command runs this checkout's code through PYTHONPATH, so a venv built from another checkout is never
stale. Built and shared by `tests/support/venvs.cached_venv`.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
from pathlib import Path

from tests.support.cli import REPO
from tests.support.venvs import cached_venv

DUCKDB2 = "duckdb==2.0.1"
# What `ducklake_cli.catalog` and the metadata commands (create-catalog, query DDL, options, inspect, copy-catalog)
# import, at the main venv's versions: no Spark, no pandas, no server drivers.
_RUNTIME = ("duckdb-engine", "sqlalchemy", "typer", "rich", "click", "pyarrow", "sqlglot", "fsspec", "pytz")


def _requirements() -> list[str]:
    return [DUCKDB2, *(f"{name}=={importlib.metadata.version(name)}" for name in _RUNTIME)]


def duckdb2_python() -> Path:
    """The venv's interpreter, building the venv first when it is missing or its key changed."""
    return cached_venv("duckdb2-venv", _requirements())


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DUCKLAKE_CATALOG", "DUCKLAKE_CONFIG", "PYTHONPATH", "VIRTUAL_ENV")}
    # This checkout's code; never a warm process, which would run the command in the main venv's interpreter.
    env.update(PYTHONPATH=str(REPO), DUCKLAKE_WARM="0")
    return env


def run_cli2(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`ducklake ARGS` under DuckDB 2.0, as `tests.support.cli.run_cli` runs it under 1.5.5."""
    return subprocess.run([str(duckdb2_python()), "-m", "ducklake_cli", *args], capture_output=True, text=True,
                          cwd=cwd or REPO, env=_env(), timeout=120, check=False)


def run_python2(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A Python snippet under DuckDB 2.0 (`sys.argv[1:]` = ARGS); fails the test when it fails."""
    done = subprocess.run([str(duckdb2_python()), "-c", code, *args], capture_output=True, text=True, cwd=REPO,
                          env=_env(), timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done
