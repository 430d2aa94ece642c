"""Scenario lakes built once per test session for the tests that only read them (a build costs ~1 s of DuckDB)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from tests.support.lakes import build_lake
from tests.support.services import pg_database, require_env
from tests.support.spot import Spot


class BuiltLakes:
    """DuckDB-built scenario lakes, one per (backend, scenario), kept until the test session ends. Only for tests
    that never write to the lake; a test that writes builds its own with `build_lake`."""

    def __init__(self, root: Path, stack: contextlib.ExitStack) -> None:
        self._root = root
        self._stack = stack  # drops the PostgreSQL databases at the end of the session
        self._built: dict[tuple[str, str], tuple[Spot, list[int]]] = {}

    def get(self, backend: str, scenario: str) -> tuple[Spot, list[int]]:
        """The lake of `scenario` on `backend` (built on first use) and its snapshot ids."""
        key = (backend, scenario)
        if key not in self._built:
            spot = self._new_spot(backend, f"{backend}-{scenario}")
            self._built[key] = (spot, build_lake(backend, spot.oracle_target, spot.data_path, scenario))
        spot, ids = self._built[key]
        return spot, list(ids)

    def _new_spot(self, backend: str, name: str) -> Spot:
        data = self._root / name / "data"
        if backend == "sqlite":
            path = str(self._root / name / "cat.sqlite")
        elif backend == "duckdb":
            path = str(self._root / name / "cat.ducklake")
        elif backend == "postgres":
            path = self._stack.enter_context(pg_database(require_env("DUCKLAKE_TEST_PG")))
        else:
            raise ValueError(backend)
        data.parent.mkdir(parents=True, exist_ok=True)
        return Spot(backend, path, path, data)
