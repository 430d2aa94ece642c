#!/usr/bin/env python
"""Benchmarks: our Spark path against raw Spark on the same Parquet files, DuckDB's ducklake and ducklake-dataframe.

    python scripts/bench.py --quick            # sf 0.02, 1M-row write: ~25 minutes on 2 cores, 15 of them the S3
                                               # planning (10,001 uploads, raw Spark stats each) and cold-start runs
    python scripts/bench.py                    # full run (sf 1, 10M-row write), about 75 minutes here
    python scripts/bench.py --sf 0.1 --reps 5  # any scale factor / number of runs per figure
    python scripts/bench.py --report-only bench/results/2026-11-30-full.json   # re-render REPORT.md and the chart
    python scripts/bench.py --only dml --add-to bench/results/2026-11-30-full.json   # one section into a result
    python scripts/bench.py --quick --results /tmp/r --report-dir /tmp/r   # a trial run, bench/ untouched

Every figure is the median of `--reps` runs (≥ 3); in each round every engine runs once, in a rotating order, on the
same data in the same Spark session (`local[2]`), so load from other processes hits all engines alike. Results go
to `bench/results/<date>-<mode>.json`; `bench/REPORT.md` and `bench/report.png` are regenerated from it.

Engines: **ours** = `Lake.sql(…)` (catalog read, scan planning, temp views, Spark SQL, collect) per run;
**floor** = the same Spark SQL on temp views over `spark.read.parquet(<the lake's data files>)`, registered once;
**duckdb** = DuckDB 1.5.5 + ducklake on the same catalog; **ddf** = `ducklake_pyspark.read_ducklake` (PyPI
ducklake-dataframe) per run, then the same Spark SQL. The DML section (`scripts/bench_dml.py`) runs DELETE, UPDATE
and MERGE on fresh copies of a lineitem lake; its floor is plain Spark writing the same files without a catalog.
The history section (`scripts/bench_history.py`) times the change feed over 1,000+ snapshots against DuckDB's;
`verify` and `verify --deep` are timed with the other metadata commands on the 10,001-file catalog. The scans section
reads lineitem copies with 10% and 50% of the rows deleted; planning_s3 (`scripts/bench_planning_s3.py`) plans the
planning section's table copied to S3 (SeaweedFS: its own `weed mini` unless DUCKLAKE_TEST_S3 names one); coldstart
(`scripts/bench_coldstart.py`) times a first query in a fresh process with and without class-data sharing.
The scale section (`scripts/bench_scale.py`) times metadata commands and query planning on 10k, 100k and 1M-file
lakes, built once into a cache, against DuckDB (`--only scale --scale-sizes 10000,100000` for a quick look).
Sections: tpch, scans, planning, planning_s3, write, metadata, dml, history, coldstart, scale (`--only a,b`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ducklake_cli.api import Lake


def _sibling(name: str) -> ModuleType:
    """A module that sits next to this file, loaded by its path: the script then runs from any directory, as
    `python scripts/bench.py` or `python -m scripts.bench`, and imports by file path alike."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before running it, as `import` does (dataclasses look their module up)
        spec.loader.exec_module(module)
    return sys.modules[name]


bd = _sibling("bench_duckdb")
bench_report = _sibling("bench_report")
bench_dml = _sibling("bench_dml")
bench_history = _sibling("bench_history")
bench_planning_s3 = _sibling("bench_planning_s3")
bench_coldstart = _sibling("bench_coldstart")
bench_scale = _sibling("bench_scale")

ROOT = Path(__file__).resolve().parent.parent
Fn = Callable[[], Any]
ALL_QUERIES = tuple(range(1, 23))
# A quick run's share of the 22: scan-aggregate (1, 6), joins of 3-4 tables (3, 10, 12), a join with a CASE (14).
QUICK_QUERIES = (1, 3, 6, 10, 12, 14)
# Lake B (files written by us) repeats the cheaper half: what differs there is the files, not the plans.
LAKE_B_QUERIES = (1, 3, 4, 5, 6, 10, 12, 14, 19)
SECTIONS = ("tpch", "scans", "planning", "planning_s3", "write", "metadata", "dml", "history", "coldstart", "scale")


@dataclass(frozen=True)
class Settings:
    """What a mode runs."""

    mode: str
    sf: float
    reps: int
    write_rows: int
    plan_files: int
    plan_snapshots: int
    meta_snapshots: int
    meta_files: int
    tpch_ddf: bool
    queries_a: tuple[int, ...]
    queries_b: tuple[int, ...]


