"""Bench section: planning the 10,001-file table on S3 (SeaweedFS). Ours (`Lake.sql` + physical plan) against raw
Spark (`spark.read.parquet(list of s3a files)` + the same SQL + physical plan), and the two ways of handing Spark
the files: the plain `spark.read.schema(...).parquet(*files)` (stats every file) and `engine.file_index`
(paths and sizes from the catalog). Interleaved rounds, medians.

The S3 figures are taken in a child process whose Spark has the s3a jars on its classpath (a running session
cannot gain them); the server is the one `DUCKLAKE_TEST_S3`… name when set and answering, else a private
`weed mini` on free loopback ports, stopped at the end.

Called from scripts/bench.py as `bench_planning_s3.run(s.reps, work, spark, spark_lake, catalog, listing=…)` with
the local planning catalog; `render(result)` gives the report's lines. Alone:
`python scripts/bench_planning_s3.py CATALOG [REPS]`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
QUERY = "SELECT id, ts, v FROM events"
TARGET = 0.5  # ours / raw on S3 (issue #16)
_KEY, _SECRET, _BUCKET = "test", "testtest", "lake"


def run(reps: int, work: Path, spark: Any, spark_lake: Callable[[Path], Any], catalog_local: Path, *,
        listing: bool = True) -> dict[str, Any]:
    """Upload the planning table to S3, time ours vs raw Spark there (and, with `listing`, the old and new file
    listings alone); `spark`/`spark_lake` are unused (their JVM has no s3a jars), kept so the section is called
    like the others."""
    del spark, spark_lake
    with _s3_server(work / "s3plan") as (endpoint, key, secret):
        prefix = f"plan-{uuid.uuid4().hex[:8]}"
        try:
            start = time.perf_counter()
            catalog, files = _upload(catalog_local, work / "s3plan", endpoint, key, secret, prefix)
            upload_s = time.perf_counter() - start
            out = _measure(reps, catalog, files, endpoint, key, secret, listing=listing)
        finally:
            with contextlib.suppress(Exception):  # a test server keeps no half-uploaded prefix; ours goes anyway
                _fs(endpoint, key, secret).rm(f"{_BUCKET}/{prefix}", recursive=True)
    return {"files": len(files), "upload_s": round(upload_s, 1), "endpoint": endpoint, **out}


def render(result: Mapping[str, Any]) -> list[str]:
    """Markdown lines: each engine's median, ours / raw against the target, old vs new file listing."""
    if "error" in result:
        return [f"S3 planning: not measured ({result['error']})"]
    med = {k: v["median"] for k, v in result.items() if isinstance(v, Mapping) and "median" in v}
    lines = [f"**Planning on S3** ({result['files']:,} files on SeaweedFS, `{QUERY}`, median of "
             f"{result.get('reps')} interleaved rounds, load {result.get('load', '?')}):", "",
             "| step | median s |", "|---|---:|"]
    names = {"ours": "ours: `Lake.sql` + physical plan, a first statement (plan cache emptied)",
             "ours_cached": "ours, the same statement again (plan cache kept)",
             "raw": "raw Spark: `spark.read.parquet(files)` + SQL + plan",
             "files_plain": "files only, plain `read.schema().parquet(*files)` (old)",
             "files_index": "files only, `engine.file_index.read_parquet` (new)"}
    lines += [f"| {label} | {med[k]:.2f} |" for k, label in names.items() if k in med]
    lines.append("")
    if "ours" in med and "raw" in med:
        ratio = med["ours"] / med["raw"]
        lines.append(f"Ours / raw = **{ratio:.2g}×** (target ≤ {TARGET}×: {'met' if ratio <= TARGET else 'MISSED'})"
                     + (f"; repeated with the plan cache kept {med['ours_cached'] / med['raw']:.2g}×"
                        if "ours_cached" in med else "") + ".")
    if "files_plain" in med and "files_index" in med:
        lines.append(f"Handing Spark the catalog's sizes: {med['files_plain']:.2f} s → {med['files_index']:.2f} s.")
    errors = [f"{k}: {v['error']}" for k, v in result.items() if isinstance(v, Mapping) and "error" in v]
    return lines + [f"Errors: {'; '.join(errors)}"] if errors else lines


