"""File pruning (engine/planning/prune.py) against lakes written by DuckDB 1.5.5.

Ground truth per (predicate, data file): does the file hold a row matching the predicate, as DuckDB evaluates it on
the Parquet file (cast to the column's current type). Soundness: every such file is kept — with stats and partition
values, with stats only, and with partition values only. Strength: the clear cases prune exactly.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
import time
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

import ducklake_cli
from ducklake_cli.catalog.inlined import stored_type as duckdb_type
from ducklake_cli.catalog.models import ColumnInfo, PartitionField
from ducklake_cli.catalog.partitions import murmur3_32
from ducklake_cli.catalog.paths import file_path, table_dir
from ducklake_cli.engine.planning.predicates import Op, Predicate
from ducklake_cli.engine.planning.prune import Candidate, FileStats, keep_file, prune
from tests.support.lakes import build_lake
from tests.support.oracle import attach_clause, oracle_connect, sql_str

SEED = 20240611


@dataclass
class LakeTable:
    name: str
    columns: dict[str, ColumnInfo]
    candidates: list[Candidate]
    paths: dict[int, str]


def load_tables(catalog: Path) -> dict[str, LakeTable]:
    """Candidates of every table's live data files, from our reader plus the partition tables (sqlite3)."""
    out: dict[str, LakeTable] = {}
    db = sqlite3.connect(catalog)
    specs: dict[int, list[PartitionField]] = {}
    for pid, key, cid, transform in db.execute(
            "SELECT partition_id, partition_key_index, column_id, transform FROM ducklake_partition_column "
            "ORDER BY partition_id, partition_key_index"):
        specs.setdefault(pid, []).append(PartitionField(key, cid, transform))
    values: dict[int, dict[int, str | None]] = {}
    for fid, key, value in db.execute(
            "SELECT data_file_id, partition_key_index, partition_value FROM ducklake_file_partition_value"):
        values.setdefault(fid, {})[key] = value
    written: dict[int, dict[int, str]] = {}  # each file's column types when it was written
    for fid, cid, typ in db.execute(
            "SELECT f.data_file_id, c.column_id, c.column_type FROM ducklake_data_file f JOIN ducklake_column c "
            "ON c.table_id = f.table_id AND c.begin_snapshot <= f.begin_snapshot "
            "AND (c.end_snapshot IS NULL OR f.begin_snapshot < c.end_snapshot)"):
        written.setdefault(fid, {})[cid] = typ
    db.close()
    with ducklake_cli.connect(str(catalog)) as lake, lake.reader() as r:
        snap = r.latest_snapshot().snapshot_id
        schemas = {s.schema_id: s for s in r.schemas(snap)}
        data_path = r.data_path
        for t in r.tables(snap):
            files = r.data_files(snap, [t.table_id])
            stats = r.file_column_stats(t.table_id, [f.data_file_id for f in files])
            tdir = table_dir(data_path, schemas[t.schema_id], t)
            cands = [
                Candidate(
                    f.data_file_id,
                    {s.column_id: FileStats(s.column_id, s.min_value, s.max_value, s.null_count, s.value_count,
                                            s.contains_nan) for s in stats.get(f.data_file_id, [])},
                    values.get(f.data_file_id, {}),
                    tuple(specs.get(f.partition_id, [])) if f.partition_id is not None else (),
                    written.get(f.data_file_id, {}),
                )
                for f in files
            ]
            out[t.name] = LakeTable(t.name, {c.name.lower(): c for c in t.columns}, cands,
                                    {f.data_file_id: file_path(tdir, f) for f in files})
    return out


# ----- literals ------------------------------------------------------------------------------------------------

def render(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int | Decimal):
        return format(v, "f") if isinstance(v, Decimal) else str(v)
    if isinstance(v, float):
        return f"CAST('{v!r}' AS DOUBLE)"
    if isinstance(v, str):
        return sql_str(v)
    if isinstance(v, dt.datetime):
        return f"{'TIMESTAMPTZ' if v.tzinfo else 'TIMESTAMP'} '{v.isoformat(sep=' ')}'"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    raise TypeError(v)


def to_sql(p: Predicate) -> str:
    c = f'"{p.column}"'
    if p.op == "is_null":
        return f"{c} IS NULL"
    if p.op == "is_not_null":
        return f"{c} IS NOT NULL"
    if p.op == "between":
        return f"{c} BETWEEN {render(p.values[0])} AND {render(p.values[1])}"
    if p.op == "in":
        return f"{c} IN ({', '.join(render(v) for v in p.values)})"
    return f"{c} {p.op} {render(p.values[0])}"


def from_text(text: str, col_type: str) -> Any:
    """A DuckDB VARCHAR rendering as the Python literal a SQL front end would pass (None if unusable)."""
    try:
        if col_type.startswith(("int", "uint")):
            return int(text)
        if col_type.startswith("float"):
            return float(text)
        if col_type.startswith("decimal"):
            return Decimal(text)
        if col_type == "date":
            return dt.date.fromisoformat(text)
        if col_type == "timestamp_ns":
            return text
        if col_type.startswith("timestamp"):
            return dt.datetime.fromisoformat(text)
        if col_type == "boolean":
            return text == "true"
        if col_type == "varchar":
            return text
    except ValueError:
        return None
    return None