def settings_for(args: argparse.Namespace) -> Settings:
    """Quick and full presets, with `--sf` / `--reps` overrides."""
    if args.quick:
        base = Settings("quick", 0.02, 3, 1_000_000, 10_000, 1_000, 10_000, 2_000, False, QUICK_QUERIES, ())
    else:
        base = Settings("full", 1.0, 3, 10_000_000, 10_000, 1_000, 10_000, 10_000, True, ALL_QUERIES, LAKE_B_QUERIES)
    changes: dict[str, Any] = {}
    if args.sf is not None:
        changes["sf"] = args.sf
    if args.reps is not None:
        changes["reps"] = max(3, args.reps)
    if args.queries:
        changes["queries_a"] = tuple(int(q) for q in args.queries.split(","))
    return Settings(**{**asdict(base), **changes})


def log(text: str) -> None:
    """Progress on stderr, with the elapsed time."""
    sys.stderr.write(f"[{time.perf_counter() - _T0:7.1f}s] {text}\n")
    sys.stderr.flush()


_T0 = time.perf_counter()


# ---------------------------------------------------------------- measuring


def rounds(fns: Mapping[str, Fn], reps: int) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Run every engine once per round (rotating the order), `reps` rounds; per engine the median, the runs and the
    first run's output. An engine that raises is dropped with its error."""
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    outputs: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for r in range(reps):
        for name in names[r % len(names):] + names[:r % len(names)]:
            if name in errors:
                continue
            start = time.perf_counter()
            try:
                out = fns[name]()
            except Exception as exc:  # an engine that cannot run this is reported, not fatal
                errors[name] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc) else ''}"
                continue
            times[name].append(time.perf_counter() - start)
            outputs.setdefault(name, out)
    stats = {n: bench_report.stat(times[n]) for n in names if times[n]}
    stats.update({n: {"error": e} for n, e in errors.items()})
    return stats, outputs


