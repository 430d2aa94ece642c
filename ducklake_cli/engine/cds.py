"""Class-data sharing for the Spark driver JVM: a per-user archive of the classes a Spark session loads, made
once (`python -m ducklake_cli.engine.cds_build`, or in the background after the first run without one) and mapped by
every later driver JVM, which then starts seconds sooner.

The archive is keyed by the Java runtime, the Spark version and everything that shapes the driver's classpath and
JVM flags, so a stale one is never offered to the JVM; one whose size or mtime differs from what its manifest
recorded (truncated, rewritten) is ignored, as a damaged archive can crash the JVM. `DUCKLAKE_CDS=0` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

# The JVM's own notes about the archive (unusable, skipped classes) go to stdout by default: never the user's.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
# The first bytes of a JDK dynamic archive (its magic number, in the machine's byte order).
MAGIC = (0xF00BABA8).to_bytes(4, sys.byteorder)
# Conf keys that change the driver's classpath or JVM flags, hence the archive.
_KEY_CONF = ("spark.driver.extraClassPath", "spark.driver.extraJavaOptions", "spark.driver.memory",
             "spark.driver.extraLibraryPath")
_KEY_ENV = ("SPARK_HOME", "SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_DIST_CLASSPATH",
            "JAVA_HOME")
# After a failed build, wait this long before trying again (a classpath CDS cannot archive fails every time).
RETRY_AFTER_S = 86400.0
_scheduled: list[str] = []


def enabled(env: Mapping[str, str] = os.environ) -> bool:
    """Whether class-data sharing is on (`DUCKLAKE_CDS=0` turns it off)."""
    return env.get("DUCKLAKE_CDS", "1").strip().lower() not in ("0", "false", "no", "off")


def cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Where archives live: `$DUCKLAKE_CDS_DIR`, else `$XDG_CACHE_HOME/ducklake/cds` (~/.cache/ducklake/cds)."""
    if env.get("DUCKLAKE_CDS_DIR"):
        return Path(env["DUCKLAKE_CDS_DIR"])
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "ducklake", "cds")


def _java() -> Path | None:
    """The java binary spark-class runs: $JAVA_HOME/bin/java, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return Path(os.path.realpath(found)) if found and os.path.exists(found) else None


def _stamp(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path}:-"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def archive_key(conf: Mapping[str, str], jars_dir: Path | None) -> str | None:
    """A digest of what the archive depends on (Java, Spark, classpath, driver flags); None without java or
    Spark's jars."""
    java = _java()
    if java is None or jars_dir is None or not jars_dir.is_dir():
        return None
    from pyspark.version import __version__ as spark_version

    parts = [spark_version, sys.version, _stamp(java), _stamp(java.parent.parent / "lib" / "server" / "libjvm.so"),
             _stamp(java.parent.parent / "lib" / "modules")]
    parts += sorted(_stamp(jar) for jar in jars_dir.iterdir())
    parts += [f"{k}={conf.get(k, '')}" for k in _KEY_CONF] + [f"{k}={os.environ.get(k, '')}" for k in _KEY_ENV]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def paths(key: str, env: Mapping[str, str] = os.environ) -> tuple[Path, Path]:
    """The archive and its manifest for `key`."""
    root = cache_dir(env)
    return root / f"{key}.jsa", root / f"{key}.json"


def usable_archive(key: str, env: Mapping[str, str] = os.environ) -> Path | None:
    """The archive for `key` when its manifest vouches for it (same size and mtime as when it was made)."""
    archive, manifest = paths(key, env)
    try:
        recorded = json.loads(manifest.read_text())
        st = archive.stat()
        with archive.open("rb") as f:
            magic = f.read(4)
    except (OSError, ValueError):
        return None
    if (not isinstance(recorded, dict) or recorded.get("size") != st.st_size
            or recorded.get("mtime_ns") != st.st_mtime_ns or magic != MAGIC):
        return None
    return archive


def driver_options(conf: Mapping[str, str], jars_dir: Path | None) -> str:
    """JVM flags for the driver: map the archive when a sound one exists (else schedule its making at exit);
    empty when CDS is off or unavailable."""
    if not enabled():
        return ""
    try:
        key = archive_key(conf, jars_dir)
    except (OSError, ImportError):
        return ""
    if key is None:
        return ""
    archive = usable_archive(key)
    if archive is not None:
        return f"-XX:SharedArchiveFile={archive} -Xshare:auto {QUIET}"
    _schedule_build(key, conf)
    return ""


def _schedule_build(key: str, conf: Mapping[str, str]) -> None:
    """Make the archive in a detached process once this one exits (the user's command never waits for it)."""
    if _scheduled or os.environ.get("DUCKLAKE_CDS_BUILD") == "0" or recent_failure(key):
        return
    _scheduled.append(key)
    import atexit

    request = json.dumps({"key": key, "conf": {k: conf[k] for k in _KEY_CONF if k in conf}})
    atexit.register(_spawn_builder, request)


def recent_failure(key: str) -> bool:
    """Whether making the archive for `key` failed less than `RETRY_AFTER_S` ago."""
    try:
        return time.time() - (cache_dir() / f"{key}.failed").stat().st_mtime < RETRY_AFTER_S
    except OSError:
        return False


def _spawn_builder(request: str) -> None:
    with contextlib.suppress(OSError):
        subprocess.Popen([sys.executable, "-m", "ducklake_cli.engine.cds_build", "--request", request],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)
