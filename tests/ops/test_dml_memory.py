"""Positions of deleted rows never reach the Python driver (issue #13, acceptance): deleting 10% of a 10-million-row
table keeps the CLI process's peak RSS under 500 MB, and DuckDB 1.5.5 reads exactly the rows left.

The RSS is the driver's own high-water mark (`VmHWM`), taken as tests/ops/test_write_memory.py takes it: by a wrapper
that runs `ducklake_cli.cli.app.main` in that very process (the JVM and Spark's Python workers are not counted)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.oracle import attach_clause, oracle_connect
from tests.support.writes import CliProcess, oracle_lake, scalar

ROWS = 10_000_000
FILES = 4
RSS_LIMIT_MB = 500

# Runs the CLI in this interpreter and reports this address space's peak RSS (KiB) on the way out.
_WRAPPER = """
import sys
from ducklake_cli.cli.app import main
try:
    main(sys.argv[2:])
finally:
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(sys.argv[1], "w") as out:
        out.write(peak)
"""


@pytest.mark.spark
def test_deleting_a_million_rows_keeps_driver_rss_under_500_mb(tmp_path: Path) -> None:
    catalog = str(tmp_path / "lake.sqlite")
    data = tmp_path / "data"
    created = run_cli("create-catalog", catalog, "--data-path", str(data))
    assert created.returncode == 0, created.stderr
    con = oracle_connect()
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute(attach_clause("sqlite", catalog, data))
        con.execute("CREATE TABLE lake.main.t (id BIGINT, k INTEGER, s VARCHAR)")
        per = ROWS // FILES
        for f in range(FILES):
            con.execute(f"INSERT INTO lake.main.t SELECT i, (i % 1000)::INTEGER, 's' || (i % 100000) "
                        f"FROM range({f * per}, {(f + 1) * per}) r(i)")
        data_files = scalar(con, "SELECT count(*) FROM __ducklake_metadata_lake.ducklake_data_file")
    finally:
        con.close()
    rss_file = tmp_path / "maxrss"

    started = time.monotonic()
    proc = CliProcess(["-c", _WRAPPER, str(rss_file), "query", catalog, "DELETE FROM main.t WHERE id % 10 = 3",
                       "--format", "json"], log_dir=tmp_path / "logs", name="delete")
    done = proc.wait(600)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    rss_mb = int(rss_file.read_text()) / 1024
    result = json.loads(done.stdout)
    sys.stderr.write(f"10M-row table, 1M-row delete: driver peak RSS {rss_mb:.0f} MB, wall {seconds:.1f} s, "
                     f"{data_files} data files, {result['delete_files']} delete files\n")
    assert result["rows_deleted"] == ROWS // 10 and result["rows_updated"] == result["rows_inserted"] == 0, result
    assert result["delete_files"] == data_files, result
    assert rss_mb < RSS_LIMIT_MB, f"driver peak RSS {rss_mb:.0f} MB"

    with oracle_lake("sqlite", catalog, data) as con:
        got = con.execute("SELECT count(*), sum(id), sum(k), count(*) FILTER (WHERE id % 10 = 3) "
                          "FROM lake.main.t").fetchone()
        expected = con.execute("SELECT count(*), sum(i), sum(i % 1000), 0 FROM range(?) r(i) WHERE i % 10 <> 3",
                               [ROWS]).fetchone()
        assert got == expected, (got, expected)
        deleted = con.execute("SELECT sum(delete_count) FROM __ducklake_metadata_lake.ducklake_delete_file "
                              "WHERE end_snapshot IS NULL").fetchone()
        assert deleted == (ROWS // 10,), deleted
