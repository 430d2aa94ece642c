"""Make the driver JVM's class-data sharing archive (engine/cds.py): `python -m ducklake_cli.engine.cds_build`
(setup scripts run it; a run without an archive starts it detached as it exits)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ducklake_cli.engine.cds import MAGIC, QUIET, archive_key, cache_dir, enabled, paths, usable_archive
from ducklake_cli.engine.session import SparkSettings, _spark_jars_dir, build_session, driver_java_options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def build(conf: Mapping[str, str], key: str | None = None) -> Path | None:
    """Make the archive for these driver settings (a short Spark session that reads and aggregates Parquet,
    dumped at its JVM's exit); the archive, or None when another process is making it or the JVM failed."""
    import fcntl
    import tempfile

    key = key or archive_key(conf, _spark_jars_dir())
    if key is None:
        return None
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    archive, manifest = paths(key)
    with open(root / f"{key}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # another process is making it
        if usable_archive(key) is not None:
            return archive
        _drop_abandoned(root)
        tmp = root / f"{key}.{os.getpid()}.tmp"
        saved = os.environ.get("DUCKLAKE_CDS")
        os.environ["DUCKLAKE_CDS"] = "0"  # this session dumps an archive; it must not map one
        dump = f"{driver_java_options(conf)} -XX:ArchiveClassesAtExit={tmp} {QUIET}"
        settings = SparkSettings(conf={**conf, "spark.driver.extraJavaOptions": dump}, app_name="ducklake-cds")
        code = -1
        try:
            with tempfile.TemporaryDirectory(prefix="ducklake-cds-") as work:
                spark = build_session(settings)
                _workload(spark, work)
                gateway = spark.sparkContext._gateway
                assert gateway is not None
                proc = gateway.proc
                spark.stop()
                proc.stdin.close()  # the gateway JVM exits (and dumps) when its stdin closes
                code = proc.wait(timeout=600)
            with tmp.open("rb") as f:
                ok = code == 0 and f.read(4) == MAGIC
        except Exception:  # noqa: BLE001 - any failure means no archive, never a broken one
            ok = False
        finally:
            os.environ.pop("DUCKLAKE_CDS") if saved is None else os.environ.update(DUCKLAKE_CDS=saved)
        if not ok:
            tmp.unlink(missing_ok=True)
            (root / f"{key}.failed").touch()
            return None
        os.replace(tmp, archive)
        st = archive.stat()
        staged = manifest.with_suffix(f".{os.getpid()}.part")
        staged.write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns}))
        os.replace(staged, manifest)
        (root / f"{key}.failed").unlink(missing_ok=True)
        return archive


def _drop_abandoned(root: Path) -> None:
    """Remove half-made archives a killed builder left (over an hour old: no build takes that long)."""
    import time

    for stale in root.glob("*.tmp"):
        with contextlib.suppress(OSError):
            if time.time() - stale.stat().st_mtime > 3600:
                stale.unlink()


def _workload(spark: SparkSession, work: str) -> None:
    """What a first query does: write and read Parquet, filter, aggregate, join, collect."""
    path = os.path.join(work, "t")
    spark.range(1000).selectExpr("id AS x", "cast(id AS string) AS s", "id % 7 AS g").write.parquet(path)
    df = spark.read.parquet(path)
    df.createOrReplaceTempView("t")
    spark.sql("SELECT g, sum(x), count(*), max(s) FROM t WHERE x > 5 GROUP BY g ORDER BY g").collect()
    spark.sql("SELECT count(*) FROM t a JOIN t b ON a.x = b.x").collect()
    list(spark.sql("SELECT * FROM t LIMIT 10").toLocalIterator())


def main(argv: list[str] | None = None) -> int:
    """`python -m ducklake_cli.engine.cds [--request JSON]`: make the archive now (setup scripts run this)."""
    args = sys.argv[1:] if argv is None else argv
    if not enabled():
        sys.stdout.write("class-data sharing is off (DUCKLAKE_CDS=0)\n")
        return 0
    if args[:1] == ["--request"] and len(args) == 2:
        request = json.loads(args[1])
        return 0 if build(request["conf"], request["key"]) else 1
    archive = build({})
    sys.stdout.write(f"class-data sharing archive: {archive}\n" if archive else
                     "no class-data sharing archive was made (see the Spark log)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
