"""Spark sessions: embedded `local[*]`, a cluster via `--master`, or Spark Connect via `--remote`."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ducklake_cli.errors import DuckLakeError, SparkError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession  # noqa: F401 (the types other layers name)

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


# Durations as plain numbers (ms, or s where Hadoop reads seconds): older hadoop-aws jars cannot parse the
# "60s"-style defaults of Hadoop 3.4+; for matching jars these are the same values.
S3A_DEFAULTS: dict[str, str] = {
    "fs.s3a.connection.establish.timeout": "30000",
    "fs.s3a.connection.timeout": "200000",
    "fs.s3a.connection.ttl": "300000",
    "fs.s3a.threads.keepalivetime": "60",
    "fs.s3a.multipart.purge.age": "86400",
    "fs.s3a.retry.interval": "500",
    "fs.s3a.retry.throttle.interval": "100",
    "fs.s3a.assumed.role.session.duration": "1800",
}
_remote_sessions: list[SparkSession] = []


@dataclass(frozen=True)
class SparkSettings:
    """Where and how to run Spark."""

    master: str | None = None
    remote: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    app_name: str = "ducklake"
    # The JVM inherits our stderr at launch; a quiet session sends it to `spark_log_path()` instead.
    quiet: bool = True
    # The lake's data path: an s3:// lake gets hadoop-aws from Maven when no jars are configured (`s3a_packages`).
    data_path: str | None = None


# Settings that put (or may put) the s3a connector on the classpath: any one of them means the user chose.
_CLASSPATH_KEYS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")


def spark_hadoop_version() -> str | None:
    """The Hadoop version Spark ships (from `jars/hadoop-client-api-<version>.jar`), or None."""
    jars = _spark_jars_dir()
    found = sorted(jars.glob("hadoop-client-api-*.jar")) if jars else []
    return found[-1].name.removeprefix("hadoop-client-api-").removesuffix(".jar") if found else None


def _spark_jars_dir() -> Path | None:
    home = os.environ.get("SPARK_HOME")
    if not home:
        import importlib.util

        spec = importlib.util.find_spec("pyspark")
        home = os.path.dirname(spec.origin) if spec and spec.origin else None
    return Path(home, "jars") if home else None


def s3a_packages(conf: Mapping[str, str], data_path: str | None) -> dict[str, str]:
    """`spark.jars.packages` = the hadoop-aws of Spark's own Hadoop, for a lake on S3 when the user set none of
    spark.jars, spark.jars.packages, spark.driver.extraClassPath and Spark has no hadoop-aws jar; else {}."""
    if not data_path or not data_path.startswith(("s3://", "s3a://")):
        return {}
    if any(conf.get(key) for key in _CLASSPATH_KEYS):
        return {}
    jars = _spark_jars_dir()
    if jars is not None and any(jars.glob("hadoop-aws-*.jar")):
        return {}
    version = spark_hadoop_version()
    return {"spark.jars.packages": f"org.apache.hadoop:hadoop-aws:{version}"} if version else {}


def _unresolved_packages(packages: str) -> SparkError | None:
    """After a failed launch: the one line to show when Spark could not download `spark.jars.packages`."""
    try:
        with open(spark_log_path(), "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 65536))
            tail = log.read().decode("utf-8", "replace")
    except OSError:
        return None
    if "unresolved dependency" not in tail:
        return None
    return SparkError(
        f"Spark could not download spark.jars.packages = {packages} (the s3a connector for s3:// lakes; "
        "Maven Central unreachable?)",
        hint="set spark.jars to local hadoop-aws and AWS SDK bundle jars (profile [spark] table or --conf "
             "spark.jars=/path/hadoop-aws.jar,/path/aws-sdk-bundle.jar), or spark.jars.repositories to a "
             "reachable Maven mirror",
    )


def spark_log_path() -> str:
    """Where a quiet local Spark's console output goes."""
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"ducklake-spark-{os.getuid()}.log")


