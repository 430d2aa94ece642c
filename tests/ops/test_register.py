"""`register` against DuckDB 1.5.5's `ducklake_add_data_files` on twin lakes: each lake gets its own copy of the same
files (pyarrow-written without field ids: reordered, nested, missing columns; with field ids; a hive-partitioned
directory; footers without stats; several row groups; Spark-written), DuckDB registers them in one, we in the
other. The catalogs then hold the same rows (mappings, stats, row ids, partition values, table stats, change
strings); both tools read the same rows; later deletes and compaction work on both. Refusals change nothing."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ducklake_cli.lake import Lake
from ducklake_cli.ops.register import register
from tests.support.cli import run_main
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot

CATALOG_TABLES = ("ducklake_snapshot_changes", "ducklake_data_file", "ducklake_file_column_stats",
                  "ducklake_column_mapping", "ducklake_name_mapping", "ducklake_file_partition_value",
                  "ducklake_table_stats", "ducklake_table_column_stats")
DDL = (
    "CREATE TABLE t (id INTEGER, name VARCHAR, s STRUCT(a INTEGER, b VARCHAR), l INTEGER[], extra DOUBLE)",
    "CREATE TABLE mixed (id INTEGER, name VARCHAR)",
    "CREATE TABLE h (id BIGINT, v DOUBLE, region VARCHAR)",
    "CREATE TABLE hp (id BIGINT, v DOUBLE, region VARCHAR)",
    "ALTER TABLE hp SET PARTITIONED BY (region)",
    "CREATE TABLE hv (v INTEGER, year INTEGER)",
    "CREATE TABLE nested (m MAP(VARCHAR, INTEGER), ls STRUCT(x INTEGER)[])",
    "CREATE TABLE types (id INTEGER, d DECIMAL(9,2), ts TIMESTAMP, dd DATE, f DOUBLE, b BOOLEAN, bl BLOB, "
    "tz TIMESTAMPTZ, f32 DOUBLE, d2 DECIMAL(18,3), tms TIMESTAMP)",
    "INSERT INTO types (id, f) VALUES (5, 2.5)",
    "CREATE TABLE inl (id INTEGER, name VARCHAR)",
    "INSERT INTO inl VALUES (100, 'z'), (101, NULL)",
    "CREATE TABLE hx (id INTEGER, region VARCHAR)",
    "CREATE TABLE py (id INTEGER, ts TIMESTAMP, region VARCHAR)",
    "ALTER TABLE py SET PARTITIONED BY (year(ts), region)",
    "CREATE TABLE u (a BIGINT, k BIGINT)",
    "CREATE TABLE r (a BIGINT, b VARCHAR)",
    "CREATE TABLE rs (s STRUCT(x BIGINT, y BIGINT))",
)
# (table, path under the files directory, flags): DuckDB's named arguments and our keyword arguments alike.
CALLS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("t", "a.parquet", ("allow_missing",)),
    ("mixed", "mixed/*.parquet", ("allow_missing",)),
    ("mixed", "mixed/m2.parquet", ()),  # an equal mapping (other field order) is reused
    ("mixed", "ids.parquet", ()),  # field ids: DuckDB maps by name all the same
    ("h", "hive/*/*.parquet", ("hive_partitioning",)),
    ("hp", "hive/*/*.parquet", ("hive_partitioning",)),
    ("hv", "hv/*/*.parquet", ("hive_partitioning",)),
    ("nested", "nested.parquet", ()),
    ("types", "types.parquet", ()),
    ("inl", "nostats.parquet", ("allow_missing",)),
    ("inl", "rg.parquet", ()),
    ("mixed", "extra.parquet", ("ignore_extra_columns",)),
    # x=1 is no column of the table (ignored); region=eu wins over the file's own region column.
    ("hx", "x=1/region=eu/*.parquet", ("hive_partitioning",)),
    ("inl", "rgnull.parquet", ("allow_missing",)),  # a row group of NULLs only: the file has no bounds
    # transformed partition keys from their directories; the second file lacks ts (its stats come from the path)
    ("py", "py/*/*/*.parquet", ("hive_partitioning", "allow_missing")),
    # DuckDB's default reads key=value directories (k = 5); hive_partitioning => false does not (k NULL)
    ("u", "hu/k=5/f.parquet", ("allow_missing",)),
    ("u", "hu/k=5/f.parquet", ("no_hive_partitioning", "allow_missing")),
    # two file columns differing only in case: the first takes the table column, the second is extra
    ("r", "dup.parquet", ("allow_missing", "ignore_extra_columns")),
    ("r", "dup2.parquet", ("ignore_extra_columns",)),
    ("rs", "sdup.parquet", ("allow_missing", "ignore_extra_columns")),
)


def duck_args(flags: tuple[str, ...]) -> str:
    """DuckDB's named arguments for a call's flags (`no_hive_partitioning` is `hive_partitioning => false`)."""
    return "".join(", hive_partitioning => false" if k == "no_hive_partitioning" else f", {k} => true"
                   for k in flags)


def our_register(lake: Lake, table: str, path: str, flags: tuple[str, ...]) -> None:
    """Our `register` with a call's flags."""
    register(lake, table, path, hive_partitioning="no_hive_partitioning" not in flags,
             allow_missing="allow_missing" in flags, ignore_extra_columns="ignore_extra_columns" in flags)


