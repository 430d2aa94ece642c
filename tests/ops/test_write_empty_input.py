"""Input DuckDB could not read back never reaches the catalog (issue #14): input with no columns (an empty CSV, a
column-less frame, for a new table, an append, a merge), an empty column name, a struct without fields or with two
fields named alike. Each is refused with one line before anything is written, the catalog file is byte-identical,
and DuckDB still attaches the lake after each case."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ducklake_cli.api import Lake, connect
from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.errors import DuckLakeError
from ducklake_cli.ops.create import create_catalog
from tests.support.cli import run_main
from tests.support.oracle import attach_clause, oracle_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[tuple[Lake, Path]]:
    """Our lake (SQLite catalog) holding table `t (a INT)` with one row."""
    catalog = tmp_path / "cat.sqlite"
    create_catalog(parse_catalog(str(catalog), must_exist=False), data_path=str(tmp_path / "data"))
    con = oracle_connect()
    con.execute(attach_clause("sqlite", catalog, tmp_path / "data"))
    con.execute("CREATE TABLE lake.t (a INT)")
    con.execute("INSERT INTO lake.t VALUES (1)")
    con.close()
    opened = connect(str(catalog))
    try:
        yield opened, catalog
    finally:
        opened.close()


def test_bad_input_is_refused_in_one_line_and_duckdb_still_attaches_the_lake(
        lake: tuple[Lake, Path], tmp_path: Path, spark: SparkSession, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    ours, catalog = lake
    empty_csv = tmp_path / "empty.csv"
    empty_csv.write_bytes(b"")
    blank_name = tmp_path / "blank.parquet"
    pq.write_table(pa.table({"": [1, 2]}), blank_name)
    nothing = spark.range(3).select()
    cases: dict[str, Callable[[], object]] = {
        "no columns, new table": lambda: ours.write(nothing, "new"),
        "no columns, append": lambda: ours.write(nothing, "t"),
        "no columns, overwrite": lambda: ours.write(nothing, "t", mode="overwrite"),
        "no columns, merge": lambda: ours.write(nothing, "t", mode="merge", on=["a"]),
        "no columns, merge into a new table": lambda: ours.write(nothing, "new", mode="merge", on=["a"]),
        "empty struct": lambda: ours.write(spark.range(2).select("id", F.struct().alias("s")), "new"),
        "nested empty struct": lambda: ours.write(spark.range(2).select(F.array(F.struct()).alias("s")), "new"),
        "struct fields named alike": lambda: ours.write(
            spark.sql("SELECT named_struct('x', 1, 'X', 2) AS s"), "new"),
    }
    before = hashlib.sha256(catalog.read_bytes()).hexdigest()

    def unchanged(case: str) -> None:
        ours.close()
        assert hashlib.sha256(catalog.read_bytes()).hexdigest() == before, case
        con = oracle_connect()
        con.execute(attach_clause("sqlite", catalog, tmp_path / "data"))
        assert con.execute("SELECT * FROM lake.t").fetchall() == [(1,)], case
        assert con.execute("SELECT count(*) FROM lake.snapshots()").fetchone() == (3,), case
        con.close()

    for case, run in cases.items():
        with pytest.raises(DuckLakeError) as info:
            run()
        assert "\n" not in str(info.value), case
        unchanged(case)
    for path, why in ((empty_csv, "empty"), (blank_name, "empty name")):
        for table in ("t", "new"):
            code, _, err = run_main(capsys, "write", str(catalog), table, "--from", str(path))
            assert code == 1 and err.count("\n") == 1 and why in err, (path, table, err)
            unchanged(f"{path.name} into {table}")
