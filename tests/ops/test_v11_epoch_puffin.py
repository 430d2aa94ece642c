"""DuckLake 1.1's epoch partition transforms and multi-snapshot Puffin deletion vectors (spec versions §3.6, §3.7),
on catalogs made 1.1 by `create-catalog --format-version 1.1`: a hand-built three-blob container read at every
snapshot (scan, count, change feed), our own Puffin writes, epoch keys computed as DuckDB 2.0's `date_diff`, files
partitioned by hand read and pruned, our writer's keys and directories, and the 1.0 refusals that change nothing."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ducklake_cli import api
from ducklake_cli.catalog.partitions import EPOCH, epoch_of, epoch_part
from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.engine.planning.predicates import Predicate
from ducklake_cli.errors import UnsupportedVersionError
from ducklake_cli.ops.create import create_catalog
from ducklake_cli.storage.deletion_vector import build_puffin, read_deletion_vectors
from tests.support.catalog_dump import run_sql
from tests.support.duckdb2 import duckdb2_python
from tests.support.v11 import v10_shape_problems

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

UNITS = {"epoch_year": "year", "epoch_month": "month", "epoch_day": "day", "epoch_hour": "hour"}
TIMESTAMPS = ["2024-03-15 13:45:00", "1968-12-31 23:59:59", "1969-12-31 23:30:00", "1969-12-31 23:59:59.999999",
              "1970-01-01 00:00:00", "2024-02-29 23:59:59.999999", "2000-02-29 12:00:00", "1900-03-01 00:00:00",
              "2017-11-16 22:31:08", "0900-06-30 05:00:00"]
DATES = ["2024-03-15", "1969-01-15", "1969-12-31", "1968-02-29", "1970-01-01", "2024-02-29", "1600-01-01"]
# Instants around the DST changes of New York and Berlin, with offsets, read under either session zone.
INSTANTS = ["2024-03-10 01:30:00-05", "2024-03-10 03:30:00-04", "2024-11-03 01:30:00-04", "2024-11-03 01:30:00-05",
            "2024-03-31 01:59:59+01", "2024-03-31 03:00:00+02", "2024-10-27 02:30:00+02", "2024-10-27 02:30:00+01",
            "1969-12-31 20:30:00-05", "2023-12-31 23:30:00-01"]
NANOS = ["1969-12-31 23:59:59.9999999", "1969-12-31 23:59:59.999999999", "2024-03-15 13:45:00.000000001",
         "1970-01-01 00:00:00.000000999"]


# ----- values as DuckDB 2.0 computes them ---------------------------------------------------------------------------

def _duckdb2_values() -> dict[str, Any]:
    """`date_diff(unit, epoch, v)` in DuckDB 2.0.1 for every list (TIMESTAMPTZ: its UTC instant, under two session
    zones; TIMESTAMP_NS: floored to microseconds first), NULL included."""
    script = r"""
import json, sys, duckdb
spec = json.loads(sys.stdin.read())
con = duckdb.connect()
out = {}
units = spec["units"]
def diff(expr, start):
    return [con.execute("SELECT " + ", ".join(f"date_diff('{u}', {start}, {expr.format(v=v)})" for u in units)
                        ).fetchone() for v in spec["values"][kind]]
for kind, expr, start in (("ts", "TIMESTAMP '{v}'", "TIMESTAMP '1970-01-01'"),
                          ("date", "DATE '{v}'", "DATE '1970-01-01'"),
                          ("ns", "make_timestamp(CAST(floor(epoch_ns(TIMESTAMP_NS '{v}') / 1000) AS BIGINT))",
                           "TIMESTAMP '1970-01-01'")):
    out[kind] = diff(expr, start)
for zone in ("America/New_York", "Europe/Berlin"):
    con.execute(f"SET TimeZone = '{zone}'")
    kind = "tz"
    out["tz " + zone] = diff("CAST(TIMESTAMPTZ '{v}' AT TIME ZONE 'UTC' AS TIMESTAMP)", "TIMESTAMP '1970-01-01'")
out["null"] = con.execute("SELECT " + ", ".join(f"date_diff('{u}', DATE '1970-01-01', NULL::DATE)" for u in units)
                          ).fetchone()