def variants(v: Any, col_type: str, rng: random.Random) -> list[Any]:
    """The literal plus differently typed / nearby literals for the same column."""
    out: list[Any] = [v]
    if col_type.startswith(("int", "uint")):
        out += [v + 1, v - 1 if v > 0 else v, Decimal(v), Decimal(v) + Decimal("0.5"), float(v), str(v)]
    elif col_type.startswith("float"):
        out += [Decimal(repr(v)) if v == v and abs(v) != float("inf") else v, v * (1 + 1e-8), v * (1 - 1e-8),
                float(f"{v:.7g}"), float(f"{v:.8g}")]
    elif col_type.startswith("decimal"):
        out += [v + Decimal("0.001"), v - Decimal("0.001"), float(v), int(v)]
    elif col_type == "date":
        out += [v + dt.timedelta(days=1), v.isoformat(), dt.datetime(v.year, v.month, v.day, 12),
                dt.datetime(v.year, v.month, v.day)]
    elif col_type == "timestamptz":
        out += [v + dt.timedelta(microseconds=1), v.replace(tzinfo=None),
                v.astimezone(dt.timezone(dt.timedelta(hours=5, minutes=30))), v.isoformat(sep=" ")]
    elif col_type.startswith("timestamp") and isinstance(v, dt.datetime):
        out += [v + dt.timedelta(microseconds=1), v - dt.timedelta(seconds=1), v.date(), v.isoformat(sep=" "),
                v.replace(tzinfo=dt.UTC)]
    elif col_type == "timestamp_ns":
        out += [v[:26], v[:19], dt.datetime.fromisoformat(v[:26])]
    elif col_type == "varchar":
        out += [v + "a", v[:-1], v[:3], v + "\U0010ffff"]
    return [x for x in out if x is not None and not (isinstance(x, str) and x == "" and col_type != "varchar")]


def gen_predicates(con: duckdb.DuckDBPyConnection, table: LakeTable, rng: random.Random,
                   per_column: int = 5) -> list[Predicate]:
    cols = [c for c in table.columns.values() if not c.children and c.type != "blob"]
    text = ", ".join(f'CAST("{c.name}" AS VARCHAR)' for c in cols)
    rows = con.execute(f"SELECT {text} FROM {scan_sql(table)}").fetchall()
    preds: list[Predicate] = []
    ops: list[Op] = ["=", "<", "<=", ">", ">="]
    for i, c in enumerate(cols):
        seen = sorted({r[i] for r in rows if r[i] is not None})
        vals = [x for x in (from_text(t, c.type) for t in rng.sample(seen, min(per_column, len(seen))))
                if x is not None]
        if len(seen) > 1:  # the extremes, where pruning decisions are closest
            vals += [x for x in (from_text(seen[0], c.type), from_text(seen[-1], c.type)) if x is not None]
        lits = [w for v in vals for w in variants(v, c.type, rng)]
        if c.type.startswith("float"):
            lits += [float("nan"), float("inf"), float("-inf"), 0.0, -0.0]
        for lit in lits:
            preds += [Predicate(c.name, op, (lit,)) for op in rng.sample(ops, 3)]
        preds += [Predicate(c.name, "is_null"), Predicate(c.name, "is_not_null"), Predicate(c.name, "=", (None,))]
        if len(lits) >= 2:
            for _ in range(6):
                a, b = rng.sample(lits, 2)
                if type(a) is type(b):
                    preds.append(Predicate(c.name, "between", (a, b)))
                same = [x for x in lits if type(x) is type(a)]
                preds.append(Predicate(c.name, "in", tuple(rng.sample(same, min(3, len(same))))))
            preds.append(Predicate(c.name, "in", (None, lits[0])))
    return preds


def scan_sql(table: LakeTable) -> str:
    files = ", ".join(sql_str(p) for p in table.paths.values())
    cols = ", ".join(f'CAST("{c.name}" AS {duckdb_type(c)}) AS "{c.name}"' for c in table.columns.values())
    return (f"(SELECT {cols}, filename FROM read_parquet([{files}], filename = true, union_by_name = true, "
            "hive_partitioning = false))")


def ground_truth(con: duckdb.DuckDBPyConnection, table: LakeTable,
                 conjunctions: list[list[Predicate]]) -> list[set[int]]:
    """For each conjunction, the data files holding at least one matching row (DuckDB's evaluation)."""
    by_path = {p: fid for fid, p in table.paths.items()}
    out: list[set[int]] = []
    for i in range(0, len(conjunctions), 250):
        chunk = conjunctions[i:i + 250]
        aggs = ", ".join(f"coalesce(bool_or({' AND '.join(f'({to_sql(p)})' for p in ps)}), false)" for ps in chunk)
        rows = con.execute(f"SELECT filename, {aggs} FROM {scan_sql(table)} GROUP BY filename").fetchall()
        out += [{by_path[r[0]] for r in rows if r[k + 1]} for k in range(len(chunk))]
    return out


