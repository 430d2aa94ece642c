"""A second implementation of DuckLake 1.1 as the check where no DuckDB 2.0 oracle exists: `ducklakepy` (PyPI, says
it was measured against DuckDB 2.0.0). Its 1.0 → 1.1 migration of a DuckDB-built lake leaves the catalog rows ours
leaves, except where the spec decides otherwise (listed in COMPATIBILITY.md); it reads our upgraded lakes, what we then
write into them, and the 1.1-only shapes we write (nested schemas, epoch partitions, Puffin deletion vectors) as we
read them (tests/support/ducklakepy.py runs it in its own venv)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.catalog_dump import dump
from tests.support.cli import run_cli, run_main
from tests.support.ducklakepy import duckdb_reads, ducklakepy_migrate, ducklakepy_read, ducklakepy_reads, encode_arrow
from tests.support.oracle import oracle_connect
from tests.support.services import pg_database, require_env
from tests.support.spot import Spot
from tests.support.test_ducklakepy_harness import SCENARIO

# The harness's scenario, plus a column retyped FLOAT → DOUBLE with file stats (the repair only we run).
STATEMENTS = (*SCENARIO, "CREATE TABLE f (x FLOAT)", "INSERT INTO f SELECT i / 3 FROM range(30) r(i)",
              "ALTER TABLE f ALTER x TYPE DOUBLE")


def _build(spot: Spot) -> None:
    con = oracle_connect()
    try:
        con.execute(spot.attach(extra="DATA_INLINING_ROW_LIMIT 5"))
        con.execute("USE lake")
        for statement in STATEMENTS:
            con.execute(statement)
    finally:
        con.close()


def _copy(spot: Spot, dest: Path, pg_url: str | None) -> str:
    """Another catalog with the same rows (same data files)."""
    if spot.backend == "postgres":
        from tests.support.legacy_lakes import pg_template_copy

        assert pg_url is not None
        pg_template_copy(spot.catalog, pg_url)
        return pg_url
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(spot.catalog, dest)
    return str(dest)


def _retyped_bounds(rows: list[str], table_id: str) -> list[str]:
    """Stats rows of the table whose column type changed."""
    return [r for r in rows if f"('table_id', '{table_id}')" in r]


def _table_id(d: dict[str, list[str]], name: str) -> str:
    row = next(dict(eval(r)) for r in d["ducklake_table"] if f"('table_name', '{name}')" in r)  # noqa: S307
    return str(row["table_id"])


@pytest.mark.parametrize("spot", ["sqlite", "duckdb", "postgres"], indirect=True)
def test_our_1_1_migration_leaves_the_rows_ducklakepys_leaves(spot: Spot, tmp_path: Path) -> None:
    _build(spot)
    with pg_database(require_env("DUCKLAKE_TEST_PG")) if spot.backend == "postgres" else _null() as pg:
        ours = _copy(spot, tmp_path / "ours" / Path(spot.catalog).name, pg)
        done = run_cli("upgrade", ours, "--to", "1.1", "--yes", "--no-backup")
        assert done.returncode == 0, done.stderr
        assert ducklakepy_migrate(spot.catalog) == ("1.0", "1.1")
        mine, theirs = dump(ours), dump(spot.catalog)
    assert sorted(mine) == sorted(theirs)
    differ = {name for name in theirs if mine[name] != theirs[name]}
    # The one difference, decided by the spec (versions §2.6 step 5, from the 1.1 spec's introduction): we clear
    # the bounds of a column whose type changed; ducklakepy does not run that repair.
    assert differ == {"ducklake_table_column_stats", "ducklake_file_column_stats"}, differ
    f = _table_id(mine, "f")
    for name in differ:
        same = [r for r in mine[name] if r not in _retyped_bounds(mine[name], f)]
        assert same == [r for r in theirs[name] if r not in _retyped_bounds(theirs[name], f)], name
        assert all("('min_value', 'NULL')" in r and "('max_value', 'NULL')" in r
                   for r in _retyped_bounds(mine[name], f))
        assert _retyped_bounds(theirs[name], f)
        assert all("('min_value', 'NULL')" not in r for r in _retyped_bounds(theirs[name], f))


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


# What we write into the upgraded lake, and into its 1.0 twin, in the same order.
WRITES = (
    "INSERT INTO t (i, s2) VALUES (300, 'ours'), (301, NULL)",  # inlined: the _ducklake_ names on 1.1
    "DELETE FROM t WHERE i IN (2, 300)",
    "UPDATE t SET extra = 'changed' WHERE i < 10",
    "CREATE TABLE made AS SELECT id AS k, concat('v', id) AS v FROM range(40)",
    "DELETE FROM made WHERE k % 5 = 0",
)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run_main(capsys, *args)
    assert code == 0, (args, err)
    return out


@pytest.mark.spark
@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_ducklakepy_reads_our_upgraded_lake_and_our_1_1_writes_as_duckdb_reads_the_1_0_twin(
        spot: Spot, tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    _build(spot)
    twin = _copy(spot, tmp_path / "twin" / "cat.sqlite", None)
    _cli(capsys, "upgrade", spot.catalog, "--to", "1.1", "--yes", "--no-backup")
    for statement in WRITES:
        for catalog in (spot.catalog, twin):
            _cli(capsys, "query", catalog, statement)
    con = oracle_connect()
    try:
        con.execute(f"ATTACH 'ducklake:sqlite:{twin}' AS lake (DATA_PATH '{spot.data_path}/')")
        expected = duckdb_reads(con)
    finally:
        con.close()
    assert ducklakepy_reads(spot.catalog) == expected


def _ours(catalog: str, table: str, spark: Any) -> list[tuple[str, ...]]:
    import ducklake_cli

    with ducklake_cli.connect(catalog, read_only=True) as lake:
        return encode_arrow(lake.table(table, spark=spark).toArrow())


@pytest.mark.spark
def test_ducklakepy_reads_the_1_1_shapes_we_write_as_we_do(tmp_path: Path, spark: Any,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    catalog = str(tmp_path / "c.sqlite")
    _cli(capsys, "create-catalog", catalog, "--data-path", str(tmp_path / "data"), "--format-version", "1.1")
    script = ("CREATE SCHEMA sales; CREATE SCHEMA sales.europe; "
              "CREATE TABLE sales.europe.orders (id INT, d DATE, who VARCHAR) PARTITIONED BY (epoch_month(d)); "
              "CREATE TABLE sales.europe.events (id INT, ts TIMESTAMP)")
    _cli(capsys, "query", catalog, script)
    for statement in (
            "INSERT INTO sales.europe.orders SELECT id, DATE '1969-11-20' + CAST(id / 10 AS INT), 'w' || id "
            "FROM range(600) AS r(id)",
            "INSERT INTO sales.europe.events SELECT id, TIMESTAMP '2024-03-10 00:00:00' + make_interval(0, 0, 0, 0, "
            "CAST(id AS INT)) FROM range(500) AS r(id)",
            "ALTER TABLE sales.europe.events SET PARTITIONED BY (epoch_day(ts))",
            "INSERT INTO sales.europe.events VALUES (100, TIMESTAMP '1969-12-31 23:30:00')"):
        _cli(capsys, "query", catalog, statement)
    _cli(capsys, "options", catalog, "--set", "write_deletion_vectors=true")
    for statement in ("DELETE FROM sales.europe.orders WHERE id % 7 = 0",
                      "DELETE FROM sales.europe.orders WHERE id % 11 = 0",
                      "DELETE FROM sales.europe.events WHERE id < 50"):
        _cli(capsys, "query", catalog, statement)
    puffins = [p.read_bytes()[:4] for p in (tmp_path / "data").rglob("*.puffin")]
    assert b"PFA1" in puffins  # a container: the orders' second delete spans two snapshots
    for schema, table in (("sales.europe", "orders"), ("sales.europe", "events")):
        assert ducklakepy_read(catalog, schema, table) == _ours(catalog, f"{schema}.{table}", spark), table