print(json.dumps(out))
"""
    spec = {"units": list(UNITS.values()),
            "values": {"ts": TIMESTAMPS, "date": DATES, "ns": NANOS, "tz": INSTANTS}}
    done = subprocess.run([str(duckdb2_python()), "-c", script], input=json.dumps(spec), capture_output=True,
                          text=True, check=True, timeout=300)
    return json.loads(done.stdout)


def _instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text + ":00" if len(text.rsplit("-", 1)[-1]) == 2 and text[-3] in "+-"
                                     else text)


def _ns(text: str) -> int:
    head, _, frac = text.partition(".")
    whole = dt.datetime.fromisoformat(head).replace(tzinfo=dt.UTC)
    return int(whole.timestamp()) * 1_000_000_000 + int(frac.ljust(9, "0") or 0)


@pytest.fixture(scope="module")
def duck2() -> dict[str, Any]:
    """DuckDB 2.0's values, computed once."""
    return _duckdb2_values()


def test_epoch_values_equal_duckdb2(duck2: dict[str, Any]) -> None:
    """Known vectors, then every value (before 1970, leap days, DST edges in two zones, nanoseconds) as DuckDB 2.0's
    `date_diff`, from the Python function and the executors' Arrow code alike."""
    import pyarrow as pa

    from ducklake_cli.engine.parquet_files import epoch_values

    assert [epoch_of(dt.datetime(2024, 3, 15, 13, 45), t) for t in EPOCH] == [54, 650, 19797, 475141]
    assert [epoch_of(dt.datetime(1968, 12, 31, 23, 59, 59), t) for t in EPOCH] == [-2, -13, -366, -8761]
    assert [epoch_of(dt.date(1969, 1, 15), "epoch_day"), epoch_of(dt.datetime(2020, 1, 1), "epoch_year"),
            epoch_of(dt.datetime(2020, 1, 1), "epoch_month")] == [-351, 50, 600]
    assert duck2["null"] == [None] * 4 and epoch_of(None, "epoch_day") is None
    ts = [dt.datetime.fromisoformat(v) for v in TIMESTAMPS]
    dates = [dt.date.fromisoformat(v) for v in DATES]
    instants = [_instant(v) for v in INSTANTS]
    for i, t in enumerate(EPOCH):
        assert [epoch_of(v, t) for v in ts] == [row[i] for row in duck2["ts"]], t
        assert [epoch_of(v, t) for v in dates] == [row[i] for row in duck2["date"]], t
        for zone in ("America/New_York", "Europe/Berlin"):
            assert [epoch_of(v, t) for v in instants] == [row[i] for row in duck2["tz " + zone]], (t, zone)
        assert [epoch_part(_ns(v), t) for v in NANOS] == [row[i] for row in duck2["ns"]], t
        arrow = {
            "ts": epoch_values(pa.array([*ts, None], pa.timestamp("us")), t).to_pylist(),
            "date": epoch_values(pa.array([*dates, None], pa.date32()), t).to_pylist(),
            "tz": epoch_values(pa.array([*instants, None], pa.timestamp("us", tz="America/New_York")), t).to_pylist(),
            "ns": epoch_values(pa.array([_ns(v) for v in NANOS], pa.int64()).cast(pa.timestamp("ns")), t).to_pylist(),
        }
        assert arrow["ts"] == [*(row[i] for row in duck2["ts"]), None], t
        assert arrow["date"] == [*(row[i] for row in duck2["date"]), None], t
        assert arrow["tz"] == [*(row[i] for row in duck2["tz Europe/Berlin"]), None], t
        assert arrow["ns"] == [row[i] for row in duck2["ns"]], t