MODES = {
    "full": lambda c: c,
    "stats": lambda c: replace(c, partition_values={}, partition_fields=()),
    "partitions": lambda c: replace(c, stats={}),
    "partitions-untyped": lambda c: replace(c, stats={}, written_types={}),
}


def check_sound(con: duckdb.DuckDBPyConnection, table: LakeTable, conjunctions: list[list[Predicate]]) -> int:
    """Assert no file with a matching row is pruned in any mode; returns how many files the full mode pruned."""
    truth = ground_truth(con, table, conjunctions)
    failures: list[str] = []
    pruned = 0
    for ps, matching in zip(conjunctions, truth, strict=True):
        for mode, strip in MODES.items():
            kept, dropped = prune([strip(c) for c in table.candidates], ps, table.columns)
            wrong = matching - set(kept)
            if wrong:
                failures.append(f"{table.name} [{mode}] {[to_sql(p) for p in ps]} pruned matching files {wrong}")
            if mode == "full":
                pruned += len(dropped)
    assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} failures)"
    return pruned


# ----- the lake ------------------------------------------------------------------------------------------------

MIXED = {"i": "INTEGER", "b": "BIGINT", "u": "UINTEGER", "ub": "UBIGINT", "f": "FLOAT", "x": "DOUBLE",
         "dec": "DECIMAL(18,3)", "dec2": "DECIMAL(30,4)", "dt": "DATE", "ts": "TIMESTAMP", "tz": "TIMESTAMPTZ",
         "tsns": "TIMESTAMP_NS", "s": "VARCHAR", "bo": "BOOLEAN", "bl": "BLOB"}
WORDS = ["", "a", "Grüße", "世界", "🦆 duck", "zebra", "apple pie", "z" * 300 + "x", "é" * 200, "b" * 255 + "éé",
         "q" * 256 + "z", "'quoted'", "NULL"]


def mixed_value(col: str, k: int, rng: random.Random) -> str | None:
    """Text of a random value of column `col` for the k-th file (ranges drift with k so files differ)."""
    if rng.random() < 0.12 or (k % 7 == 3 and col in ("x", "s", "tz")):
        return None
    special = rng.random() < 0.08
    if col == "i":
        return str(rng.choice([-2**31, 2**31 - 1]) if special else rng.randint(k * 100, k * 100 + 150))
    if col == "b":
        return str(rng.randint(k, k + 3) * 10**12 + rng.randint(-5, 5))
    if col == "u":
        return str(rng.randint(k * 1000, k * 1000 + 2000))
    if col == "ub":
        return str(rng.choice([0, 2**64 - 1, 2**63]) if special else rng.randint(0, 2**64 - 1) >> (k % 40))
    if col in ("f", "x"):
        if k % 11 == 5:
            return "nan"
        if special:
            return rng.choice(["nan", "inf", "-inf", "-0.0", "0.0", "1e+30"])
        return repr(rng.uniform(k, k + 2) / 3)
    if col == "dec":
        return str(Decimal(rng.randint(k * 1000, k * 1000 + 3000)) / 1000)
    if col == "dec2":
        return str(Decimal(rng.randint(-10**29, 10**29)) / 10**4 if special else Decimal(rng.randint(0, 10**6)) / 100)
    if col == "dt":
        return str(dt.date(2020, 1, 1) + dt.timedelta(days=k * 20 + rng.randint(0, 30)))
    base = dt.datetime(2020, 1, 1) + dt.timedelta(days=k, seconds=rng.randint(0, 200_000),
                                                  microseconds=rng.choice([0, rng.randint(0, 999_999)]))
    if col == "ts":
        return str(base)
    if col == "tz":
        return base.strftime("%Y-%m-%d %H:%M:%S.%f") + rng.choice(["+00", "+05:30", "-08"])
    if col == "tsns":
        return base.strftime("%Y-%m-%d %H:%M:%S.") + f"{rng.randint(0, 10**9 - 1):09d}"
    if col == "s":
        words = WORDS if k % 3 else [w for w in WORDS if w.isascii()]  # long non-ASCII text drops all stats
        return rng.choice(words) + (chr(97 + k % 26) * rng.randint(0, 3) if rng.random() < 0.7 else "")
    if col == "bo":
        return "true" if k % 5 == 0 else rng.choice(["true", "false"])
    return "".join(f"\\x{rng.randrange(256):02X}" for _ in range(rng.randint(0, 5)))


