"""`write` against the oracle: DuckDB 1.5.5 reads exactly the rows we wrote, filters on every column agree (our
file and table stats are load-bearing for its pruning), `ducklake_snapshots()` parses every snapshot we made, and
DuckDB's own appends, deletes, updates and CHECKPOINT on our tables keep working — read back by DuckDB and by us.

Runs in-process on the session's one Spark JVM; inputs are Parquet files DuckDB generates, which are also the
expected rows. The 10-million-row scenario lives in tests/ops/test_write_memory.py (it measures the CLI's RSS).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ducklake_cli.api import Lake, connect
from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.errors import DuckLakeError, InputError
from ducklake_cli.ops.create import create_catalog
from ducklake_cli.ops.write import WriteResult, run_write
from tests.support.oracle import oracle_connect
from tests.support.spot import ORACLE_BACKENDS, Spot
from tests.support.tiers import FULL, backend_params

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PRIMITIVES = """
    SELECT i::INTEGER AS id, i % 2 = 0 AS b, (i % 100 - 50)::TINYINT AS i8, (i * 7)::SMALLINT AS i16,
           (i * 1000003)::BIGINT AS i64, (i / 3)::FLOAT AS f32, (i * 1.5)::DOUBLE AS f64,
           (i * 1.25)::DECIMAL(10, 2) AS dec, (i * 12345.678901)::DECIMAL(38, 10) AS dec38,
           DATE '2024-01-01' + i::INTEGER AS dt, TIMESTAMP '2024-01-02 03:04:05.123456' + INTERVAL (i) HOUR AS ts,
           TIMESTAMPTZ '2024-01-02 03:04:05.5+00' + INTERVAL (i) MINUTE AS tstz,
           CASE i % 4 WHEN 0 THEN 'héllo ' || i WHEN 1 THEN '日本語' || i WHEN 2 THEN '' ELSE 'x' || i END AS s,
           ('\\x00\\xFF'::BLOB || i::VARCHAR::BLOB) AS bl,
           CASE WHEN i % 5 = 0 THEN NULL ELSE i END AS maybe, NULL::INTEGER AS all_null
    FROM range(300) t(i)
"""
NESTED = """
    SELECT i::INTEGER AS id, {'a': i, 'b': 'x' || i, 'c': [i, i + 1]} AS st, [i, NULL, i * 2] AS li,
           MAP {'k' || i: i, 'z': NULL} AS m, [{'p': i, 'q': 'q' || i}] AS ls,
           CASE WHEN i % 3 = 0 THEN NULL ELSE [] END::INTEGER[] AS maybe_list
    FROM range(120) t(i)
"""
FLOATS = """
    SELECT i::INTEGER AS id, CASE i % 5 WHEN 0 THEN 'nan'::DOUBLE WHEN 1 THEN 'inf'::DOUBLE WHEN 2 THEN '-inf'::DOUBLE
                                 WHEN 3 THEN -0.0 ELSE i / 7 END AS d,
           CASE WHEN i % 2 = 0 THEN 'nan'::FLOAT ELSE i::FLOAT END AS f
    FROM range(40) t(i)
"""
EVENTS = """
    SELECT i::INTEGER AS id, ['eu', 'us', 'ap', NULL][i % 4 + 1] AS region,
           TIMESTAMP '2024-01-30 20:00:00' + INTERVAL (i * 7) HOUR AS ts, DATE '2023-12-25' + (i % 50)::INTEGER AS dt,
           i * 2.5 AS amount
    FROM range(500) t(i)
"""


@dataclass
class Env:
    """One test's lake: catalog location, an open Lake, the oracle and a place for input files."""

    spot: Spot
    lake: Lake
    oracle: duckdb.DuckDBPyConnection
    inputs: Path

    def parquet(self, name: str, sql: str) -> str:
        """Write a DuckDB query's rows to an input Parquet file."""
        path = self.inputs / f"{name}.parquet"
        self.oracle.execute(f"COPY ({sql}) TO '{path}' (FORMAT parquet)")
        return str(path)

    def write(self, table: str, source: str | None = None, **kwargs: Any) -> WriteResult:
        """`ducklake write` in-process."""
        result = run_write(self.lake, table, source=[source] if source else [], **kwargs)
        self.lake.close()  # release a DuckDB catalog file for the oracle
        return result

    def attached(self) -> duckdb.DuckDBPyConnection:
        """The oracle with the lake attached as `lake` (re-attached to see the newest snapshot)."""
        self.oracle.execute("DETACH DATABASE IF EXISTS lake")
        self.oracle.execute(self.spot.attach())
        return self.oracle

    def detach(self) -> None:
        """Let our side open a DuckDB catalog file again."""
        self.oracle.execute("DETACH DATABASE IF EXISTS lake")