def _cell(value: Any) -> Any:
    if isinstance(value, float | Decimal):
        return round(float(value), 2)
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def normalize(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows as comparable tuples (numbers rounded to cents, dates as text), sorted."""
    return sorted((tuple(_cell(v) for v in row) for row in rows), key=repr)


def same_rows(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    """Equal up to a cent of rounding."""
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b, strict=True):
        if len(ra) != len(rb):
            return False
        for x, y in zip(ra, rb, strict=True):
            if isinstance(x, float) and isinstance(y, float):
                if abs(x - y) > 0.011 + 1e-9 * max(abs(x), abs(y)):
                    return False
            elif x != y:
                return False
    return True


def check(outputs: Mapping[str, Any], reference: str) -> dict[str, Any]:
    """Row counts per engine and whether each engine's rows equal the reference engine's."""
    norm = {k: normalize(v) for k, v in outputs.items()}
    out: dict[str, Any] = {"rows": {k: len(v) for k, v in norm.items()}}
    if reference in norm:
        out["match"] = {k: same_rows(v, norm[reference]) for k, v in norm.items() if k != reference}
    return out


def wall(cmd: Sequence[str], env: Mapping[str, str] | None = None) -> float:
    """Wall time of a command (stdout discarded); raises with its stderr when it fails."""
    start = time.perf_counter()
    proc = subprocess.run(list(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env=dict(env) if env else None, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}… exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    return elapsed


def ducklake_cmd() -> list[str]:
    """The installed `ducklake` console script next to this interpreter, else `python -m ducklake_cli`."""
    script = Path(sys.executable).with_name("ducklake")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ducklake_cli"]


# ---------------------------------------------------------------- SQL helpers


def rename_tables(query: str, prefix: str) -> str:
    """The query with every TPC-H table `t` read from the temp view `<prefix>t` (CTE names untouched)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(query, read="spark")
    for table in tree.find_all(exp.Table):
        if table.name.lower() in bd.TPCH_TABLES and not table.args.get("db"):
            table.set("this", exp.to_identifier(prefix + table.name.lower()))
    return tree.sql(dialect="spark")


# ---------------------------------------------------------------- data


@dataclass
class Lakes:
    """The benchmark's lakes and inputs."""

    work: Path
    a_catalog: Path
    b_catalog: Path
    sources: dict[str, Path]
    queries: dict[int, str]
    adapted: dict[int, list[str]]
    del_before: int = 0
    del_after: int = 0
    deleted_fraction: float = 0.0
    deleted_fraction_50: float = 0.0


def build_lakes(s: Settings, work: Path, setup: dict[str, float]) -> Lakes:
    """TPC-H via dbgen; lake A by DuckDB's ducklake (CTAS), lake B by `ducklake write`; 10%- and 50%-deleted
    copies of lineitem in A."""
    con = bd.connect()
    start = time.perf_counter()
    bd.generate_tpch(con, s.sf)
    setup["dbgen_s"] = time.perf_counter() - start
    raw = bd.tpch_queries(con)
    queries, adapted = {}, {}
    for n, q in raw.items():
        queries[n], changes = bd.spark_dialect(q)
        if changes:
            adapted[n] = changes
    lakes = Lakes(work, work / "a" / "cat.sqlite", work / "b" / "cat.sqlite", {}, queries, adapted)
    for t in bd.TPCH_TABLES:
        lakes.sources[t] = work / "src" / f"{t}.parquet"
        bd.export_parquet(con, t, lakes.sources[t])
    start = time.perf_counter()
    bd.attach(con, lakes.a_catalog, work / "a" / "data")
    for t in bd.TPCH_TABLES:
        con.execute(f"CREATE TABLE lake.{t} AS SELECT * FROM memory.main.{t}")
    setup["load_a_duckdb_s"] = time.perf_counter() - start
    con.execute("CREATE TABLE lake.lineitem_del AS SELECT * FROM memory.main.lineitem")
    lakes.del_before = bd.latest_snapshot(con, "lake")
    lakes.deleted_fraction = _delete(con, "lineitem_del", "l_orderkey % 10 = 0")
    lakes.del_after = bd.latest_snapshot(con, "lake")
    con.execute("CREATE TABLE lake.lineitem_del50 AS SELECT * FROM memory.main.lineitem")
    lakes.deleted_fraction_50 = _delete(con, "lineitem_del50", "l_orderkey % 2 = 0")
    con.execute("DETACH lake")
    con.close()
    return lakes


def _delete(con: Any, table: str, where: str) -> float:
    """DELETE from a table of lake A by DuckDB; the fraction of its rows deleted."""
    total = con.execute(f"SELECT count(*) FROM lake.{table}").fetchone()
    deleted = con.execute(f"DELETE FROM lake.{table} WHERE {where}").fetchone()
    return (deleted[0] if deleted else 0) / (total[0] if total and total[0] else 1)


def load_lake_b(lakes: Lakes, spark_lake: Callable[[Path], Lake], setup: dict[str, float]) -> None:
    """Lake B: each TPC-H table through `ducklake write` (the Python API of the command)."""
    from ducklake_cli.catalog.url import parse_catalog
    from ducklake_cli.ops.create import create_catalog
    from ducklake_cli.ops.write import run_write

    lakes.b_catalog.parent.mkdir(parents=True, exist_ok=True)
    create_catalog(parse_catalog(str(lakes.b_catalog), must_exist=False), data_path=str(lakes.work / "b" / "data"))
    lake = spark_lake(lakes.b_catalog)
    start = time.perf_counter()
    for t in bd.TPCH_TABLES:
        run_write(lake, t, source=[str(lakes.sources[t])], mode="create")
    setup["load_b_ducklake_write_s"] = time.perf_counter() - start


# ---------------------------------------------------------------- sections


def floor_views(spark: SparkSession, con: Any, alias: str, prefix: str, sources: Mapping[str, Path]) -> None:
    """Temp views `<prefix><table>` over the lake's own data files (tables whose rows all sit inlined in the
    catalog, e.g. region, read the same rows from the exported Parquet file)."""
    for t in bd.TPCH_TABLES:
        files = bd.lake_files(con, alias, t) or [str(sources[t])]
        spark.read.parquet(*files).createOrReplaceTempView(prefix + t)


def tpch(s: Settings, lakes: Lakes, spark: SparkSession, lake: Lake, catalog: Path, numbers: Sequence[int], *,
         ddf: bool, tag: str) -> dict[str, Any]:
    """The 22 queries on one lake: ours, floor, DuckDB (and ducklake-dataframe)."""
    con = bd.connect()
    bd.attach(con, catalog, catalog.parent / "data")
    con.execute("USE lake")
    floor_views(spark, con, "lake", f"floor_{tag}_", lakes.sources)
    floor_q = {n: rename_tables(q, f"floor_{tag}_") for n, q in lakes.queries.items()}
    ddf_q = {n: rename_tables(q, f"ddf_{tag}_") for n, q in lakes.queries.items()}
    # Warm-up (not timed): JIT, class loading and the first Parquet reads, for every engine alike.
    for n in numbers[:2]:
        lake.sql(lakes.queries[n]).collect()
        spark.sql(floor_q[n]).collect()
    out: dict[str, Any] = {}
    for n in numbers:
        q = lakes.queries[n]
        fns: dict[str, Fn] = {
            "ours": partial(_collect, lake.sql, q),
            # The floor's views list their files once, before timing; `ours` likewise reuses the lake's plans of
            # this snapshot (plan cache). `ours_first` plans everything anew, as a lake's first statement.
            "ours_first": partial(_first_statement, lake, q),
            "floor": partial(_collect, spark.sql, floor_q[n]),
            "duckdb": partial(_fetch, con, q),
        }
        if ddf:
            fns["ddf"] = partial(_ddf_query, spark, catalog, bd.tables_in(q), f"ddf_{tag}_", ddf_q[n])
        stats, outputs = rounds(fns, s.reps)
        out[str(n)] = {**stats, **check(outputs, "duckdb")}
        log(f"  tpch {tag} q{n:02d}: {_summary(stats)}")
    con.close()
    return {"queries": out, "adapted": {str(k): v for k, v in lakes.adapted.items()}}


def _first_statement(lake: Lake, query: str) -> Any:
    """`lake.sql(query)` collected with the lake's plan cache emptied first."""
    lake.plan_cache.clear()
    return lake.sql(query).collect()


def _collect(run: Callable[[str], Any], query: str) -> Any:
    return run(query).collect()


def _fetch(con: Any, query: str) -> Any:
    return con.execute(query).fetchall()


def _summary(stats: Mapping[str, Any], digits: int = 2) -> str:
    return ", ".join(f"{k} {v['median']:.{digits}f}s" for k, v in stats.items() if "median" in v)


def _ddf_query(spark: SparkSession, catalog: Path, tables: Sequence[str], prefix: str, query: str) -> Any:
    from ducklake_pyspark import read_ducklake

    for t in tables:
        read_ducklake(spark, str(catalog), t).createOrReplaceTempView(prefix + t)
    return spark.sql(query).collect()


def scans(s: Settings, lakes: Lakes, spark: SparkSession, lake: Lake) -> dict[str, Any]:
    """Tables with 10% and 50% of their rows deleted, and the 10% one before the delete (time travel)."""
    con = bd.connect()
    bd.attach(con, lakes.a_catalog, lakes.a_catalog.parent / "data")
    agg = "count(*) AS n, sum(l_quantity) AS q, sum(l_extendedprice) AS p"
    files = {t: bd.lake_files(con, "lake", t) for t in ("lineitem_del", "lineitem_del50")}
    for table, paths in files.items():
        spark.read.parquet(*paths).createOrReplaceTempView(f"floor_{table}")
    out: dict[str, Any] = {"deleted_fraction": lakes.deleted_fraction, "files": len(files["lineitem_del"]),
                           "deleted_fraction_50pct": lakes.deleted_fraction_50,
                           "files_50pct": len(files["lineitem_del50"])}
    # (case, table, snapshot for time travel)
    cases = (("deleted_10pct", "lineitem_del", None), ("time_travel", "lineitem_del", lakes.del_before),
             ("deleted_50pct", "lineitem_del50", None))
    for name, table, version in cases:
        ours_sql = f"SELECT {agg} FROM {table}" + (f" VERSION AS OF {version}" if version is not None else "")
        duck_sql = f"SELECT {agg} FROM lake.{table}" + (f" AT (VERSION => {version})" if version is not None else "")
        fns: dict[str, Fn] = {
            "ours": partial(_collect, lake.sql, ours_sql),
            # The floor reads the same data files and applies no deletes: the bound for any reader.
            "floor": partial(_collect, spark.sql, f"SELECT {agg} FROM floor_{table}"),
            "duckdb": partial(_fetch, con, duck_sql),
            "ddf": partial(_ddf_scan, spark, lakes.a_catalog, table, version, agg),
        }
        # Warm-up (not timed), as for TPC-H: JIT, class loading, the first reads of these files.
        for engine in ("ours", "floor"):
            with contextlib.suppress(Exception):  # an engine that fails is reported by the timed rounds
                fns[engine]()
        stats, outputs = rounds(fns, s.reps)
        out[name] = {**stats, **check(outputs, "duckdb")}
        log(f"  scan {name}: {_summary(stats)}")
    con.close()
    return out


def _ddf_scan(spark: SparkSession, catalog: Path, table: str, version: int | None, agg: str) -> Any:
    from ducklake_pyspark import read_ducklake

    read_ducklake(spark, str(catalog), table, snapshot_version=version).createOrReplaceTempView("ddf_del")
    return spark.sql(f"SELECT {agg} FROM ddf_del").collect()


def plan_catalog(s: Settings, work: Path) -> tuple[Path, float | None]:
    """The planning table (`plan_files` files over `plan_snapshots` snapshots, by make_big_catalog.py): its
    SQLite catalog and the seconds making it took, or None when this run made it already (the work dir starts
    empty)."""
    catalog = work / "plan" / "cat.sqlite"
    done = catalog.with_name("cat.sqlite.done")
    if done.exists():
        return catalog, None
    start = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_big_catalog.py"), str(catalog), "--snapshots",
                    str(s.plan_snapshots), "--files", str(s.plan_files), "--force"], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    done.touch()
    return catalog, time.perf_counter() - start