def write_files(d: Path) -> None:
    """The pyarrow-written files the twins register."""
    for sub in ("hive/region=eu", "hive/region=us", "mixed", "hv/year=2024", "hv/year=__HIVE_DEFAULT_PARTITION__",
                "x=1/region=eu", "py/year=2024/region=eu", "py/year=2025/region=us", "hu/k=5"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    struct = pa.struct([("b", pa.string()), ("a", pa.int32())])
    pq.write_table(pa.table({"name": ["x", "y", None], "id": pa.array([3, 1, 2], pa.int32()),
                             "s": pa.array([{"b": "p", "a": 1}, None, {"b": None, "a": 3}], struct),
                             "l": pa.array([[1, 2], [], None], pa.list_(pa.int32()))}), d / "a.parquet")
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"]}), d / "mixed/m1.parquet")
    pq.write_table(pa.table({"name": ["c"], "id": pa.array([3], pa.int16())}), d / "mixed/m2.parquet")
    pq.write_table(pa.table({"id": pa.array([4], pa.int32())}), d / "mixed/m3.parquet")
    with_ids = pa.schema([pa.field("id", pa.int32(), metadata={b"PARQUET:field_id": b"1"}),
                          pa.field("name", pa.string(), metadata={b"PARQUET:field_id": b"2"})])
    pq.write_table(pa.table({"id": pa.array([10, 11], pa.int32()), "name": ["p", "q"]}, schema=with_ids),
                   d / "ids.parquet")
    pq.write_table(pa.table({"id": pa.array([12], pa.int32()), "zz": [1], "name": ["e"]}), d / "extra.parquet")
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "v": [1.5, 2.5]}), d / "hive/region=eu/f1.parquet")
    pq.write_table(pa.table({"id": pa.array([3], pa.int64()), "v": [3.5]}), d / "hive/region=us/f2.parquet")
    pq.write_table(pa.table({"v": pa.array([1], pa.int32())}), d / "hv/year=2024/a.parquet")
    pq.write_table(pa.table({"v": pa.array([2], pa.int32())}), d / "hv/year=__HIVE_DEFAULT_PARTITION__/b.parquet")
    pq.write_table(pa.table({
        "m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int32())),
        "ls": pa.array([[{"x": 1}], []], pa.list_(pa.struct([("x", pa.int32())])))}), d / "nested.parquet")
    pq.write_table(pa.table({
        "id": pa.array([1, None], pa.int32()), "d": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(9, 2)),
        "ts": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5, 600000), None], pa.timestamp("us")),
        "dd": pa.array([dt.date(2024, 1, 2), None]), "f": pa.array([1.5, float("nan")]), "b": [True, None],
        "bl": pa.array([b"\x00\xff", None]),
        "tz": pa.array([dt.datetime(2024, 1, 2, tzinfo=dt.UTC), None], pa.timestamp("us", tz="UTC")),
        "f32": pa.array([0.1, None], pa.float32()), "d2": pa.array([decimal.Decimal("1.50"), None],
                                                                   pa.decimal128(9, 2)),
        "tms": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5, 600000), None], pa.timestamp("ms"))}), d / "types.parquet")
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32())}), d / "nostats.parquet", write_statistics=False)
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int32()), "name": [str(i) for i in range(10)]}),
                   d / "rg.parquet", row_group_size=3)
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32()), "region": ["zz", "zz"]}),
                   d / "x=1/region=eu/f.parquet")
    pq.write_table(pa.table({"id": pa.array([1, None, None, None], pa.int32())}), d / "rgnull.parquet",
                   row_group_size=2)
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "ts": pa.array([dt.datetime(2024, 3, 5)])}),
                   d / "py/year=2024/region=eu/f.parquet")
    pq.write_table(pa.table({"id": pa.array([2], pa.int32())}), d / "py/year=2025/region=us/f.parquet")
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int64())}), d / "hu/k=5/f.parquet")
    pq.write_table(pa.table({"A": pa.array([1, 2], pa.int64()), "a": pa.array([3, 4], pa.int64())}),
                   d / "dup.parquet")
    pq.write_table(pa.table({"a": pa.array([5], pa.int64()), "A": pa.array([6], pa.int64()), "b": ["x"]}),
                   d / "dup2.parquet")
    pq.write_table(pa.table({"s": pa.array([{"X": 1, "x": 2}], pa.struct([("X", pa.int64()), ("x", pa.int64())]))}),
                   d / "sdup.parquet")