def build_custom(con: duckdb.DuckDBPyConnection) -> None:
    rng = random.Random(SEED)
    q = con.execute
    q("CREATE TABLE lake.days (d DATE, id INTEGER, v VARCHAR)")
    q("ALTER TABLE lake.days SET PARTITIONED BY (d)")
    q("INSERT INTO lake.days SELECT DATE '2024-01-01' + (i // 11)::INTEGER, i, 'v' || i FROM range(1100) r(i)")
    q("CREATE TABLE lake.cal (ts TIMESTAMP, id INTEGER)")
    q("ALTER TABLE lake.cal SET PARTITIONED BY (year(ts), month(ts), day(ts))")
    q("INSERT INTO lake.cal SELECT TIMESTAMP '2023-12-01 00:00:00' + INTERVAL (i * 97) MINUTE, i "
      "FROM range(1500) r(i)")
    q("CREATE TABLE lake.ordered (id BIGINT, x DOUBLE, s VARCHAR, amount DECIMAL(10,2))")
    start = 0
    for _ in range(60):
        n = rng.randint(11, 25)
        q(f"INSERT INTO lake.ordered SELECT i, i * 0.5, printf('k%06d', i), (i / 4)::DECIMAL(10,2) "
          f"FROM range({start}, {start + n}) r(i)")
        start += n
    q("CREATE TABLE lake.bucketed (id BIGINT, s VARCHAR, d DATE)")
    q("ALTER TABLE lake.bucketed SET PARTITIONED BY (bucket(4, id))")
    for k in range(5):
        q(f"INSERT INTO lake.bucketed SELECT i, 's' || i, DATE '2024-01-01' + i::INTEGER "
          f"FROM range({k * 40}, {k * 40 + 40}) r(i)")
    q("CREATE TABLE lake.bmulti (id INTEGER, s VARCHAR, d DATE, ts TIMESTAMP)")
    q("ALTER TABLE lake.bmulti SET PARTITIONED BY (bucket(5, s), bucket(3, d), bucket(2, ts))")
    q("INSERT INTO lake.bmulti SELECT i, 'ß' || (i % 17), DATE '2024-01-01' + (i % 11)::INTEGER, "
      "TIMESTAMP '2024-01-01' + INTERVAL (i % 7) SECOND FROM range(300) r(i)")
    q("CREATE TABLE lake.mixed (" + ", ".join(f"{c} {t}" for c, t in MIXED.items()) + ")")
    for k in range(30):
        rows = []
        for _ in range(rng.randint(11, 30)):
            vals = [mixed_value(c, k, rng) for c in MIXED]
            rows.append("(" + ", ".join("NULL" if v is None else f"CAST({sql_str(v)} AS {t})"
                                        for v, t in zip(vals, MIXED.values(), strict=True)) + ")")
        q("INSERT INTO lake.mixed VALUES " + ", ".join(rows))
    # calendar keys of a TIMESTAMPTZ are computed in the writer's zone
    q("SET TimeZone = 'America/New_York'")
    q("CREATE TABLE lake.tzp (tz TIMESTAMPTZ, id INTEGER)")
    q("ALTER TABLE lake.tzp SET PARTITIONED BY (year(tz), month(tz), day(tz), hour(tz))")
    q("INSERT INTO lake.tzp SELECT TIMESTAMPTZ '2023-12-31 20:00:00+00' + INTERVAL (i * 17) MINUTE, i "
      "FROM range(400) r(i)")
    q("CREATE TABLE lake.tzb (tz TIMESTAMPTZ, id INTEGER)")
    q("ALTER TABLE lake.tzb SET PARTITIONED BY (bucket(3, tz), tz)")
    q("INSERT INTO lake.tzb SELECT TIMESTAMPTZ '2023-12-31 20:00:00+00' + INTERVAL (i * 7) HOUR, i FROM range(40) r(i)")
    q("SET TimeZone = 'UTC'")
    # calendar keys of ±infinity are NULL
    q("CREATE TABLE lake.yinf (d DATE, ts TIMESTAMP, id INTEGER)")
    q("ALTER TABLE lake.yinf SET PARTITIONED BY (year(d), month(ts))")
    q("INSERT INTO lake.yinf SELECT CASE i % 4 WHEN 0 THEN 'infinity'::DATE WHEN 1 THEN '-infinity'::DATE "
      "WHEN 2 THEN NULL ELSE DATE '2024-01-01' + (i * 9)::INTEGER END, CASE i % 3 WHEN 0 THEN 'infinity'::TIMESTAMP "
      "WHEN 1 THEN NULL ELSE TIMESTAMP '2024-05-05' + INTERVAL (i) DAY END, i FROM range(80) r(i)")
    # spec evolution and type promotion: each file keeps the spec (and physical type) it was written with
    q("CREATE TABLE lake.evolve (id INTEGER, f FLOAT, ts TIMESTAMP)")
    q("ALTER TABLE lake.evolve SET PARTITIONED BY (year(ts))")
    q("INSERT INTO lake.evolve SELECT i, (i + 19) / 3, TIMESTAMP '2022-11-01' + INTERVAL (i * 5) DAY "
      "FROM range(40) r(i)")
    q("ALTER TABLE lake.evolve SET PARTITIONED BY (bucket(3, id))")
    q("INSERT INTO lake.evolve SELECT i, (i + 19) / 3, TIMESTAMP '2024-01-01' + INTERVAL (i) HOUR "
      "FROM range(40, 80) r(i)")
    q("ALTER TABLE lake.evolve RESET PARTITIONED BY")
    q("ALTER TABLE lake.evolve ALTER COLUMN f SET DATA TYPE DOUBLE")
    q("ALTER TABLE lake.evolve ALTER COLUMN id SET DATA TYPE BIGINT")
    q("ALTER TABLE lake.evolve ADD COLUMN extra INTEGER")
    q("CREATE TABLE lake.promo (v UTINYINT, ts TIMESTAMP, id INTEGER)")
    q("ALTER TABLE lake.promo SET PARTITIONED BY (bucket(4, v), bucket(3, ts))")
    q("INSERT INTO lake.promo SELECT i * 3, TIMESTAMP '2024-01-01' + INTERVAL (i) HOUR, i FROM range(80) r(i)")
    q("ALTER TABLE lake.promo ALTER COLUMN v SET DATA TYPE INTEGER")
    q("ALTER TABLE lake.promo ALTER COLUMN ts SET DATA TYPE TIMESTAMPTZ")
    q("INSERT INTO lake.promo SELECT i * 3 - 100, TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i * 2) HOUR, i "
      "FROM range(80) r(i)")
    q("INSERT INTO lake.evolve SELECT i, i / 7, TIMESTAMP '2025-01-01' + INTERVAL (i) MINUTE, i "
      "FROM range(80, 100) r(i)")


