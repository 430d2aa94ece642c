"""The 1.0 guard (issue #28 acceptance): every write path of ours on a DuckLake 1.0 catalog leaves it 1.0 — after
each command the version is still '1.0', no table has a 1.1 column (`row_group_count`, `min_is_exact`,
`max_is_exact`, `parent_schema_id`), there is no `ducklake_view_column_tag`, every inlined-data table keeps 1.0's
system column names, no Puffin container and no epoch transform exists — and DuckDB 1.5.5 still attaches the lake
and reads every table as we do. And each 1.1-only request on a 1.0 catalog is refused in one line naming
`upgrade --to 1.1`, leaving the catalog byte for byte as it was.

One sequence of CLI commands (in this process, on the test's Spark) on one lake: SQLite by default, PostgreSQL in
the full tier.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.catalog_dump import dump, run_sql, version_of
from tests.support.cli import run_main
from tests.support.diff import compare_lake
from tests.support.oracle import oracle_connect, sql_str
from tests.support.spot import Spot
from tests.support.tiers import backend_params
from tests.support.v11 import catalog_bytes, puffin_files, snapshot_ids, v10_shape_problems

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

COLUMNS = "id INTEGER, region VARCHAR, ts TIMESTAMP, v DOUBLE"


def _parquet(path: Path, select: str) -> str:
    """A Parquet file DuckDB writes from a SELECT; its path."""
    con = oracle_connect()
    try:
        con.execute(f"COPY ({select}) TO {sql_str(str(path))} (FORMAT parquet)")
    finally:
        con.close()
    return str(path)


def _rows(first: int, count: int) -> str:
    return (f"SELECT i::INTEGER AS id, ['eu', 'us', 'ap'][i % 3 + 1] AS region, TIMESTAMP '2020-01-01' + "
            f"INTERVAL (i * 7) DAY AS ts, i / 4 AS v FROM range({first}, {first + count}) r(i)")


class Guard:
    """Runs our commands on one 1.0 lake and checks its shape (and DuckDB's reading of it) after each."""

    def __init__(self, spot: Spot, capsys: pytest.CaptureFixture[str], spark: SparkSession) -> None:
        self.spot, self.capsys, self.spark = spot, capsys, spark
        self.done: list[str] = []

    def ok(self, *args: str, check_reads: bool = False) -> str:
        """`ducklake ARGS` succeeds and the lake keeps its 1.0 shape (`check_reads`: and DuckDB reads it as we do;
        each read costs a Spark job per table, so the sequence asks for it after each group of commands)."""
        code, out, err = run_main(self.capsys, *args)
        label = " ".join(args[:2]) if args[0] == "maintain" else args[0] + (f" {args[2]}" if args[0] == "query" else "")
        assert code == 0, f"`ducklake {' '.join(args)}` exited {code}: {err.strip()[-800:]}"
        self.done.append(label)
        self.check(label, check_reads=check_reads)
        return out

    def sql(self, statement: str, *, check_reads: bool = False) -> str:
        """`ducklake query CATALOG STATEMENT`, checked."""
        return self.ok("query", self.spot.catalog, statement, check_reads=check_reads)

    def check(self, label: str, *, check_reads: bool = True) -> None:
        """The 1.0 shape, then DuckDB 1.5.5 attaches the lake and reads every live table as we do."""
        problems = v10_shape_problems(self.spot.catalog, self.spot.data_path)
        assert not problems, f"after `{label}` the 1.0 catalog has 1.1's shape: {problems}"
        if check_reads:
            latest = snapshot_ids(self.spot.catalog)[-1]
            compare_lake(self.spot, self.spark, f"after {label}", [latest])

    def refused(self, *args: str) -> str:
        """`ducklake ARGS` is refused as a 1.1-only request: exit 2, one error line naming `upgrade --to 1.1`,
        the catalog unchanged byte for byte."""
        before = catalog_bytes(self.spot)
        code, _, err = run_main(self.capsys, *args)
        assert code == 2, f"`ducklake {' '.join(args)}` exited {code}, not 2: {err.strip()[-800:]}"
        lines = [line for line in err.strip().splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), f"not one error line: {lines}"
        assert "needs a DuckLake 1.1 catalog" in lines[0], lines[0]
        assert "upgrade --to 1.1" in lines[0], f"the refusal does not name `upgrade --to 1.1`: {lines[0]}"
        assert catalog_bytes(self.spot) == before, f"`ducklake {' '.join(args)}` changed the catalog"
        return lines[0]


@pytest.fixture(params=backend_params(["sqlite", "postgres"]))
def lake(request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str],
         spark: SparkSession) -> Guard:
    """A fresh 1.0 lake made by `ducklake create-catalog`, with the input files under tmp_path/in."""
    backend = request.param
    data = tmp_path / "data"
    catalog = str(tmp_path / "cat.sqlite") if backend == "sqlite" else request.getfixturevalue("pg_url")
    spot = Spot(backend, catalog, catalog, data)
    code, _, err = run_main(capsys, "create-catalog", catalog, "--data-path", str(data))
    assert code == 0, err
    assert version_of(catalog) == "1.0"
    (tmp_path / "in").mkdir()
    return Guard(spot, capsys, spark)


