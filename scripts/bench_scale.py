#!/usr/bin/env python
"""Scale section of `scripts/bench.py` (issue #29): metadata commands and query planning on 10k, 100k and 1M files.

Lakes: `make_big_catalog.py --mode distinct` (SQLite catalog, one table `events(id, ts, v)`, 100 rows per file),
`--files N --snapshots N/10`, plus one of 1,000 files over 100,000 snapshots for `inspect --snapshots`. Each is built
once into a cache directory named by its build parameters and `BUILD_VERSION` (default
`~/.cache/ducklake-bench/scale/`, else `--scale-cache` or `$DUCKLAKE_BENCH_SCALE_CACHE`) and reused by later runs;
its `build.json` holds the build's summary, time, peak RSS and disk size. A directory without `build.json` is an
unfinished build: rebuilt, unless the process in its `build.pid` still runs (then that size is skipped).

Every command runs in a fresh process under a small wrapper that makes itself the child subreaper, waits for every
descendant (the Spark JVM too) and reports their CPU (user + sys), peak RSS (the largest process) and the command's
wall time. ours = `.venv/bin/ducklake …` (`DUCKLAKE_WARM=0`); DuckDB = a Python script running DuckDB 1.5.5 +
ducklake (offline extensions) on the same catalog (`READ_ONLY` but for the orphan dry run), which also reports the
statement's own time. Planning alone is measured in-process too (`python scripts/bench_scale.py plan …`): the catalog
planning of the statement (no JVM), then for the keeps-all query the temp-view registration on a started local Spark
session. Targets are evaluated at the largest size measured; each missed one's command runs once more under cProfile
and its top functions go into the report.

    python scripts/bench.py --only scale --add-to bench/results/2026-11-29-full.json
    python scripts/bench.py --only scale --scale-sizes 10000,100000 --add-to bench/results/2026-11-29-full.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUILD_VERSION = 1  # bump when make_big_catalog.py's output changes: every cached lake is then rebuilt
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (10_000, 100_000)
SNAPSHOT_LAKE = (1_000, 100_000)  # (files, snapshots) of the lake for `inspect --snapshots`
KEEP_ONE = "SELECT count(*) FROM events WHERE id = 12345"  # ids are 100 per file in file order: one file
KEEP_ALL = "SELECT count(*) FROM events WHERE id >= 0"
Log = Callable[[str], None]


@dataclass(frozen=True)
class Command:
    """One measured command: ours (CLI arguments after the catalog) and DuckDB's statement (`{a}` = the alias)."""

    key: str
    title: str
    ours: tuple[str, ...]
    duckdb: str | None
    target: str = ""  # what the issue asks (shown in the report)
    duckdb_read_only: bool = True  # the orphan dry run appends to a table of its own, refused on a READ_ONLY attach


COMMANDS = (
    Command("explain_keep1", "`query --explain … WHERE id = 12345` (keeps 1 file)",
            (KEEP_ONE, "--explain", "--format", "json", "--master", "local[2]"), "EXPLAIN " + KEEP_ONE,
            "catalog planning ≤ 2 s and ≤ 3× DuckDB's EXPLAIN, without the JVM start"),
    Command("explain_keepall", "`query --explain … WHERE id >= 0` (keeps all)",
            (KEEP_ALL, "--explain", "--format", "json", "--master", "local[2]"), "EXPLAIN " + KEEP_ALL,
            "catalog planning + view registration ≤ 30 s, peak RSS ≤ 1.5 GB"),
    Command("inspect_table", "`inspect CAT events`", ("events",),
            "SELECT * FROM ducklake_table_info('{a}')", "≤ 3× DuckDB's `ducklake_table_info`"),
    Command("files_json", "`inspect CAT events --files --format json`", ("events", "--files", "--format", "json"),
            "SELECT * FROM ducklake_list_files('{a}', 'events')",
            "≤ 2× DuckDB's `ducklake_list_files` + fetch; peak RSS flat"),
    Command("orphans_dry_run", "`maintain orphans CAT --all --dry-run`", ("--all", "--dry-run"),
            "CALL ducklake_delete_orphaned_files('{a}', dry_run => true, cleanup_all => true)",
            "≤ 1× DuckDB's dry run", duckdb_read_only=False),
    Command("verify", "`verify CAT`", (), None, "≤ 20 s"),
)
SNAPSHOTS_COMMAND = Command("snapshots_json", "`inspect CAT --snapshots --format json`",
                            ("--snapshots", "--format", "json"), "SELECT * FROM ducklake_snapshots('{a}')",
                            "≤ 1.5× DuckDB's `ducklake_snapshots()`")
VERBS = {"explain_keep1": ("query",), "explain_keepall": ("query",), "inspect_table": ("inspect",),
         "files_json": ("inspect",), "orphans_dry_run": ("maintain", "orphans"), "verify": ("verify",),
         "snapshots_json": ("inspect",)}


# ---------------------------------------------------------------- options and lakes


