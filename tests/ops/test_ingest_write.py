"""`write` ingest beyond the corpus: empty input never makes a column-less table, decimals stay exact, appends cast
only losslessly and name both real types otherwise, special column names, `--on-error skip`, directories, standard
input, `--schema`, and a `--mode create` or append that loses the race to create the table."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ducklake_cli.api import Lake, connect
from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.engine.ingest import parse_schema_option
from ducklake_cli.errors import CommitConflictError, DuckLakeError, InputError, UsageError
from ducklake_cli.ops.create import create_catalog
from ducklake_cli.ops.write import WriteResult, run_write
from tests.ops.test_ingest_corpus import cli, digest
from tests.support.oracle import oracle_connect, sql_str
from tests.support.spot import ORACLE_BACKENDS, Spot

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


class Env:
    """A lake created by our create-catalog, our Lake on the shared Spark session, and the DuckDB oracle."""

    def __init__(self, spot: Spot, tmp_path: Path) -> None:
        self.spot = spot
        self.inputs = tmp_path / "inputs"
        self.inputs.mkdir()
        create_catalog(parse_catalog(spot.catalog, must_exist=False), data_path=str(spot.data_path))
        self.lake: Lake = connect(spot.catalog)
        self.con = oracle_connect()

    def file(self, name: str, data: bytes | str) -> str:
        """An input file."""
        path = self.inputs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return str(path)

    def write(self, table: str, *sources: str, **kwargs: Any) -> WriteResult:
        """`write` in-process, then release a DuckDB catalog file for the oracle."""
        self.detach()
        try:
            return run_write(self.lake, table, source=list(sources), **kwargs)
        finally:
            self.lake.close()

    def attached(self) -> duckdb.DuckDBPyConnection:
        """The oracle with the lake attached as `lake` (fresh, to see the newest snapshot)."""
        self.detach()
        self.con.execute(self.spot.attach())
        return self.con

    def detach(self) -> None:
        """Let our side open a DuckDB catalog file again."""
        self.con.execute("DETACH DATABASE IF EXISTS lake")

    def types(self, table: str) -> dict[str, str]:
        """Column name → DuckDB type of a lake table."""
        return dict(self.attached().execute(f"SELECT column_name, column_type FROM (DESCRIBE lake.main.{table})")
                    .fetchall())


@pytest.fixture
def env(spot: Spot, tmp_path: Path, spark: SparkSession) -> Iterator[Env]:
    """An empty lake per test."""
    e = Env(spot, tmp_path)
    try:
        yield e
    finally:
        e.con.close()
        e.lake.close()


sqlite = pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
backends = pytest.mark.parametrize("spot", ORACLE_BACKENDS, indirect=True)


@backends
def test_input_without_columns_is_refused_and_the_catalog_is_untouched(env: Env,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    empties = [env.file("empty.csv", b""), env.file("bom.csv", b"\xef\xbb\xbf\n\n"), env.file("e.jsonl", b"  \n")]
    no_columns = str(env.inputs / "nocols.parquet")
    pq.write_table(pa.table({}), no_columns)
    local = Path(env.spot.catalog) if env.spot.backend != "postgres" else None
    before = digest(local) if local else None
    for path in empties:
        code, _, err = cli(capsys, "write", env.spot.catalog, "t", "--from", path)
        assert code == 1 and err.count("\n") == 1 and "empty" in err, err
        with pytest.raises(InputError, match="empty"):
            env.write("t", path)
    with pytest.raises(InputError, match="no columns"):
        env.write("t", no_columns)
    if local:
        assert digest(local) == before
    con = env.attached()  # DuckDB still attaches the whole lake, and sees no table
    assert con.execute("SELECT count(*) FROM lake.snapshots()").fetchone() == (1,)
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'lake'").fetchone() == (0,)


@sqlite
def test_decimals_never_go_through_double(env: Env) -> None:
    text = "id,amount,wide\n1,12345678901234567.89,1234567890123456789012345678.0123456789\n2,-0.01,0\n"
    src = env.file("money.csv", text)
    env.write("money", src, schema='amount DECIMAL(20,2), "wide" DECIMAL(38,10)', inline=False)
    assert env.types("money") == {"id": "BIGINT", "amount": "DECIMAL(20,2)", "wide": "DECIMAL(38,10)"}
    rows = env.attached().execute("SELECT amount, wide FROM lake.main.money ORDER BY id").fetchall()
    assert rows == [(Decimal("12345678901234567.89"), Decimal("1234567890123456789012345678.0123456789")),
                    (Decimal("-0.01"), Decimal("0E-10"))]
    # An append parses the text straight into the table's DECIMAL (no sniffed DOUBLE in between).
    more = env.file("more.csv", "wide,amount,id\n0.5,98765432109876543.21,3\n")
    env.write("money", more)
    row = env.attached().execute("SELECT amount FROM lake.main.money WHERE id = 3").fetchone()
    assert row == (Decimal("98765432109876543.21"),)
    # Without --schema a sniffed DOUBLE that would round is refused, naming the row.
    with pytest.raises(InputError, match=r"data row 1: column 'amount' holds 98765432109876543\.21"):
        env.write("fresh", more)


@sqlite
def test_appends_cast_losslessly_and_name_both_real_types(env: Env) -> None:
    con = env.attached()
    base = str(env.inputs / "base.parquet")
    con.execute(f"""COPY (SELECT 1::BIGINT AS id, 1.5::DECIMAL(10,2) AS price, 'x' AS note,
                   TIMESTAMP '2024-01-01 10:00:00' AS ts, 1.0::DOUBLE AS f) TO {sql_str(base)} (FORMAT parquet)""")
    env.write("t", base, inline=False)
    # CSV text goes straight into the table's types: '007' stays text, 2.25 exact, zoned text into a naive column.
    env.write("t", env.file("a.csv", "note,id,price,ts,f\n007,2,2.25,2024-02-03 04:05:06,7\n"))
    rows = env.attached().execute("SELECT id, price, note, ts, f FROM lake.main.t ORDER BY id").fetchall()
    assert [r[:3] for r in rows] == [(1, Decimal("1.50"), "x"), (2, Decimal("2.25"), "007")]
    assert str(rows[1][3]) == "2024-02-03 04:05:06" and rows[1][4] == 7.0
    # Values the table's type would round or cannot hold are refused (DuckDB's reader would round 1.5 to 2).
    for bad, where in (("id\n1.5\n", r"data row 1: column 'id' holds 1.5, which BIGINT cannot hold"),
                       ("id,price\n3,1.234\n", r"data row 1: column 'price' holds 1.234, which DECIMAL\(10,2\)"),
                       ("id,price\n3,1\n4,12345678901.5\n", "bad.csv line 3: .*DECIMAL")):
        with pytest.raises(InputError, match=where):
            env.write("t", env.file("bad.csv", bad))
    # Spark-typed input: widening is fine, anything that could change a value is refused naming both types.
    widen = str(env.inputs / "widen.parquet")
    con = env.attached()
    con.execute(f"COPY (SELECT 5::INTEGER AS id, 2::SMALLINT AS price, 3::FLOAT AS f) TO {sql_str(widen)} "
                "(FORMAT parquet)")
    env.write("t", widen)
    cases = [("1.5::DOUBLE AS price", "'price' is DECIMAL(10,2) in the table but DOUBLE in the input"),
             ("TIMESTAMPTZ '2024-01-01 00:00:00+00' AS ts",
              "'ts' is TIMESTAMP in the table but TIMESTAMP WITH TIME ZONE in the input"),
             ("'x' AS id", "'id' is BIGINT in the table but VARCHAR in the input"),
             ("2::BIGINT AS f", "'f' is DOUBLE in the table but BIGINT in the input")]
    for i, (expr, message) in enumerate(cases):
        path = str(env.inputs / f"bad{i}.parquet")
        env.attached().execute(f"COPY (SELECT {expr}) TO {sql_str(path)} (FORMAT parquet)")
        with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
            env.write("t", path)
    assert env.attached().execute("SELECT count(*) FROM lake.main.t").fetchone() == (3,)


@sqlite
def test_column_names_with_dots_and_other_characters(env: Env) -> None:
    src = str(env.inputs / "names.parquet")
    env.attached().execute(f"""COPY (SELECT i AS "a.b", 'v' || i AS "with space", i * 2 AS "x`y",
                              {{'in.ner': i}} AS "st.ruct", i AS "ünï" FROM range(20) t(i)) TO {sql_str(src)}""")
    env.write("names", src, partition_by=["`a.b`"])
    env.write("names", src)
    con = env.attached()
    expected = f"SELECT * FROM read_parquet({sql_str(src)})"
    got = con.execute("SELECT * FROM lake.main.names EXCEPT ALL (SELECT * FROM (" + expected + ") UNION ALL "
                      + expected + ")").fetchall()
    assert got == [] and con.execute("SELECT count(*) FROM lake.main.names").fetchone() == (40,)
    assert list(env.types("names")) == ["a.b", "with space", "x`y", "st.ruct", "ünï"]


@sqlite
def test_on_error_skip_reports_the_skipped_rows(env: Env) -> None:
    lines = ["a,b"] + [f"{i},{i}" for i in range(300)]
    lines[10], lines[250], lines[280] = "1,2,3", "oops", "x,5"  # too long, too short, not a BIGINT
    src = env.file("bad.csv", "\n".join(lines) + "\n")
    env.write("t", env.file("good.csv", "a,b\n-1,-1\n"), inline=False)  # BIGINT columns for the appends
    with pytest.raises(InputError, match="line 11"):
        env.write("t", src)
    result = env.write("t", src, on_error="skip")
    assert (result.rows, result.skipped_rows) == (297, 3)
    assert result.to_json()["skipped_rows"] == 3
    con = env.attached()
    expected = f"(SELECT -1 AS a, -1 AS b UNION ALL SELECT * FROM read_csv({sql_str(src)}, ignore_errors=true, " \
               "types={'a': 'BIGINT', 'b': 'BIGINT'}))"
    assert con.execute(f"SELECT * FROM lake.main.t EXCEPT ALL SELECT * FROM {expected}").fetchall() == []
    assert con.execute(f"SELECT * FROM {expected} EXCEPT ALL SELECT * FROM lake.main.t").fetchall() == []
    with pytest.raises(UsageError, match="--on-error"):
        env.write("t", src, on_error="ignore")


@sqlite
def test_a_directory_of_csv_files_and_standard_input(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    env.file("dir/part-1.csv", "id,name\n1,a\n")
    env.file("dir/part-2.csv", "name,id\nb,2\n")
    env.file("dir/_SUCCESS", "")
    env.file("dir/.part-1.csv.crc", "garbage")
    env.write("d", str(env.inputs / "dir"))
    con = env.attached()
    assert con.execute("SELECT id, name FROM lake.main.d ORDER BY id").fetchall() == [(1, "a"), (2, "b")]
    assert env.types("d") == {"id": "BIGINT", "name": "VARCHAR"}

    class Stdin:
        buffer = io.BytesIO(b'{"id": 3, "name": "c"}\n{"id": 4, "name": "d"}\n')

    monkeypatch.setattr(sys, "stdin", Stdin())
    result = env.write("d", "-")
    assert result.rows == 2
    rows = env.attached().execute("SELECT id, name FROM lake.main.d ORDER BY id").fetchall()
    assert rows == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    text = b"id,amount,stamp\n1,12345678901234567.89,2024-01-02 03:04:05+02\n"
    monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": io.BytesIO(text)})())
    env.write("typed", "-", schema="amount DECIMAL(20,2)")
    row = env.attached().execute("SELECT amount, epoch(stamp) FROM lake.main.typed").fetchone()
    assert row == (Decimal("12345678901234567.89"), 1704157445.0)  # 01:04:05 UTC


@sqlite
def test_schema_option(env: Env) -> None:
    assert parse_schema_option('id INTEGER, "a.b, c" DECIMAL(10, 2), s STRUCT(x INT, y VARCHAR)') == [
        ("id", "INTEGER"), ("a.b, c", "DECIMAL(10, 2)"), ("s", "STRUCT(x INT, y VARCHAR)")]
    src = env.file("s.csv", "id,when,code\n1,2024-01-02 03:04:05,007\n")
    env.write("s", src, schema="id INTEGER, when TIMESTAMPTZ, code VARCHAR")
    assert env.types("s") == {"id": "INTEGER", "when": "TIMESTAMP WITH TIME ZONE", "code": "VARCHAR"}
    assert env.attached().execute("SELECT code FROM lake.main.s").fetchone() == ("007",)
    for schema, message in (("nope INT", "does not have"), ("id NOTATYPE", "not a DuckDB type"), ("", "empty"),
                            ("id", "column TYPE")):
        with pytest.raises(UsageError, match=message):
            env.write("s2", src, schema=schema)
    with pytest.raises(UsageError, match="table exists"):
        env.write("s", src, schema="id INTEGER")


@pytest.mark.parametrize("spot", ["sqlite", "postgres"], indirect=True)
def test_losing_the_race_to_create_the_table(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    import ducklake_cli.engine.writer as writer

    original = writer.write_files
    other: dict[str, str] = {}

    def write_then_race(*args: Any, **kwargs: Any) -> Any:
        files = original(*args, **kwargs)
        con = env.attached()  # another writer creates the table after we planned, before we commit
        con.execute(other["ddl"])
        env.detach()
        return files

    monkeypatch.setattr(writer, "write_files", write_then_race)
    src = env.file("t.csv", "id,name\n" + "".join(f"{i},n{i}\n" for i in range(20)))
    other["ddl"] = "CREATE TABLE lake.main.c (id BIGINT, name VARCHAR); INSERT INTO lake.main.c VALUES (100, 'x')"
    with pytest.raises(DuckLakeError, match="another writer created table main.c meanwhile") as info:
        env.write("c", src, mode="create")
    assert info.value.exit_code == 1 and "--mode append" in (info.value.hint or "")
    assert env.attached().execute("SELECT count(*) FROM lake.main.c").fetchone() == (1,)

    other["ddl"] = "CREATE TABLE lake.main.a (id BIGINT, name VARCHAR); INSERT INTO lake.main.a VALUES (100, 'x')"
    result = env.write("a", src)  # an append that lost the race appends to the winner's table
    assert (result.rows, result.created_table) == (20, False)
    con = env.attached()
    assert con.execute("SELECT count(*), sum(id) FROM lake.main.a").fetchone() == (21, 290)

    other["ddl"] = "CREATE TABLE lake.main.o (id INTEGER, other VARCHAR)"
    with pytest.raises(CommitConflictError, match="other columns"):
        env.write("o", src)
    assert env.attached().execute("SELECT count(*) FROM lake.main.o").fetchone() == (0,)


@pytest.mark.s3
def test_csv_and_json_on_s3_are_read_through_fsspec(s3_bucket: Any, tmp_path: Path, spark: SparkSession) -> None:
    s3 = s3_bucket
    fs = s3.filesystem()
    base = f"{s3.bucket}/{s3.prefix}/in"
    fs.pipe({f"{base}/csv/1.csv": b'id,s\n1,"a, ""b"""\n', f"{base}/csv/2.csv": b"s,id\nc,2\n",
             f"{base}/t.jsonl": b'{"id": 3, "s": "d"}\n'})
    catalog = str(tmp_path / "cat.sqlite")
    create_catalog(parse_catalog(catalog, must_exist=False), data_path=str(tmp_path / "data"))
    with connect(catalog, storage_options=s3.storage_options()) as lake:
        run_write(lake, "t", source=[f"s3://{base}/csv/"], inline=False)
        run_write(lake, "t", source=[f"s3://{base}/*.jsonl"], inline=False)
    con = oracle_connect()
    try:
        con.execute(Spot("sqlite", catalog, catalog, tmp_path / "data").attach())
        assert con.execute("SELECT id, s FROM lake.main.t ORDER BY id").fetchall() == [
            (1, 'a, "b"'), (2, "c"), (3, "d")]
    finally:
        con.close()


