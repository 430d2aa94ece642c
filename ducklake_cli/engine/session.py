"""Spark sessions: embedded `local[*]`, a cluster via `--master`, or Spark Connect via `--remote`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
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
    # The JVM inherits our stderr at launch; a quiet session sends it to `spark_log_path()` instead.
    quiet: bool = True


def spark_log_path() -> str:
    """Where a quiet local Spark's console output goes."""
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"ducklake-spark-{os.getuid()}.log")


def _get_or_create(builder: SparkSession.Builder, *, quiet: bool) -> SparkSession:
    if not quiet:
        return builder.getOrCreate()
    fd = os.open(spark_log_path(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    saved = os.dup(2)
    os.dup2(fd, 2)
    try:
        return builder.getOrCreate()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def build_session(settings: SparkSettings = SparkSettings()) -> SparkSession:
    """Get or create the Spark session for these settings (a remote one through Spark Connect)."""
    if settings.master and settings.remote:
        raise DuckLakeError("--master and --remote cannot be used together")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(settings.app_name)
    log_conf = Path(__file__).with_name("log4j2.properties")
    quiet = f"-Dlog4j.configurationFile=file:{log_conf}"
    conf = {**DEFAULT_CONF, "spark.driver.extraJavaOptions": quiet, "spark.executor.extraJavaOptions": quiet,
            **dict(settings.conf), **REQUIRED_CONF}
    if settings.remote:
        builder = builder.remote(settings.remote)
        conf = {k: v for k, v in conf.items() if k.startswith("spark.sql.")}
    else:
        builder = builder.master(settings.master or "local[*]")
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        spark = _get_or_create(builder, quiet=settings.quiet and not settings.remote)
    except Exception as exc:  # Py4J / gRPC / JVM start errors: one line for the user
        where = settings.remote or settings.master or "local[*]"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SparkError(f"could not start Spark ({where}): {first} (log: {spark_log_path()})") from exc
    if not settings.remote:
        spark.sparkContext.setLogLevel("ERROR")
    if settings.quiet:
        import logging

        # PySpark logs every failed query as a JSON blob on stderr; our error line says it once.
        for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    for key, value in REQUIRED_CONF.items():
        spark.conf.set(key, value)  # an existing session (getOrCreate) may predate our settings
    return spark


def translate_spark_error(exc: Exception) -> DuckLakeError:
    """A Spark analysis, parse or runtime error as one line (Spark's own text, without the plan dump)."""
    from ducklake_cli.errors import QueryError

    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return QueryError(first.split(" SQLSTATE:")[0].strip())


def _python() -> str:
    import sys

    return sys.executable