def planning(s: Settings, work: Path, spark: SparkSession, spark_lake: Callable[[Path], Lake]) -> dict[str, Any]:
    """SQL text → planned DataFrame on a table with many files and snapshots, with and without a pruning filter."""
    from ducklake_cli.ops.query import plan_sql

    catalog, build = plan_catalog(s, work)
    lake = spark_lake(catalog)
    con = bd.connect()
    bd.attach(con, catalog, Path(str(catalog) + ".files"))
    files = bd.lake_files(con, "lake", "events")
    mid = (len(files) // 2) * 100
    out: dict[str, Any] = {"files": len(files), "snapshots": bd.latest_snapshot(con, "lake") + 1, "build_s": build}
    for name, where in (("no_predicate", ""), ("with_predicate", f" WHERE id BETWEEN {mid} AND {mid + 99}")):
        q = f"SELECT id, ts, v FROM events{where}"

        def metadata_only(q: str = q) -> int:
            lake.plan_cache.clear()
            with lake.reader() as r:
                plan = plan_sql(lake, r, q, snapshot=r.latest_snapshot())
            return sum(len(p.files) for p in plan.scans)

        def floor(q: str = q) -> Any:
            spark.read.parquet(*files).createOrReplaceTempView("floor_events")
            return spark.sql(q.replace("FROM events", "FROM floor_events"))._jdf.queryExecution().executedPlan()

        def physical(q: str = q, cached: bool = False) -> Any:
            if not cached:  # a first statement: the lake's plan cache (engine/planning/plan_cache.py) emptied
                lake.plan_cache.clear()
            return lake.sql(q)._jdf.queryExecution().executedPlan()

        fns: dict[str, Fn] = {
            "ours": physical,
            "ours_cached": partial(physical, cached=True),
            "ours_metadata": metadata_only,
            "floor": floor,
            "duckdb": partial(_fetch, con, "EXPLAIN " + q.replace("FROM events", "FROM lake.events")),
        }
        stats, outputs = rounds(fns, s.reps)
        out[name] = {**stats, "files_kept": outputs.get("ours_metadata")}
        log(f"  planning {name}: {_summary(stats, 3)}")
    con.close()
    return out


def planning_s3(s: Settings, work: Path, spark: SparkSession, spark_lake: Callable[[Path], Lake]) -> dict[str, Any]:
    """The planning table copied to S3 (SeaweedFS): ours vs raw Spark planning there (scripts/bench_planning_s3.py)."""
    catalog, build = plan_catalog(s, work)
    # The old file listing alone takes a minute a run on S3: only the full run times it.
    out: dict[str, Any] = bench_planning_s3.run(s.reps, work, spark, spark_lake, catalog, listing=s.mode == "full")
    if build is not None:
        out["catalog_build_s"] = build
    med = {k: v["median"] for k, v in out.items() if isinstance(v, dict) and "median" in v}
    log(f"  planning on S3: {', '.join(f'{k} {v:.2f}s' for k, v in med.items()) or out.get('error')}")
    return out


def coldstart(s: Settings, work: Path) -> dict[str, Any]:
    """A first `ducklake query` in a fresh process, with and without class-data sharing (scripts/bench_coldstart.py)."""
    out: dict[str, Any] = bench_coldstart.run(s.reps, work / "coldstart")
    log(f"  cold start: without CDS {out['old_median_s']:.2f}s, with CDS {out['new_median_s']:.2f}s")
    return out


def guarded(name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A section's result, or `{"error": …}` when it fails (e.g. no S3 server could start): the run carries on."""
    try:
        return fn()
    except Exception as exc:  # a section that cannot run is reported, not fatal
        message = str(exc).strip().splitlines()[-1][:400] if str(exc).strip() else ""
        log(f"  {name} failed: {type(exc).__name__}: {message}")
        return {"error": f"{type(exc).__name__}: {message}"}


def writes(s: Settings, work: Path, spark: SparkSession, spark_lake: Callable[[Path], Lake]) -> dict[str, Any]:
    """`rows` × 10 columns from one Parquet file: `ducklake write`, plain `df.write.parquet`, DuckDB INSERT."""
    from ducklake_cli.ops.write import run_write

    con = bd.connect()
    src = work / "write" / "src.parquet"
    bd.write_source(con, s.write_rows, src)
    ours_cat, duck_cat = work / "write" / "ours" / "cat.sqlite", work / "write" / "duck" / "cat.sqlite"
    for cat in (ours_cat, duck_cat):
        cat.parent.mkdir(parents=True, exist_ok=True)
    bd.attach(con, ours_cat, ours_cat.parent / "data", alias="init")
    con.execute("DETACH init")
    bd.attach(con, duck_cat, duck_cat.parent / "data")
    lake = spark_lake(ours_cat)
    counter = iter(range(1000))

    def ours() -> dict[str, int]:
        got = run_write(lake, f"t{next(counter)}", source=[str(src)], mode="create")
        return {"rows": got.rows, "files": got.files}

    def floor() -> None:
        target = work / "write" / "floor"
        spark.read.parquet(str(src)).write.mode("overwrite").parquet(str(target))

    def duck() -> dict[str, int]:
        name = f"t{next(counter)}"
        # Like `--mode create`: the table is created in the same timed step as the load.
        con.execute(f"CREATE TABLE lake.{name} AS SELECT * FROM read_parquet({bd.quote(str(src))}) LIMIT 0")
        con.execute(f"INSERT INTO lake.{name} SELECT * FROM read_parquet({bd.quote(str(src))})")
        return {"files": len(bd.lake_files(con, "lake", name))}

    stats, outputs = rounds({"ours": ours, "floor": floor, "duckdb": duck}, s.reps)
    con.close()
    # Files each engine's first run wrote (DuckDB's: one until `target_file_size`, 512 MiB).
    files = {engine: out["files"] for engine, out in outputs.items() if isinstance(out, dict) and "files" in out}
    log(f"  write: {_summary(stats)}; files: {files}")
    return {"rows": s.write_rows, "columns": 10, "source_bytes": src.stat().st_size, "files": files, **stats}


_NO_JVM_PROBE = """
import sys
sys.argv = ["ducklake", *sys.argv[1:]]
from ducklake_cli.cli.app import main
try:
    main()
except SystemExit:
    pass
finally:
    sys.stderr.write("\\n__pyspark_loaded__=%s\\n" % ("pyspark" in sys.modules))
"""


def loads_pyspark(args: Sequence[str]) -> bool:
    """Whether a `ducklake` command imports pyspark at all (and so could start a JVM)."""
    proc = subprocess.run([sys.executable, "-c", _NO_JVM_PROBE, *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    return "__pyspark_loaded__=True" in proc.stderr


def free_port() -> int:
    """A free loopback TCP port (not the default 15002 others may use)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def metadata(s: Settings, lakes: Lakes) -> dict[str, Any]:
    """Metadata commands on 10,000 snapshots and start-up wall times, each in a fresh process."""
    catalog = lakes.work / "meta" / "cat.sqlite"
    start = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_big_catalog.py"), str(catalog), "--snapshots",
                    str(s.meta_snapshots), "--files", str(s.meta_files), "--force"], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    out: dict[str, Any] = {"snapshots": s.meta_snapshots + 3, "files": s.meta_files + 1,
                           "build_s": time.perf_counter() - start}
    cli = ducklake_cmd()
    a = str(lakes.a_catalog)
    query = "SELECT l_returnflag, l_linestatus, count(*) AS n, sum(l_extendedprice) AS p FROM lineitem GROUP BY 1, 2"
    commands: dict[str, list[str]] = {
        "help": ["--help"],
        "inspect": ["inspect", str(catalog)],
        "inspect_table": ["inspect", str(catalog), "main.events"],
        "expire_dry_run": ["maintain", "expire", str(catalog), "--keep-last", "1", "--dry-run"],
        "verify": ["verify", str(catalog)],
        "verify_deep": ["verify", str(catalog), "--deep"],
    }
    # Fresh processes, never a warm one (which a `ducklake spark start` of the user's could otherwise provide).
    cold = {**os.environ, "DUCKLAKE_WARM": "0"}
    stats, _ = rounds({k: partial(wall, [*cli, *v], cold) for k, v in commands.items()}, s.reps)
    out.update(stats)
    out["loads_pyspark"] = {k: loads_pyspark(v) for k, v in commands.items()}
    stats, _ = rounds({"query_cold_jvm": partial(wall, [*cli, "query", a, query, "--master", "local[2]"], cold)},
                      s.reps)
    out.update(stats)
    env = {**os.environ, "XDG_STATE_HOME": str(lakes.work / "state")}
    port = free_port()
    url = f"sc://127.0.0.1:{port}"
    start = time.perf_counter()
    wall([*cli, "spark", "start", "--port", str(port), "--master", "local[2]"], env)
    out["spark_start_s"] = time.perf_counter() - start
    try:
        wall([*cli, "query", a, query, "--remote", url], env)  # warm the server (first query compiles code)
        remote = {"query_remote_warm": [*cli, "query", a, query, "--remote", url],
                  "query_remote_select1": [*cli, "query", a, "SELECT 1", "--remote", url]}
        stats, _ = rounds({k: partial(wall, v, env) for k, v in remote.items()}, s.reps)
        out.update(stats)
        # The same without the warm ducklake process: what a command pays to start Python and its imports.
        stats, _ = rounds({"query_remote_select1_own_process": partial(
            wall, remote["query_remote_select1"], {**env, "DUCKLAKE_WARM": "0"})}, s.reps)
        out.update(stats)
    finally:
        subprocess.run([*cli, "spark", "stop"], env=env, check=False, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    log(f"  metadata: {_summary({k: v for k, v in out.items() if isinstance(v, dict)})}")
    return out


# ---------------------------------------------------------------- main


def versions() -> dict[str, str]:
    """Versions of what was measured."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("pyspark", "duckdb", "duckdb-extension-ducklake", "ducklake-dataframe", "ducklake-cli"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    out["python"] = sys.version.split()[0]
    try:
        out["git"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                    text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        out["git"] = "unknown"
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="small data (sf 0.02): ~25 minutes, most of it planning_s3 and coldstart")
    p.add_argument("--sf", type=float, help="TPC-H scale factor (quick 0.02, full 1)")
    p.add_argument("--reps", type=int, help="runs per figure (≥ 3, default 3)")
    p.add_argument("--queries", help="TPC-H queries on lake A, e.g. 1,6,14 (quick: 1,3,6,10,12,14; full: all 22)")
    p.add_argument("--only", default=",".join(SECTIONS),
                   help="comma-separated sections to run (default: all)")
    p.add_argument("--workdir", type=Path, help="scratch directory (default bench/data/<mode>; emptied first)")
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results", help="where the JSON goes")
    p.add_argument("--report-dir", type=Path, default=ROOT / "bench",
                   help="where REPORT.md and report.png go (default bench/; FINDINGS.md is read from there)")
    p.add_argument("--event-log", action="store_true", help="write Spark's event log to <workdir>/spark-events")
    p.add_argument("--report-only", type=Path, metavar="JSON", help="only re-render REPORT.md and the chart")
    bench_scale.add_arguments(p)
    p.add_argument("--add-to", type=Path, metavar="JSON",
                   help="keep this result's other sections: the sections run replace theirs in a new result file")
    return p.parse_args(argv)


def _shown(path: Path) -> str:
    """A path for the log: relative to the repository when inside it."""
    path = path.resolve()
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, write the JSON, render the report."""
    args = parse_args(argv)
    if args.report_only:
        bench_report.render(json.loads(args.report_only.read_text()), args.report_dir, args.report_only.name)
        return 0
    s = settings_for(args)
    sections = {x.strip() for x in args.only.split(",") if x.strip()}
    unknown = sections - set(SECTIONS)
    if unknown:
        sys.stderr.write(f"unknown section(s) {', '.join(sorted(unknown))}; known: {', '.join(SECTIONS)}\n")
        return 2
    work = (args.workdir or ROOT / "bench" / "data" / s.mode).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    results: dict[str, Any] = {"meta": {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "mode": s.mode, "settings": asdict(s),
        "loadavg_start": list(os.getloadavg()), "cores": bd.cpu_count(), "versions": versions(),
        "spark_master": "local[2]", "sections": sorted(sections)}}
    setup: dict[str, float] = {}
    log(f"{s.mode} run, sf {s.sf}, {s.reps} runs per figure, load {os.getloadavg()[0]:.1f}, work dir {work}")

    import ducklake_cli
    from ducklake_cli.engine.session import SparkSettings

    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(work / "spark-events")} if args.event_log \
        else {}
    if args.event_log:
        (work / "spark-events").mkdir()
    spark_settings = SparkSettings(master="local[2]", conf=conf, app_name="ducklake-bench")
    opened: list[Lake] = []

    def spark_lake(catalog: Path) -> Lake:
        lake = ducklake_cli.connect(str(catalog), spark_settings=spark_settings)
        opened.append(lake)
        return lake

    args.results.mkdir(parents=True, exist_ok=True)
    out = args.results / f"{dt.date.today().isoformat()}-{s.mode}.json"

    def save() -> None:  # after every section, so an interrupted run keeps what it measured
        results["setup"] = setup
        results["meta"]["loadavg_end"] = list(os.getloadavg())
        results["meta"]["duration_s"] = round(time.perf_counter() - _T0, 1)
        results["targets"] = bench_report.targets(results)
        out.write_text(json.dumps(merged(results), indent=1, default=str) + "\n")

    def merged(results: dict[str, Any]) -> dict[str, Any]:
        """With `--add-to`: that result, its sections replaced by the ones run now (which carry their own meta)."""
        if not args.add_to:
            return results
        old = json.loads(args.add_to.read_text())
        new = {**old, **{k: results[k] for k in sections if k in results}}
        # A result merged before keeps naming the run its other sections were first added to.
        new["meta"] = {**old["meta"], "merged_from": old["meta"].get("merged_from", args.add_to.name),
                       "sections": sorted(set(old["meta"].get("sections", [])) | sections)}
        new["targets"] = bench_report.targets(new)
        return new

    if "scale" in sections:  # fresh processes only (no TPC-H lake, no Spark session here): it runs first
        results["scale"] = guarded("scale", partial(bench_scale.run, bench_scale.options_from(args, s.mode),
                                                    work / "scale", log))
        save()
        if not sections - {"scale"}:
            bench_report.render(merged(results), args.report_dir, out.name)
            log(f"wrote {_shown(out)}, {_shown(args.report_dir / 'REPORT.md')}, "
                f"{_shown(args.report_dir / 'report.png')}")
            return 0
    lakes = build_lakes(s, work, setup)
    log("lake A loaded by DuckDB")

    start = time.perf_counter()
    lake_a = spark_lake(lakes.a_catalog)
    spark = lake_a.spark()
    setup["spark_start_s"] = time.perf_counter() - start
    try:
        if "tpch" in sections and s.queries_b:
            load_lake_b(lakes, spark_lake, setup)
            log("lake B loaded by ducklake write")
        if "tpch" in sections:
            results["tpch"] = {"a": tpch(s, lakes, spark, lake_a, lakes.a_catalog, s.queries_a, ddf=s.tpch_ddf,
                                         tag="a")}
            save()
            if s.queries_b:
                lake_b = spark_lake(lakes.b_catalog)
                results["tpch"]["b"] = tpch(s, lakes, spark, lake_b, lakes.b_catalog, s.queries_b, ddf=False, tag="b")
                save()
        if "scans" in sections:
            results["scans"] = scans(s, lakes, spark, lake_a)
            save()
        if "planning" in sections:
            results["planning"] = planning(s, work, spark, spark_lake)
            save()
        if "planning_s3" in sections:
            results["planning_s3"] = guarded("planning_s3", partial(planning_s3, s, work, spark, spark_lake))
            save()
        if "write" in sections:
            results["write"] = writes(s, work, spark, spark_lake)
            save()
        if "dml" in sections:
            started = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "sf": s.sf, "mode": s.mode,
                       "reps": s.reps, "git": results["meta"]["versions"]["git"],
                       "loadavg_start": list(os.getloadavg())}
            results["dml"] = bench_dml.dml(bd, bench_report.stat, log, s.reps, lakes.sources["lineitem"], work, spark,
                                           lambda c: ducklake_cli.connect(str(c), spark_settings=spark_settings))
            results["dml"]["meta"] = {**started, "loadavg_end": list(os.getloadavg())}
            save()
        if "history" in sections:
            results["history"] = bench_history.history(bd, rounds, check, log, s.reps, work, spark_lake)
            save()
        if "metadata" in sections:
            results["metadata"] = metadata(s, lakes)
            save()
        if "coldstart" in sections:
            results["coldstart"] = guarded("coldstart", partial(coldstart, s, work))
    finally:
        for lake in opened:
            lake.close()
    save()
    bench_report.render(merged(results), args.report_dir, out.name)
    log(f"wrote {_shown(out)}, {_shown(args.report_dir / 'REPORT.md')}, {_shown(args.report_dir / 'report.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