def test_csv_through_spark_connect(spark_connect: Any, tmp_path: Path) -> None:
    """CSV parsed by DuckDB inside the Connect server's Python workers; a bad line still comes back as one line."""
    from tests.support.cli import run_cli

    catalog = str(tmp_path / "cat.sqlite")
    create_catalog(parse_catalog(catalog, must_exist=False), data_path=str(tmp_path / "data"))
    rows = "".join(f'{i},"n ""{i}"", x",{i}.25\n' for i in range(40))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("id,name,amount\n" + rows)
    (tmp_path / "in" / "b.csv").write_text("amount,id\n0.5,99\n")
    res = run_cli("write", catalog, "t", "--from", str(tmp_path / "in"), "--remote", spark_connect.url)
    assert res.returncode == 0, res.stderr[-2000:]
    (tmp_path / "bad.csv").write_text("id,name,amount\n" + rows + "1,2\n")
    res = run_cli("write", catalog, "t", "--from", str(tmp_path / "bad.csv"), "--remote", spark_connect.url)
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "bad.csv line 42" in res.stderr, res.stderr
    con = oracle_connect()
    try:
        con.execute(Spot("sqlite", catalog, catalog, tmp_path / "data").attach())
        expected = f"read_csv([{sql_str(str(tmp_path / 'in' / 'a.csv'))}, {sql_str(str(tmp_path / 'in' / 'b.csv'))}]" \
                   ", union_by_name=true)"
        assert con.execute(f"SELECT * FROM lake.main.t EXCEPT ALL SELECT * FROM {expected}").fetchall() == []
        assert con.execute("SELECT count(*) FROM lake.main.t").fetchone() == (41,)
    finally:
        con.close()