@pytest.fixture
def env(spot: Spot, tmp_path: Path, spark: SparkSession) -> Iterator[Env]:
    """A lake created by our `create-catalog`, opened on the shared Spark session."""
    create_catalog(parse_catalog(spot.catalog, must_exist=False), data_path=str(spot.data_path))
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    lake = connect(spot.catalog)
    con = oracle_connect()
    try:
        yield Env(spot, lake, con, inputs)
    finally:
        con.close()
        lake.close()


def assert_same_rows(con: duckdb.DuckDBPyConnection, actual: str, expected: str) -> None:
    """Multiset equality of two relations, both directions, plus the count."""
    extra = con.execute(f"SELECT * FROM ({actual}) EXCEPT ALL SELECT * FROM ({expected})").fetchall()
    missing = con.execute(f"SELECT * FROM ({expected}) EXCEPT ALL SELECT * FROM ({actual})").fetchall()
    assert (extra[:3], missing[:3]) == ([], []), f"{len(extra)} unexpected and {len(missing)} missing rows"
    n_a = con.execute(f"SELECT count(*) FROM ({actual})").fetchone()
    n_e = con.execute(f"SELECT count(*) FROM ({expected})").fetchone()
    assert n_a == n_e


def assert_filters_agree(con: duckdb.DuckDBPyConnection, table: str, expected: str) -> None:
    """For every primitive column, `=`, `<` and `>` on a present value count the same rows in the lake as in the
    input: a wrong min/max in our stats would make DuckDB prune a file that holds matches."""
    cols = con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {table})").fetchall()
    for name, typ in cols:
        if any(t in typ for t in ("STRUCT", "MAP", "[]")):
            continue
        values = con.execute(f'SELECT DISTINCT "{name}" FROM ({expected}) WHERE "{name}" IS NOT NULL '
                             f'ORDER BY 1 LIMIT 3 OFFSET 1').fetchall()
        for (value,) in values[:2]:
            for op in ("=", "<", ">"):
                got = con.execute(f'SELECT count(*) FROM {table} WHERE "{name}" {op} $v', {"v": value}).fetchone()
                want = con.execute(f'SELECT count(*) FROM ({expected}) WHERE "{name}" {op} $v',
                                   {"v": value}).fetchone()
                assert got == want, f"{name} {op} {value!r}: lake {got}, input {want}"
        for pred in ("IS NULL", "IS NOT NULL"):
            got = con.execute(f'SELECT count(*) FROM {table} WHERE "{name}" {pred}').fetchone()
            want = con.execute(f'SELECT count(*) FROM ({expected}) WHERE "{name}" {pred}').fetchone()
            assert got == want, f"{name} {pred}"


def assert_snapshots_parse(con: duckdb.DuckDBPyConnection) -> None:
    """DuckDB parses every change string we wrote (it throws on a bad one)."""
    rows = con.execute("SELECT snapshot_id, changes FROM lake.snapshots() ORDER BY 1").fetchall()
    assert rows and all(isinstance(changes, dict) for _, changes in rows)


def our_rows(env: Env, table: str) -> list[tuple[Any, ...]]:
    """Rows through our reader, sorted by id."""
    env.detach()
    rows = [tuple(r) for r in env.lake.table(table).orderBy("id").collect()]
    env.lake.close()
    return rows


backends = pytest.mark.parametrize("spot", ORACLE_BACKENDS, indirect=True)
# Writes whose catalog rows go through no backend hook (the same SQL on every catalog): SQLite in the default tier,
# every catalog in the full tier (tests/support/tiers.py). Inlined rows, every type, overwrite and DuckDB writing on
# our tables stay on every catalog.
sqlite_by_default = pytest.mark.parametrize("spot", backend_params(ORACLE_BACKENDS), indirect=True)


