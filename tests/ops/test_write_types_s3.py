"""Files DuckDB writes for us (types pyarrow cannot lay out as DuckDB does) land on S3 too: a DuckDB-made table on
S3 with a UUID key, intervals and nanosecond timestamps, compacted by `ducklake maintain` through Spark
Connect (s3a), reads back in DuckDB 1.5.5 with the same rows and row ids."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.engine.test_s3 import _oracle
from tests.support.cli import run_cli
from tests.support.services import S3Target

if TYPE_CHECKING:
    from tests.support.connect import ConnectServer

pytestmark = [pytest.mark.s3, pytest.mark.spark]


def test_compact_duckdb_written_types_on_s3(s3_bucket: S3Target, spark_connect: ConnectServer,
                                            tmp_path: Path) -> None:
    s3, catalog = s3_bucket, tmp_path / "cat.sqlite"
    con = _oracle(s3, catalog)
    con.execute("CREATE TABLE lake.u (k UUID, iv INTERVAL, ts TIMESTAMP_MS, h HUGEINT, n INTEGER)")
    for i in range(3):
        con.execute(f"INSERT INTO lake.u SELECT md5(i::VARCHAR)::UUID, to_days(i::INTEGER), "
                    f"(TIMESTAMP '2024-01-01' + to_milliseconds(i))::TIMESTAMP_MS, i * 7, i "
                    f"FROM range({i * 50}, {i * 50 + 50}) r(i)")
    con.execute("DELETE FROM lake.u WHERE n >= 100 AND n <> 120")
    query = "SELECT rowid, CAST(COLUMNS(*) AS VARCHAR) FROM lake.u ORDER BY rowid"
    expected = con.execute(query).fetchall()
    con.close()
    aws = {"AWS_ACCESS_KEY_ID": s3.key, "AWS_SECRET_ACCESS_KEY": s3.secret, "AWS_ENDPOINT_URL": s3.endpoint,
           "AWS_REGION": s3.region}
    res = run_cli("maintain", "compact", str(catalog), "--remote", spark_connect.url, "--yes", env=aws)
    assert res.returncode == 0, res.stderr[-3000:]
    con = _oracle(s3, catalog)
    try:
        assert con.execute(query).fetchall() == expected
        assert con.execute("SELECT count(*) FROM ducklake_list_files('lake', 'u')").fetchall() == [(2,)]
    finally:
        con.close()
