"""DML section of `scripts/bench.py`: DELETE 1%, UPDATE 1% and MERGE (1% changed + 1% new rows) on TPC-H lineitem.

Each statement runs on a fresh copy of one DuckDB-written lake holding only lineitem, for every engine and run:
**ours** = `ducklake_cli.ops.dml.run_change` (same Spark session as the rest of the bench); **duckdb** = DuckDB
1.5.5 + ducklake running the same statement; **floor** = plain Spark reading the affected data files once and
writing as many delete files and data files as ours wrote (no catalog work). Copies are made outside the timing.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ducklake_cli.api import Lake

COLUMNS = ("l_orderkey", "l_partkey", "l_suppkey", "l_linenumber", "l_quantity", "l_extendedprice", "l_discount",
           "l_tax", "l_returnflag", "l_linestatus", "l_shipdate", "l_commitdate", "l_receiptdate", "l_shipinstruct",
           "l_shipmode", "l_comment")
KEYS = ("l_orderkey", "l_linenumber")
# About 1% of the rows each (order keys are spread evenly over the residues of 100); disjoint sets of orders.
DELETE_WHERE = "l_orderkey % 100 = 7"
UPDATE_WHERE = "l_orderkey % 100 = 13"
MERGE_CHANGED = "l_orderkey % 100 = 21"
MERGE_NEW = "l_orderkey % 100 = 29"
UPDATE_SET = {"l_quantity": "l_quantity + 1", "l_comment": "'bench update'"}
MERGE_SET = ("l_quantity", "l_extendedprice", "l_comment")
# What every engine's result is checked by (read back by DuckDB from each engine's own copy).
CHECK_SQL = ("SELECT count(*), sum(l_quantity), sum(l_extendedprice), "
             "count(*) FILTER (WHERE l_comment IN ('bench update', 'bench merge')) FROM lake.lineitem")
KINDS = ("delete", "update", "merge")


def statement(kind: str) -> str:
    """The statement, in SQL that Spark SQL (ours) and DuckDB both parse; the MERGE source is named `src`."""
    if kind == "delete":
        return f"DELETE FROM lineitem WHERE {DELETE_WHERE}"
    if kind == "update":
        sets = ", ".join(f"{c} = {v}" for c, v in UPDATE_SET.items())
        return f"UPDATE lineitem SET {sets} WHERE {UPDATE_WHERE}"
    # DuckDB 1.5.5's MERGE takes one MATCHED action plus NOT MATCHED INSERT: exactly what this is.
    sets = ", ".join(f"{c} = s.{c}" for c in MERGE_SET)
    on = " AND ".join(f"t.{k} = s.{k}" for k in KEYS)
    return (f"MERGE INTO lineitem t USING src s ON {on} WHEN MATCHED THEN UPDATE SET {sets} "
            f"WHEN NOT MATCHED THEN INSERT ({', '.join(COLUMNS)}) VALUES ({', '.join('s.' + c for c in COLUMNS)})")


@dataclass(frozen=True)
class Base:
    """The lake every run copies, and the MERGE source."""

    root: Path  # holds cat.sqlite and data/
    source: Path  # MERGE source Parquet (changed rows, then new rows, in key order)
    rows: int
    data_files: list[str]  # lineitem's data files, relative to root

    @property
    def catalog(self) -> Path:
        """The base catalog."""
        return self.root / "cat.sqlite"


def build_base(bd: Any, lineitem: Path, work: Path) -> Base:
    """A DuckDB-written lake with lineitem alone (CTAS, default settings) and the MERGE source file."""
    root = work / "dml" / "base"
    con = bd.connect()
    try:
        bd.attach(con, root / "cat.sqlite", root / "data")
        src = bd.quote(str(lineitem))
        con.execute(f"CREATE TABLE lake.lineitem AS SELECT * FROM read_parquet({src})")
        row = con.execute(f"SELECT count(*), max(l_orderkey) FROM read_parquet({src})").fetchone()
        assert row is not None
        rows, top = int(row[0]), int(row[1])
        merged = ", ".join(f"s.{c}" for c in COLUMNS)
        changed = (f"SELECT * REPLACE (l_quantity + 1 AS l_quantity, l_extendedprice + 1 AS l_extendedprice, "
                   f"'bench merge' AS l_comment) FROM read_parquet({src}) WHERE {MERGE_CHANGED}")
        new = (f"SELECT * REPLACE (l_orderkey + {top} AS l_orderkey, 'bench merge' AS l_comment) "
               f"FROM read_parquet({src}) WHERE {MERGE_NEW}")
        source = work / "dml" / "merge_source.parquet"
        con.execute(f"COPY (SELECT {merged} FROM ({changed} UNION ALL {new}) s ORDER BY l_orderkey, l_linenumber) "
                    f"TO {bd.quote(str(source))} (FORMAT parquet)")
        files = bd.lake_files(con, "lake", "lineitem")
    finally:
        con.close()
    data_root = (root / "data").resolve()
    return Base(root, source, rows, [str(Path(f).resolve().relative_to(data_root)) for f in files])


def fresh_copy(base: Base, dest: Path) -> Path:
    """A copy of the base lake at `dest` whose catalog points at its own data directory; returns its catalog."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(base.root, dest)
    catalog = dest / "cat.sqlite"
    with sqlite3.connect(catalog) as db:  # DuckDB stores the absolute data path: repoint it at the copy
        db.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", (str(dest / "data") + "/",))
    db.close()
    return catalog


