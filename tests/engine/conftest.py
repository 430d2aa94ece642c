"""Engine test fixtures: one Spark session (one JVM) for the whole test session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

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