@backends
def test_every_primitive_type(env: Env) -> None:
    src = env.parquet("prims", PRIMITIVES)
    result = env.write("main.prims", src, mode="create", message="load", author="ci")
    assert (result.rows, result.inlined_rows, result.created_table) == (300, 0, True)
    con = env.attached()
    expected = f"SELECT * FROM read_parquet('{src}')"
    assert_same_rows(con, "SELECT * FROM lake.main.prims", expected)
    assert_filters_agree(con, "lake.main.prims", expected)
    assert_snapshots_parse(con)
    row = con.execute("SELECT author, commit_message FROM lake.snapshots() WHERE snapshot_id = 1").fetchone()
    assert row == ("ci", "load")
    types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE lake.main.prims)").fetchall())
    assert (types["i8"], types["dec38"], types["tstz"]) == ("TINYINT", "DECIMAL(38,10)", "TIMESTAMP WITH TIME ZONE")


@sqlite_by_default
def test_nested_types(env: Env) -> None:
    src = env.parquet("nested", NESTED)
    env.write("nested", src)
    con = env.attached()
    assert_same_rows(con, "SELECT * FROM lake.main.nested", f"SELECT * FROM read_parquet('{src}')")
    # Leaves of lists and maps carry field ids: DuckDB reads them (an id-less element would read as NULL).
    assert con.execute("SELECT count(*) FROM lake.main.nested WHERE li[1] IS NULL").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM lake.main.nested WHERE st.c[2] = 5").fetchone() == (1,)


@sqlite_by_default
def test_nan_infinity_and_negative_zero(env: Env) -> None:
    src = env.parquet("floats", FLOATS)
    env.write("floats", src, inline=False)
    con = env.attached()
    expected = f"SELECT * FROM read_parquet('{src}')"
    assert_same_rows(con, "SELECT * FROM lake.main.floats", expected)
    assert_filters_agree(con, "lake.main.floats", expected)
    for pred in ("isnan(d)", "d = 'inf'::DOUBLE", "d > 1e300", "f > 3", "isnan(f)"):
        got = con.execute(f"SELECT count(*) FROM lake.main.floats WHERE {pred}").fetchone()
        assert got == con.execute(f"SELECT count(*) FROM ({expected}) WHERE {pred}").fetchone(), pred


@backends
def test_small_writes_are_inlined_like_duckdb(env: Env) -> None:
    one = env.parquet("one", "SELECT * FROM (" + PRIMITIVES + ") WHERE id = 7")
    ten = env.parquet("ten", "SELECT * FROM (" + PRIMITIVES + ") WHERE id BETWEEN 10 AND 19")
    eleven = env.parquet("eleven", "SELECT * FROM (" + PRIMITIVES + ") WHERE id BETWEEN 20 AND 30")
    assert env.write("t", one).inlined_rows == 1
    assert env.write("t", ten).inlined_rows == 10
    r = env.write("t", eleven)
    assert (r.inlined_rows, r.files) == (0, 1)
    con = env.attached()
    expected = f"SELECT * FROM read_parquet(['{one}', '{ten}', '{eleven}'])"
    assert_same_rows(con, "SELECT * FROM lake.main.t", expected)
    assert_filters_agree(con, "lake.main.t", expected)
    changes = [c for (c,) in con.execute("SELECT changes FROM lake.snapshots() ORDER BY snapshot_id").fetchall()]
    assert changes[-3:] == [{"tables_created": ["main.t"], "inlined_insert": ["1"]}, {"inlined_insert": ["1"]},
                            {"tables_inserted_into": ["1"]}]
    # Row ids continue across inlined rows and files, as DuckDB's would.
    assert con.execute("SELECT min(rowid), max(rowid) FROM lake.main.t").fetchone() == (0, 21)


@sqlite_by_default
def test_empty_input(env: Env) -> None:
    src = env.parquet("empty", "SELECT * FROM (" + PRIMITIVES + ") WHERE false")
    created = env.write("e", src, mode="create")
    assert (created.rows, created.files, created.snapshot_id) == (0, 0, 1)
    appended = env.write("e", src)
    assert appended.snapshot_id is None  # nothing to commit
    con = env.attached()
    assert con.execute("SELECT count(*) FROM lake.main.e").fetchone() == (0,)
    assert len(con.execute("DESCRIBE lake.main.e").fetchall()) == 16