@dataclass(frozen=True)
class Options:
    """What the scale section runs."""

    sizes: tuple[int, ...]
    cache: Path
    reps: int = 1
    timeout_s: float = 1800.0
    snapshot_lake: bool = True
    profile: bool = True  # each missed target's command again under cProfile, its top functions in the report


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The section's flags on bench.py's command line."""
    p.add_argument("--scale-sizes", help="scale section: data-file counts, e.g. 10000,100000 (default 10k,100k,1M; "
                   "--quick: 10k,100k)")
    p.add_argument("--scale-cache", type=Path, help="scale section: where built lakes are kept (default "
                   "$DUCKLAKE_BENCH_SCALE_CACHE, else ~/.cache/ducklake-bench/scale)")
    p.add_argument("--scale-reps", type=int, default=1, help="scale section: runs per figure (default 1; median)")
    p.add_argument("--scale-timeout", type=float, default=1800.0, help="scale section: seconds before a command "
                   "is killed and reported as timed out (default 1800)")
    p.add_argument("--scale-no-snapshots", action="store_true",
                   help="scale section: skip the 100k-snapshot lake")
    p.add_argument("--scale-no-profile", action="store_true",
                   help="scale section: do not profile the commands of missed targets")


def options_from(args: argparse.Namespace, mode: str) -> Options:
    """`Options` from bench.py's parsed arguments."""
    sizes = tuple(int(x) for x in args.scale_sizes.split(",")) if args.scale_sizes else (
        QUICK_SIZES if mode == "quick" else DEFAULT_SIZES)
    cache = args.scale_cache or Path(os.environ.get("DUCKLAKE_BENCH_SCALE_CACHE")
                                     or Path.home() / ".cache" / "ducklake-bench" / "scale")
    return Options(tuple(sorted(sizes)), cache.expanduser().resolve(), max(1, args.scale_reps), args.scale_timeout,
                   not args.scale_no_snapshots, not args.scale_no_profile)


def lake_key(files: int, snapshots: int) -> str:
    """The cache directory name of a lake: its build parameters and the build version."""
    return f"files{files}-snapshots{snapshots}-distinct-v{BUILD_VERSION}"


def disk_mb(path: Path) -> float | None:
    """Disk usage of a directory tree in MB (`du`), None when du fails."""
    proc = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=False)
    return round(int(proc.stdout.split()[0]) / 1024, 1) if proc.returncode == 0 and proc.stdout else None


def ensure_lake(cache: Path, files: int, snapshots: int, timeout_s: float, log: Log) -> dict[str, Any]:
    """The cached lake of these parameters, built first when missing: catalog, data path and build facts."""
    d = cache / lake_key(files, snapshots)
    manifest = d / "build.json"
    if not manifest.exists() and (d / "build.rc").exists() and (d / "build.rc").read_text().strip() == "0":
        _finish_manifest(d)  # a build that ended (e.g. one started by hand with the same layout)
    if manifest.exists():
        return {**json.loads(manifest.read_text()), "cached": True}
    stderr = d / "build.stderr"
    if not (d / "build.rc").exists() and _alive(d / "build.pid"):
        raise RuntimeError(f"a build of {d} is under way (its build.pid runs); wait for it")
    d.mkdir(parents=True, exist_ok=True)
    for name in ("build.rc", "build.metrics.json"):
        (d / name).unlink(missing_ok=True)
    (d / "build.pid").write_text(f"{os.getpid()}\n")
    log(f"  scale: building {d.name} (once; later runs reuse it)")
    cmd = [sys.executable, str(ROOT / "scripts" / "make_big_catalog.py"), str(d / "cat.sqlite"), "--data-path",
           str(d / "data"), "--files", str(files), "--snapshots", str(snapshots), "--mode", "distinct", "--force"]
    metrics = measure(cmd, stdout=d / "build.stdout", stderr=stderr, timeout_s=max(timeout_s, 6 * 3600))
    (d / "build.metrics.json").write_text(json.dumps(metrics))
    (d / "build.rc").write_text(f"{metrics.get('rc', 'timeout')}\n")
    if metrics.get("rc") != 0:
        raise RuntimeError(f"building {d.name} failed: {stderr.read_text().strip()[-300:]}")
    return {**_finish_manifest(d), "cached": False}


def _alive(pid_file: Path) -> bool:
    """Whether the process named in a `build.pid` file still runs."""
    try:
        os.kill(int(pid_file.read_text().strip()), 0)
    except (OSError, ValueError):
        return False
    return True