@pytest.mark.parametrize(("col_type", "transform", "key", "pred", "keep"), [
    ("timestamp", "epoch_day", "19797", Predicate("ts", "=", ("2024-03-15 23:59:59.999999",)), True),
    ("timestamp", "epoch_day", "19797", Predicate("ts", "=", ("2024-03-16 00:00:00",)), False),
    ("timestamp", "epoch_day", "-1", Predicate("ts", ">=", (dt.datetime(1970, 1, 1),)), False),
    ("timestamp", "epoch_day", "-1", Predicate("ts", "<", (dt.datetime(1969, 12, 31, 0, 0, 1),)), True),
    ("timestamp", "epoch_month", "-13", Predicate("ts", "between", ("1968-12-01", "1968-12-31 23:59:59")), True),
    ("timestamp", "epoch_month", "-13", Predicate("ts", ">", ("1968-12-31 23:59:59.999999",)), False),
    ("timestamp", "epoch_year", "54", Predicate("ts", "in", ("2023-12-31 23:59:59", "2025-01-01")), False),
    ("timestamp", "epoch_hour", "475141", Predicate("ts", "<", ("2024-03-15 13:00:00",)), False),
    ("timestamp", "epoch_hour", "475141", Predicate("ts", "<=", ("2024-03-15 13:00:00",)), True),
    ("date", "epoch_hour", "-24", Predicate("ts", "=", (dt.date(1969, 12, 31),)), True),
    ("date", "epoch_hour", "-24", Predicate("ts", "=", (dt.date(1970, 1, 1),)), False),
    ("date", "epoch_day", "-351", Predicate("ts", ">", (dt.date(1969, 1, 15),)), False),
    ("timestamp_ns", "epoch_day", "-1", Predicate("ts", ">=", ("1970-01-01 00:00:00",)), True),  # µs readers
    ("timestamptz", "epoch_day", "19797", Predicate("ts", "=", ("2024-03-16 00:30:00+01",)), True),
    ("timestamptz", "epoch_day", "19797", Predicate("ts", "=", ("2024-03-16 00:30:00+00",)), False),
])
def test_epoch_keys_prune(col_type: str, transform: str, key: str, pred: Predicate, keep: bool) -> None:
    """A file's epoch key is a range of its column (TIMESTAMPTZ: of UTC instants, when written as TIMESTAMPTZ)."""
    from ducklake_cli.catalog.models import ColumnInfo, PartitionField
    from ducklake_cli.engine.planning.prune import Candidate, keep_file

    col = ColumnInfo(1, "ts", col_type, True, None, None, None, None, 0, 1)
    c = Candidate(7, {}, {0: key}, (PartitionField(0, 1, transform),), written_types={1: col_type})
    assert keep_file(c, [pred], {"ts": col}) is keep
    promoted = Candidate(7, {}, {0: key}, (PartitionField(0, 1, transform),), written_types={1: "timestamp"})
    assert keep_file(promoted, [pred], {"ts": col}) is (keep or col_type == "timestamptz")


def test_epoch_vocabulary() -> None:
    """`--partition-by` items, column checks and hive directory names of epoch transforms (repeated names:
    `<transform>_<column>`, then `_2`, as for calendar ones; an identity column named like a transform)."""
    from ducklake_cli.catalog.models import ColumnInfo
    from ducklake_cli.catalog.partitions import hive_key_names, parse_partition_by, resolve_partition
    from ducklake_cli.errors import UsageError

    got = parse_partition_by(["EPOCH_DAY(ts), year(ts)", "epoch_hour(`d`)"])
    assert [(r.column, r.transform) for r in got] == [("ts", "epoch_day"), ("ts", "year"), ("d", "epoch_hour")]
    cols = [ColumnInfo(1, "ts", "timestamp", True, None, None, None, None, 0, 1),
            ColumnInfo(2, "d", "date", True, None, None, None, None, 1, 1),
            ColumnInfo(3, "n", "int32", True, None, None, None, None, 2, 1)]
    assert resolve_partition(cols, got) == [(1, "epoch_day"), (1, "year"), (2, "epoch_hour")]
    with pytest.raises(UsageError, match="needs a date or timestamp column"):
        resolve_partition(cols, parse_partition_by(["epoch_year(n)"]))
    ns = [ColumnInfo(4, "t9", "timestamp_ns", True, None, None, None, None, 0, 1)]
    assert resolve_partition(ns, parse_partition_by(["epoch_month(t9)"])) == [(4, "epoch_month")]
    with pytest.raises(UsageError, match="epoch_year|epoch_month"):
        parse_partition_by(["epoch_week(ts)"])
    from ducklake_cli.engine.planning.dml_plan import parse_change

    ctas = parse_change("CREATE TABLE c PARTITIONED BY (epoch_day(ts), month(ts)) AS SELECT * FROM t")
    assert ctas.partition_by == ("epoch_day(ts)", "month(ts)")
    names = {1: "ts", 2: "epoch_year"}
    assert hive_key_names(names, [(1, "epoch_year"), (2, "identity")]) == ["epoch_year", "epoch_year_epoch_year"]
    assert hive_key_names(names, [(1, "epoch_day"), (1, "day"), (1, "epoch_day"), (1, "epoch_day")]) == [
        "epoch_day", "day", "epoch_day_ts", "epoch_day_ts_2"]