def build_custom_lake(root: Path, *more: str) -> Path:
    """The custom lake (plus `more` statements on `lake`) as a SQLite catalog under `root`; its path."""
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", root / "cat.sqlite", root / "data"))
        build_custom(con)
        for statement in more:
            con.execute(statement)
        con.execute("DETACH lake")
    finally:
        con.close()
    return root / "cat.sqlite"


@pytest.fixture(scope="module")
def custom(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LakeTable]:
    return load_tables(build_custom_lake(tmp_path_factory.mktemp("prune")))


@pytest.fixture(scope="module")
def duck() -> Any:
    con = oracle_connect()
    yield con
    con.close()


# ----- differential soundness ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["days", "cal", "ordered", "bucketed", "bmulti", "mixed", "tzp", "tzb", "yinf",
                                  "evolve", "promo"])
def test_sound_on_duckdb_lake(custom: dict[str, LakeTable], duck: duckdb.DuckDBPyConnection, name: str) -> None:
    table = custom[name]
    rng = random.Random(f"{SEED}-{name}")
    preds = gen_predicates(duck, table, rng)
    singles = [[p] for p in preds]
    multi = [rng.sample(preds, 3) for _ in range(100)]
    pruned = check_sound(duck, table, singles + multi)
    assert len(preds) > 100
    if len(table.candidates) > 4 and name != "tzp":
        assert pruned > len(singles)  # not a keep-everything implementation


def test_sound_on_partitioned_scenario(tmp_path: Path, duck: duckdb.DuckDBPyConnection) -> None:
    build_lake("sqlite", tmp_path / "cat.sqlite", tmp_path / "data", "partitioned")
    tables = load_tables(tmp_path / "cat.sqlite")
    assert set(tables) == {"pi", "pym", "pdh", "pb"}
    rng = random.Random(SEED)
    for table in tables.values():
        preds = gen_predicates(duck, table, rng, per_column=6)
        check_sound(duck, table, [[p] for p in preds])


# ----- strength in the clear cases -----------------------------------------------------------------------------

def test_identity_day_partitions_keep_one_file(custom: dict[str, LakeTable]) -> None:
    t = custom["days"]
    assert len(t.candidates) == 100
    by_day = {str(c.partition_values[0]): c.data_file_id for c in t.candidates}
    rng = random.Random(SEED)
    for day in rng.sample(sorted(by_day), 15):
        d = dt.date.fromisoformat(day)
        for lit in (d, d.isoformat(), dt.datetime(d.year, d.month, d.day)):
            for strip in MODES.values():
                kept, pruned = prune([strip(c) for c in t.candidates], [Predicate("d", "=", (lit,))], t.columns)
                assert kept == [by_day[day]]
                assert len(pruned) == 99
    lo, hi = dt.date(2024, 2, 10), dt.date(2024, 2, 19)
    kept, _ = prune(t.candidates, [Predicate("D", "between", (lo, hi))], t.columns)
    assert sorted(kept) == sorted(by_day[d.isoformat()] for d in (lo + dt.timedelta(days=i) for i in range(10)))
    kept, _ = prune(t.candidates, [Predicate("d", "in", (lo, hi, None))], t.columns)
    assert sorted(kept) == sorted([by_day[lo.isoformat()], by_day[hi.isoformat()]])


def test_calendar_partitions_bound_ranges(custom: dict[str, LakeTable], duck: duckdb.DuckDBPyConnection) -> None:
    t = custom["cal"]
    parts_only = [MODES["partitions"](c) for c in t.candidates]
    assert len(t.candidates) > 90
    conj = [[Predicate("ts", op, (dt.datetime(2024, 1, 15 + k),))] for k in range(5) for op in (">=", "<", "=")]
    for ps, truth in zip(conj, ground_truth(duck, t, conj), strict=True):
        kept = prune(parts_only, ps, t.columns)[0]
        assert set(kept) == truth if ps[0].op != "=" else truth <= set(kept) and len(kept) == 1
    between = [Predicate("ts", "between", (dt.datetime(2023, 12, 30, 5), dt.datetime(2024, 1, 2, 1)))]
    kept = prune(parts_only, between, t.columns)[0]
    assert ground_truth(duck, t, [between])[0] <= set(kept) and len(kept) == 4


