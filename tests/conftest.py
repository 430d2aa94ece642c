"""Shared fixtures: real services, the DuckDB oracle, Spark (with its guard), one catalog location per backend."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.spot import Spot

if TYPE_CHECKING:
    from tests.support.built_lakes import BuiltLakes

pytest_plugins = ["tests.support.services", "tests.support.oracle", "tests.support.spark"]


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The inner loop, `-m "not spark"`, runs on every core (pytest-xdist) unless `-n` says otherwise: its tests
    share no state but the servers, and on 2 cores it takes about half the time. The whole suite stays serial."""
    inner_loop = " ".join((config.getoption("markexpr") or "").split()) == "not spark"
    if (inner_loop and config.pluginmanager.hasplugin("xdist") and config.getoption("numprocesses", None) is None
            and not config.getoption("collectonly") and "PYTEST_XDIST_WORKER" not in os.environ):
        config.option.numprocesses = "auto"


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


@pytest.fixture(scope="session")
def built_lakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltLakes]:
    """Scenario lakes built once per test session, shared by the tests that only read them."""
    from tests.support.built_lakes import BuiltLakes  # late: the plugins it imports are assert-rewritten

    with contextlib.ExitStack() as stack:
        yield BuiltLakes(tmp_path_factory.mktemp("built-lakes"), stack)
