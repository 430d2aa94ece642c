"""The suite's two tiers, one mechanism: the default run (`scripts/test.sh`, what CI runs) and the full run
(`scripts/test.sh --full`, i.e. `pytest --full`, or `DUCKLAKE_TEST_FULL=1`).

The default tier covers every command and capability on every catalog backend at least once and every
differential scenario on SQLite; the full tier adds the cross-products (every scenario x backend x snapshot, every
twin sequence on every backend, the 10-million-row writes). A test, or one parameter set of a test, that belongs
to the full tier only carries the `full` marker (`FULL`, or the helpers below); this module, a pytest plugin,
deselects those in the default tier and says how many it left out. A test that scales inside itself (which
snapshots a differential compares, how many rows it writes) asks `is_full()` or `all_snapshots()`.
bench/TESTS.md lists what runs in the full tier only and what covers each of those paths by default.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from pytest import ParameterSet

FULL_ENV = "DUCKLAKE_TEST_FULL"
# The older switch for every snapshot of every differential scenario; `--full` implies it.
ALL_SNAPSHOTS_ENV = "DUCKLAKE_DIFF_ALL_SNAPSHOTS"
# Marks a test, or one parameter set of a test, as belonging to the full tier only.
FULL = pytest.mark.full
# The pytest marker each catalog backend needs (its server), added to a backend parameter.
_SERVER_MARKS = {"postgres": pytest.mark.postgres, "mysql": pytest.mark.mysql}


def is_full() -> bool:
    """Whether this run is the full tier (`pytest --full` sets the variable before collection)."""
    return os.environ.get(FULL_ENV) == "1"


def all_snapshots() -> bool:
    """Whether the differentials compare every snapshot everywhere (the full tier, or the older switch)."""
    return is_full() or os.environ.get(ALL_SNAPSHOTS_ENV) == "1"


def full_only(*values: Any, id: str | None = None) -> ParameterSet:
    """One parameter set (its values, one per argname, or a `pytest.param`) that runs in the full tier only."""
    if len(values) == 1 and isinstance(values[0], ParameterSet):
        param = values[0]
        return pytest.param(*param.values, marks=[*param.marks, FULL], id=id or param.id)
    return pytest.param(*values, marks=FULL, id=id)


def tiered(cases: Iterable[Any], default: Callable[[Any], bool]) -> list[ParameterSet]:
    """Parameter sets from `cases` (values of one argname, or `pytest.param`s): those `default` accepts run in both
    tiers, the rest in the full tier only. `default` gets the parameter values (a tuple for several argnames)."""
    out: list[ParameterSet] = []
    for case in cases:
        param = case if isinstance(case, ParameterSet) else pytest.param(case)
        values = param.values[0] if len(param.values) == 1 else param.values
        out.append(param if default(values) else full_only(param))
    return out


def backend_params(names: Iterable[str], *, default: Iterable[str] = ("sqlite",)) -> list[ParameterSet]:
    """Catalog backend parameters: those in `default` run in both tiers, the others in the full tier only; each
    carries the marker of the server it needs."""
    keep = set(default)
    out: list[ParameterSet] = []
    for name in names:
        marks = [_SERVER_MARKS[name]] if name in _SERVER_MARKS else []
        if name not in keep:
            marks.append(FULL)
        out.append(pytest.param(name, marks=marks, id=name))
    return out


# ---------------------------------------------------------------------------------------------------------------
# the plugin

# How many tests the default tier deselected.
_FULL_ONLY = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--full`: the full tier, what `scripts/test.sh --full` runs."""
    parser.addoption("--full", action="store_true", default=False,
                     help="the full tier: every scenario x backend x snapshot, every twin sequence on every backend, "
                          "the 10-million-row writes (tests/support/tiers.py)")


def pytest_configure(config: pytest.Config) -> None:
    """`--full` reaches every module, xdist worker and subprocess as `DUCKLAKE_TEST_FULL=1`."""
    if config.getoption("full"):
        os.environ[FULL_ENV] = "1"


def pytest_report_header(config: pytest.Config) -> str:
    """Which tier runs."""
    if is_full():
        return "tier: full (every cross-product)"
    return "tier: default (tests marked `full` are deselected; scripts/test.sh --full runs them)"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The default tier deselects the tests marked `full` (after `-k`/`-m` chose theirs, so the count is exact)."""
    if is_full():
        return
    left = [item for item in items if item.get_closest_marker("full") is not None]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if item.get_closest_marker("full") is None]
        config.stash[_FULL_ONLY] = len(left)
        if hasattr(config, "workeroutput"):  # an xdist worker: tell the controller (pytest_testnodedown)
            config.workeroutput["full_only"] = len(left)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """(xdist controller) How many tests a worker left to the full tier (every worker collects the same)."""
    if count := getattr(node, "workeroutput", {}).get("full_only"):
        node.config.stash[_FULL_ONLY] = count


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """How many tests the default tier left out, and how to run them."""
    if count := config.stash.get(_FULL_ONLY, 0):
        terminalreporter.write_line(f"{count} tests of the full tier not run (scripts/test.sh --full runs them)")
