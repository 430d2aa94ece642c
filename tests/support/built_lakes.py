"""Scenario lakes built once per test session (a build costs ~1 s of DuckDB): shared read-only, or copied for a
test that changes its lake."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from tests.support.lakes import build_lake
from tests.support.services import pg_database, require_env
from tests.support.spot import Spot


class BuiltLakes:
    """DuckDB-built scenario lakes, one per (backend, scenario), kept until the test session ends. `get` hands out
    the shared lake, for tests that never write to it; `copy` a private copy of it (SQLite and DuckDB-file
    catalogs), for tests that change it."""

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

    def copy(self, scenario: str, dest: Path, backend: str = "sqlite") -> tuple[Spot, list[int]]:
        """A private copy of the lake of `scenario` in the new directory `dest` (`cat.sqlite` or `cat.ducklake`
        and `data/`), exactly what `build_lake` would make there, and its snapshot ids."""
        if backend not in ("sqlite", "duckdb"):
            raise ValueError(f"only file catalogs are copied, not {backend}")
        source, ids = self.get(backend, scenario)
        dest.mkdir(parents=True)
        catalog = dest / Path(source.catalog).name
        shutil.copyfile(source.catalog, catalog)
        if source.data_path.exists():
            shutil.copytree(source.data_path, dest / "data")
        _point_at(backend, catalog, dest / "data")
        return Spot(backend, str(catalog), str(catalog), dest / "data"), ids

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


# Catalog rows that may hold an absolute path: a copy is only sound when none does (files added from elsewhere).
_PATH_TABLES = ("ducklake_data_file", "ducklake_delete_file")


def _point_at(backend: str, catalog: Path, data: Path) -> None:
    """Make a copied catalog's data path `data`; refuse a catalog naming files by absolute path (outside it)."""
    import duckdb

    con: Any = sqlite3.connect(catalog) if backend == "sqlite" else duckdb.connect(str(catalog))
    try:
        absolute = sum(con.execute(f"SELECT count(*) FROM {t} WHERE NOT path_is_relative").fetchone()[0]
                       for t in _PATH_TABLES)
        if absolute:
            raise ValueError(f"{catalog} names {absolute} files by absolute path: not copyable")
        con.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", [f"{data}/"])
        con.commit()
    finally:
        con.close()