class Twins:
    """Two lakes built alike by DuckDB, each with its own copy of the files: `duck` and `ours`."""

    def __init__(self, tmp: Path, backend: str, ddl: tuple[str, ...] = DDL,
                 spots: tuple[Spot, Spot] | None = None) -> None:
        self.spots: dict[str, Spot] = {}
        for i, side in enumerate(("duck", "ours")):
            path = str(tmp / side / ("c.sqlite" if backend == "sqlite" else "c.ducklake"))
            (tmp / side / "files").mkdir(parents=True)
            spot = spots[i] if spots else Spot(backend, path, path, tmp / side / "data")
            self.duckdb(spot, [*ddl])
            self.spots[side] = spot
        self.tmp = tmp

    def files(self, side: str) -> Path:
        return self.tmp / side / "files"

    @staticmethod
    def duckdb(spot: Spot, statements: list[str]) -> list[list[tuple[Any, ...]]]:
        con = oracle_connect()
        try:
            con.execute(spot.attach())
            con.execute("USE lake")
            out = [con.execute(sql).fetchall() for sql in statements]
            con.execute("USE memory")
            con.execute("DETACH lake")
        finally:
            con.close()
        return out

    def add_duckdb(self, calls: tuple[tuple[str, str, tuple[str, ...]], ...]) -> None:
        d = self.files("duck")
        self.duckdb(self.spots["duck"], [
            f"CALL ducklake_add_data_files('lake', '{t}', '{d / p}'{duck_args(flags)})"
            for t, p, flags in calls])

    def catalog(self, side: str) -> dict[str, list[tuple[Any, ...]]]:
        """The compared catalog tables, paths made relative to the side's directory, rows sorted."""
        prefix = str(self.tmp / side) + "/"
        rows = self.duckdb(self.spots[side], [f"SELECT * FROM __ducklake_metadata_lake.{t}" for t in CATALOG_TABLES])
        return {t: sorted((tuple(v.replace(prefix, "") if isinstance(v, str) else v for v in r) for r in rs),
                          key=repr) for t, rs in zip(CATALOG_TABLES, rows, strict=True)}

    def duck_rows(self, side: str, tables: list[str]) -> dict[str, list[tuple[Any, ...]]]:
        """Each table's rows with their row ids, as DuckDB reads them."""
        got = self.duckdb(self.spots[side], [f"SELECT rowid, * FROM {t} ORDER BY rowid" for t in tables])
        return {t: [tuple(comparable(v) for v in r) for r in rs] for t, rs in zip(tables, got, strict=True)}


def comparable(value: Any) -> Any:
    """A value from DuckDB or Spark in one form (structs as sorted pairs, instants as naive UTC)."""
    from tests.support.dml_twins import normal

    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, float) and value != value:
        return "NaN"  # equal to itself
    return normal(value)