def checked(bd: Any, catalog: Path) -> list[Any]:
    """The check aggregate of a lake copy, read by DuckDB."""
    con = bd.connect()
    try:
        bd.attach(con, catalog, catalog.parent / "data")
        row = con.execute(CHECK_SQL).fetchone()
    finally:
        con.close()
    return [float(v) if v is not None and not isinstance(v, int) else v for v in (row or ())]


# ---------------------------------------------------------------- engines (each returns timed seconds, output)


def run_ours(bd: Any, base: Base, kind: str, dest: Path, spark: SparkSession,
             open_lake: Callable[[Path], Lake]) -> tuple[float, dict[str, Any]]:
    """`run_change` on a fresh copy: the timed part is building the source DataFrame and the change."""
    from ducklake_cli.ops.dml import run_change

    catalog = fresh_copy(base, dest)
    lake = open_lake(catalog)
    try:
        start = time.perf_counter()
        sources = {"src": spark.read.parquet(str(base.source))} if kind == "merge" else None
        result = run_change(lake, [statement(kind)], sources=sources)
        elapsed = time.perf_counter() - start
    finally:
        lake.close()
    return elapsed, {"check": checked(bd, catalog), "deleted": result.deleted, "updated": result.updated,
                     "inserted": result.inserted, "data_files": result.data_files,
                     "delete_files": result.delete_files, "files_written": new_files(base, dest)}


def run_duckdb(bd: Any, base: Base, kind: str, dest: Path) -> tuple[float, dict[str, Any]]:
    """The same statement in DuckDB + ducklake on a fresh copy (attach outside the timing)."""
    catalog = fresh_copy(base, dest)
    con = bd.connect()
    try:
        bd.attach(con, catalog, dest / "data")
        con.execute("USE lake")
        sql = statement(kind).replace("USING src s", f"USING read_parquet({bd.quote(str(base.source))}) s")
        start = time.perf_counter()
        row = con.execute(sql).fetchone()
        elapsed = time.perf_counter() - start
    finally:
        con.close()
    return elapsed, {"check": checked(bd, catalog), "changed": int(row[0]) if row else None,
                     "files_written": new_files(base, dest)}


def new_files(base: Base, dest: Path) -> dict[str, int]:
    """Parquet files a change added to a copy: delete files (DuckDB's `…-delete.parquet` names) and data files."""
    added = [p for p in (dest / "data").rglob("*.parquet")
             if str(p.relative_to(dest / "data")) not in base.data_files]
    deletes = sum(1 for p in added if p.name.endswith("-delete.parquet"))
    return {"deletes": deletes, "data": len(added) - deletes}


