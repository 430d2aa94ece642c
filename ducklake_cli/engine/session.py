"""Spark sessions: embedded `local[*]`, a cluster via `--master`, or Spark Connect via `--remote`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ducklake_cli.errors import DuckLakeError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Settings our reads and writes depend on; always set, whatever the user configures.
REQUIRED_CONF: dict[str, str] = {
    "spark.sql.parquet.fieldId.read.enabled": "true",
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.timeType.enabled": "true",
}
# Defaults a user may override (config or --conf).
DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "2g",
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
}


class SparkError(DuckLakeError):
    """Spark could not start or a job failed."""


@dataclass(frozen=True)
class SparkSettings:
    """Where and how to run Spark."""

    master: str | None = None
    remote: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    app_name: str = "ducklake"


def build_session(settings: SparkSettings = SparkSettings()) -> SparkSession:
    """Get or create the Spark session for these settings (a remote one through Spark Connect)."""
    if settings.master and settings.remote:
        raise DuckLakeError("--master and --remote cannot be used together")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(settings.app_name)
    conf = {**DEFAULT_CONF, **dict(settings.conf), **REQUIRED_CONF}
    if settings.remote:
        builder = builder.remote(settings.remote)
        conf = {k: v for k, v in conf.items() if k.startswith("spark.sql.")}
    else:
        builder = builder.master(settings.master or "local[*]")
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # Py4J / gRPC / JVM start errors: one line for the user
        where = settings.remote or settings.master or "local[*]"
        raise SparkError(f"could not start Spark ({where}): {str(exc).strip().splitlines()[0]}") from exc
    if not settings.remote:
        spark.sparkContext.setLogLevel("ERROR")
    for key, value in REQUIRED_CONF.items():
        spark.conf.set(key, value)  # an existing session (getOrCreate) may predate our settings
    return spark


def _python() -> str:
    import sys

    return sys.executable
