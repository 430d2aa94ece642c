"""Write a query result to one file: Parquet, CSV or JSON (lines), chosen by the extension."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING

from ducklake_cli.errors import UsageError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json"}


def output_format(path: str) -> str:
    """The format an output path asks for (an error for anything else)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise UsageError(f"--output {path!r}: use a .parquet, .csv or .json file name")
    return FORMATS[ext]


def write_output(df: DataFrame, path: str) -> int:
    """Write `df` as exactly one file at `path` (executors write; one partition is moved into place)."""
    fmt = output_format(path)
    target = os.path.abspath(path)
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        raise UsageError(f"--output: directory {parent} does not exist")
    staging = tempfile.mkdtemp(prefix=".ducklake-out-", dir=parent)
    try:
        out = df.coalesce(1).write.mode("overwrite")
        if fmt == "csv":
            out = out.option("header", "true")
        out.format(fmt).save(os.path.join(staging, "out"))
        parts = [p for p in os.listdir(os.path.join(staging, "out")) if p.startswith("part-")]
        if len(parts) != 1:
            raise UsageError(f"--output: expected one part file, Spark wrote {len(parts)}")
        os.replace(os.path.join(staging, "out", parts[0]), target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return int(df.count())
