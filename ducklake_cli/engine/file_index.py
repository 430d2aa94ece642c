"""Read a table's Parquet files with the sizes the catalog knows, so Spark never stats or lists them.

`spark.read.parquet(*files)` checks that every path exists and then lists each one (InMemoryFileIndex, with a
distributed listing job above `spark.sql.sources.parallelPartitionDiscovery.threshold`): on S3 that is several
requests per file. Spark skips all of it for a directory holding a file-sink metadata log (`_spark_metadata/0`,
as written by streaming file sinks): its MetadataLogFileIndex takes paths and sizes from the log. So we write the
catalog's paths and sizes as such a log into a private temporary directory on the driver, read that directory,
and delete it once the DataFrame exists (the index reads the log when it is built and never again).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import string
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameReader, SparkSession

# Below this many files the plain read costs no more than writing and reading the log.
MIN_FILES = 2
_LOG_VERSION = "v1"
# Only a block-size hint in the log's FileStatus (Spark splits files by its own maxPartitionBytes).
_BLOCK_SIZE = 128 << 20
_LOCAL_FS = ("file:///", "file:/")
# ASCII characters a URI path holds as they are; every other ASCII character is percent-encoded.
_UNSAFE = re.compile("[^" + re.escape(string.ascii_letters + string.digits + "-_.!~*'()" + ":@&=+$," + ";/")
                     + "\x80-\U0010ffff]")


def spark_path(path: str) -> str:
    """The path Spark reads: `s3://` becomes Hadoop's `s3a://`."""
    return "s3a://" + path[len("s3://"):] if path.startswith("s3://") else path


def file_key(path: str) -> str:
    """A file's path as Spark's `_metadata.file_path` spells it, without scheme and authority: illegal URI
    characters, `%` included, percent-encoded (as Hadoop's Path→URI does); non-ASCII kept."""
    if "://" in path:
        rest = path.split("://", 1)[1]
        path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return _UNSAFE.sub(lambda m: f"%{ord(m[0]):02X}", path)


def read_parquet(spark: SparkSession, reader: DataFrameReader, files: Sequence[tuple[str, int]]) -> DataFrame:
    """`reader.parquet` of these files (catalog paths, sizes in bytes) without asking the file system for either;
    the same rows and `_metadata.file_path`s as the plain read, which is used wherever the log cannot stand in."""
    uris = _log_uris(spark, reader, files)
    if uris is None:
        return reader.parquet(*[spark_path(p) for p, _ in files])
    base = tempfile.mkdtemp(prefix="ducklake-files-")
    try:
        _write_log(base, uris)
        # recursiveFileLookup: no partition inference from `k=v` directories (the plain read of files infers none).
        return reader.option("recursiveFileLookup", "true").parquet("file://" + base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def file_uri(path: str) -> str | None:
    """The URI Spark gives a catalog path once qualified (`_metadata.file_path`), or None if we cannot tell it."""
    path = spark_path(path)
    if path.startswith("/"):
        return "file:" + file_key(path)
    if path.startswith("s3a://"):
        bucket = path[len("s3a://"):].split("/", 1)[0]
        if bucket and "/" in path[len("s3a://"):]:
            return "s3a://" + bucket + file_key(path)
    return None


def _log_uris(spark: SparkSession, reader: DataFrameReader, files: Sequence[tuple[str, int]]) -> list[
        tuple[str, int]] | None:
    """Each distinct file's URI and size, or None where the plain read must be used: Spark Connect (the driver,
    and its disk, are elsewhere), few files, a size the catalog does not know, a path we cannot qualify, a local
    file that is not there (Spark's own read then names it).

    Spark assigns row groups to splits by the size it is given, so a size below the real one would drop row
    groups. Local files are therefore measured here (a stat costs microseconds; DuckDB too reads a local file
    whatever size the catalog records); object-store files take the catalog's size, which DuckDB and we write
    from the file written (`ducklake verify` compares them)."""
    if len(files) < MIN_FILES or not hasattr(reader, "_jreader"):
        return None
    out: dict[str, int] = {}
    local = False
    for path, size in files:
        uri = file_uri(path)
        if uri is None:
            return None
        if uri.startswith("file:"):
            local = True
            try:
                size = os.stat(spark_path(path)).st_size
            except OSError:
                return None
        if size <= 0:
            return None
        out.setdefault(uri, size)
    # An absolute path without a scheme is on fs.defaultFS: only a local default makes it a `file:` URI.
    if local and not _default_fs_is_local(spark):
        return None
    return list(out.items())


def _default_fs_is_local(spark: SparkSession) -> bool:
    """Whether scheme-less paths are local files (Hadoop's fs.defaultFS)."""
    value = spark._jsc.hadoopConfiguration().get("fs.defaultFS")
    return value is None or str(value).startswith(_LOCAL_FS)


def _write_log(base: str, uris: Sequence[tuple[str, int]]) -> None:
    """The file-sink log's batch 0: a version line, then one JSON `add` entry per file."""
    log = os.path.join(base, "_spark_metadata")
    os.mkdir(log)
    rest = f',"isDir":false,"modificationTime":0,"blockReplication":1,"blockSize":{_BLOCK_SIZE},"action":"add"}}'
    with open(os.path.join(log, "0"), "w", encoding="utf-8") as out:
        out.write(_LOG_VERSION)
        out.writelines(f'\n{{"path":{json.dumps(uri)},"size":{int(size)}{rest}' for uri, size in uris)