# ----- lakes ---------------------------------------------------------------------------------------------------

def _make(tmp_path: Path, version: str) -> tuple[Path, Path]:
    catalog, data = tmp_path / "cat.sqlite", tmp_path / "data"
    create_catalog(parse_catalog(str(catalog), must_exist=False), data_path=str(data), version=version)
    return catalog, data


@pytest.fixture
def lake11(tmp_path: Path) -> Iterator[tuple[api.Lake, Path, Path]]:
    """An empty 1.1 SQLite lake, without inlining."""
    catalog, data = _make(tmp_path, "1.1")
    with api.connect(str(catalog)) as lk:
        _set(lk, data_inlining_row_limit="0")
        yield lk, catalog, data


def _set(lk: api.Lake, **options: str) -> None:
    from ducklake_cli.ops.options import change_options

    change_options(lk, assignments=options)


def _ids(lk: api.Lake, snapshot: int | None = None, where: str = "") -> list[int]:
    sql = "SELECT id FROM t" + (f" WHERE {where}" if where else "")
    return sorted(r[0] for r in lk.sql(sql, snapshot=snapshot).collect())


def _count(lk: api.Lake, snapshot: int) -> int:
    from ducklake_cli.catalog.snapshots import SnapshotSelector
    from ducklake_cli.ops.query import run_query

    return int(run_query(lk, "SELECT count(*) FROM t", at=SnapshotSelector(snapshot)).rows[0][0])


def _delete_rows(catalog: Path) -> list[tuple[Any, ...]]:
    return run_sql(str(catalog), "SELECT delete_file_id, data_file_id, path, format, begin_snapshot, end_snapshot, "
                                 "partial_max, delete_count, footer_size, file_size_bytes, row_group_count "
                                 "FROM ducklake_delete_file ORDER BY delete_file_id")


def _table_of_ids(lk: api.Lake, spark: SparkSession, n: int = 100) -> int:
    df = spark.createDataFrame([(i, f"v{i}") for i in range(n)], "id INT, v STRING").coalesce(1)
    sid = lk.write(df, "t").snapshot_id
    assert sid is not None
    return sid


def _delete(lk: api.Lake, where: str) -> int:
    sid = lk.delete("t", where).snapshot_id
    assert sid is not None
    return sid


DELETES = ("id BETWEEN 10 AND 29", "id BETWEEN 40 AND 59", "id BETWEEN 70 AND 89 OR id = 5")


def _expected(snaps: list[int], at: int) -> list[int]:
    gone: set[int] = set()
    for where, s in zip(DELETES, snaps, strict=True):
        if s <= at:
            lo, hi = (int(x) for x in where.split(" OR ")[0].split()[2::2])
            gone |= set(range(lo, hi + 1)) | ({5} if "OR" in where else set())
    return [i for i in range(100) if i not in gone]


def _check_every_snapshot(lk: api.Lake, first: int, snaps: list[int]) -> None:
    for at in range(first, snaps[-1] + 1):
        want = _expected(snaps, at)
        assert _ids(lk, at) == want, at
        assert _count(lk, at) == len(want), at
    deleted = lk.table_deletions("t", first, snaps[-1]).select("snapshot_id", "id").collect()
    by_snapshot: dict[int, set[int]] = {}
    for r in deleted:
        by_snapshot.setdefault(int(r[0]), set()).add(int(r[1]))
    prev: list[int] = list(range(100))
    for s in snaps:
        now = _expected(snaps, s)
        assert by_snapshot.get(s) == set(prev) - set(now), s
        prev = now
    assert sorted(int(r[1]) for r in lk.table_deletions("t", snaps[1], snaps[1]).collect()) == list(range(40, 60))