@pytest.mark.parametrize("backend", ["sqlite", "duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_register_twins_catalog_rows(tmp_path: Path, backend: str) -> None:
    from tests.support.dml_twins import twin_spots

    with twin_spots(backend, tmp_path / "catalogs") as spots:
        _twins_catalog_rows(Twins(tmp_path, backend, spots=spots if backend == "postgres" else None))


def _twins_catalog_rows(twins: Twins) -> None:
    for side in ("duck", "ours"):
        write_files(twins.files(side))
    twins.add_duckdb(CALLS)
    with Lake.open(twins.spots["ours"].catalog) as lake:
        for table, path, flags in CALLS:
            our_register(lake, table, str(twins.files("ours") / path), flags)
    assert twins.catalog("ours") == twins.catalog("duck")
    tables = ["t", "mixed", "h", "hp", "hv", "nested", "types", "inl", "hx", "py", "u", "r", "rs"]
    assert twins.duck_rows("ours", tables) == twins.duck_rows("duck", tables)
    read = twins.duck_rows("ours", ["u", "r", "rs"])
    assert [r[1:] for r in read["u"]] == [(1, 5), (2, 5), (1, None), (2, None)]
    assert [r[1:] for r in read["r"]] == [(1, None), (2, None), (5, "x")]


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_register_refusals_change_nothing(spot: Spot, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Twins.duckdb(spot, ["CREATE TABLE t (id INTEGER, name VARCHAR)", "CREATE TABLE p (id INTEGER, region VARCHAR)",
                        "ALTER TABLE p SET PARTITIONED BY (region)"])
    d = tmp_path / "in"
    (d / "region=eu").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["1"], "name": ["a"]}), d / "str.parquet")
    pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}), d / "i64.parquet")
    pq.write_table(pa.table({"id": pa.array([1], pa.int32())}), d / "missing.parquet")
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "name": ["a"], "zz": [1]}), d / "extra.parquet")
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "region": ["eu"]}), d / "flat.parquet")
    pq.write_table(pa.table({"id": pa.array([1], pa.int32())}), d / "region=eu" / "r.parquet")
    pq.write_table(pa.table({"ID": pa.array([1], pa.int32()), "id": pa.array([2], pa.int32()), "name": ["a"]}),
                   d / "dup.parquet")
    (d / "bad.parquet").write_bytes(b"not parquet")
    before = Path(spot.catalog).read_bytes()
    for args, text in [
        (("t", str(d / "str.parquet")), 'column "id" of ' + str(d / "str.parquet") + " holds varchar"),
        (("t", str(d / "i64.parquet")), "holds int64, which the table's int32 column cannot read"),
        (("t", str(d / "missing.parquet")), 'column "name" of the table is not in'),
        (("t", str(d / "extra.parquet")), 'column "zz" of'),
        (("t", str(d / "nothing*.parquet")), "no files match"),
        (("t", str(d / "bad.parquet")), "is not a Parquet file"),
        (("p", str(d / "flat.parquet")), "has no hive values for exactly the table's partition keys"),
        (("p", str(d / "region=eu" / "r.parquet"), "--no-hive-partitioning"), 'column "region" of the table is not'),
        (("p", str(d / "region=eu" / "r.parquet"), "--allow-missing", "--no-hive-partitioning"), "no hive values"),
        (("t", str(d / "dup.parquet"), "--allow-missing"), 'column "id" of ' + str(d / "dup.parquet") + " is not in"),
        (("nope", str(d / "flat.parquet")), "table main.nope does not exist"),
    ]:
        code, out, err = run_main(capsys, "register", spot.catalog, *args)
        assert code == 1 and out == "", (args, err)
        assert len(err.strip().splitlines()) == 1 and text in err, (args, err)
    assert Path(spot.catalog).read_bytes() == before
    code, out, err = run_main(capsys, "register", spot.catalog, "p", str(d / "region=eu" / "*.parquet"),
                              "--format", "json")  # key=value directories are read by default, as DuckDB's
    assert code == 0, err
    assert json.loads(out)["rows"] == 1


# ----- Spark-written files, reads, deletes and compaction on both lakes ------------------------------------------


@pytest.fixture
def spark_twins(tmp_path: Path, spark: Any) -> Iterator[Twins]:
    twins = Twins(tmp_path, "sqlite", (
        "CREATE TABLE sp (id INTEGER, name VARCHAR, s STRUCT(a INTEGER, b VARCHAR), l INTEGER[], "
        "ts TIMESTAMPTZ, extra DOUBLE)",
        "CREATE TABLE t (id INTEGER, name VARCHAR, s STRUCT(a INTEGER, b VARCHAR), l INTEGER[], extra DOUBLE)",
        "CREATE TABLE hp (id BIGINT, v DOUBLE, region VARCHAR)",
        "ALTER TABLE hp SET PARTITIONED BY (region)",
    ))
    df = spark.createDataFrame(
        [(f"n{i}" if i % 4 else None, i, (i, f"b{i}") if i % 3 else None, [i, i + 1] if i % 5 else None,
          dt.datetime(2024, 1, 1) + dt.timedelta(hours=i)) for i in range(30)],
        "name string, id int, s struct<a:int,b:string>, l array<int>, ts timestamp")
    out = str(tmp_path / "spark")
    df.repartition(3).write.parquet(out)
    for side in ("duck", "ours"):
        d = twins.files(side)
        write_files(d)
        (d / "spark").mkdir()
        for i, f in enumerate(sorted(Path(out).glob("*.parquet"))):
            (d / "spark" / f"part-{i}.parquet").write_bytes(f.read_bytes())
    yield twins