@contextlib.contextmanager
def _s3_server(work: Path) -> Iterator[tuple[str, str, str]]:
    """(endpoint, key, secret) of a live S3 server: the test one when `DUCKLAKE_TEST_S3` names one that answers,
    else our own `weed mini`. Never a server merely found on the default port: a test run that started it stops
    it when it ends, mid-measurement."""
    endpoint = os.environ.get("DUCKLAKE_TEST_S3", "")
    key, secret = os.environ.get("DUCKLAKE_TEST_S3_KEY", _KEY), os.environ.get("DUCKLAKE_TEST_S3_SECRET", _SECRET)
    url = urlsplit(endpoint)
    if url.hostname and _answers(url.hostname, url.port or 80) and _bucket_ready(endpoint, key, secret):
        yield endpoint, key, secret
        return
    weed = str(Path(sys.executable).parent / "weed")
    if not Path(weed).exists():
        weed = shutil.which("weed") or weed
    work.mkdir(parents=True, exist_ok=True)
    # Every listener on a free port (the gRPC ones too: their default, HTTP port + 10000, can pass 65535 or be
    # taken by another `weed mini`), its unix sockets in our directory.
    ports = {f"{name}.port{grpc}": _free_port() for name in ("s3", "master", "filer", "volume")
             for grpc in ("", ".grpc")}
    args = [weed, "mini", f"-dir={work / 'weed'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-bucket={_BUCKET}",
            "-admin.ui=false", "-master.telemetry=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
            f"-s3.localSocket={work / 's3.sock'}", f"-filer.localSocket={work / 'filer.sock'}",
            *[f"-{name}={p}" for name, p in ports.items()]]
    (work / "weed").mkdir(exist_ok=True)
    env = {**os.environ, "AWS_ACCESS_KEY_ID": _KEY, "AWS_SECRET_ACCESS_KEY": _SECRET}
    with open(work / "weed.log", "wb") as log:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                start_new_session=True)
    try:
        endpoint = f"http://127.0.0.1:{ports['s3.port']}"
        deadline = time.monotonic() + 60
        while not _bucket_ready(endpoint, _KEY, _SECRET):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"weed mini did not start (see {work / 'weed.log'})")
            time.sleep(0.5)
        yield endpoint, _KEY, _SECRET
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _answers(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=2):
        return True
    return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fs(endpoint: str, key: str, secret: str) -> Any:
    import s3fs

    return s3fs.S3FileSystem(key=key, secret=secret, skip_instance_cache=True,
                             client_kwargs={"endpoint_url": endpoint, "region_name": "us-east-1"})


def _bucket_ready(endpoint: str, key: str, secret: str) -> bool:
    try:
        _fs(endpoint, key, secret).ls(_BUCKET)
        return True
    except Exception:  # not up yet
        return False


def _upload(catalog_local: Path, work: Path, endpoint: str, key: str, secret: str,
            prefix: str) -> tuple[Path, list[tuple[str, int]]]:
    """A copy of the catalog whose data path is s3://lake/<prefix>/, its files uploaded; (catalog, [(url, size)])."""
    work.mkdir(parents=True, exist_ok=True)
    catalog = work / "cat.sqlite"
    shutil.copyfile(catalog_local, catalog)
    url = f"s3://{_BUCKET}/{prefix}/"
    with contextlib.closing(sqlite3.connect(catalog)) as con:
        (data,) = con.execute("SELECT value FROM ducklake_metadata WHERE key = 'data_path'").fetchone()
        con.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", (url,))
        con.commit()
    local = Path(data)
    if not local.is_absolute():
        local = catalog_local.parent / local
    fs = _fs(endpoint, key, secret)
    fs.put(str(local).rstrip("/") + "/", f"{_BUCKET}/{prefix}/", recursive=True)
    files = [(url + str(p.relative_to(local)), p.stat().st_size) for p in sorted(local.rglob("*.parquet"))]
    return catalog, files