@pytest.mark.spark
def test_hand_built_container_read_at_every_snapshot(lake11: tuple[api.Lake, Path, Path],
                                                     spark: SparkSession) -> None:
    """Three deletes in Parquet, then the delete file swapped for a Puffin container of three cumulative blobs (as
    DuckDB 2.0 writes it: begin = first blob, partial_max = last): every snapshot reads, counts and feeds the same."""
    lk, catalog, data = lake11
    first = _table_of_ids(lk, spark)
    snaps = [_delete(lk, where) for where in DELETES]
    _check_every_snapshot(lk, first, snaps)
    (row,) = _delete_rows(catalog)
    assert row[3] == "parquet" and row[10] == 1  # 1.1: a Parquet delete file's row groups
    table_dir = next(data.rglob(row[2])).parent
    data_path = run_sql(str(catalog), "SELECT path FROM ducklake_data_file")[0][0]
    blobs = [(s, _deleted_upto(snaps, s)) for s in snaps]
    payload, footer = build_puffin(blobs, str(table_dir / data_path))
    puffin = table_dir / "ducklake-hand-built-delete.puffin"
    puffin.write_bytes(payload)
    run_sql(str(catalog), "UPDATE ducklake_delete_file SET path = :p, format = 'puffin', begin_snapshot = :b, "
                          "partial_max = :m, delete_count = :c, footer_size = :f, file_size_bytes = :z, "
                          "row_group_count = NULL",
            params={"p": puffin.name, "b": snaps[0], "m": snaps[-1], "c": len(blobs[-1][1]), "f": footer,
                    "z": len(payload)})
    with api.connect(str(catalog)) as again:
        _check_every_snapshot(again, first, snaps)


def _deleted_upto(snaps: list[int], at: int) -> list[int]:
    return sorted(set(range(100)) - set(_expected(snaps, at)))


@pytest.mark.spark
def test_puffin_deletes_written_on_v11(lake11: tuple[api.Lake, Path, Path], spark: SparkSession) -> None:
    """With write_deletion_vectors on a 1.1 catalog: the first delete writes a bare vector, the next ones replace it
    with a multi-snapshot container (begin = first snapshot, partial_max = last, delete_count = last blob's,
    footer_size = payload + 16, row_group_count NULL); every snapshot reads as before; orphan cleanup keeps the
    live `.puffin` and removes the replaced ones once unreferenced."""
    lk, catalog, data = lake11
    _set(lk, write_deletion_vectors="true")
    first = _table_of_ids(lk, spark)
    snaps = [_delete(lk, DELETES[0])]
    (bare,) = _delete_rows(catalog)
    assert bare[3] == "puffin" and bare[2].endswith(".puffin") and bare[8] == 0 and bare[6] is None
    assert bare[10] is None and bare[4] == snaps[0] and bare[7] == 20
    assert next(data.rglob(bare[2])).read_bytes()[4:8] == b"\xd1\xd3\x39\x64"
    snaps += [_delete(lk, where) for where in DELETES[1:]]
    live = [r for r in _delete_rows(catalog) if r[5] is None]
    assert len(live) == 1
    row = live[0]
    assert (row[3], row[4], row[6], row[7], row[10]) == ("puffin", snaps[0], snaps[-1], 61, None)
    path = next(data.rglob(row[2]))
    vectors = read_deletion_vectors(str(path))
    assert vectors.snapshots == tuple(snaps)
    assert [list(p) for _, p in vectors.blobs] == [_deleted_upto(snaps, s) for s in snaps]
    raw = path.read_bytes()
    assert raw[:4] == b"PFA1" and row[8] == int.from_bytes(raw[-12:-8], "little") + 16 and row[9] == len(raw)
    _check_every_snapshot(lk, first, snaps)
    assert _rows_deleted(lk) == {snaps[0]: 20, snaps[1]: 20, snaps[2]: 21}
    from ducklake_cli.ops.verify import verify

    assert not verify(lk, deep=True).problems
    scheduled = [Path(p).name for (p,) in run_sql(str(catalog), "SELECT path FROM "
                                                                 "ducklake_files_scheduled_for_deletion")]
    assert bare[2] in scheduled and len([p for p in scheduled if p.endswith(".puffin")]) == 2  # replaced ones

    from ducklake_cli.ops.cleanup import plan_orphans

    stray = path.with_name("ducklake-stray-delete.puffin")
    stray.write_bytes(raw)
    orphans = {Path(p).name for p, _ in plan_orphans(lk, all_files=True).orphans}
    assert stray.name in orphans and path.name not in orphans