@pytest.mark.spark
def test_register_spark_files_then_delete_and_compact(spark_twins: Twins, capsys: pytest.CaptureFixture[str],
                                                      spark: Any) -> None:
    from ducklake_cli.ops.query import table_dataframe

    twins = spark_twins
    calls = (("sp", "spark/*.parquet", ("allow_missing",)), ("t", "a.parquet", ("allow_missing",)),
             ("hp", "hive/*/*.parquet", ("hive_partitioning",)))
    twins.add_duckdb(calls)
    ours = twins.spots["ours"].catalog
    for table, path, flags in calls:
        code, _, err = run_main(capsys, "register", ours, table, str(twins.files("ours") / path),
                                *(f"--{f.replace('_', '-')}" for f in flags))
        assert code == 0, err
    assert twins.catalog("ours") == twins.catalog("duck")
    tables = ["sp", "t", "hp"]

    def ours_read() -> dict[str, list[tuple[Any, ...]]]:
        with Lake.open(ours) as lake:
            out = {}
            for name in tables:
                df = table_dataframe(lake, name, spark=spark, with_rowid=True)
                rows = df.select("rowid", *[c for c in df.columns if c != "rowid"]).collect()
                out[name] = sorted((tuple(comparable(v) for v in r) for r in rows), key=lambda r: int(r[0]))
            return out

    def duck_read(side: str) -> dict[str, list[tuple[Any, ...]]]:
        return twins.duck_rows(side, tables)

    first = duck_read("duck")
    assert duck_read("ours") == first
    assert ours_read() == first

    deletes = ["DELETE FROM sp WHERE id % 4 = 1", "DELETE FROM t WHERE id = 2", "DELETE FROM hp WHERE region = 'us'"]
    twins.duckdb(twins.spots["duck"], deletes)
    for sql in deletes:
        code, _, err = run_main(capsys, "query", ours, sql)
        assert code == 0, err
    code, _, err = run_main(capsys, "maintain", "compact", ours, "--yes")
    assert code == 0, err
    twins.duckdb(twins.spots["duck"], ["CALL ducklake_merge_adjacent_files('lake')"])
    after = duck_read("duck")
    assert duck_read("ours") == after
    assert sum(len(v) for v in after.values()) < sum(len(v) for v in first.values())
    # DuckDB compacts our lake too, and both tools still read the same rows.
    twins.duckdb(twins.spots["ours"], ["CALL ducklake_merge_adjacent_files('lake')"])
    assert duck_read("ours") == after
    assert ours_read() == after