def test_ordered_between_keeps_overlapping_files(custom: dict[str, LakeTable]) -> None:
    t = custom["ordered"]
    assert len(t.candidates) == 60
    bounds = {c.data_file_id: (int(c.stats[1].min_value or 0), int(c.stats[1].max_value or 0)) for c in t.candidates}
    rng = random.Random(SEED)
    top = max(hi for _, hi in bounds.values())
    for _ in range(50):
        a = rng.randint(-10, top + 10)
        b = a + rng.randint(0, 60)
        kept, _ = prune(t.candidates, [Predicate("id", "between", (a, b))], t.columns)
        assert kept == [f for f, (lo, hi) in bounds.items() if hi >= a and lo <= b]
        kept, _ = prune(t.candidates, [Predicate("amount", ">", (Decimal(a) / 4,))], t.columns)
        assert kept == [f for f, (_, hi) in bounds.items() if Decimal(hi) / 4 > Decimal(a) / 4]
        key = f"k{a:06d}"
        kept, _ = prune(t.candidates, [Predicate("s", "=", (key,))], t.columns)
        assert kept == [f for f, (lo, hi) in bounds.items() if lo <= a <= hi]


def test_bucket_partitions_keep_matching_bucket(custom: dict[str, LakeTable]) -> None:
    t = custom["bucketed"]
    parts_only = [MODES["partitions"](c) for c in t.candidates]
    for ident in range(0, 200, 7):
        kept, _ = prune(parts_only, [Predicate("id", "=", (ident,))], t.columns)
        bucket = (murmur3_32(ident.to_bytes(8, "little", signed=True)) & 0x7FFFFFFF) % 4
        assert kept == [c.data_file_id for c in t.candidates if c.partition_values[0] == str(bucket)]
        assert len(kept) == 5  # one file per insert
        loose, _ = prune([MODES["partitions-untyped"](c) for c in t.candidates], [Predicate("id", "=", (ident,))],
                         t.columns)
        assert set(kept) <= set(loose) and len(loose) <= 10  # the uint text hash may name a second bucket


# ----- murmur3 and bucket hashing against DuckDB ---------------------------------------------------------------

def test_murmur3_vectors(duck: duckdb.DuckDBPyConnection) -> None:
    assert murmur3_32((1).to_bytes(8, "little")) == 1392991556
    assert murmur3_32(b"iceberg") == 1210000089
    assert murmur3_32((17486).to_bytes(8, "little")) == -653330422  # DATE '2017-11-16'
    assert murmur3_32(b"") == 0
    rng = random.Random(SEED)
    for n in list(range(13)) + [31, 64, 257]:
        data = bytes(rng.randrange(256) for _ in range(n))
        hexed = "".join(f"\\x{b:02X}" for b in data)
        assert murmur3_32(data) == duck.execute(f"SELECT murmur3_32('{hexed}'::BLOB)").fetchone()[0]  # type: ignore[index]


BUCKET_TYPES = {
    "TINYINT": "(i - 20)", "SMALLINT": "i * 999 - 20000", "INTEGER": "i * 100003 - 2000000",
    "BIGINT": "i * 10000000019 - 200000000000", "UTINYINT": "i * 5", "UINTEGER": "i * 100000007",
    "UBIGINT": "i::UBIGINT * 450000000000000017", "VARCHAR": "'s' || i || 'é🦆'",
    "DATE": "DATE '1969-12-01' + (i * 37)::INTEGER",
    "TIMESTAMP": "TIMESTAMP '1969-12-31 23:00:00' + INTERVAL (i * 3601001) MILLISECOND",
    "TIMESTAMPTZ": "TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i * 3601) SECOND",
    "TIMESTAMP_S": "TIMESTAMP '2024-01-01' + INTERVAL (i * 61) SECOND",
    "TIMESTAMP_MS": "TIMESTAMP '2024-01-01 00:00:00.123' + INTERVAL (i) SECOND",
    "TIMESTAMP_NS": "('2024-01-01 00:00:00.' || lpad((i * 123456789)::VARCHAR, 9, '0'))::TIMESTAMP_NS",
    "BOOLEAN": "i % 2 = 0", "DECIMAL(4,1)": "i * 2.5 - 20", "DECIMAL(10,2)": "i * 1.25 - 10",
    "DECIMAL(18,3)": "i * 1234.567 - 9999", "DECIMAL(30,3)": "i * 1.125 - 10",
    "DECIMAL(38,10)": "i * 0.0000001 - 0.000002",
    "FLOAT": "CASE WHEN i = 3 THEN '-0.0'::DOUBLE WHEN i = 4 THEN 'inf'::DOUBLE ELSE i / 4 - 2 END",
    "DOUBLE": "CASE WHEN i = 3 THEN '-0.0'::DOUBLE WHEN i = 4 THEN '-inf'::DOUBLE ELSE i / 3 - 2 END",
}