def _rows_deleted(lk: api.Lake) -> dict[int, int]:
    """History metrics: rows deleted per snapshot (the container's positions at their own blob's snapshot)."""
    from ducklake_cli.catalog.history import snapshot_metrics

    with lk.reader() as r:
        got = snapshot_metrics(r.conn, lk.backend, data_path=r.data_path)
    return {snap: sum(m.rows_deleted for m in per.values()) for snap, per in got.items()
            if any(m.rows_deleted for m in per.values())}


@pytest.mark.spark
def test_v10_with_deletion_vectors_writes_parquet(tmp_path: Path, spark: SparkSession) -> None:
    """On a 1.0 catalog the option changes nothing of what we write: Parquet delete files (a partial one for the
    second delete), no row_group_count column, no Puffin file."""
    catalog, data = _make(tmp_path, "1.0")
    with api.connect(str(catalog)) as lk:
        _set(lk, data_inlining_row_limit="0", write_deletion_vectors="true")
        first = _table_of_ids(lk, spark)
        snaps = [_delete(lk, where) for where in DELETES]
        for at in range(first, snaps[-1] + 1):
            assert _ids(lk, at) == _expected(snaps, at)
        before = _sha(catalog)
        from ducklake_cli.ops.dml import run_change

        with pytest.raises(UnsupportedVersionError, match="epoch_month"):
            run_change(lk, ["CREATE TABLE c PARTITIONED BY (epoch_month(ts)) AS SELECT TIMESTAMP '2024-01-01' AS ts"])
        assert _sha(catalog) == before
    rows = run_sql(str(catalog), "SELECT format, partial_max FROM ducklake_delete_file WHERE end_snapshot IS NULL")
    assert rows == [("parquet", snaps[-1])]
    assert v10_shape_problems(str(catalog), data) == []
    assert not list(data.rglob("*.puffin"))


# ----- epoch partitions ------------------------------------------------------------------------------------------

def _partition_values(catalog: Path) -> list[tuple[str, list[str | None]]]:
    """Each data file's path and key texts, by key index."""
    rows = run_sql(str(catalog), "SELECT f.path, v.partition_key_index, v.partition_value FROM ducklake_data_file f "
                                 "JOIN ducklake_file_partition_value v ON v.data_file_id = f.data_file_id "
                                 "ORDER BY f.path, v.partition_key_index")
    out: dict[str, list[str | None]] = {}
    for path, _, value in rows:
        out.setdefault(path, []).append(value)
    return sorted(out.items())


def _pruned(lk: api.Lake, *predicates: Predicate) -> tuple[int, int]:
    """(kept, pruned) data files of t at the latest snapshot for these predicates."""
    from ducklake_cli.engine.planning.scan_plan import plan_scan

    with lk.reader() as r:
        sid = r.latest_snapshot().snapshot_id
        table = r.find_table(sid, "main.t")
        plan = plan_scan(r, table=table, snapshot_id=sid, data_path=r.data_path, schemas=r.schemas(sid),
                         predicates=predicates)
    return len(plan.files), plan.pruned_files