def _get_or_create(builder: SparkSession.Builder, *, quiet: bool) -> SparkSession:
    with _keep_interrupt_handler():
        return _launch(builder, quiet=quiet)


@contextlib.contextmanager
def _keep_interrupt_handler() -> Iterator[None]:
    """PySpark installs its own SIGINT handler (it cancels jobs through Py4J and prints tracebacks); the CLI's
    (`cli.app`: print "interrupted", exit 130) stays in place."""
    import signal
    import threading

    ours = None
    if threading.current_thread() is threading.main_thread():
        handler = signal.getsignal(signal.SIGINT)
        ours = handler if getattr(handler, "ducklake_interrupt", False) else None
    try:
        yield
    finally:
        if ours is not None:
            signal.signal(signal.SIGINT, ours)


def _launch(builder: SparkSession.Builder, *, quiet: bool) -> SparkSession:
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


def s3a_conf(storage_options: Mapping[str, Any]) -> dict[str, str]:
    """Hadoop s3a settings (`fs.s3a.*`) equivalent to s3fs storage options; empty when none are given."""
    if not storage_options:
        return {}
    opts = dict(storage_options)
    client = dict(opts.get("client_kwargs") or {})
    s3_config = dict((opts.get("config_kwargs") or {}).get("s3") or {})
    conf = dict(S3A_DEFAULTS)
    endpoint = client.get("endpoint_url")
    if endpoint:
        conf["fs.s3a.endpoint"] = str(endpoint)
        conf["fs.s3a.connection.ssl.enabled"] = "false" if str(endpoint).startswith("http://") else "true"
    if client.get("region_name"):
        conf["fs.s3a.endpoint.region"] = str(client["region_name"])
    if s3_config.get("addressing_style"):
        conf["fs.s3a.path.style.access"] = "true" if s3_config["addressing_style"] == "path" else "false"
    if opts.get("anon") in (True, "true", "1"):
        conf["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    elif opts.get("key") and opts.get("secret"):
        conf["fs.s3a.access.key"] = str(opts["key"])
        conf["fs.s3a.secret.key"] = str(opts["secret"])
        if opts.get("token"):
            conf["fs.s3a.session.token"] = str(opts["token"])
            conf["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        else:
            conf["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    return conf


def _set_hadoop_conf(spark: SparkSession, conf: Mapping[str, str], user: Mapping[str, str]) -> None:
    """Set s3a settings on the JVM's Hadoop configuration (shipped to executors with each scan, not logged)."""
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in conf.items():
        if f"spark.hadoop.{key}" not in user:  # the user's own `spark.hadoop.*` settings win
            hadoop.set(key, value)


def build_session(
    settings: SparkSettings = SparkSettings(), *, storage_options: Mapping[str, Any] | None = None
) -> SparkSession:
    """Get or create the Spark session for these settings (a remote one through Spark Connect); `storage_options`
    (s3fs form) become the session's s3a settings."""
    if settings.master and settings.remote:
        raise DuckLakeError("--master and --remote cannot be used together")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(settings.app_name)
    quiet = _quiet_log_option()
    conf = {**DEFAULT_CONF, "spark.driver.extraJavaOptions": quiet, "spark.executor.extraJavaOptions": quiet,
            **dict(settings.conf), **REQUIRED_CONF}
    s3a = s3a_conf(storage_options or {})
    if settings.remote:
        _check_reachable(settings.remote)
        builder = builder.remote(settings.remote)
        # Session settings only: one config request at creation; s3a keys reach this session's Hadoop conf.
        conf = {k: v for k, v in conf.items() if k.startswith("spark.sql.")}
        conf.update({k: v for k, v in s3a.items() if f"spark.hadoop.{k}" not in settings.conf})
    else:
        builder = builder.master(settings.master or "local[*]")
        conf.update(s3a_packages(conf, settings.data_path))
        from ducklake_cli.engine.cds import driver_options

        # The driver JVM maps the class-data sharing archive when there is a sound one (engine/cds.py).
        if cds := driver_options(settings.conf, _spark_jars_dir()):
            conf["spark.driver.extraJavaOptions"] = f"{conf['spark.driver.extraJavaOptions']} {cds}"
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        spark = _get_or_create(builder, quiet=settings.quiet and not settings.remote)
    except Exception as exc:  # Py4J / gRPC / JVM start errors: one line for the user
        packages = conf.get("spark.jars.packages")
        if packages and not settings.remote and (missing := _unresolved_packages(packages)):
            raise missing from exc
        where = settings.remote or settings.master or "local[*]"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SparkError(f"could not start Spark ({where}): {first} (log: {spark_log_path()})") from exc
    if settings.remote:
        if not any(s is spark for s in _remote_sessions):
            _remote_sessions.append(spark)
    else:
        spark.sparkContext.setLogLevel("ERROR")
        if s3a:
            _set_hadoop_conf(spark, s3a, settings.conf)
    if settings.quiet:
        import logging

        # PySpark logs every failed query as a JSON blob on stderr; our error line says it once.
        for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    if not settings.remote:  # Spark Connect's getOrCreate applied them already, in one request
        adopt(spark)  # an existing session (getOrCreate) may predate our settings
    return spark


def _quiet_log_option() -> str:
    return f"-Dlog4j.configurationFile=file:{Path(__file__).with_name('log4j2.properties')}"


def driver_java_options(conf: Mapping[str, str]) -> str:
    """The driver JVM's flags before class-data sharing: the user's `spark.driver.extraJavaOptions`, else ours."""
    return conf.get("spark.driver.extraJavaOptions") or _quiet_log_option()


def running(spark: SparkSession) -> bool:
    """Whether a session we built is still usable (not stopped), asked without a call into the JVM or server."""
    stopped = getattr(spark, "is_stopped", None)  # Spark Connect
    if isinstance(stopped, bool):
        return not stopped
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    return context is not None and context is spark.sparkContext and context._jsc is not None


def adopt(spark: SparkSession) -> SparkSession:
    """A session we did not build (the API caller's) with the settings our reads and writes depend on."""
    for key, value in REQUIRED_CONF.items():
        if spark.conf.get(key, None) != value:
            spark.conf.set(key, value)
    return spark


def _check_reachable(url: str) -> None:
    """Fail at once when nothing listens at a `sc://host:port` URL (the Connect client retries for minutes)."""
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "localhost", parts.port or 15002
    except ValueError as exc:
        raise SparkError(f"not a Spark Connect URL: {url} (expected sc://host:port)") from exc
    if parts.scheme != "sc":
        raise SparkError(f"not a Spark Connect URL: {url} (expected sc://host:port)")
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as exc:
        raise SparkError(f"cannot reach the Spark Connect server at {url}: {exc.strerror or exc}",
                         hint="start one with `ducklake spark start`, or check --remote / $DUCKLAKE_REMOTE") from exc


def release_remote_sessions() -> bool:
    """Release the Spark Connect sessions this process opened (server-side state goes at once, not after
    the server's idle timeout); whether there were any."""
    had = bool(_remote_sessions)
    while _remote_sessions:
        session = _remote_sessions.pop()
        with contextlib.suppress(Exception):  # the server may be gone already; nothing left to release then
            session.stop()
    return had


_ERROR_CLASS = re.compile(r"^\s*(?:[\w.$]+(?:Exception|Error):\s*)?\[[A-Z0-9_.]+\]\s*")
# A Python traceback's exception line: its class and message (unindented, unlike the frames).
_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*): (.+)$", re.MULTILINE)
# Causes worth naming on their own, whatever Spark wraps them in (a failed task, a job abort).
_STORAGE_CAUSES = (
    ("No space left on device", "no space left on the device holding the data path"),
    ("Read-only file system", "the data path is on a read-only file system"),
    ("Permission denied", "permission denied writing or reading the data path"),
    ("AccessDenied", "the object store denied access to the data path"),
)


def _texts(exc: BaseException) -> tuple[str, str]:
    """(Spark's message, everything the exception says): the JVM exception's text for a Py4J error, else its own."""
    java = getattr(exc, "java_exception", None)  # Py4JJavaError: the JVM exception's own message, not Py4J's
    text = (str(java.toString()) if java is not None else str(exc)).strip()
    return text, f"{text}\n{exc}"


def executor_error(exc: BaseException, *, table: str = "") -> DuckLakeError | None:
    """A failure of Spark work as our one-line error when it is one of ours raised on an executor (as it was
    raised), or a value Spark could not compute (a cast, an overflow: SQLSTATE class 22), prefixed with `table`
    when given; None for any other failure."""
    from ducklake_cli.errors import BadValueError, from_executor

    text, whole = _texts(exc)
    ours = from_executor(whole)
    if ours is not None:
        return ours
    if not is_spark_error(exc) or not re.search(r"SQLSTATE: 22\w{3}", text.split("\n", 1)[0]):
        return None
    message = _spark_message(exc, text)
    return BadValueError(f"table {table}: {message}" if table else message)


def _spark_message(exc: BaseException, text: str) -> str:
    """Spark's message on one line: without its `[ERROR_CLASS]` tag and SQLSTATE, with the SQL it failed in."""
    first = text.splitlines()[0] if text else type(exc).__name__
    first = _ERROR_CLASS.sub("", first.split(" SQLSTATE:")[0]).strip()
    fragment = ""
    with contextlib.suppress(Exception):  # contexts of a DataFrame call cannot be asked on a classic session
        contexts = exc.getQueryContext()  # type: ignore[attr-defined]
        fragment = next((c.fragment() for c in contexts if c.fragment()), "")
    fragment = " ".join(fragment.split())
    return f"{first} (in {fragment})" if fragment and fragment not in first else first


def translate_spark_error(exc: Exception) -> DuckLakeError:
    """A Spark analysis, parse or runtime error as one line in plain words (Spark's own text without its
    `[ERROR_CLASS]` tag, SQLSTATE or plan dump; a full disk or read-only data path named as such; our own errors
    raised on executors as themselves; a Python worker's failure as its exception's last line)."""
    from ducklake_cli.errors import QueryError, SparkError, StorageError, from_executor

    text, whole = _texts(exc)
    ours = from_executor(whole)  # first: a message of ours may quote a value that reads like a storage failure
    if ours is not None:
        return ours
    for needle, plain in _STORAGE_CAUSES:
        if needle in whole:
            return StorageError(plain, hint="free space or fix the permissions, then run the command again")
    known = executor_error(exc)
    if known is not None:
        return known
    worker = _worker_error(whole)
    if worker is not None:
        return SparkError(f"a Spark task failed: {worker}", hint="rerun with --debug for the worker's traceback")
    return QueryError(_spark_message(exc, text) or type(exc).__name__)


def _worker_error(text: str) -> str | None:
    """The exception a Python worker failed with (`ValueError: …`), from the traceback Spark's text holds."""
    start = text.rfind("Traceback (most recent call last):")
    if start < 0 or "Python worker" not in text[:start + 1]:
        return None
    trace = text[start:].split("\nJVM stacktrace:", 1)[0]
    found = [(cls, msg) for cls, msg in _PYTHON_ERROR.findall(trace) if cls not in ("SQLSTATE", "Traceback")]
    if not found:
        return None
    cls, msg = found[-1]
    return f"{cls.rsplit('.', 1)[-1]}: {msg.strip()}"


def is_spark_error(exc: BaseException) -> bool:
    """Whether `exc` is Spark's own (analysis, parse, runtime; classic or Connect) rather than ours or Python's."""
    from pyspark.errors import PySparkException

    return isinstance(exc, PySparkException) or type(exc).__name__ == "Py4JJavaError"


@contextlib.contextmanager
def spark_errors() -> Iterator[None]:
    """Spark's own exceptions as our one-line errors, where Spark work is started or its rows are fetched."""
    try:
        yield
    except Exception as exc:
        if is_spark_error(exc):
            raise translate_spark_error(exc) from exc
        raise


def _python() -> str:
    import sys

    return sys.executable