def _scan(spark: SparkSession, files: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    return spark.read.parquet(*files).select(*COLUMNS, F.col("_metadata.file_path").alias("file_path"),
                                             F.col("_metadata.row_index").alias("pos"))


def _write_deletes(hits: DataFrame, count: int, out: Path) -> None:
    # One file per affected data file, positions sorted, as a delete file holds them.
    (hits.select("file_path", "pos").repartition(max(1, count), "file_path").sortWithinPartitions("file_path", "pos")
     .write.mode("overwrite").parquet(str(out)))


def _write_rows(rows: DataFrame, count: int, out: Path) -> None:
    # Exactly as many files as ours wrote: merge partitions when there are more, spread rows when there are fewer.
    count = max(1, count)
    parts = rows.rdd.getNumPartitions()
    (rows.coalesce(count) if parts >= count else rows.repartition(count)).write.mode("overwrite").parquet(str(out))


def run_floor(base: Base, kind: str, dest: Path, spark: SparkSession,
              counts: Mapping[str, int]) -> tuple[float, dict[str, Any]]:
    """Plain Spark: read the affected files once, write `counts` delete files and data files (no catalog)."""
    from pyspark.sql import functions as F

    shutil.rmtree(dest, ignore_errors=True)
    files = [str(base.root / "data" / f) for f in base.data_files]
    n_del, n_data = counts.get("delete_files", 1), counts.get("data_files", 0)
    start = time.perf_counter()
    target = _scan(spark, files)
    if kind == "delete":
        _write_deletes(target.where(DELETE_WHERE), n_del, dest / "deletes")
    elif kind == "update":
        hits = target.where(UPDATE_WHERE).cache()  # the files are read once; deletes and new rows come from it
        _write_deletes(hits, n_del, dest / "deletes")
        rows = hits.select(*[F.expr(UPDATE_SET.get(c, c)).alias(c) for c in COLUMNS], F.col("pos"))
        _write_rows(rows, n_data, dest / "data")
        hits.unpersist()
    else:
        s = spark.read.parquet(str(base.source)).alias("s")
        t = target.alias("t")
        on = [F.col(f"s.{k}") == F.col(f"t.{k}") for k in KEYS]
        joined = s.join(t, on[0] & on[1], "left").cache()
        _write_deletes(joined.where(F.col("t.file_path").isNotNull()).select("t.file_path", "t.pos"), n_del,
                       dest / "deletes")
        rows = joined.select(*[(F.col(f"s.{c}") if c in MERGE_SET else F.coalesce(F.col(f"t.{c}"), F.col(f"s.{c}")))
                               .alias(c) for c in COLUMNS])
        _write_rows(rows, n_data, dest / "data")
        joined.unpersist()
    elapsed = time.perf_counter() - start
    written = {sub: len(list((dest / sub).glob("*.parquet"))) for sub in ("deletes", "data") if (dest / sub).exists()}
    shutil.rmtree(dest, ignore_errors=True)
    return elapsed, {"files_written": written}


# ---------------------------------------------------------------- the section


def dml(bd: Any, stat: Callable[[list[float]], dict[str, Any]], log: Callable[[str], None], reps: int,
        lineitem: Path, work: Path, spark: SparkSession, open_lake: Callable[[Path], Lake], *,
        kinds: tuple[str, ...] = KINDS, warm_up: bool = True) -> dict[str, Any]:
    """Every statement × engine, `reps` rounds in a rotating order, each run on a fresh copy; medians and checks."""
    setup_start = time.perf_counter()
    base = build_base(bd, lineitem, work)
    out: dict[str, Any] = {"rows": base.rows, "data_files": len(base.data_files),
                           "build_s": time.perf_counter() - setup_start, "statements": {}}
    runs = work / "dml" / "runs"
    if warm_up:  # not timed: the first change compiles Spark code paths every later run shares
        run_ours(bd, base, "delete", runs / "warm", spark, open_lake)
        shutil.rmtree(runs / "warm", ignore_errors=True)
    for kind in kinds:
        counts: dict[str, int] = {}

        def ours(dest: Path, kind: str = kind, counts: dict[str, int] = counts) -> tuple[float, dict[str, Any]]:
            elapsed, got = run_ours(bd, base, kind, dest, spark, open_lake)
            counts.setdefault("delete_files", got["delete_files"])
            counts.setdefault("data_files", got["data_files"])
            return elapsed, got

        engines: dict[str, Callable[[Path], tuple[float, dict[str, Any]]]] = {
            "ours": ours,  # first in round 1: the floor writes as many files as ours did
            "floor": partial(run_floor, base, kind, spark=spark, counts=counts),
            "duckdb": partial(run_duckdb, bd, base, kind),
        }
        stats, outputs = _rounds(engines, reps, runs / kind, stat)
        entry: dict[str, Any] = {"sql": statement(kind), **stats, "outputs": outputs}
        ours_check, duck_check = outputs.get("ours", {}).get("check"), outputs.get("duckdb", {}).get("check")
        entry["match"] = None if ours_check is None or duck_check is None else _close(ours_check, duck_check)
        out["statements"][kind] = entry
        log(f"  dml {kind}: " + ", ".join(f"{k} {v['median']:.2f}s" for k, v in stats.items() if "median" in v)
            + ("" if entry["match"] is not False else " (result differs from DuckDB!)"))
    shutil.rmtree(work / "dml", ignore_errors=True)
    return out


def _close(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(
        abs(x - y) <= 0.011 + 1e-9 * max(abs(x), abs(y)) if isinstance(x, float) and isinstance(y, float) else x == y
        for x, y in zip(a, b, strict=True))


def _rounds(engines: Mapping[str, Callable[[Path], tuple[float, dict[str, Any]]]], reps: int, runs: Path,
            stat: Callable[[list[float]], dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Like `bench.rounds`, but each engine reports its own timed part (the copy it works on is not timed) and
    every run's copy is removed right after it."""
    names = list(engines)
    times: dict[str, list[float]] = {n: [] for n in names}
    outputs: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for r in range(reps):
        for name in names[r % len(names):] + names[:r % len(names)]:
            if name in errors:
                continue
            dest = runs / f"{name}-{r}"
            try:
                elapsed, got = engines[name](dest)
            except Exception as exc:  # an engine that cannot run this is reported, not fatal
                errors[name] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc) else ''}"
                sys.stderr.write(f"    {name}: {errors[name]}\n")
                continue
            finally:
                shutil.rmtree(dest, ignore_errors=True)
            times[name].append(elapsed)
            outputs.setdefault(name, got)
    stats: dict[str, dict[str, Any]] = {n: stat(times[n]) for n in names if times[n]}
    stats.update({n: {"error": e} for n, e in errors.items()})
    return stats, outputs