@pytest.mark.spark
def test_writer_epoch_partitions(lake11: tuple[api.Lake, Path, Path], spark: SparkSession,
                                 duck2: dict[str, Any]) -> None:
    """`write --partition-by 'epoch_day(ts), year(ts), epoch_hour(d)'` on 1.1 (under a non-UTC Spark session zone):
    keys as DuckDB 2.0's date_diff (TIMESTAMPTZ on its UTC instant), calendar and epoch mixed, hive directories
    `epoch_day=…/year=…/epoch_hour=…`; reads and prunes by ranges of the column."""
    lk, catalog, data = lake11
    instants = [_instant(v) for v in INSTANTS]
    dates = [dt.date.fromisoformat(v) for v in DATES]
    rows = [(i, instants[i], dates[i % len(dates)]) for i in range(len(instants))] + [(99, None, None)]
    zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = spark.createDataFrame(rows, "id INT, ts TIMESTAMP, d DATE").coalesce(1)
        lk.write(df, "t", partition_by=["epoch_day(ts), year(ts), epoch_hour(d)"])
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    spec = run_sql(str(catalog), "SELECT partition_key_index, transform FROM ducklake_partition_column "
                                 "ORDER BY partition_key_index")
    assert spec == [(0, "epoch_day"), (1, "year"), (2, "epoch_hour")]
    day = {v: row[2] for v, row in zip(INSTANTS, duck2["tz America/New_York"], strict=True)}
    hour = {v: row[3] for v, row in zip(DATES, duck2["date"], strict=True)}
    want = {(str(day[INSTANTS[i]]), str(hour[DATES[i % len(DATES)]])) for i in range(len(INSTANTS))}
    got = _partition_values(catalog)
    assert {(v[0], v[2]) for _, v in got if v[0] is not None} == want
    assert any(v == [None, None, None] for _, v in got)
    for path, v in got:
        if v[0] is not None:
            assert path.startswith(f"epoch_day={v[0]}/year={v[1]}/epoch_hour={v[2]}/"), path
    assert _ids(lk) == [*range(len(instants)), 99]
    kept, pruned = _pruned(lk, Predicate("ts", ">=", (dt.datetime(2024, 11, 3, 5, 30, tzinfo=dt.UTC),)),
                           Predicate("ts", "<", (dt.datetime(2024, 11, 4, tzinfo=dt.UTC),)))
    assert kept == 2 and pruned == len(got) - 2  # the two instants of 2024-11-03 UTC
    assert kept + pruned == len(got)
    assert _ids(lk, where="ts >= TIMESTAMP '2024-11-03 05:30:00+00' AND ts < TIMESTAMP '2024-11-04 00:00:00+00'") \
        == [2, 3]
    assert _pruned(lk, Predicate("d", "=", (dt.date(1969, 12, 31),)))[0] == 2  # i = 2 and 9

    # A second write, then compaction: one file per key tuple again, the keys and directories kept.
    from ducklake_cli.ops.rewrite import plan_compact

    lk.write(spark.createDataFrame(rows[:3], "id INT, ts TIMESTAMP, d DATE").coalesce(1), "t")
    assert len(_partition_values(catalog)) == len(got) + 3
    plan_compact(lk, table="t").apply(lk)
    after = _partition_values(catalog)
    assert len(after) == len(got) and {tuple(v) for _, v in after} == {tuple(v) for _, v in got}
    for path, v in after:
        if v[0] is not None:
            assert path.startswith(f"epoch_day={v[0]}/year={v[1]}/epoch_hour={v[2]}/"), path
    assert sorted(_ids(lk)) == sorted([*range(len(instants)), 99, 0, 1, 2])


