"""Spark in tests (a pytest plugin): one embedded session, a standalone cluster and a Spark Connect server, each
started once per test session, and the guard that keeps every JVM out of tests without the `spark` marker, so
that `pytest -m "not spark"` is a fast inner loop that never starts Spark.

The guard, for each test without the marker: requesting a Spark fixture fails the test; `build_session` fails it
(unless for a Spark Connect client, which starts no JVM); `DUCKLAKE_FORBID_SPARK=1` is set; and `JAVA_HOME` points
at a `java` that only says why, notes the attempt and fails, so a JVM started by Spark's launch scripts — in this
process, in a `ducklake` subprocess (which inherits the environment), or for a cluster — fails, and the test fails
even if it expected an error."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.cluster import standalone_cluster
from tests.support.connect import ConnectServer, connect_server

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FORBID_ENV = "DUCKLAKE_FORBID_SPARK"
SPARK_FIXTURES = frozenset({"spark", "master", "spark_connect"})
WHY = "this test starts Spark but has no `spark` marker: add @pytest.mark.spark (or pytestmark) or keep it off Spark"


@dataclass(frozen=True)
class _NoJava:
    """A JAVA_HOME whose `bin/java` prints why it refuses, notes the attempt in `attempts`, and fails."""

    home: Path

    @property
    def attempts(self) -> Path:
        """One line per refused JVM start since the last `clear()`."""
        return self.home / "attempts"

    def clear(self) -> None:
        """Forget earlier attempts."""
        self.attempts.write_text("")

    def check(self) -> None:
        """Fail the current test if a JVM start was refused since `clear()` (even if the test caught the error)."""
        if tried := self.attempts.read_text():
            self.clear()
            pytest.fail(f"Spark was started ({', '.join(sorted(set(tried.split())))}): {WHY}", pytrace=False)


_no_java: list[_NoJava] = []


def _fake_java() -> _NoJava:
    """The refusing JAVA_HOME, made once per test session."""
    if not _no_java:
        home = Path(tempfile.mkdtemp(prefix="ducklake-no-java-"))
        (home / "bin").mkdir()
        java = home / "bin" / "java"
        java.write_text(f"#!/bin/sh\necho 'java refused by tests/support/spark.py: {WHY}' >&2\n"
                        f"echo java >> '{home / 'attempts'}'\nexit 97\n")
        java.chmod(0o755)
        _no_java.append(_NoJava(home))
    return _no_java[0]


def _forbidden() -> None:
    """Fail the current test if it may not start Spark."""
    if os.environ.get(FORBID_ENV) == "1":
        pytest.fail(WHY, pytrace=False)


def _guarded_build_session(original: Callable[..., Any]) -> Callable[..., Any]:
    """`build_session` that refuses to start a JVM; Spark Connect clients (`--remote`) start none and pass."""

    def build_session(settings: Any = None, **kwargs: Any) -> Any:
        if settings is not None and getattr(settings, "remote", None):
            return original(settings, **kwargs)
        with _fake_java().attempts.open("a") as log:  # noted too, in case the test catches the failure
            log.write("build_session\n")
        pytest.fail(f"build_session called: {WHY}", pytrace=False)

    return build_session


def _unmarked(item: pytest.Item) -> bool:
    return item.get_closest_marker("spark") is None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Around setup, call and teardown of a test without the `spark` marker: no Spark, in process or out."""
    if not _unmarked(item):
        yield
        return
    import ducklake_cli.engine.session as session

    no_java = _fake_java()
    no_java.clear()
    patch = pytest.MonkeyPatch()
    patch.setenv(FORBID_ENV, "1")
    patch.setenv("JAVA_HOME", str(no_java.home))
    patch.setattr(session, "build_session", _guarded_build_session(session.build_session))
    try:
        yield
    finally:
        patch.undo()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test without the `spark` marker that asks for a Spark fixture fails before the fixture starts Spark."""
    params = getattr(getattr(item, "callspec", None), "params", {})  # a parameter may be named like a fixture
    asked = SPARK_FIXTURES.intersection(getattr(item, "fixturenames", ())).difference(params)
    if asked and _unmarked(item):
        pytest.fail(f"{item.nodeid} uses {', '.join(sorted(asked))}: {WHY}", pytrace=False)


@pytest.hookimpl(trylast=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """A test without the marker that passed although it (or its setup) tried to start a JVM fails."""
    if _unmarked(item):
        _fake_java().check()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """The same for JVMs its teardown tried to start."""
    if _unmarked(item):
        _fake_java().check()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the refusing JAVA_HOME."""
    while _no_java:
        shutil.rmtree(_no_java.pop().home, ignore_errors=True)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The embedded `local[*]` session our CLI would build; started once (10-25 s here), stopped at the end."""
    _forbidden()
    from ducklake_cli.engine.session import build_session

    session = build_session()
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone master + one 2-core worker on loopback, shared by every cluster test; its URL."""
    _forbidden()
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as url:
        yield url


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """One Spark Connect server for the test session (`ducklake spark start`, s3a jars on its classpath)."""
    _forbidden()
    with connect_server(tmp_path_factory.mktemp("spark-connect")) as server:
        yield server