def _finish_manifest(d: Path) -> dict[str, Any]:
    """Write `build.json` for a finished build in `d` from its summary and its metrics (ours or `time -v`'s)."""
    summary = json.loads((d / "build.stdout").read_text())
    metrics_path = d / "build.metrics.json"
    if metrics_path.exists():
        metrics = json.loads(metrics_path.read_text())
    else:  # started by hand under `/usr/bin/time -v`
        metrics = _time_v((d / "build.stderr").read_text())
    out = {"catalog": str(d / "cat.sqlite"), "data_path": str(d / "data"), "data_files": summary["data_files"],
           "snapshots": summary["snapshots"], "rows": summary["total_rows"], "build": metrics,
           "build_timings_s": summary.get("timings_s", {}), "disk_mb": disk_mb(d),
           "built": dt.datetime.fromtimestamp((d / "build.stdout").stat().st_mtime, dt.UTC).isoformat(
               timespec="seconds"), "build_version": BUILD_VERSION}
    (d / "build.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


def _time_v(text: str) -> dict[str, Any]:
    """CPU, wall and peak RSS from GNU time's `-v` report."""
    fields = dict(line.strip().rsplit(": ", 1) for line in text.splitlines() if ": " in line and line[:1] == "\t")
    out: dict[str, Any] = {"rc": int(fields.get("Exit status", "0"))}
    with_colons = [k for k in fields if k.startswith("Elapsed (wall clock)")]
    if with_colons:
        parts = [float(x) for x in fields[with_colons[0]].split(":")]
        out["wall_s"] = sum(x * 60 ** i for i, x in enumerate(reversed(parts)))
    out["cpu_s"] = float(fields.get("User time (seconds)", 0)) + float(fields.get("System time (seconds)", 0))
    out["rss_mb"] = round(int(fields.get("Maximum resident set size (kbytes)", 0)) / 1024, 1)
    return out


# ---------------------------------------------------------------- measuring


# Runs argv[2:] as a child, made the subreaper of its descendants so the JVM (which `ducklake` does not wait for)
# is waited for and counted; writes {rc, wall_s, cpu_s, user_s, sys_s, rss_mb} to argv[1].
_WRAPPER = r"""
import ctypes, json, os, resource, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
try:
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
except Exception:
    pass
start = time.perf_counter()
rc = subprocess.Popen(cmd).wait()
wall = time.perf_counter() - start
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid == 0:
        time.sleep(0.05)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as fh:
    json.dump({"rc": rc, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "user_s": ru.ru_utime,
               "sys_s": ru.ru_stime, "rss_mb": round(ru.ru_maxrss / 1024, 1)}, fh)
"""


def measure(cmd: Sequence[str], *, stdout: Path, stderr: Path, timeout_s: float,
            env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run `cmd` in a fresh process group under the wrapper: its metrics, or `{"error": …}` (timeout, exit code)."""
    report = stdout.with_name(stdout.name + ".metrics")
    report.unlink(missing_ok=True)
    load = round(os.getloadavg()[0], 1)  # the machine is shared: the 1-minute load when the command started
    with stdout.open("wb") as out, stderr.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", _WRAPPER, str(report), *cmd], stdout=out, stderr=err,
                                env=dict(env) if env else None, start_new_session=True)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the process group we started: wrapper, command, its JVM
            proc.wait()
            return {"error": f"timeout after {timeout_s:g} s", "load": load}
    if not report.exists():
        return {"error": f"wrapper exited {proc.returncode}"}
    metrics: dict[str, Any] = {**json.loads(report.read_text()), "load": load}
    if metrics["rc"] != 0:
        tail = stderr.read_text(errors="replace").strip().splitlines()[-1:] or [""]
        metrics["error"] = f"exit {metrics['rc']}: {tail[0][:300]}"
    return metrics


def median_of(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Median CPU, wall and RSS over runs (each run kept), or the first error."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"] if runs else "not run"}
    out: dict[str, Any] = {k: statistics.median(float(r[k]) for r in ok) for k in ("cpu_s", "wall_s", "rss_mb")}
    out["runs"] = [{k: round(float(r[k]), 3) for k in ("cpu_s", "wall_s", "rss_mb")} for r in ok]
    extra = {k: v for k, v in ok[0].items() if k not in ("cpu_s", "wall_s", "rss_mb", "user_s", "sys_s", "rc")}
    return {**out, **extra}


_DUCKDB_SCRIPT = r"""
import json, sys, time
from ducklake_cli.duckdb_extensions import connect
cat, data, sql, mode = sys.argv[1:5]
con = connect(extensions=("ducklake", "sqlite"))
q = lambda s: "'" + s.replace("'", "''") + "'"
extra = ", READ_ONLY" if mode == "ro" else ""
con.execute(f"ATTACH {q('ducklake:sqlite:' + cat)} AS l (DATA_PATH {q(data.rstrip('/') + '/')}{extra})")
wall, cpu = time.perf_counter(), time.process_time()
reader = con.execute(sql).fetch_record_batch(100_000)
rows = sum(batch.num_rows for batch in reader)
print(json.dumps({"statement_s": time.perf_counter() - wall, "statement_cpu_s": time.process_time() - cpu,
                  "rows": rows}))
"""


def _last_json(path: Path) -> dict[str, Any]:
    lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def run_ours(cmd: Command, lake: Mapping[str, Any], work: Path, opts: Options) -> dict[str, Any]:
    """Our command as a fresh `ducklake` process, `opts.reps` times."""
    cli = Path(sys.executable).with_name("ducklake")
    base = [str(cli)] if cli.exists() else [sys.executable, "-m", "ducklake_cli"]
    argv = [*base, *VERBS[cmd.key], lake["catalog"], *cmd.ours]
    env = {**os.environ, "DUCKLAKE_WARM": "0", "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
    runs = []
    for r in range(opts.reps):
        out = work / f"{cmd.key}.ours.{r}.out"
        m = measure(argv, stdout=out, stderr=out.with_suffix(".err"), timeout_s=opts.timeout_s, env=env)
        m["output_bytes"] = out.stat().st_size if out.exists() else None
        if "error" not in m and cmd.key.startswith("explain"):
            scans = json.loads(out.read_text()).get("scans", [])
            m["files_kept"] = sum(s["files_kept"] for s in scans)
        runs.append(m)
        if "error" in m:
            break
    return median_of(runs)


def run_duckdb(cmd: Command, lake: Mapping[str, Any], work: Path, opts: Options) -> dict[str, Any]:
    """DuckDB's statement in a fresh Python process (connect, attach, run, fetch), `opts.reps` times."""
    assert cmd.duckdb is not None
    sql = cmd.duckdb.replace("{a}", "l").replace("FROM events", "FROM l.events")
    runs = []
    for r in range(opts.reps):
        out = work / f"{cmd.key}.duckdb.{r}.out"
        mode = "ro" if cmd.duckdb_read_only else "rw"
        m = measure([sys.executable, "-c", _DUCKDB_SCRIPT, lake["catalog"], lake["data_path"], sql, mode],
                    stdout=out, stderr=out.with_suffix(".err"), timeout_s=opts.timeout_s)
        if "error" not in m:
            m.update(_last_json(out))
        runs.append(m)
        if "error" in m:
            break
    got = median_of(runs)
    ok = [r for r in runs if "statement_s" in r]
    if ok:
        got["statement_s"] = statistics.median(r["statement_s"] for r in ok)
        got["statement_cpu_s"] = statistics.median(r["statement_cpu_s"] for r in ok)
    return got


def run_planning(lake: Mapping[str, Any], work: Path, opts: Options, sql: str, register: bool,
                 key: str) -> dict[str, Any]:
    """Catalog planning (and view registration) in-process, in a fresh child: see `plan_main`."""
    argv = [sys.executable, str(Path(__file__).resolve()), "plan", lake["catalog"], sql]
    if register:
        argv.append("--register")
    runs = []
    for r in range(opts.reps):
        out = work / f"{key}.plan.{r}.out"
        m = measure(argv, stdout=out, stderr=out.with_suffix(".err"), timeout_s=opts.timeout_s,
                    env={**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")})
        if "error" not in m:
            m = {**_last_json(out), "process_cpu_s": m["cpu_s"], "process_wall_s": m["wall_s"]}
        runs.append(m)
        if "error" in m:
            break
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"]}
    keys = [k for k, v in ok[0].items() if isinstance(v, int | float) and k != "files_kept"]
    return {**{k: statistics.median(float(r[k]) for r in ok if isinstance(r.get(k), int | float)) for k in keys},
            "files_kept": ok[0].get("files_kept"),
            "runs": len(ok)}


def _jvm_peak_mb(spark: Any) -> float | None:
    """Peak RSS (MB) of the Spark driver JVM so far, None when its process is not ours to read."""
    try:
        status = Path(f"/proc/{spark.sparkContext._gateway.proc.pid}/status").read_text()
        return round(int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmHWM:"))) / 1024, 1)
    except (AttributeError, OSError, StopIteration, ValueError):
        return None


def _jvm_cpu(spark: Any) -> float:
    """CPU seconds the Spark driver JVM has used so far (0 when its process is not ours to read)."""
    try:
        pid = spark.sparkContext._gateway.proc.pid
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, IndexError, ValueError):
        return 0.0


def plan_main(argv: Sequence[str]) -> int:
    """Child: plan one statement on the catalog and print timings as JSON (`plan CAT SQL [--register]`)."""
    from ducklake_cli.engine.session import SparkSettings
    from ducklake_cli.lake import Lake
    from ducklake_cli.ops.query import plan_sql

    p = argparse.ArgumentParser(prog="bench_scale.py plan")
    p.add_argument("catalog")
    p.add_argument("sql")
    p.add_argument("--register", action="store_true")
    p.add_argument("--profile", help="write a cProfile of the measured part (planning, registration) here")
    a = p.parse_args(argv)
    import cProfile

    prof = cProfile.Profile() if a.profile else None
    out: dict[str, Any] = {}
    lake = Lake.open(a.catalog, read_only=True,
                     spark_settings=SparkSettings(master="local[2]", app_name="ducklake-bench-scale"))
    spark = None
    if a.register:  # the JVM first, so its start is not in the figures
        start = time.perf_counter()
        spark = lake.spark()
        out["jvm_start_s"] = time.perf_counter() - start
    out["rss_before_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if prof is not None:
        prof.enable()
    wall, cpu = time.perf_counter(), time.process_time()
    with lake.reader() as r:
        plan = plan_sql(lake, r, a.sql, snapshot=r.latest_snapshot())
    out["plan_s"], out["plan_cpu_s"] = time.perf_counter() - wall, time.process_time() - cpu
    out["files_kept"] = sum(len(s.files) for s in plan.scans)
    out["rss_plan_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if spark is not None:
        from ducklake_cli.engine.run_query import register_views

        jvm0, wall, cpu = _jvm_cpu(spark), time.perf_counter(), time.process_time()
        register_views(spark, plan, None)
        out["register_s"] = time.perf_counter() - wall
        out["register_cpu_s"] = time.process_time() - cpu + _jvm_cpu(spark) - jvm0
        out["plan_register_s"] = out["plan_s"] + out["register_s"]
        out["plan_register_cpu_s"] = out["plan_cpu_s"] + out["register_cpu_s"]
        out["rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        out["jvm_rss_mb"] = _jvm_peak_mb(spark)
    if prof is not None:
        prof.disable()
        prof.dump_stats(a.profile)
    lake.close()
    print(json.dumps(out))
    sys.stdout.flush()
    os._exit(0)  # skip Spark's shutdown: not part of what is measured


# ---------------------------------------------------------------- the section


def run(opts: Options, work: Path, log: Log) -> dict[str, Any]:
    """Build (or reuse) the lakes and measure every command at every size: the section's results."""
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"meta": {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                                    "git": _git(), "sizes": list(opts.sizes), "reps": opts.reps,
                                    "timeout_s": opts.timeout_s, "cache": str(opts.cache),
                                    "loadavg_start": list(os.getloadavg())},
                           "lakes": {}, "commands": {}, "planning": {}}
    for c in (*COMMANDS, SNAPSHOTS_COMMAND):
        out["commands"][c.key] = {"title": c.title, "target": c.target, "sizes": {}}
    for n in opts.sizes:
        try:
            lake = ensure_lake(opts.cache, n, max(1, n // 10), opts.timeout_s, log)
        except (RuntimeError, OSError, ValueError) as exc:
            out["lakes"][str(n)] = {"error": str(exc)[:300]}
            log(f"  scale {n:,}: no lake: {exc}")
            continue
        out["lakes"][str(n)] = lake
        d = work / str(n)
        d.mkdir(exist_ok=True)
        for c in COMMANDS:
            entry = {"ours": run_ours(c, lake, d, opts)}
            if c.duckdb:
                entry["duckdb"] = run_duckdb(c, lake, d, opts)
            out["commands"][c.key]["sizes"][str(n)] = entry
            log(f"  scale {n:,} {c.key}: {_brief(entry)}")
        plan = {"keep1": run_planning(lake, d, opts, KEEP_ONE, False, "keep1"),
                "keepall": run_planning(lake, d, opts, KEEP_ALL, True, "keepall")}
        out["planning"][str(n)] = plan
        log(f"  scale {n:,} planning: keep1 {_s(plan['keep1'], 'plan_cpu_s')} CPU; keepall plan+register "
            f"{_s(plan['keepall'], 'plan_register_cpu_s')} CPU, RSS {_s(plan['keepall'], 'rss_mb', ' MB')}")
    if opts.snapshot_lake:
        files, snaps = SNAPSHOT_LAKE
        key = f"snapshots_{snaps}"
        try:
            lake = ensure_lake(opts.cache, files, snaps, opts.timeout_s, log)
        except (RuntimeError, OSError, ValueError) as exc:
            out["lakes"][key] = {"error": str(exc)[:300]}
        else:
            out["lakes"][key] = lake
            d = work / key
            d.mkdir(exist_ok=True)
            c = SNAPSHOTS_COMMAND
            entry = {"ours": run_ours(c, lake, d, opts), "duckdb": run_duckdb(c, lake, d, opts)}
            out["commands"][c.key]["sizes"][str(lake["snapshots"])] = entry
            log(f"  scale {lake['snapshots']:,} snapshots {c.key}: {_brief(entry)}")
    if opts.profile:
        out["profiles"] = profile_misses(out, work, opts, log)
    out["meta"]["loadavg_end"] = list(os.getloadavg())
    return out


def profile_misses(sc: dict[str, Any], work: Path, opts: Options, log: Log) -> dict[str, Any]:
    """Each missed target's command once more under cProfile, at the size it missed: its top functions."""
    out: dict[str, Any] = {}
    by_key = {c.key: c for c in (*COMMANDS, SNAPSHOTS_COMMAND)}
    for t in targets(sc):
        key, lake = t.get("key"), sc["lakes"].get(t.get("lake"), {})
        if t["met"] or key in out or not key or "catalog" not in lake:
            continue
        d = work / "profiles"
        d.mkdir(exist_ok=True)
        prof = d / f"{key}.prof"
        prof.unlink(missing_ok=True)
        if key.startswith("plan_"):
            argv = [sys.executable, str(Path(__file__).resolve()), "plan", lake["catalog"],
                    KEEP_ONE if key == "plan_keep1" else KEEP_ALL, "--profile", str(prof)]
            argv += ["--register"] if key == "plan_keepall" else []
            shown = f"bench_scale.py plan … {'keep all + register' if key == 'plan_keepall' else 'keep 1'}"
        else:
            c = by_key[key]
            argv = [sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "ducklake_cli", *VERBS[key],
                    lake["catalog"], *c.ours]
            shown = "ducklake " + " ".join([*VERBS[key], "CAT", *c.ours])
        env = {**os.environ, "DUCKLAKE_WARM": "0", "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
        m = measure(argv, stdout=d / f"{key}.out", stderr=d / f"{key}.err", timeout_s=opts.timeout_s, env=env)
        where = f"{int(t['lake']):,} files" if t["lake"].isdigit() else f"{SNAPSHOT_LAKE[1]:,} snapshots"
        out[key] = {"command": shown, "lake": where, "cpu_s": m.get("cpu_s"), "error": m.get("error"),
                    **(top_functions(prof) if prof.exists() else {})}
        log(f"  scale: profiled {key} at {where} ({_s(m, 'cpu_s')} CPU under cProfile)")
    return out


def top_functions(prof: Path, count: int = 12) -> dict[str, Any]:
    """The functions of a cProfile dump with the most cumulative time (ours only) and the most own time (any)."""
    import pstats

    rows = []
    for (file, line, fn), (_cc, calls, own, cum, _callers) in pstats.Stats(str(prof)).stats.items():  # type: ignore[attr-defined]
        short = file.split("site-packages/")[-1].removeprefix(str(ROOT) + "/")
        short = short.split("/lib/python3")[-1].split("/", 1)[-1] if "/lib/python3" in short else short
        rows.append({"function": f"{short}:{line}({fn})", "calls": calls, "own_s": round(own, 3),
                     "cum_s": round(cum, 3), "ours": "ducklake_cli/" in file})
    cum = sorted((r for r in rows if r["ours"]), key=lambda r: -r["cum_s"])[:count]
    own = sorted(rows, key=lambda r: -r["own_s"])[:count // 2]
    return {"top_cumulative": cum, "top_own": own}


def _git() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    return proc.stdout.strip() or "unknown"


def _s(entry: Mapping[str, Any], key: str, unit: str = " s") -> str:
    value = entry.get(key)
    return f"{value:.2f}{unit}" if isinstance(value, int | float) else str(entry.get("error", "–"))[:80]


def _brief(entry: Mapping[str, Any]) -> str:
    return "; ".join(f"{who} {str(m['error'])[:120]}" if "error" in m else
                     f"{who} {_s(m, 'cpu_s')} CPU, {_s(m, 'wall_s')} wall, {_s(m, 'rss_mb', ' MB')}"
                     for who, m in entry.items())


# ---------------------------------------------------------------- numbers for the report


def growth(small: tuple[int, float | None], large: tuple[int, float | None]) -> float | None:
    """Growth exponent k in t ∝ n^k between two sizes: log(t2/t1) / log(n2/n1); None without both."""
    (n1, t1), (n2, t2) = small, large
    if not t1 or not t2 or t1 <= 0 or t2 <= 0 or n2 == n1:
        return None
    return math.log(t2 / t1) / math.log(n2 / n1)


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b, None when either is missing or b is 0."""
    return a / b if a is not None and b else None


def fmt_ratio(value: float | None) -> str:
    """A ratio as `1.23×`, two significant digits below 0.1, `–` when missing."""
    if value is None:
        return "–"
    return f"{value:.2g}×" if 0 < abs(value) < 0.1 else f"{value:.2f}×"


def fmt_s(value: float | None) -> str:
    """Seconds with two decimals (three below 0.1), `–` when missing."""
    return "–" if value is None else (f"{value:.3f}" if abs(value) < 0.1 else f"{value:.2f}")


def _num(entry: Any, key: str) -> float | None:
    value = entry.get(key) if isinstance(entry, Mapping) else None
    return float(value) if isinstance(value, int | float) else None


def _largest(sizes: Mapping[str, Any], who: str = "ours", key: str = "cpu_s") -> tuple[int, Any] | None:
    """(size, entry) of the largest size where `who` has `key`."""
    good = [(int(n), e) for n, e in sizes.items() if _num(e.get(who), key) is not None]
    return max(good, key=lambda x: x[0]) if good else None


def targets(sc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets on the scale results (at the largest size measured; the issue's are at 1M files)."""
    out: list[dict[str, Any]] = []

    def target(key: str, name: str, value: float | None, limit: float, unit: str, n: int, note: str = "",
               noun: str = "files") -> None:
        met = value is not None and value <= limit
        if noun == "files" and n < 1_000_000:
            note = (note + "; " if note else "") + "the issue's target is at 1M files"
        out.append({"name": f"scale: {name} at {n:,} {noun}", "value": value, "target": f"≤ {limit:g}{unit}",
                    "unit": unit, "met": met,
                    "missed_by": None if value is None or met else f"{(value / limit - 1) * 100:.0f}% over",
                    "note": note, "key": key, "lake": str(n) if noun == "files" else f"snapshots_{SNAPSHOT_LAKE[1]}"})

    plans = sc.get("planning", {})
    keep1 = _largest({n: {"ours": p.get("keep1", {})} for n, p in plans.items()}, key="plan_cpu_s")
    duck = sc.get("commands", {}).get("explain_keep1", {}).get("sizes", {})
    if keep1:
        n, e = keep1
        cpu = _num(e["ours"], "plan_cpu_s")
        target("plan_keep1", "catalog planning of a query keeping 1 file (CPU, no JVM)", cpu, 2.0, " s", n)
        d = duck.get(str(n), {}).get("duckdb", {})
        target("plan_keep1", "catalog planning keeping 1 file / DuckDB EXPLAIN statement (CPU)",
               ratio(cpu, _num(d, "statement_cpu_s")), 3.0, "×", n,
               f"DuckDB's EXPLAIN {fmt_s(_num(d, 'statement_cpu_s'))} s CPU, {fmt_s(_num(d, 'statement_s'))} s wall; "
               f"ours {fmt_s(_num(e['ours'], 'plan_s'))} s wall")
    keepall = _largest({n: {"ours": p.get("keepall", {})} for n, p in plans.items()}, key="plan_register_cpu_s")
    if keepall:
        n, e = keepall
        target("plan_keepall", "catalog planning + view registration keeping all files (CPU, Python + JVM)",
               _num(e["ours"], "plan_register_cpu_s"), 30.0, " s", n,
               f"wall {fmt_s(_num(e['ours'], 'plan_register_s'))} s")
        rss = _num(e["ours"], "rss_mb")
        jvm = _num(e["ours"], "jvm_rss_mb")
        target("plan_keepall", "planning + view registration keeping all files: peak RSS (Python driver)",
               None if rss is None else rss / 1024, 1.5, " GB", n,
               "" if jvm is None else f"the driver JVM's own peak: {jvm / 1024:.2f} GB")
    cmds = sc.get("commands", {})
    for key, name, limit in (("inspect_table", "`inspect TABLE` / DuckDB `ducklake_table_info` (CPU)", 3.0),
                             ("files_json", "`--files --format json` / DuckDB `ducklake_list_files` + fetch (CPU)",
                              2.0),
                             ("orphans_dry_run", "`maintain orphans --dry-run` / DuckDB dry run (CPU)", 1.0)):
        sizes = cmds.get(key, {}).get("sizes", {})
        got = _largest(sizes)
        if got:
            n, e = got
            target(key, name, ratio(_num(e["ours"], "cpu_s"), _num(e.get("duckdb"), "cpu_s")), limit, "×", n)
    files = cmds.get("files_json", {}).get("sizes", {})
    peaks = {int(n): v for n, e in files.items() if (v := _num(e.get("ours"), "rss_mb"))}
    if len(peaks) >= 2:
        lo, hi = min(peaks), max(peaks)
        target("files_json", f"`--files --format json` peak RSS flat: RSS / RSS at {lo:,} files",
               ratio(peaks[hi], peaks[lo]), 1.5, "×", hi, f"{peaks[lo]:.0f} → {peaks[hi]:.0f} MB")
    got = _largest(cmds.get("verify", {}).get("sizes", {}))
    if got:
        target("verify", "`verify` (CPU)", _num(got[1]["ours"], "cpu_s"), 20.0, " s", got[0])
    got = _largest(cmds.get("snapshots_json", {}).get("sizes", {}))
    if got:
        n, e = got
        target("snapshots_json", "`inspect --snapshots --format json` / DuckDB `ducklake_snapshots()` (CPU)",
               ratio(_num(e["ours"], "cpu_s"), _num(e.get("duckdb"), "cpu_s")), 1.5, "×", n, noun="snapshots")
    return out


def _cell3(m: Any) -> str:
    if not isinstance(m, Mapping) or not m:
        return "– | – | –"
    if "error" in m:
        return f"{str(m['error'])[:60]} | | "
    return f"{fmt_s(_num(m, 'cpu_s'))} | {fmt_s(_num(m, 'wall_s'))} | {_num(m, 'rss_mb') or 0:.0f}"


def render(sc: Mapping[str, Any]) -> list[str]:
    """The report's scale section (Markdown lines)."""
    meta = sc.get("meta", {})
    out = ["## Scale: 10k, 100k and 1M data files (issue #29)", "",
           f"Measured on {meta.get('date', '?')} at `{meta.get('git', '?')}`; median of {meta.get('reps', 1)} "
           f"run(s); load average {', '.join(f'{x:.1f}' for x in meta.get('loadavg_start', []))} at the start, "
           f"{', '.join(f'{x:.1f}' for x in meta.get('loadavg_end', []))} at the end. Lakes by "
           "`make_big_catalog.py --mode distinct --files N --snapshots N/10` (SQLite, one table, 100 rows per file), "
           "cached under `" + str(meta.get("cache", "?")) + "`. Every figure is a fresh process: CPU = user + sys of "
           "it and every descendant (the Spark JVM too), RSS = the largest one's peak (MB). ours = the `ducklake` "
           "command; DuckDB = a Python process running DuckDB 1.5.5 + ducklake (connect, attach, statement, fetch "
           "as Arrow batches); `stmt` = DuckDB's statement alone. Growth k: t ∝ n^k from the smallest to the largest "
           "size (log(t1M/t10k)/log(100) with 10k and 1M).", ""]
    lakes = sc.get("lakes", {})
    built = [_lake_line(k, v) for k, v in lakes.items()]
    out += ["Lakes: " + "; ".join(built) + ".", ""]
    for key, c in sc.get("commands", {}).items():
        sizes = c.get("sizes", {})
        if not sizes:
            continue
        unit = "snapshots" if key == "snapshots_json" else "files"
        out += [f"### {c['title']}", "", f"Target: {c.get('target') or '–'}.", "",
                f"| {unit} | ours CPU (s) | ours wall (s) | ours RSS (MB) | DuckDB CPU (s) | DuckDB wall (s) | "
                "DuckDB RSS (MB) | DuckDB stmt (s) | ours / DuckDB (CPU) | note |", "|" + " --- |" * 10]
        for n, e in sorted(sizes.items(), key=lambda x: int(x[0])):
            ours, duck = e.get("ours", {}), e.get("duckdb", {})
            note = []
            if "files_kept" in ours:
                note.append(f"files kept {ours['files_kept']:,}")
            if (ours.get("output_bytes") or 0) > 100_000:
                note.append(f"output {ours['output_bytes'] / 1e6:.1f} MB")
            if "rows" in duck:
                note.append(f"DuckDB rows {duck['rows']:,}")
            if "load" in ours:
                note.append(f"load {ours['load']:.1f}")
            out.append(f"| {int(n):,} | {_cell3(ours)} | {_cell3(duck)} | {fmt_s(_num(duck, 'statement_s'))} | "
                       f"{fmt_ratio(ratio(_num(ours, 'cpu_s'), _num(duck, 'cpu_s')))} | {', '.join(note)} |")
        ns = sorted((int(n), e) for n, e in sizes.items())
        if len(ns) >= 2:
            (n1, e1), (n2, e2) = ns[0], ns[-1]
            g = [f"{who} {_fmt_k(growth((n1, _num(e1.get(who), 'cpu_s')), (n2, _num(e2.get(who), 'cpu_s'))))}"
                 for who in ("ours", "duckdb") if who in e1]
            out += ["", f"Growth k of CPU, {n1:,} → {n2:,}: " + ", ".join(g) + "."]
        out.append("")
    plans = sc.get("planning", {})
    if plans:
        out += ["### Planning in-process (no JVM start in the figures)", "",
                "keep 1 = catalog planning of `" + KEEP_ONE + "` (`ops.query.plan_sql`, no Spark); keep all = "
                "planning of `" + KEEP_ALL + "` + `register_views` on a started `local[2]` session (CPU: Python + "
                "driver JVM). RSS: the Python process's peak.", "",
                "| files | keep 1: plan CPU (s) | wall (s) | files kept | keep all: plan CPU (s) | register CPU (s) "
                "| plan + register CPU (s) | wall (s) | RSS (MB) | files kept |", "|" + " --- |" * 10]
        for n, p in sorted(plans.items(), key=lambda x: int(x[0])):
            k1, ka = p.get("keep1", {}), p.get("keepall", {})
            err1 = f" ({str(k1['error'])[:50]})" if "error" in k1 else ""
            erra = f" ({str(ka['error'])[:50]})" if "error" in ka else ""
            out.append(f"| {int(n):,} | {fmt_s(_num(k1, 'plan_cpu_s'))}{err1} | {fmt_s(_num(k1, 'plan_s'))} | "
                       f"{_count(k1.get('files_kept'))} | {fmt_s(_num(ka, 'plan_cpu_s'))}{erra} | "
                       f"{fmt_s(_num(ka, 'register_cpu_s'))} | {fmt_s(_num(ka, 'plan_register_cpu_s'))} | "
                       f"{fmt_s(_num(ka, 'plan_register_s'))} | {_num(ka, 'rss_mb') or 0:.0f} | "
                       f"{_count(ka.get('files_kept'))} |")
        counts = sorted(int(n) for n in plans)
        if len(counts) >= 2:
            lo, hi = counts[0], counts[-1]
            a, b = plans[str(lo)], plans[str(hi)]
            g1 = growth((lo, _num(a.get("keep1"), "plan_cpu_s")), (hi, _num(b.get("keep1"), "plan_cpu_s")))
            ga = growth((lo, _num(a.get("keepall"), "plan_register_cpu_s")),
                        (hi, _num(b.get("keepall"), "plan_register_cpu_s")))
            out += ["", f"Growth k of CPU, {lo:,} → {hi:,}: keep 1 {_fmt_k(g1)}, keep all {_fmt_k(ga)}."]
        out.append("")
    out += ["### Targets (issue #29)", "", "| what | measured | target | met |", "| --- | --- | --- | --- |"]
    for t in targets(sc):
        val = "–" if t["value"] is None else f"{t['value']:.2f}{t['unit']}"
        met = "✓" if t["met"] else "✗"
        out.append(f"| {t['name'].removeprefix('scale: ')} | {val} | {t['target']} | {met} "
                   f"{'(' + t['note'] + ')' if t['note'] else ''} |")
    for p in sc.get("profiles", {}).values():
        out += ["", f"#### Profile of a miss: `{p['command']}` ({p['lake']}; {fmt_s(p.get('cpu_s'))} s CPU under "
                "cProfile)" + (f": {p['error']}" if p.get("error") else ""), "",
                "| function (ours, by cumulative time) | calls | own (s) | cumulative (s) |",
                "| --- | --- | --- | --- |"]
        out += [f"| `{r['function']}` | {r['calls']:,} | {r['own_s']:.2f} | {r['cum_s']:.2f} |"
                for r in p.get("top_cumulative", [])]
        own = ", ".join(f"`{r['function']}` {r['own_s']:.2f} s" for r in p.get("top_own", []))
        out += ["", f"Most own time: {own}." if own else ""]
    return out


def _lake_line(key: str, lake: Mapping[str, Any]) -> str:
    if "error" in lake:
        return f"{key}: {lake['error']}"
    b = lake.get("build", {})
    return (f"{lake.get('data_files', 0):,} files / {lake.get('snapshots', 0):,} snapshots: "
            f"{(lake.get('disk_mb') or 0) / 1024:.2f} GB on disk, built once in {fmt_s(_num(b, 'wall_s'))} s wall "
            f"({fmt_s(_num(b, 'cpu_s'))} s CPU, peak RSS {_num(b, 'rss_mb') or 0:.0f} MB)")


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else "–"


def _fmt_k(k: float | None) -> str:
    return "–" if k is None else f"{k:.2f}"


def chart(fig: Any, cell: Any, sc: Mapping[str, Any]) -> None:
    """The scale series on one log-log panel: CPU against files per command, ours solid and DuckDB dashed."""
    axis = fig.add_subplot(cell)
    colors = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
    series: list[tuple[str, list[tuple[int, float]], list[tuple[int, float]]]] = []
    for key, c in sc.get("commands", {}).items():
        if key == "snapshots_json":
            continue
        pts = sorted((int(n), e) for n, e in c.get("sizes", {}).items())
        ours = [(n, v) for n, e in pts if (v := _num(e.get("ours"), "cpu_s"))]
        duck = [(n, v) for n, e in pts if (v := _num(e.get("duckdb"), "cpu_s"))]
        series.append((key, ours, duck))
    plans = sorted((int(n), p) for n, p in sc.get("planning", {}).items())
    series.append(("plan keep1 (no JVM)", [(n, v) for n, p in plans if (v := _num(p.get("keep1"), "plan_cpu_s"))],
                   []))
    series.append(("plan+register keepall", [(n, v) for n, p in plans
                                             if (v := _num(p.get("keepall"), "plan_register_cpu_s"))], []))
    for (name, ours, duck), color in zip(series, colors * 2, strict=False):
        if ours:
            axis.plot(*zip(*ours, strict=True), marker="o", color=color, label=f"{name} (ours)")
        if duck:
            axis.plot(*zip(*duck, strict=True), marker="x", linestyle="--", color=color, label=f"{name} (DuckDB)")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("data files")
    axis.set_ylabel("CPU seconds (log)")
    axis.set_title("Scale (issue #29): CPU per command against files — ours solid, DuckDB dashed", fontsize=10)
    axis.legend(fontsize=7, ncols=3)


if __name__ == "__main__":
    if sys.argv[1:2] == ["plan"]:
        sys.exit(plan_main(sys.argv[2:]))
    sys.stderr.write("usage: bench_scale.py plan CATALOG SQL [--register] (the section runs from bench.py)\n")
    sys.exit(2)