@pytest.mark.spark
def test_hand_partitioned_files_read_and_pruned(lake11: tuple[api.Lake, Path, Path], spark: SparkSession) -> None:
    """Files placed by hand in `epoch_month=…/epoch_day=…` directories of a table created with SET PARTITIONED BY
    (epoch and calendar transforms) are registered with the keys per §3.7 and pruned by ranges and equality."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ducklake_cli.ops.ddl import run_ddl
    from ducklake_cli.ops.register import register

    lk, catalog, data = lake11
    run_ddl(lk, ["CREATE TABLE t (id INT, ts TIMESTAMP_NTZ)",
                 "ALTER TABLE t SET PARTITIONED BY (epoch_month(ts), epoch_day(ts))"])
    values = [dt.datetime(1969, 12, 31, 23, 30), dt.datetime(1970, 1, 1, 0, 0), dt.datetime(2024, 3, 15, 13, 45),
              dt.datetime(2024, 3, 16, 1, 0), dt.datetime(1968, 12, 31, 23, 59, 59)]
    drop = data / "drop"
    for i, v in enumerate(values):
        d = drop / f"epoch_month={epoch_of(v, 'epoch_month')}" / f"epoch_day={epoch_of(v, 'epoch_day')}"
        d.mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array([i], pa.int32()), "ts": pa.array([v], pa.timestamp("us"))}),
                       d / f"f{i}.parquet")
    register(lk, "t", str(drop / "**" / "*.parquet"))
    got = {tuple(v) for _, v in _partition_values(catalog)}
    assert got == {("-1", "-1"), ("0", "0"), ("650", "19797"), ("650", "19798"), ("-13", "-366")}
    assert _ids(lk) == [0, 1, 2, 3, 4]
    assert _pruned(lk, Predicate("ts", "<", (dt.datetime(1970, 1, 1),))) == (2, 3)
    assert _pruned(lk, Predicate("ts", "=", (dt.datetime(2024, 3, 15, 13, 45),))) == (1, 4)
    assert _pruned(lk, Predicate("ts", "between", (dt.datetime(2024, 3, 1), dt.datetime(2024, 3, 31)))) == (2, 3)
    assert _ids(lk, where="ts < TIMESTAMP '1970-01-01'") == [0, 4]
    assert _ids(lk, where="ts >= TIMESTAMP '2024-03-16'") == [3]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_epoch_refused_on_v10(tmp_path: Path) -> None:
    """A 1.0 catalog refuses an epoch transform in one line (exit 2) before anything is written, for `write` and
    for CREATE TABLE / SET PARTITIONED BY; the catalog file is unchanged."""
    from ducklake_cli.ops.ddl import run_ddl
    from ducklake_cli.ops.write import run_write

    catalog, data = _make(tmp_path, "1.0")
    with api.connect(str(catalog)) as lk:
        run_ddl(lk, ["CREATE TABLE t (id INT, ts TIMESTAMP)"])
        before = _sha(catalog)
        for sql in ("ALTER TABLE t SET PARTITIONED BY (epoch_day(ts))",
                    "CREATE TABLE u (ts TIMESTAMP) PARTITIONED BY (year(ts), epoch_year(ts))"):
            with pytest.raises(UnsupportedVersionError) as err:
                run_ddl(lk, [sql])
            assert err.value.exit_code == 2 and "\n" not in err.value.message
            assert "epoch_" in err.value.message and "1.1" in err.value.message
        with pytest.raises(UnsupportedVersionError, match="the epoch_day partition transform"):
            run_write(lk, "w", source=[str(tmp_path / "none.csv")], partition_by=["epoch_day(ts)"])
    assert _sha(catalog) == before
    assert v10_shape_problems(str(catalog), data) == []


@pytest.mark.spark
def test_container_retagged_after_a_race(lake11: tuple[api.Lake, Path, Path], spark: SparkSession) -> None:
    """A delete whose commit lands a snapshot later than planned writes its container again: the last blob carries
    the snapshot it really got, so the racing snapshot still reads the earlier rows."""
    from ducklake_cli.ops.dml import run_change

    lk, catalog, data = lake11
    _set(lk, write_deletion_vectors="true")
    _table_of_ids(lk, spark)
    lk.write(spark.createDataFrame([(1,)], "x INT"), "other")
    first = _delete(lk, DELETES[0])
    original = lk.commit
    raced: list[int] = []

    def racing_commit(build: Any, **kwargs: Any) -> Any:
        if not raced:
            with api.connect(str(catalog)) as other:
                sid = other.write(spark.createDataFrame([(2,)], "x INT"), "other").snapshot_id
                assert sid is not None
                raced.append(sid)
        return original(build, **kwargs)

    lk.commit = racing_commit  # type: ignore[method-assign]
    got = run_change(lk, ["DELETE FROM t WHERE id BETWEEN 40 AND 59"])
    assert got.snapshot_id == raced[0] + 1
    (row,) = [r for r in _delete_rows(catalog) if r[5] is None]
    assert (row[4], row[6]) == (first, got.snapshot_id)
    assert read_deletion_vectors(str(next(data.rglob(row[2])))).snapshots == (first, got.snapshot_id)
    assert len(_ids(lk, raced[0])) == 80 and len(_ids(lk, got.snapshot_id)) == 60