def test_bucket_hash_matches_duckdb_per_type(tmp_path: Path, duck: duckdb.DuckDBPyConnection) -> None:
    duck.execute(attach_clause("sqlite", tmp_path / "cat.sqlite", tmp_path / "data", alias="bk"))
    try:
        for k, (typ, expr) in enumerate(BUCKET_TYPES.items()):
            duck.execute(f"CREATE TABLE bk.t{k} (id INTEGER, v {typ})")
            duck.execute(f"ALTER TABLE bk.t{k} SET PARTITIONED BY (bucket(7, v))")
            duck.execute(f"INSERT INTO bk.t{k} SELECT i, CASE WHEN i = 40 THEN NULL ELSE ({expr})::{typ} END "
                         "FROM range(41) r(i)")
    finally:
        duck.execute("DETACH bk")
    tables = load_tables(tmp_path / "cat.sqlite")
    for k, typ in enumerate(BUCKET_TYPES):
        t = tables[f"t{k}"]
        col = t.columns["v"]
        parts_only = [MODES["partitions"](c) for c in t.candidates]
        texts = [r[0] for r in duck.execute(f"SELECT DISTINCT CAST(v AS VARCHAR) FROM {scan_sql(t)}").fetchall()]
        assert len(t.candidates) == (3 if typ == "BOOLEAN" else 8)
        kept, _ = prune(parts_only, [Predicate("v", "is_null")], t.columns)
        assert len(kept) == 1
        texts = [x for x in texts if x is not None]
        preds = [Predicate("v", "=", (from_text(text, col.type),)) for text in texts]
        untyped = [MODES["partitions-untyped"](c) for c in t.candidates]
        for text, pred, truth in zip(texts, preds, ground_truth(duck, t, [[p] for p in preds]), strict=True):
            kept, _ = prune(parts_only, [pred], t.columns)
            loose, _ = prune(untyped, [pred], t.columns)
            full, _ = prune(t.candidates, [pred], t.columns)
            assert truth and truth <= set(full) <= set(kept) <= set(loose), (typ, text)
            # TIMESTAMP_NS: an engine reading microseconds may match rows of other buckets, so no bucket pruning
            assert len(kept) == (7 if typ == "TIMESTAMP_NS" else 1), (typ, text, kept)
            # without written types: a signed int may have been hashed as uint text, a TIMESTAMPTZ as TIMESTAMP
            assert len(loose) <= (7 if typ in ("TIMESTAMP_NS", "TIMESTAMPTZ") else 2 if "INT" in typ else 1)


# ----- hand-made corner cases ----------------------------------------------------------------------------------

def _col(name: str, typ: str, cid: int = 1) -> ColumnInfo:
    return ColumnInfo(cid, name, typ, True, None, None, None, None, cid, 1)


def _cand(lo: str | None, hi: str | None, nulls: int | None = 0, values: int | None = 5, nan: bool | None = None,
          **parts: Any) -> Candidate:
    fields = tuple(PartitionField(i, 1, t) for i, t in enumerate(parts))
    return Candidate(7, {1: FileStats(1, lo, hi, nulls, values, nan)}, dict(enumerate(parts.values())), fields)


