"""Which tests share an xdist worker (a pytest plugin): tests that share a costly fixture or server run on one
worker, so that it is built or started once per run rather than once per worker.

The groups: a test's own `xdist_group` marker (`RACES` for the tests racing several CLI processes); the tests using
the standalone cluster or Spark Connect (`master`, `spark_connect`: started once per worker that needs them); the
tests of a module that use a module- or class-scoped fixture (built once per worker that runs them); the tests
reading one `built_lakes` scenario lake. Every other test is scheduled on its own.

xdist's `--dist loadgroup` would carry the groups as node-id suffixes, which pytest 9.2's structured node ids no
longer allow (pytest-dev/pytest-xdist#1386: the grouping is silently lost). So each worker writes the groups it
collected to a file named in its `workerinput`, and the controller schedules by them (a `LoadScopeScheduling` whose
scopes are these groups) whenever the run's `--dist` is `loadgroup`.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

SERVERS = "spark-servers"
# Tests that race several `ducklake` processes (a JVM each): one at a time, so that two races never share the cores.
RACES = "cli-races"
_FILE_KEY = "ducklake_groups_file"


def group_of(item: pytest.Item) -> str | None:
    """The worker group of a test, or None for a test scheduled on its own (see the module docstring)."""
    if marker := item.get_closest_marker("xdist_group"):
        return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))
    names = set(getattr(item, "fixturenames", ()))
    if {"master", "spark_connect"} & names:
        return SERVERS
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})  # no public API for fixture scopes
    if any(d and d[-1].scope in ("module", "class", "package") for n, d in defs.items() if n in names):
        return item.nodeid.split("::", 1)[0]
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "built_lakes" in names and "backend" in params and "scenario" in params:
        return f"lake-{params['backend']}-{params['scenario']}"
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """(controller) Name the file in which the worker leaves the groups it collects."""
    if node.config.getoption("dist") == "loadgroup":
        name = f"ducklake-xdist-groups-{node.workerinput['testrunuid']}.json"
        node.workerinput[_FILE_KEY] = str(Path(tempfile.gettempdir()) / name)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """(worker) Write every collected test's group (each worker collects the same tests; the last write wins)."""
    target = getattr(config, "workerinput", {}).get(_FILE_KEY)
    if not target:
        return
    groups = {item.nodeid: group for item in items if (group := group_of(item))}
    fd, tmp = tempfile.mkstemp(dir=Path(target).parent, prefix=".ducklake-xdist-groups-")
    with os.fdopen(fd, "w") as out:
        json.dump(groups, out)
    os.replace(tmp, target)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """(controller) Schedule `--dist loadgroup` runs by the groups the workers wrote."""
    if config.getoption("dist") != "loadgroup":
        return None
    return _group_scheduling()(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    """(controller) Remove the groups file."""
    if path := config.stash.get(_GROUPS_FILE, None):
        Path(path).unlink(missing_ok=True)


_GROUPS_FILE = pytest.StashKey[str]()


def _group_scheduling() -> type:
    """`GroupScheduling`: xdist's scope scheduling with the groups of `group_of` as scopes (largest first, then
    single tests). Made on first use: this plugin loads without xdist too (`-p no:xdist`)."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def __init__(self, config: pytest.Config, log: Any = None) -> None:
            super().__init__(config, log)
            self._groups: dict[str, str] | None = None

        def schedule(self) -> None:
            """Read the groups (each worker wrote them before reporting its collection), then schedule."""
            if self._groups is None:
                path = next((n.workerinput.get(_FILE_KEY) for n in self.nodes), None)
                self._groups = {}
                if path:
                    self.config.stash[_GROUPS_FILE] = path
                    try:
                        self._groups = json.loads(Path(path).read_text())
                    except (OSError, ValueError) as exc:
                        self.log(f"no test groups ({exc}): every test on its own")
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            return (self._groups or {}).get(nodeid, nodeid)

    return GroupScheduling