DUCKDB_ONLY_TYPES = """SELECT i AS n, md5(i::VARCHAR)::UUID AS u, to_days(i::INTEGER) + to_milliseconds(i) AS iv,
    TIME '01:02:03' + to_microseconds(i) AS t, ('12:00:00+0' || (i % 9)::VARCHAR)::TIMETZ AS ttz,
    (TIMESTAMP '2020-01-01' + to_microseconds(i * 1000001))::TIMESTAMP_NS AS ts_ns,
    (i * 1000000007)::HUGEINT AS h, {'u': md5((i + 1)::VARCHAR)::UUID} AS st
    FROM range(40) r(i)"""


@backends
def test_parquet_with_types_spark_cannot_read_is_read_by_duckdb(env: Env) -> None:
    """Parquet from DuckDB's COPY with UUID, INTERVAL, TIME, TIMETZ, TIMESTAMP_NS, HUGEINT: Spark's reader refuses
    their schema, so DuckDB reads them, and the table equals DuckDB's read_parquet in rows and types."""
    src = str(env.inputs / "duck.parquet")
    env.con.execute(f"COPY ({DUCKDB_ONLY_TYPES}) TO {sql_str(src)} (FORMAT parquet)")
    env.write("main.d", src, mode="create", inline=False)
    con = env.attached()
    want = con.execute(f"SELECT CAST(COLUMNS(*) AS VARCHAR) FROM read_parquet({sql_str(src)}) ORDER BY n").fetchall()
    assert con.execute("SELECT CAST(COLUMNS(*) AS VARCHAR) FROM lake.main.d ORDER BY n").fetchall() == want
    described = dict(con.execute("SELECT column_name, column_type FROM "
                                 f"(DESCRIBE SELECT * FROM read_parquet({sql_str(src)}))").fetchall())
    assert env.types("d") == described


@sqlite
def test_parquet_nanoseconds_are_refused_not_cut(env: Env) -> None:
    src = str(env.inputs / "ns.parquet")
    env.con.execute(f"COPY (SELECT 1 AS n, '2020-01-01 00:00:00.123456789'::TIMESTAMP_NS AS ts) TO {sql_str(src)}")
    before = digest(Path(env.spot.catalog))
    with pytest.raises(InputError, match=r"data row 1: column 'ts' holds 2020-01-01 00:00:00\.123456789"):
        env.write("main.ns", src, mode="create")
    assert digest(Path(env.spot.catalog)) == before


@sqlite
def test_quoted_schema_and_table_names_may_hold_dots_and_quotes(env: Env) -> None:
    src = env.file("q.csv", "a\n1\n2\n")
    env.write('"s.1"."my ""q"" t"', src, mode="create", inline=False)
    con = env.attached()
    assert con.execute('SELECT a FROM lake."s.1"."my ""q"" t" ORDER BY a').fetchall() == [(1,), (2,)]