@sqlite_by_default
def test_partitioned_identity_day_and_bucket_match_duckdb(env: Env) -> None:
    src = env.parquet("events", EVENTS)
    env.write("ours", src, partition_by=["region", "day(ts)", "bucket(4, id)"], mode="create")
    con = env.attached()
    expected = f"SELECT * FROM read_parquet('{src}')"
    assert_same_rows(con, "SELECT * FROM lake.main.ours", expected)
    assert_filters_agree(con, "lake.main.ours", expected)
    # DuckDB partitions the same rows the same way: the key tuple of every id agrees.
    con.execute(f"CREATE TABLE lake.main.theirs AS SELECT * FROM read_parquet('{src}') LIMIT 0")
    con.execute("ALTER TABLE lake.main.theirs SET PARTITIONED BY (region, day(ts), bucket(4, id))")
    con.execute(f"INSERT INTO lake.main.theirs SELECT * FROM read_parquet('{src}')")
    keys = """
        SELECT r.id, list(v.partition_value ORDER BY v.partition_key_index) AS k
        FROM __ducklake_metadata_lake.ducklake_data_file f
        JOIN __ducklake_metadata_lake.ducklake_table t ON t.table_id = f.table_id AND t.table_name = '{name}'
        JOIN __ducklake_metadata_lake.ducklake_file_partition_value v ON v.data_file_id = f.data_file_id
        JOIN (SELECT id, filename FROM read_parquet('{root}/**/*.parquet', filename => true)) r
          ON r.filename LIKE '%' || f.path
        GROUP BY r.id
    """
    root = env.spot.data_path / "main"
    ours = dict(con.execute(keys.format(name="ours", root=root / "ours")).fetchall())
    theirs = dict(con.execute(keys.format(name="theirs", root=root / "theirs")).fetchall())
    assert len(ours) == 500 and ours == theirs
    paths = [p for (p,) in con.execute("SELECT path FROM __ducklake_metadata_lake.ducklake_data_file "
                                       "WHERE table_id = 1").fetchall()]
    assert all(p.startswith("region=") and "/day=" in p and "/bucket=" in p for p in paths)
    assert any(p.startswith("region=__HIVE_DEFAULT_PARTITION__/") for p in paths)


@sqlite_by_default
def test_month_partition_and_file_rotation(env: Env) -> None:
    src = env.parquet("events", EVENTS)
    env.write("m", src, partition_by=["month(dt)"], mode="create")
    con = env.attached()
    assert_same_rows(con, "SELECT * FROM lake.main.m", f"SELECT * FROM read_parquet('{src}')")
    months = {v for (v,) in con.execute("SELECT DISTINCT partition_value FROM "
                                        "__ducklake_metadata_lake.ducklake_file_partition_value").fetchall()}
    assert months == {"1", "2", "12"}
    con.execute("CALL lake.set_option('target_file_size', '4KB')")
    con.execute("CALL lake.set_option('parquet_row_group_size', '100')")
    env.detach()
    big = env.parquet("big", "SELECT i AS id, md5(i::VARCHAR) AS h FROM range(20000) t(i)")
    r = env.write("rotated", big, mode="create")
    assert r.files >= 3  # rotated at the target size
    con = env.attached()
    expected = f"SELECT * FROM read_parquet('{big}')"
    assert_same_rows(con, "SELECT * FROM lake.main.rotated", expected)
    assert_filters_agree(con, "lake.main.rotated", expected)


@backends
def test_overwrite_replaces_files_and_inlined_rows(env: Env) -> None:
    first = env.parquet("first", "SELECT * FROM (" + EVENTS + ") WHERE id < 100")
    few = env.parquet("few", "SELECT * FROM (" + EVENTS + ") WHERE id BETWEEN 100 AND 102")
    second = env.parquet("second", "SELECT * FROM (" + EVENTS + ") WHERE id >= 400")
    env.write("o", first)
    env.write("o", few)
    r = env.write("o", second, mode="overwrite")
    con = env.attached()
    assert_same_rows(con, "SELECT * FROM lake.main.o", f"SELECT * FROM read_parquet('{second}')")
    assert_same_rows(con, f"SELECT * FROM lake.main.o AT (VERSION => {r.snapshot_id - 1})",
                     f"SELECT * FROM read_parquet(['{first}', '{few}'])")
    changes = con.execute(f"SELECT changes FROM lake.snapshots() WHERE snapshot_id = {r.snapshot_id}").fetchone()[0]
    assert set(changes) == {"tables_deleted_from", "inlined_delete", "tables_inserted_into"}
    assert our_rows(env, "o") == [tuple(x) for x in env.oracle.execute(
        f"SELECT * FROM read_parquet('{second}') ORDER BY id").fetchall()]


