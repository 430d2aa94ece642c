"""Bench section: cold start of a first `ducklake query` in a fresh process (no warm process), with the driver
JVM's class-data sharing archive (new) and without it (old, `DUCKLAKE_CDS=0`), interleaved in one run.

    from scripts.bench_coldstart import render, run
    result = run(reps=5, work=Path("bench/data/coldstart"))
    lines = render(result)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ROWS = 100_000
SQL = "SELECT sum(x) FROM t"
EXPECTED = str(ROWS * (ROWS - 1) // 2)
TARGET_CUT = 0.30


def _lake(work: Path) -> Path:
    """A small local lake (SQLite catalog, one Parquet file) made by DuckDB; reused when present."""
    catalog = work / "lake" / "cat.sqlite"
    if catalog.exists():
        return catalog
    sys.path.insert(0, str(ROOT))
    from ducklake_cli.duckdb_extensions import connect

    catalog.parent.mkdir(parents=True, exist_ok=True)
    con = connect(extensions=("ducklake", "sqlite"))
    con.execute(f"ATTACH 'ducklake:sqlite:{catalog}' AS l (DATA_PATH '{catalog.parent / 'data'}/')")
    con.execute(f"CREATE TABLE l.t AS SELECT range AS x, range::VARCHAR AS s FROM range({ROWS})")
    con.execute("DETACH l")
    con.close()
    return catalog


def _ducklake() -> list[str]:
    """The `ducklake` console script next to this interpreter, else `python -m ducklake_cli`."""
    script = Path(sys.executable).with_name("ducklake")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ducklake_cli"]


def _env(work: Path, cds: bool) -> dict[str, str]:
    env = dict(os.environ, DUCKLAKE_WARM="0", DUCKLAKE_CDS="1" if cds else "0",
               DUCKLAKE_CDS_DIR=str(work / "cds"), DUCKLAKE_CDS_BUILD="0")
    return env


def _archive(work: Path) -> float | None:
    """Make the archive into `work/cds` (as scripts/quickstart.sh does); seconds taken, or None when it existed."""
    existed = any((work / "cds").glob("*.json"))
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "ducklake_cli.engine.cds_build"],
                         env=_env(work, True), cwd=ROOT, capture_output=True, text=True, check=True)
    if "archive:" not in out.stdout:
        raise RuntimeError(f"no class-data sharing archive was made: {out.stdout}{out.stderr}")
    return None if existed else time.perf_counter() - start


def _sample(catalog: Path, work: Path, cds: bool) -> float:
    """Wall seconds of one `ducklake query` in a fresh process, until the command exits (what a user at a
    terminal waits for); the answer is checked."""
    out_path = work / "out.txt"
    with out_path.open("w") as out, open(os.devnull, "w") as err:
        start = time.perf_counter()
        code = subprocess.call([*_ducklake(), "query", str(catalog), SQL, "--format", "csv"],
                               env=_env(work, cds), stdout=out, stderr=err, cwd=work)
        wall = time.perf_counter() - start
    text = out_path.read_text()
    if code != 0 or EXPECTED not in text:
        raise RuntimeError(f"cold query failed (exit {code}): {text[:200]}")
    time.sleep(2.0)  # the driver JVM exits after the command: let it go before the next sample
    return wall


def run(reps: int, work: Path) -> dict[str, Any]:
    """Old (no archive) vs new (archive) cold starts, alternated `reps` times each; medians and all samples."""
    reps = max(reps, 5)
    work.mkdir(parents=True, exist_ok=True)
    catalog = _lake(work)
    archive_s = _archive(work)
    old: list[float] = []
    new: list[float] = []
    loads: list[float] = []
    for i in range(reps):
        # Alternate which goes first, so neither always follows the other's JVM exit.
        for cds in ((False, True) if i % 2 == 0 else (True, False)):
            (new if cds else old).append(_sample(catalog, work, cds))
            loads.append(os.getloadavg()[0])
    old_m, new_m = statistics.median(old), statistics.median(new)
    cut = 1.0 - new_m / old_m
    return {"sql": SQL, "rows": ROWS, "reps": reps, "old_s": old, "new_s": new, "old_median_s": old_m,
            "new_median_s": new_m, "cut": cut, "target_cut": TARGET_CUT, "met": cut >= TARGET_CUT,
            "archive_build_s": archive_s, "load_avg": loads,
            "archive_bytes": sum(p.stat().st_size for p in (work / "cds").glob("*.jsa"))}


def render(result: dict[str, Any]) -> list[str]:
    """Markdown lines for bench/REPORT.md."""
    loads = result["load_avg"]
    return [
        "## Cold start: a first `ducklake query` in a fresh process",
        "",
        f"`ducklake query <sqlite lake> \"{result['sql']}\"` ({result['rows']:,} rows, local[*], no warm "
        f"process), {result['reps']} runs each, old and new alternated in one run; load average "
        f"{min(loads):.2f}–{max(loads):.2f}.",
        "",
        "| configuration | median (s) | samples (s) |",
        "|---|---:|---|",
        f"| old: no class-data sharing (`DUCKLAKE_CDS=0`) | {result['old_median_s']:.2f} | "
        + ", ".join(f"{s:.2f}" for s in result["old_s"]) + " |",
        f"| new: driver JVM maps the CDS archive | {result['new_median_s']:.2f} | "
        + ", ".join(f"{s:.2f}" for s in result["new_s"]) + " |",
        "",
        f"Cut: **{result['cut'] * 100:.0f}%** (target ≥ {result['target_cut'] * 100:.0f}%): "
        f"**{'met' if result['met'] else 'not met'}**. The archive "
        + ("was reused from an earlier run" if result["archive_build_s"] is None
           else f"took {result['archive_build_s']:.1f} s to make (once, at setup)")
        + f" and is {result['archive_bytes'] / 1e6:.0f} MB.",
        "",
    ]


if __name__ == "__main__":
    import json

    res = run(int(sys.argv[1]) if len(sys.argv) > 1 else 5, Path(sys.argv[2] if len(sys.argv) > 2 else
                                                                   "/tmp/ducklake-bench-coldstart"))
    print(json.dumps(res, indent=1))
    print("\n".join(render(res)))