def test_corner_cases() -> None:
    def keep(c: Candidate, typ: str, op: Op, *vals: Any) -> bool:
        return keep_file(c, [Predicate("c", op, vals)], {"c": _col("c", typ)})

    c = _cand("10", "20")
    assert not keep(c, "int32", "=", None) and not keep(c, "int32", "in", None, None)
    assert keep(c, "int32", "in", None, 15) and not keep(c, "int32", "in", None, 25)
    assert not keep(c, "int32", "is_null") and keep(c, "int32", "is_not_null")
    assert keep(c, "int32", ">", 19.5) and not keep(c, "int32", ">", 20) and keep(c, "int32", ">=", 20)
    assert keep(c, "int32", "=", "15") and keep(c, "int32", "=", "1e1") and keep(c, "int32", "=", True)
    assert not keep(c, "int32", "between", 21, 30) and not keep(c, "int32", "between", 30, 20)
    assert keep(c, "blob", "=", "zz") and keep(c, "int128", "=", 99) and keep(c, "uuid", "is_null")
    assert keep_file(c, [Predicate("other", "=", (1,))], {"c": _col("c", "int32")})
    assert keep(Candidate(7, {}, {}, ()), "int32", "=", 99)  # no stats row: unknown
    assert not keep(_cand(None, None, nulls=5, values=0), "int32", ">", 0)  # all NULL
    assert keep(_cand(None, None, nulls=None, values=None), "int32", "is_null")
    # floats: NaN sorts above everything, min/max exclude it
    f = _cand("0.0", "1.5", nan=True)
    assert keep(f, "float64", ">", 100.0) and keep(f, "float64", "=", float("nan"))
    assert not keep(f, "float64", "<", -1.0) and not keep(f, "float64", "=", 2.0)
    g = _cand("0.0", "1.5", nan=False)
    assert not keep(g, "float64", ">", 100.0) and not keep(g, "float64", "=", float("nan"))
    assert keep(_cand("0.0", "1.5", nan=None), "float64", ">", 100.0)
    assert not keep(g, "float64", "in", float("nan"), 7.0) and keep(g, "float64", "in", float("nan"), 1.0)
    # a float32 file under a float64 column (promotion): shortest float32 text must not over-narrow
    assert keep(_cand("6.3333335", "9.0"), "float64", "<", 6.3333335)
    assert keep(_cand("0.1", "0.1"), "float32", "=", 0.1) and keep(_cand("0.1", "0.1"), "float64", ">", 0.1000000001)
    # varchar max may be a truncated prefix; bytewise (code point) order
    s = _cand("a", "b" * 256)
    assert keep(s, "varchar", "=", "b" * 300) and keep(s, "varchar", ">", "b" * 257)
    assert not keep(s, "varchar", "=", "c") and not keep(s, "varchar", "<", "a")
    assert not keep(_cand("a", "z"), "varchar", "=", "é")  # U+00E9 sorts after 'z'
    # timestamptz: compare instants; naive literal = UTC
    t = _cand("2024-01-01 10:00:00+00", "2024-01-01 12:00:00+00")
    east = dt.timezone(dt.timedelta(hours=5))
    assert keep(t, "timestamptz", "=", dt.datetime(2024, 1, 1, 16, tzinfo=east))
    assert not keep(t, "timestamptz", "=", dt.datetime(2024, 1, 1, 13, tzinfo=east))
    assert keep(t, "timestamptz", "=", dt.datetime(2024, 1, 1, 11)) and keep(t, "timestamptz", "<", "2024-01-01 11:00")
    assert not keep(t, "timestamptz", ">", "2024-01-01 13:00:00+01")
    assert keep(t, "timestamptz", ">=", "2024-01-01 13:00+01")
    assert keep(_cand("2024-01-01 10:00:00", "2024-01-01 12:00:00"), "timestamptz", "=", "2024-01-01 10:00")  # no zone
    # dates vs timestamps and strings
    d = _cand("2024-01-01", "2024-01-31")
    assert keep(d, "date", "=", "2024-01-31") and not keep(d, "date", "=", "2024-02-01")
    assert keep(d, "date", "<=", dt.datetime(2024, 1, 1, 12)) and keep(d, "date", "=", dt.datetime(2024, 1, 31, 12))
    assert keep(d, "date", "=", "2024/01/05") and keep(d, "date", "=", 20240105)
    assert keep(_cand("infinity", "infinity"), "date", ">", dt.date(2024, 1, 1))
    # TIMESTAMP_NS may be read at microsecond precision: widen to whole microseconds
    ns = _cand("2024-01-01 00:00:00.123456789", "2024-01-01 00:00:00.123456789")
    assert keep(ns, "timestamp_ns", "=", dt.datetime(2024, 1, 1, 0, 0, 0, 123456))
    assert keep(ns, "timestamp_ns", ">", "2024-01-01 00:00:00.1234567891"[:29])
    assert not keep(ns, "timestamp_ns", ">", "2024-01-01 00:00:00.123457")
    # partition keys: identity NULL = all NULL; calendar NULL may be ±infinity
    p = _cand(None, None, nulls=None, values=None, identity=None)
    assert not keep(p, "int32", "is_not_null") and not keep(p, "int32", "=", 1) and keep(p, "int32", "is_null")
    y = _cand(None, None, nulls=None, values=None, year=None)
    assert keep(y, "date", "is_not_null") and keep(y, "date", ">", dt.date(2024, 1, 1))
    y = Candidate(7, {}, {0: "2023"}, (PartitionField(0, 1, "year"),))
    assert not keep(y, "date", ">=", dt.date(2024, 1, 1)) and keep(y, "date", "<", dt.date(2023, 1, 2))
    assert not keep(y, "date", "is_null") and keep(y, "timestamptz", ">=", "2024-01-01 00:00+00")
    assert not keep(y, "date", "<", "2023-01-01T00:00") and keep(y, "date", "<=", "2023-01-01T00:00")


def test_prune_preserves_order_and_speed() -> None:
    cands = [Candidate(i, {1: FileStats(1, str(i * 10), str(i * 10 + 9), 0, 10, None)}, {}, ()) for i in range(2000)]
    start = time.perf_counter()
    kept, pruned = prune(cands, [Predicate("c", ">=", (15000,)), Predicate("c", "<", (15100,))],
                         {"c": _col("c", "int64")})
    assert kept == list(range(1500, 1510)) and pruned == [i for i in range(2000) if not 1500 <= i < 1510]
    assert time.perf_counter() - start < 2


def test_duckdb_facts_the_pruner_relies_on(custom: dict[str, LakeTable]) -> None:
    # varchar stats are cut to 256 bytes, the max with its last byte incremented
    maxes = [c.stats[13].max_value for c in custom["mixed"].candidates if c.stats[13].max_value]
    assert "z" * 255 + "{" in maxes
    # calendar keys of a TIMESTAMPTZ follow the writer's TimeZone (New York here), not UTC
    first = min(custom["tzp"].candidates, key=lambda c: c.data_file_id)
    assert first.stats[1].min_value == "2023-12-31 20:00:00+00"
    assert dict(first.partition_values) == {0: "2023", 1: "12", 2: "31", 3: "15"}
    # year(±infinity) is NULL: a NULL calendar key does not mean NULL values
    inf = [c for c in custom["yinf"].candidates if c.partition_values.get(0) is None]
    assert any((c.stats[1].value_count or 0) > 0 for c in inf)