@pytest.mark.s3
def test_register_s3_files(tmp_path: Path, s3_bucket: Any) -> None:
    """Files on S3 (globs included), registered by DuckDB and by us alike; metadata only."""
    s3 = s3_bucket
    local = tmp_path / "src"
    write_files(local)
    fs = s3.filesystem()
    for side in ("duck", "ours"):
        for f in ("a.parquet", "mixed/m1.parquet", "mixed/m2.parquet", "hive/region=eu/f1.parquet",
                  "hive/region=us/f2.parquet"):
            fs.put(str(local / f), f"{s3.bucket}/{s3.prefix}/{side}/{f}")
    secret = (f"CREATE SECRET (TYPE s3, KEY_ID '{s3.key}', SECRET '{s3.secret}', ENDPOINT '{s3.host_port}', "
              f"URL_STYLE 'path', USE_SSL false, REGION '{s3.region}')")
    calls = (("t", "a.parquet", "allow_missing"), ("mixed", "mixed/*.parquet", ""),
             ("hp", "hive/*/*.parquet", "hive_partitioning"))
    rows = {}
    for side in ("duck", "ours"):
        spot = Spot("sqlite", str(tmp_path / f"{side}.sqlite"), str(tmp_path / f"{side}.sqlite"), tmp_path / "data")
        root = f"{s3.url}{side}/"
        adds = [f"CALL ducklake_add_data_files('lake', '{t}', '{root}{p}'{f', {flag} => true' if flag else ''})"
                for t, p, flag in calls] if side == "duck" else []
        Twins.duckdb(spot, [secret, *DDL[:5], *adds])
        if side == "ours":
            with Lake.open(spot.catalog, storage_options=s3.storage_options()) as lake:
                for t, p, flag in calls:
                    register(lake, t, root + p, allow_missing=flag == "allow_missing")
        got = Twins.duckdb(spot, [f"SELECT * FROM __ducklake_metadata_lake.{t}" for t in CATALOG_TABLES])
        rows[side] = [sorted((tuple(v.replace(root, "") if isinstance(v, str) else v for v in r) for r in rs),
                             key=repr) for rs in got]
    assert rows["ours"] == rows["duck"]
    assert any(r[5] == "mixed/m2.parquet" for r in rows["ours"][1])


def test_type_rule_matches_duckdb(tmp_path: Path) -> None:
    """Which file column types each table column type takes: ours (from the footer) equals DuckDB's."""
    from ducklake_cli.errors import InputError
    from ducklake_cli.ops.register import describe_file
    from ducklake_cli.storage.parquet import read_footer

    arrays = {
        "i8": pa.array([1], pa.int8()), "i16": pa.array([1], pa.int16()), "i32": pa.array([1], pa.int32()),
        "i64": pa.array([1], pa.int64()), "u8": pa.array([1], pa.uint8()), "u16": pa.array([1], pa.uint16()),
        "u32": pa.array([1], pa.uint32()), "u64": pa.array([1], pa.uint64()), "f32": pa.array([1.5], pa.float32()),
        "f64": pa.array([1.5]), "str": pa.array(["a"]), "bin": pa.array([b"a"]), "bool": pa.array([True]),
        "date": pa.array([dt.date(2024, 1, 1)]), "ts": pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("us")),
        "tstz": pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("us", tz="UTC")),
        "tsms": pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("ms")),
        "tsns": pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("ns")),
        "dec92": pa.array([decimal.Decimal("1.50")], pa.decimal128(9, 2)),
        "dec182": pa.array([decimal.Decimal("1.50")], pa.decimal128(18, 2)),
        "time": pa.array([dt.time(1, 2, 3)], pa.time64("us")),
    }
    for name, arr in arrays.items():
        pq.write_table(pa.table({"c": arr}), tmp_path / f"{name}.parquet")
    types = ["TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT",
             "DOUBLE", "VARCHAR", "BLOB", "BOOLEAN", "DATE", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMP_MS",
             "TIMESTAMP_NS", "DECIMAL(9,2)", "DECIMAL(18,2)", "DECIMAL(18,3)", "DECIMAL(10,1)", "TIME"]
    spot = Spot("sqlite", str(tmp_path / "c.sqlite"), str(tmp_path / "c.sqlite"), tmp_path / "data")
    Twins.duckdb(spot, [f"CREATE TABLE t{i} (c {t})" for i, t in enumerate(types)])
    duck: dict[str, set[str]] = {}
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        for i, t in enumerate(types):
            duck[t] = set()
            for name in arrays:
                try:
                    con.execute(f"CALL ducklake_add_data_files('lake', 't{i}', '{tmp_path / name}.parquet')")
                    duck[t].add(name)
                except Exception as exc:  # noqa: BLE001 - DuckDB's refusal is the expected outcome
                    assert "Failed to map column" in str(exc), exc
        con.execute("DETACH lake")
    finally:
        con.close()
    footers = {name: read_footer(str(tmp_path / f"{name}.parquet")) for name in arrays}
    with Lake.open(spot.catalog) as lake, lake.reader() as r:
        tables = {t.name: t for t in r.tables(r.latest_snapshot().snapshot_id)}
    ours: dict[str, set[str]] = {}
    for i, t in enumerate(types):
        ours[t] = set()
        for name, footer in footers.items():
            try:
                describe_file(footer, tables[f"t{i}"], hive=False, allow_missing=False, ignore_extra=False)
                ours[t].add(name)
            except InputError:
                pass
    assert ours == duck