def test_every_write_path_keeps_v10(lake: Guard, tmp_path: Path) -> None:
    """write, DML, DDL, register, options, flush, compact, rewrite, checkpoint, restore, deletion vectors,
    copy-catalog, expire and cleanup on a 1.0 lake: 1.0 after each, DuckDB 1.5.5 reads it as we do."""
    cat, inp = lake.spot.catalog, tmp_path / "in"
    big = _parquet(inp / "big.parquet", _rows(0, 200))
    small = _parquet(inp / "small.parquet", _rows(1000, 4))
    other = _parquet(inp / "other.parquet", _rows(500, 60))

    # write: create (Parquet), append (inlined), partitioned create, overwrite
    lake.ok("write", cat, "t", "--from", big, "--mode", "create")
    lake.ok("write", cat, "t", "--from", small, "--mode", "append")
    lake.ok("write", cat, "p", "--from", big, "--mode", "create", "--partition-by", "region",
            "--partition-by", "year(ts)")
    lake.ok("write", cat, "p", "--from", other, "--mode", "overwrite")
    lake.ok("write", cat, "src", "--from", small, "--mode", "create", check_reads=True)
    # DML
    lake.sql("INSERT INTO t VALUES (2000, 'eu', TIMESTAMP '2024-01-01 00:00:00', 1.5)")
    lake.sql("UPDATE t SET v = v + 1 WHERE id < 20 OR id = 2000")
    lake.sql("DELETE FROM t WHERE id BETWEEN 30 AND 39 OR id = 1001")
    lake.sql("MERGE INTO t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v + 100 "
             "WHEN NOT MATCHED THEN INSERT (id, region, ts, v) VALUES (s.id, s.region, s.ts, s.v)")
    lake.sql("DELETE FROM p WHERE region = 'ap' AND id < 530")
    lake.ok("delete", cat, "t", "--where", "id = 50", "--yes", check_reads=True)
    # DDL: tables, columns (a new inlined-data table for t), views, comments, partition specs, schemas
    lake.sql("CREATE TABLE u (a INT, b STRING)")
    lake.sql("INSERT INTO u VALUES (1, 'x'), (2, 'y')")
    lake.sql("ALTER TABLE t ADD COLUMN c INT")
    lake.sql("INSERT INTO t (id, region, c) VALUES (3000, 'us', 7)")
    lake.sql("ALTER TABLE t RENAME COLUMN v TO w")
    lake.sql("ALTER TABLE u ALTER COLUMN a TYPE BIGINT")
    lake.sql("CREATE VIEW vw AS SELECT id, region FROM t WHERE id < 100")
    lake.sql("COMMENT ON TABLE t IS 'the t'")
    lake.sql("COMMENT ON COLUMN t.id IS 'the id'")
    lake.sql("COMMENT ON VIEW vw IS 'the view'")
    lake.sql("ALTER TABLE p SET PARTITIONED BY (month(ts))")
    lake.ok("write", cat, "p", "--from", small, "--mode", "append", "--no-inline")
    lake.sql("CREATE SCHEMA s2")
    lake.sql("CREATE TABLE s2.x (a INT)")
    lake.sql("INSERT INTO s2.x VALUES (1)")
    lake.sql("DROP TABLE s2.x")
    lake.sql("DROP SCHEMA s2")
    lake.sql("DROP VIEW vw", check_reads=True)
    # register
    lake.sql("CREATE TABLE r (id INT, region STRING, ts TIMESTAMP_NTZ, v DOUBLE)")
    ext = tmp_path / "ext"
    ext.mkdir()
    _parquet(ext / "r1.parquet", _rows(0, 30))
    lake.ok("register", cat, "r", str(ext / "r1.parquet"), check_reads=True)
    # options
    lake.ok("options", cat, "--set", "target_file_size=64MB")
    lake.ok("options", cat, "--table", "t", "--set", "parquet_compression=zstd")
    # maintenance
    lake.ok("maintain", "flush", cat, "--yes", check_reads=True)
    lake.ok("write", cat, "t", "--from", other, "--mode", "append", "--ignore-extra-columns")
    lake.ok("maintain", "compact", cat, "--table", "t", "--yes", check_reads=True)
    lake.sql("DELETE FROM t WHERE id % 2 = 0")
    lake.ok("maintain", "rewrite", cat, "--table", "t", "--delete-threshold", "0.1", "--yes", check_reads=True)
    lake.sql("INSERT INTO u VALUES (3, 'z')")
    lake.ok("maintain", "checkpoint", cat, "--yes", check_reads=True)
    restore_to = snapshot_ids(cat)[len(snapshot_ids(cat)) // 2]
    lake.ok("restore", cat, "t", "--to-snapshot", str(restore_to), "--yes", check_reads=True)
    # deletion vectors: on 1.0, a second delete of a file's rows is never a multi-snapshot Puffin container
    lake.ok("options", cat, "--table", "p", "--set", "write_deletion_vectors=true")
    lake.sql("DELETE FROM p WHERE id % 5 = 0")
    lake.sql("DELETE FROM p WHERE id % 5 = 1")
    lake.sql("DELETE FROM p WHERE id % 5 = 2", check_reads=True)
    lake.ok("options", cat, "--table", "p", "--unset", "write_deletion_vectors")
    # copy-catalog: the copy is 1.0 too, and DuckDB reads it
    copy = tmp_path / "copy.sqlite"
    lake.ok("copy-catalog", cat, str(copy))
    assert version_of(str(copy)) == "1.0"
    assert not v10_shape_problems(str(copy), lake.spot.data_path)
    compare_lake(Spot("sqlite", str(copy), str(copy), lake.spot.data_path), lake.spark, "the copy",
                 snapshot_ids(str(copy))[-1:])
    # expire and cleanup
    lake.ok("maintain", "expire", cat, "--keep-last", "3", "--yes")
    lake.ok("maintain", "cleanup", cat, "--all", "--yes")
    lake.ok("maintain", "orphans", cat, "--all", "--yes", check_reads=True)
    assert "ducklake_view_column_tag" not in dump(cat)


def test_v11_requests_refused_on_v10(lake: Guard, tmp_path: Path) -> None:
    """Nested schemas, epoch transforms (DDL and write), COMMENT ON COLUMN of a view: refused in one line, nothing
    written."""
    cat = lake.spot.catalog
    lake.ok("write", cat, "t", "--from", _parquet(tmp_path / "in" / "t.parquet", _rows(0, 20)), "--mode", "create")
    lake.sql("CREATE SCHEMA a")
    lake.sql("CREATE VIEW vw AS SELECT id, region FROM t")
    before = snapshot_ids(cat)
    refusals = [
        ("query", cat, "CREATE SCHEMA a.b"),
        ("query", cat, "ALTER TABLE t SET PARTITIONED BY (epoch_day(ts))"),
        ("query", cat, "ALTER TABLE t SET PARTITIONED BY (region, epoch_year(ts))"),
        ("query", cat, "COMMENT ON COLUMN vw.id IS 'the id'"),
        ("query", cat, "CREATE TABLE e (a INT, ts TIMESTAMP_NTZ) PARTITIONED BY (epoch_month(ts))"),
        ("write", cat, "e", "--from", str(tmp_path / "in" / "t.parquet"), "--mode", "create", "--partition-by",
         "epoch_hour(ts)"),
    ]
    failures = []
    for args in refusals:
        try:
            lake.refused(*args)
        except AssertionError as exc:
            failures.append(f"{args[2] if args[0] == 'query' else ' '.join(args[2:])}: {exc}")
    assert snapshot_ids(cat) == before
    lake.check("refusals")
    assert not failures, "\n".join(failures)


def test_guard_sees_v11_shapes(lake: Guard) -> None:
    """The shape check itself: a 1.1 column, table, renamed inlined column, epoch transform, Puffin container or
    version string is each reported."""
    cat, data = lake.spot.catalog, lake.spot.data_path
    lake.sql("CREATE TABLE t (a INT, ts TIMESTAMP_NTZ)")
    lake.sql("INSERT INTO t VALUES (1, TIMESTAMP '2020-01-01 00:00:00')")
    assert not v10_shape_problems(cat, data)
    inlined = next(t for t in dump(cat) if t.startswith("ducklake_inlined_data_") and t[-1].isdigit())
    run_sql(cat, "ALTER TABLE ducklake_data_file ADD COLUMN row_group_count BIGINT",
            "CREATE TABLE ducklake_view_column_tag (view_id BIGINT)",
            f"ALTER TABLE {inlined} RENAME COLUMN row_id TO _ducklake_row_id",
            "UPDATE ducklake_partition_column SET transform = 'epoch_day'",
            "INSERT INTO ducklake_partition_column VALUES (1, 1, 0, 1, 'epoch_day')",
            "UPDATE {q} SET value = '1.1' WHERE \"key\" = 'version'")
    data.mkdir(parents=True, exist_ok=True)
    (data / "x.puffin").write_bytes(b"PFA1" + bytes(20))
    problems = " | ".join(v10_shape_problems(cat, data))
    for needle in ("row_group_count", "ducklake_view_column_tag", "_ducklake_row_id", "epoch_day", "Puffin",
                   "version"):
        assert needle in problems, f"{needle} not reported: {problems}"
    assert puffin_files(data)
