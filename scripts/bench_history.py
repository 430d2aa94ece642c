"""History section of `scripts/bench.py`: the change feed over a table's whole history of 1,000+ snapshots.

The lake: `make_big_catalog.py` appends 1,000 snapshots to `events` (900 Parquet files of 100 rows, 100 inlined
inserts), then DuckDB runs 10 DELETEs and 10 UPDATEs (each touching one file), so the feed holds inserts, deletes
and update pairs. **ours** = `Lake.table_changes(…)` aggregated in the bench's Spark session; **duckdb** = DuckDB
1.5.5 + ducklake's `table_changes` with the same aggregate (both must return the same counts per change type);
**floor** = raw Spark reading the table's live Parquet files once (`count(*)`, `sum(id)`): the cost of the reads alone.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ducklake_cli.api import Lake

SNAPSHOTS = 1000
FILES = 900  # the other 100 appended snapshots are inlined inserts
CHANGES = 10  # DELETEs, and as many UPDATEs, by DuckDB after the appends
AGGREGATE = "SELECT change_type, count(*) AS n, sum(rowid) AS s FROM {feed} GROUP BY change_type ORDER BY change_type"


def build(bd: Any, work: Path) -> tuple[Path, int, float]:
    """The lake: catalog path, last snapshot id, and the seconds it took to build."""
    catalog = work / "history" / "cat.sqlite"
    start = time.perf_counter()
    root = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, str(root / "scripts" / "make_big_catalog.py"), str(catalog), "--snapshots",
                    str(SNAPSHOTS), "--files", str(FILES), "--force"], check=True, cwd=root,
                   stdout=subprocess.DEVNULL)
    con = bd.connect()
    try:
        bd.attach(con, catalog, Path(str(catalog) + ".files"))
        for k in range(CHANGES):  # ids are 100 per file, in file order: each statement hits one file
            con.execute(f"DELETE FROM lake.events WHERE id BETWEEN {k * 7000} AND {k * 7000 + 9}")
            con.execute(f"UPDATE lake.events SET v = 'changed' WHERE id BETWEEN {k * 7000 + 3500} "
                        f"AND {k * 7000 + 3519}")
        last = bd.latest_snapshot(con, "lake")
    finally:
        con.close()
    return catalog, last, time.perf_counter() - start


def history(bd: Any, rounds: Callable[..., Any], check: Callable[..., Any], log: Callable[[str], None], reps: int,
            work: Path, open_lake: Callable[[Path], Lake]) -> dict[str, Any]:
    """Time the change feed over every snapshot of the lake, ours against DuckDB's, and check they agree."""
    catalog, last, build_s = build(bd, work)
    lake = open_lake(catalog)
    con = bd.connect()
    bd.attach(con, catalog, Path(str(catalog) + ".files"))

    def ours() -> list[Any]:
        lake.table_changes("events", 0, last).createOrReplaceTempView("bench_feed")
        return [tuple(r) for r in lake.spark().sql(AGGREGATE.format(feed="bench_feed")).collect()]

    def duckdb() -> list[Any]:
        return con.execute(AGGREGATE.format(feed=f"lake.table_changes('events', 0, {last})")).fetchall()

    files = bd.lake_files(con, "lake", "events")

    def floor() -> list[Any]:  # what reading the table's live files costs raw Spark, with no feed logic at all
        return [tuple(r) for r in lake.spark().read.parquet(*files).selectExpr("count(*)", "sum(id)").collect()]

    try:
        stats, outputs = rounds({"ours": ours, "floor": floor, "duckdb": duckdb}, reps)
        outputs.pop("floor", None)  # a different result by design: not compared
    finally:
        con.close()
        lake.close()
    out: dict[str, Any] = {"snapshots": last + 1, "build_s": build_s, "changes": stats, **check(outputs, "duckdb"),
                           "feed": {str(r[0]): int(r[1]) for r in outputs.get("duckdb", [])}}
    log(f"  history: changes over {last + 1} snapshots {_brief(stats)}")
    return out


def _brief(stats: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v['median']:.2f}s" if "median" in v else f"{k} error" for k, v in stats.items())
