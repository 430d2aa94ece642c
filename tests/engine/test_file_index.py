"""engine/file_index: files read through a file-sink metadata log give the plain read's rows, `_metadata.file_path`
and row index (odd path characters, hive `k=v` directories never become columns), locally and on S3; the log's
directory is gone once the DataFrame exists; the plain read stays where the log cannot stand in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ducklake_cli.engine.file_index import file_uri, read_parquet

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[2]
# Spaces, `%`, an escape-looking `%41`, non-ASCII, `=`, `#`, `?`, `+`, hive directories, a leading underscore.
NAMES = ("plain/a.parquet", "k=1/b.parquet", "k=2/x=y/c.parquet", "sp ace/d %25 e.parquet", "uni/é ü#?.parquet",
         "eq/f=g+h.parquet", "_under/_i.parquet", "pct/%41.parquet")
COLUMNS = ("id", "_metadata.file_path", "_metadata.row_index", "_metadata.file_size")


def _write(root: Path) -> list[tuple[str, int]]:
    """One small file (two row groups) per name; (path, size)."""
    out = []
    for i, name in enumerate(NAMES):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": list(range(i * 10, i * 10 + 5))}), path, row_group_size=3)
        out.append((str(path), path.stat().st_size))
    return out


def _rows(spark: SparkSession, files: Sequence[tuple[str, int]], *, ours: bool) -> tuple[list[Any], list[str], str]:
    """(sorted rows, columns, file index class) of the plain read or ours."""
    from pyspark.sql import types as T

    reader = spark.read.schema(T.StructType([T.StructField("id", T.LongType())]))
    df = read_parquet(spark, reader, files) if ours else reader.parquet(*[p for p, _ in files])
    index = df._jdf.queryExecution().analyzed().collectLeaves().head().relation().location().getClass()
    return sorted(tuple(r) for r in df.select(*COLUMNS).collect()), df.columns, index.getSimpleName()


def test_file_uri() -> None:
    """Catalog paths become the URIs Spark qualifies them to; paths we cannot qualify give None."""
    assert file_uri("/a b/c%d/é=1.parquet") == "file:/a%20b/c%25d/é=1.parquet"
    assert file_uri("s3://bkt/x y/z.parquet") == "s3a://bkt/x%20y/z.parquet"
    assert file_uri("s3a://bkt/z#.parquet") == "s3a://bkt/z%23.parquet"
    assert file_uri("relative/x.parquet") is None
    assert file_uri("hdfs://nn/x.parquet") is None
    assert file_uri("s3://bucket-only") is None


@pytest.mark.spark
def test_same_as_plain_read(spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Odd characters and hive directories: same rows, file paths, row indexes and columns; no log left behind."""
    files = _write(tmp_path / "data")
    logs = tmp_path / "logs"
    logs.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(logs))
    plain, plain_cols, plain_index = _rows(spark, files, ours=False)
    ours, ours_cols, ours_index = _rows(spark, files, ours=True)
    assert (plain_index, ours_index) == ("InMemoryFileIndex", "MetadataLogFileIndex")
    # Both skip `_i.parquet`: Spark drops data files whose names start with `_` or `.` (DuckDB reads them).
    assert ours == plain and len(plain) == 5 * (len(NAMES) - 1)
    assert ours_cols == plain_cols == ["id"]
    assert list(logs.iterdir()) == []


@pytest.mark.spark
def test_plain_read_where_the_log_cannot_stand_in(spark: SparkSession, tmp_path: Path) -> None:
    """One file: the plain read. An unknown catalog size of a local file (measured here) and a duplicate path: the
    log, deduplicated. Same rows every way."""
    files = _write(tmp_path / "data")[:3]
    plain, _, _ = _rows(spark, files, ours=False)
    assert _rows(spark, files[:1], ours=True)[2] == "InMemoryFileIndex"
    unknown = [files[0], (files[1][0], 0), files[2]]
    assert _rows(spark, unknown, ours=True)[::2] == (plain, "MetadataLogFileIndex")
    assert _rows(spark, [*files, files[0]], ours=True)[::2] == (plain, "MetadataLogFileIndex")


_S3_CHECK = textwrap.dedent("""
    import json, sys
    from pyspark.sql import types as T
    from ducklake_cli.engine.file_index import read_parquet
    from ducklake_cli.engine.session import SparkSettings, build_session
    args = json.loads(sys.argv[1])
    spark = build_session(SparkSettings(conf={"spark.jars": args["jars"]}), storage_options=args["options"])
    reader = lambda: spark.read.schema(T.StructType([T.StructField("id", T.LongType())]))
    cols = ("id", "_metadata.file_path", "_metadata.row_index")
    files = [tuple(f) for f in args["files"]]
    plain = sorted(tuple(r) for r in reader().parquet(*[p.replace("s3://", "s3a://") for p, _ in files])
                   .select(*cols).collect())
    ours = read_parquet(spark, reader(), files)
    index = ours._jdf.queryExecution().analyzed().collectLeaves().head().relation().location().getClass()
    print(json.dumps({"plain": plain, "ours": sorted(tuple(r) for r in ours.select(*cols).collect()),
                      "index": index.getSimpleName()}))
""")


@pytest.mark.spark
@pytest.mark.s3
def test_s3_same_as_plain_read(tmp_path: Path) -> None:
    """On S3 (SeaweedFS, s3a) the log gives the plain read's rows and `s3a://` file paths (own JVM: s3a jars)."""
    from tests.support.s3a import s3a_jars
    from tests.support.services import require_env, s3_prefix

    local = _write(tmp_path / "data")
    with s3_prefix(require_env("DUCKLAKE_TEST_S3"), require_env("DUCKLAKE_TEST_S3_KEY"),
                   require_env("DUCKLAKE_TEST_S3_SECRET")) as s3:
        fs = s3.filesystem()
        files = []
        for (path, size), name in zip(local, NAMES, strict=True):
            fs.put_file(path, f"{s3.bucket}/{s3.prefix}/{name}")
            files.append((f"{s3.url}{name}", size))
        args = {"jars": ",".join(str(j) for j in s3a_jars()), "options": s3.storage_options(), "files": files}
        env = {k: v for k, v in os.environ.items() if k != "DUCKLAKE_FORBID_SPARK"}
        done = subprocess.run([sys.executable, "-c", _S3_CHECK, json.dumps(args)], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["index"] == "MetadataLogFileIndex"
    assert result["ours"] == result["plain"] and len(result["plain"]) == 5 * (len(NAMES) - 1)
    assert all(r[1].startswith(f"s3a://{s3.bucket}/{s3.prefix}/") for r in result["plain"])


@pytest.mark.spark
def test_local_sizes_are_measured_not_taken_from_the_catalog(spark: SparkSession, tmp_path: Path) -> None:
    """Spark assigns row groups to splits by the size it is given: an understated catalog size would drop the last
    row groups, so local files are stat-ed (as DuckDB reads them whatever the catalog says)."""
    from pyspark.sql import types as T

    paths = []
    for i in range(2):
        path = tmp_path / f"f{i}.parquet"
        pq.write_table(pa.table({"id": list(range(i * 100_000, (i + 1) * 100_000))}), path, row_group_size=10_000)
        paths.append(path)
    understated = [(str(p), p.stat().st_size // 3) for p in paths]
    reader = spark.read.schema(T.StructType([T.StructField("id", T.LongType())]))
    df = read_parquet(spark, reader, understated)
    assert df.agg({"id": "count"}).collect()[0][0] == 200_000
    assert df.agg({"id": "sum"}).collect()[0][0] == sum(range(200_000))