@backends
def test_duckdb_appends_deletes_updates_and_checkpoints_our_tables(env: Env) -> None:
    src = env.parquet("prims", PRIMITIVES)
    env.write("t", src)
    con = env.attached()
    con.execute(f"INSERT INTO lake.main.t SELECT * FROM read_parquet('{src}') WHERE id < 50")
    con.execute("DELETE FROM lake.main.t WHERE id % 7 = 0")
    con.execute("UPDATE lake.main.t SET s = 'updated', f64 = -1 WHERE id % 11 = 0")
    con.execute("CHECKPOINT")
    expected = f"""
        SELECT * REPLACE (CASE WHEN id % 11 = 0 THEN 'updated' ELSE s END AS s,
                          CASE WHEN id % 11 = 0 THEN -1 ELSE f64 END AS f64)
        FROM (SELECT * FROM read_parquet('{src}') UNION ALL SELECT * FROM read_parquet('{src}') WHERE id < 50)
        WHERE id % 7 <> 0
    """
    assert_same_rows(con, "SELECT * FROM lake.main.t", expected)
    assert_filters_agree(con, "lake.main.t", expected)
    want = con.execute(f"SELECT count(*), sum(id), count(*) FILTER (s = 'updated') FROM ({expected})").fetchone()
    env.detach()
    got = env.lake.sql("SELECT count(*), sum(id), count_if(s = 'updated') FROM t").collect()[0]
    env.lake.close()
    assert tuple(got) == want
    # …and we append again after DuckDB's maintenance.
    env.write("t", src)
    con = env.attached()
    assert con.execute("SELECT count(*) FROM lake.main.t").fetchone() == (want[0] + 300,)
    assert_snapshots_parse(con)


@sqlite_by_default
def test_append_after_duckdb_add_and_rename_column(env: Env) -> None:
    src = env.parquet("events", EVENTS)
    env.write("ev", src)
    con = env.attached()
    con.execute("ALTER TABLE lake.main.ev ADD COLUMN note VARCHAR DEFAULT 'n/a'")
    con.execute("ALTER TABLE lake.main.ev RENAME COLUMN amount TO total")
    env.detach()
    newer = env.parquet("newer", "SELECT id + 1000 AS id, region, ts, dt, amount AS total, 'new' AS note "
                        "FROM (" + EVENTS + ") WHERE id < 20")
    env.write("ev", newer)
    missing = env.parquet("missing", "SELECT id + 2000 AS id, region FROM (" + EVENTS + ") WHERE id < 15")
    env.write("ev", missing)  # absent columns get their DEFAULT (note), else NULL, as DuckDB's INSERT
    con = env.attached()
    expected = f"""
        SELECT id, region, ts, dt, amount AS total, 'n/a' AS note FROM read_parquet('{src}')
        UNION ALL SELECT * FROM read_parquet('{newer}')
        UNION ALL SELECT id, region, NULL, NULL, NULL, 'n/a' FROM read_parquet('{missing}')
    """
    assert_same_rows(con, "SELECT * FROM lake.main.ev", expected)
    assert_filters_agree(con, "lake.main.ev", expected)