def _measure(reps: int, catalog: Path, files: list[tuple[str, int]], endpoint: str, key: str,
             secret: str, *, listing: bool) -> dict[str, Any]:
    """Run the timing in a child process (its own Spark, s3a jars on the classpath)."""
    sys.path.insert(0, str(ROOT))
    from tests.support.s3a import s3a_jars

    args = {"reps": reps, "listing": listing, "catalog": str(catalog), "files": files,
            "jars": ",".join(map(str, s3a_jars())),
            "options": {"key": key, "secret": secret, "client_kwargs": {"endpoint_url": endpoint,
                                                                         "region_name": "us-east-1"}}}
    arg_file = catalog.parent / "args.json"
    arg_file.write_text(json.dumps(args))
    done = subprocess.run([sys.executable, __file__, "--child", str(arg_file)], cwd=ROOT, capture_output=True,
                          text=True, timeout=3600)
    (catalog.parent / "child.log").write_text(done.stderr)  # Spark's log, for a failed or odd run
    if done.returncode != 0:
        return {"error": f"{_first_error(done.stderr)[:300]} (see {catalog.parent / 'child.log'})"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _first_error(stderr: str) -> str:
    """The line naming the failure in a child's stderr: the Java exception under a Py4J error, else the last
    unindented line naming an error, else the last line."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    for line in lines:
        if line.startswith(": ") and ("Exception" in line or "Error" in line):  # Py4J's Java exception line
            return line[2:]
    named = [line for line in lines if not line[0].isspace() and ("Error" in line or "Exception" in line)]
    return (named or lines or ["child failed"])[-1]


def _child(arg_file: Path) -> dict[str, Any]:
    """The timed rounds (in the child): ours, raw, and the old and new file listings, rotating the order."""
    import ducklake_cli
    from ducklake_cli.engine.file_index import read_parquet
    from ducklake_cli.engine.session import SparkSettings

    args = json.loads(arg_file.read_text())
    settings = SparkSettings(master="local[2]", conf={"spark.jars": args["jars"]}, app_name="ducklake-bench-s3")
    lake = ducklake_cli.connect(args["catalog"], storage_options=args["options"], spark_settings=settings)
    spark = lake.spark()
    files = [(p, int(s)) for p, s in args["files"]]
    s3a = [p.replace("s3://", "s3a://", 1) for p, _ in files]
    schema = spark.read.parquet(s3a[0]).schema

    def plan(sql: str) -> Any:
        return spark.sql(sql)._jdf.queryExecution().executedPlan()

    def ours_cached() -> Any:
        return lake.sql(QUERY)._jdf.queryExecution().executedPlan()

    def ours() -> Any:  # a first statement: the lake's plan cache (engine/planning/plan_cache.py) emptied
        lake.plan_cache.clear()
        return ours_cached()

    def raw(paths: list[str] = s3a) -> Any:
        spark.read.parquet(*paths).createOrReplaceTempView("raw_events")
        return plan(QUERY.replace("events", "raw_events"))

    def files_plain(paths: list[str] = s3a) -> Any:
        spark.read.schema(schema).parquet(*paths).createOrReplaceTempView("plain_events")
        return plan(QUERY.replace("events", "plain_events"))

    def files_index() -> Any:
        read_parquet(spark, spark.read.schema(schema), files).createOrReplaceTempView("index_events")
        return plan(QUERY.replace("events", "index_events"))

    fns: dict[str, Callable[[], Any]] = {"ours": ours, "ours_cached": ours_cached, "raw": raw}
    if args.get("listing", True):
        fns.update(files_plain=files_plain, files_index=files_index)
    # Warm-up (not timed): JIT, s3a client, connection pool. The plain reads warm on 200 files (still a parallel
    # listing job): a whole one takes a minute on S3, and a warm-up that long buys them nothing.
    few = s3a[:200]
    warm: dict[str, Callable[[], Any]] = {"raw": partial(raw, few), "files_plain": partial(files_plain, few)}
    for name, fn in fns.items():
        warm.get(name, fn)()
    times: dict[str, list[float]] = {n: [] for n in fns}
    names = list(fns)
    for r in range(args["reps"]):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
    # The raw view's relation keeps the file index it built: no second listing of 10,000 files.
    same = sorted(lake.sql(QUERY).inputFiles()) == sorted(spark.table("raw_events").inputFiles())
    out: dict[str, Any] = {n: {"median": statistics.median(t), "min": min(t), "max": max(t),
                               "runs": [round(x, 4) for x in t]} for n, t in times.items()}
    return {**out, "reps": args["reps"], "same_files": same, "load": round(os.getloadavg()[0], 1)}


def main() -> None:
    """`--child ARGS` (internal), or `CATALOG [REPS]`: the section alone, its lines printed."""
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(f"usage: {sys.argv[0]} CATALOG [REPS]   (CATALOG: a local SQLite catalog, e.g. the planning one)")
        return
    if sys.argv[1] == "--child":
        print(json.dumps(_child(Path(sys.argv[2]))))
        return
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-planning-s3-{os.getpid()}"
    try:
        result = run(int(sys.argv[2]) if len(sys.argv) > 2 else 3, work, None, lambda p: None, Path(sys.argv[1]))
        print(json.dumps(result, indent=1))
        print("\n".join(render(result)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
