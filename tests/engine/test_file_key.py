"""Our driver-side file key equals what Spark reports in `_metadata.file_path` (the join between the two)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ducklake_cli.engine.scan import file_key


@pytest.mark.spark
def test_file_key_matches_spark_for_awkward_paths(spark: Any, tmp_path: Path) -> None:
    paths = []
    for name in ("dir ü%41+x,;=", "country=x%2Fy%20z", "plain"):
        d = tmp_path / name
        d.mkdir()
        path = d / "f #1.parquet"
        pq.write_table(pa.table({"a": [1]}), path)
        paths.append(str(path))
    got = sorted(r[0] for r in spark.read.parquet(*paths).select("_metadata.file_path").collect())
    assert len(got) == 3
    for p in paths:
        assert sum(g.endswith(file_key(p)) and g.split(":", 1)[1].lstrip("/") == file_key(p).lstrip("/")
                   for g in got) == 1, (p, got)


def test_file_key_of_s3_paths_drops_scheme_and_bucket() -> None:
    assert file_key("s3://bucket/lake/main/t/a b.parquet") == "/lake/main/t/a%20b.parquet"
