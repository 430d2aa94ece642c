"""Engine test fixtures: one Spark session (one JVM) for the whole test session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.engine.cluster import standalone_cluster
from tests.engine.connect import ConnectServer, connect_server

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The embedded `local[*]` session our CLI would build; started once (10-25 s here), stopped at the end."""
    from ducklake_cli.engine.session import build_session

    session = build_session()
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone master + one 2-core worker on loopback, shared by every cluster test; its URL."""
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as url:
        yield url


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """One Spark Connect server for the test session (`ducklake spark start`, s3a jars on its classpath)."""
    with connect_server(tmp_path_factory.mktemp("spark-connect")) as server:
        yield server