@sqlite_by_default
def test_append_casts_promotions_and_refuses_the_rest(env: Env) -> None:
    base = env.parquet("base", "SELECT i::BIGINT AS id, i::DOUBLE AS x, i::DECIMAL(12, 3) AS d FROM range(30) t(i)")
    env.write("p", base)
    narrow = env.parquet("narrow", "SELECT (100 + i)::INTEGER AS id, (i / 4)::FLOAT AS x, i::SMALLINT AS d "
                         "FROM range(30) t(i)")
    env.write("p", narrow)
    con = env.attached()
    expected = f"""SELECT * FROM read_parquet('{base}') UNION ALL
                   SELECT id::BIGINT, x::DOUBLE, d::DECIMAL(12, 3) FROM read_parquet('{narrow}')"""
    assert_same_rows(con, "SELECT * FROM lake.main.p", expected)
    before = con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()
    env.detach()
    bad_type = env.parquet("bad", "SELECT 'x' AS id FROM range(30)")
    with pytest.raises(InputError, match="'id' is (int64|BIGINT) in the table but (the input has string|VARCHAR)"):
        env.write("p", bad_type)
    extra = env.parquet("extra", "SELECT i::BIGINT AS id, 1 AS surprise FROM range(30) t(i)")
    with pytest.raises(InputError, match="surprise"):
        env.write("p", extra)
    env.write("p", extra, ignore_extra_columns=True)
    with pytest.raises(DuckLakeError, match="already exists"):
        env.write("p", base, mode="create")
    con = env.attached()
    assert con.execute("SELECT count(*) FROM lake.snapshots()").fetchone() == (before[0] + 1,)
    assert con.execute("SELECT count(*) FROM lake.main.p").fetchone() == (90,)


@sqlite_by_default
def test_write_from_a_time_travel_query_into_a_new_schema(env: Env) -> None:
    src = env.parquet("events", EVENTS)
    first = env.write("ev", src)
    env.write("ev", src)
    r = env.write("reports.daily", query=f"SELECT dt, count(*) AS n, sum(amount) AS total FROM ev VERSION AS OF "
                                        f"{first.snapshot_id} GROUP BY dt", inline=False)
    assert r.created_table
    con = env.attached()
    assert_same_rows(con, "SELECT * FROM lake.reports.daily",
                     f"SELECT dt, count(*), sum(amount) FROM read_parquet('{src}') GROUP BY dt")
    changes = con.execute(f"SELECT changes FROM lake.snapshots() WHERE snapshot_id = {r.snapshot_id}").fetchone()[0]
    assert changes == {"schemas_created": ["reports"], "tables_created": ["reports.daily"],
                       "tables_inserted_into": [str(r_table_id(con, "daily"))]}


def r_table_id(con: duckdb.DuckDBPyConnection, name: str) -> int:
    """A table's id in the attached lake."""
    return int(con.execute("SELECT table_id FROM __ducklake_metadata_lake.ducklake_table WHERE table_name = $n",
                           {"n": name}).fetchone()[0])


@FULL
@pytest.mark.parametrize("spot", ["duckdb", "postgres"], indirect=True)
def test_millions_of_rows(env: Env) -> None:
    """The big-write scenario on the other two oracle backends, at 3 million rows (SQLite's 10 million, with the
    driver-RSS bound, are in tests/ops/test_write_memory.py; the catalog rows per file are the same at any size):
    every row back, row for row."""
    from tests.support.writes import make_wide_parquet

    rows = 3_000_000
    source = make_wide_parquet(env.inputs / "wide", rows, files=4)
    result = run_write(env.lake, "big", source=[str(source)], mode="create")
    env.lake.close()
    assert (result.rows, result.inlined_rows) == (rows, 0)
    con = env.attached()
    src = f"read_parquet('{source}/*.parquet')"
    assert con.execute("SELECT count(*) FROM lake.main.big").fetchone() == (rows,)
    described = con.execute(f"SELECT column_name FROM (DESCRIBE SELECT * FROM {src})").fetchall()
    cols = [c for (c,) in described if c != "id"]
    differ = con.execute(
        f"SELECT count(*) FROM lake.main.big l FULL JOIN {src} s USING (id) WHERE l.id IS NULL OR s.id IS NULL "
        f"OR ({', '.join('l.' + c for c in cols)}) IS DISTINCT FROM ({', '.join('s.' + c for c in cols)})"
    ).fetchone()
    assert differ == (0,)
    for where in ("id BETWEEN 1499990 AND 1500010", "amount > 998.9"):
        q = f"SELECT count(*) FROM {{}} WHERE {where}"
        assert con.execute(q.format("lake.main.big")).fetchone() == con.execute(q.format(src)).fetchone(), where
