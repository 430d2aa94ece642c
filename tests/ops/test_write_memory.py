"""Data never passes through the Python driver (issue #4, acceptance): writing 10 million rows of 10 columns keeps
the CLI process's peak RSS under 500 MB, and DuckDB 1.5.5 reads back exactly the input rows. The default tier
writes 3 million (~90 MB of Parquet: as Python rows in the driver far over the bound), the full tier 10 million.

The RSS is the driver's own high-water mark (`VmHWM` in /proc/self/status), taken by a wrapper that runs
`ducklake_cli.cli.app.main` in that very process: the JVM and Spark's Python workers are separate processes and are
not counted. Not `ru_maxrss`: Linux carries the parent's peak across fork/exec into it, so inside a long pytest run it
reported pytest's own ~1.7 GB instead of the CLI's. The input,
~300 MB of Parquet, would need well over 500 MB as Arrow in the driver, so a collect() anywhere fails the test."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.oracle import sql_str
from tests.support.tiers import full_only
from tests.support.writes import CliProcess, data_files, make_wide_parquet, oracle_lake

RSS_LIMIT_MB = 500
COLUMNS = ("id", "k", "x", "name", "day", "ts", "flag", "amount", "f", "tag")

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
@pytest.mark.parametrize("rows", [pytest.param(3_000_000, id="3M"), full_only(10_000_000, id="10M")])
def test_millions_of_rows_keep_driver_rss_under_500_mb(tmp_path: Path, rows: int) -> None:
    catalog = str(tmp_path / "lake.sqlite")
    data = tmp_path / "data"
    created = run_cli("create-catalog", catalog, "--data-path", str(data))
    assert created.returncode == 0, created.stderr
    source = make_wide_parquet(tmp_path / "in", rows, files=4)
    rss_file = tmp_path / "maxrss"

    started = time.monotonic()
    proc = CliProcess(["-c", _WRAPPER, str(rss_file), "write", catalog, "main.big", "--from", str(source),
                       "--mode", "create", "--format", "json"], log_dir=tmp_path / "logs", name="write")
    done = proc.wait(600)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    rss_mb = int(rss_file.read_text()) / 1024
    result = json.loads(done.stdout)
    sys.stderr.write(f"{rows:,}-row write: driver peak RSS {rss_mb:.0f} MB, wall {seconds:.1f} s, "
                     f"{result['files']} files, {result['bytes_written'] / 1e6:.0f} MB\n")
    assert result["rows"] == rows and result["inlined_rows"] == 0 and result["created_table"], result
    assert result["files"] == len(data_files(data)) >= 1
    assert rss_mb < RSS_LIMIT_MB, f"driver peak RSS {rss_mb:.0f} MB"

    src = f"read_parquet({sql_str(str(source / '*.parquet'))})"
    aggregates = ", ".join(f"count({c}), min({c}), max({c})" for c in COLUMNS) + ", sum(id), sum(k), sum(x), " \
        "sum(amount), sum(f::DECIMAL(38, 6)), sum(flag::INTEGER), sum(length(name)), sum(length(tag))"
    with oracle_lake("sqlite", catalog, data) as con:
        lake_agg = con.execute(f"SELECT count(*), {aggregates} FROM lake.main.big").fetchone()
        src_agg = con.execute(f"SELECT count(*), {aggregates} FROM {src}").fetchone()
        assert lake_agg is not None and lake_agg[0] == rows
        assert lake_agg == src_agg
        # Filters DuckDB can prune with our per-file min/max stats: a wrong bound would drop rows.
        for where in (f"id BETWEEN {rows // 2 - 10} AND {rows // 2 + 10}", "day = DATE '2028-03-18'", "amount > 998.9"):
            q = f"SELECT count(*) FROM {{}} WHERE {where}"
            assert con.execute(q.format("lake.main.big")).fetchone() == con.execute(q.format(src)).fetchone(), where
        # Row for row: input ids are unique and the counts agree, so a full join on id that finds no unmatched id
        # on either side and no differing value is EXCEPT ALL both ways, at a quarter of its cost.
        rest = [c for c in COLUMNS if c != "id"]
        differ = con.execute(
            f"SELECT count(*) FROM lake.main.big l FULL JOIN {src} s USING (id) WHERE l.id IS NULL OR s.id IS NULL "
            f"OR ({', '.join('l.' + c for c in rest)}) IS DISTINCT FROM ({', '.join('s.' + c for c in rest)})"
        ).fetchone()
        assert differ == (0,), differ
