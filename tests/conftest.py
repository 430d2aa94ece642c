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

pytest_plugins = ["tests.support.services", "tests.support.oracle", "tests.support.spark", "tests.support.tiers",
                  "tests.support.xdist_groups", "tests.support.legacy_lakes"]


# A whole-suite run gets at most one worker per this many GiB of memory: each holds a Spark driver JVM (2 GiB heap),
# and `ducklake` subprocesses and the cluster/Connect tests start more JVMs beside it.
_GIB_PER_WORKER = 6


def _spark_workers() -> int:
    """How many xdist workers a run that starts Spark gets: every core, as memory allows (2 on CI)."""
    cores = len(os.sched_getaffinity(0))
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return max(1, min(cores, int(mem_gib // _GIB_PER_WORKER)))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Runs spread over the cores with pytest-xdist unless `-n` says otherwise (`-n 0`: serial): the inner loop
    (`-m "not spark"`) on every core, anything else on one worker per core (each with its own Spark JVM), as
    memory allows. Left serial: `--pdb`/`--trace`, `--collect-only`, and runs naming only single tests (`::`).
    Tests sharing a costly fixture or server stay on one worker (`--dist loadgroup`, tests/support/xdist_groups.py)."""
    if not config.pluginmanager.hasplugin("xdist") or "PYTEST_XDIST_WORKER" in os.environ:
        return
    if config.getoption("numprocesses", None) is None and not (
            config.getoption("collectonly") or config.getoption("usepdb") or config.getoption("trace")
            or (config.args and all("::" in arg for arg in config.args))):
        inner_loop = " ".join((config.getoption("markexpr") or "").split()) == "not spark"
        workers = "auto" if inner_loop else _spark_workers()
        if workers != 1:
            config.option.numprocesses = workers
    if config.getoption("numprocesses", None) and config.getoption("dist") == "no":
        config.option.dist = "loadgroup"


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
