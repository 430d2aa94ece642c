"""NOT NULL flags on nested fields (DuckDB 1.5.5 records the struct fields it adds or renames as NOT NULL and writes
NULLs into them itself): twin lakes built by DuckDB, every write path run by DuckDB on one and by us on the other,
with NULLs in renamed and added struct fields, two deep, inside lists and maps, and in a NOT NULL struct column
(DuckDB enforces none of these); a NULL in a NOT NULL top-level column is refused by both. After each step both
lakes hold the same rows as DuckDB reads them, and at the end our reader agrees.

One lake pair, one test body (CI time); the session's Spark runs our side in this process (`run_main`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pytest

from ducklake_cli.api import connect
from ducklake_cli.ops.dml import run_change
from ducklake_cli.ops.query import table_dataframe
from tests.support.cli import run_main
from tests.support.dml_twins import normal, sort_key, twin_spots
from tests.support.oracle import oracle_connect, used
from tests.support.spot import ORACLE_BACKENDS, Spot
from tests.support.tiers import backend_params

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

ALIAS = "lk"
COLUMNS = "id, part, info, deep, l, m, ns"
SETUP = (
    "CREATE TABLE s (id INTEGER NOT NULL, part INTEGER, info STRUCT(a INTEGER, b VARCHAR), "
    "deep STRUCT(i STRUCT(p INTEGER)), l STRUCT(x INTEGER)[], m MAP(VARCHAR, STRUCT(y INTEGER)), "
    "ns STRUCT(k INTEGER) NOT NULL)",
    "INSERT INTO s SELECT i, i % 2, {'a': i, 'b': 'b' || i}, {'i': {'p': i}}, [{'x': i}], MAP {'k' || i: {'y': i}}, "
    "{'k': i} FROM range(0, 20) r(i)",
    # Each of these is recorded NOT NULL by DuckDB 1.5.5.
    "ALTER TABLE s RENAME COLUMN info.b TO bb",
    "ALTER TABLE s ADD COLUMN info.c INTEGER",
    "ALTER TABLE s ADD COLUMN deep.i.q INTEGER",
    "ALTER TABLE s ADD COLUMN l.element.z INTEGER",
    "ALTER TABLE s ADD COLUMN m.value.w INTEGER",
    "INSERT INTO s SELECT i, i % 2, {'a': i, 'bb': NULL, 'c': CASE WHEN i % 2 = 0 THEN i END}, "
    "{'i': {'p': NULL, 'q': NULL}}, [{'x': i, 'z': NULL}, NULL], MAP {'k' || i: {'y': NULL, 'w': NULL}}, NULL "
    "FROM range(20, 40) r(i)",
    "INSERT INTO s VALUES (40, 0, {'a': 40, 'bb': NULL, 'c': NULL}, {'i': NULL}, [], MAP {}, {'k': NULL})",
    "ALTER TABLE s SET PARTITIONED BY (part)",
)
# Input files: NULLs in every nested field DuckDB calls NOT NULL.
INPUT = ("SELECT (i + {start})::INTEGER AS id, (i % 2)::INTEGER AS part, "
         "{{'a': i::INTEGER, 'bb': NULL::VARCHAR, 'c': NULL::INTEGER{extra_field}}} AS info, "
         "{{'i': {{'p': i::INTEGER, 'q': NULL::INTEGER}}}} AS deep, [{{'x': NULL::INTEGER, 'z': NULL::INTEGER}}] AS l, "
         "MAP {{'k': {{'y': NULL::INTEGER, 'w': NULL::INTEGER}}}} AS m, NULL::STRUCT(k INTEGER) AS ns{extra_column} "
         "FROM range(0, {count}) r(i)")


def _duck(con: duckdb.DuckDBPyConnection, spot: Spot, statements: Sequence[str]) -> None:
    with used(con, spot.attach(ALIAS), ALIAS) as c:
        for sql in statements:
            c.execute(sql)


def _rows(con: duckdb.DuckDBPyConnection, spot: Spot) -> list[tuple[Any, ...]]:
    with used(con, spot.attach(ALIAS), ALIAS) as c:
        return sorted((tuple(normal(v) for v in r) for r in c.execute("SELECT * FROM s").fetchall()), key=sort_key)


def _parquet(con: duckdb.DuckDBPyConnection, path: Path, **parts: Any) -> str:
    fill = {"extra_field": "", "extra_column": "", **parts}
    con.execute(f"COPY ({INPUT.format(**fill)}) TO '{path}' (FORMAT parquet)")
    return str(path)


@pytest.mark.parametrize("backend", backend_params(ORACLE_BACKENDS))
def test_nested_not_null_flags_as_duckdb(backend: str, spark: SparkSession, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DUCKLAKE_CATALOG", raising=False)
    with twin_spots(backend, tmp_path) as spots:
        _run(spots, tmp_path, capsys)


def _run(spots: tuple[Spot, Spot], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = spots
    con = oracle_connect()
    try:
        for spot in spots:
            _duck(con, spot, SETUP)
        with used(con, a.attach(ALIAS), ALIAS) as c:  # what DuckDB recorded: the premise of this test
            flags = dict(c.execute(f"SELECT column_name, nulls_allowed FROM __ducklake_metadata_{ALIAS}.ducklake_column"
                                   " WHERE end_snapshot IS NULL").fetchall())
        assert not any(flags[n] for n in ("id", "ns", "bb", "c", "q", "z", "w")), flags

        def cli(*args: str) -> None:
            code, _out, err = run_main(capsys, *args)
            assert code == 0, (args, err)

        def sql(*statements: str) -> None:
            lake = connect(b.catalog)
            try:
                run_change(lake, list(statements))
            finally:
                lake.close()

        steps: list[tuple[str, Sequence[str], Any]] = []
        plain = _parquet(con, tmp_path / "plain.parquet", start=100, count=15)
        steps.append(("write", [f"INSERT INTO s BY NAME SELECT * FROM read_parquet('{plain}')"],
                      lambda: cli("write", b.catalog, "s", "--from", plain)))
        evolve = _parquet(con, tmp_path / "evolve.parquet", start=200, count=12, extra_field=", 'd': NULL::INTEGER",
                          extra_column=", NULL::INTEGER AS e")
        steps.append(("write --evolve", ["ALTER TABLE s ADD COLUMN info.d INTEGER",
                                         "ALTER TABLE s ADD COLUMN e INTEGER",
                                         f"INSERT INTO s BY NAME SELECT * FROM read_parquet('{evolve}')"],
                      lambda: cli("write", b.catalog, "s", "--from", evolve, "--evolve")))
        merge = _parquet(con, tmp_path / "merge.parquet", start=195, count=12, extra_field=", 'd': NULL::INTEGER",
                         extra_column=", 7 AS e")
        steps.append(("write --mode merge", [f"MERGE INTO s USING read_parquet('{merge}') src ON s.id = src.id "
                                             "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"],
                      lambda: cli("write", b.catalog, "s", "--from", merge, "--mode", "merge", "--on", "id")))
        for statement in (
            "INSERT INTO s SELECT id + 1000, part, info, deep, l, m, ns, e FROM s WHERE id BETWEEN 18 AND 40",
            "INSERT INTO s (id, part) VALUES (2000, 1), (2001, 0)",  # after RENAME and SET PARTITIONED BY
        ):
            steps.append((statement, [statement], lambda st=statement: sql(st)))
        steps.append(("compact", [f"CALL ducklake_merge_adjacent_files('{ALIAS}')"],  # before deletes are everywhere
                      lambda: cli("maintain", "compact", b.catalog, "--yes")))
        for statement in (
            "UPDATE s SET id = id + 100000",
            "MERGE INTO s USING (SELECT id + 500000 AS id, part, info, deep, l, m FROM s WHERE id % 3 = 0 "
            "UNION ALL SELECT id, part, info, deep, l, m FROM s WHERE id % 5 = 0) src ON s.id = src.id "
            "WHEN MATCHED THEN UPDATE SET deep = src.deep, l = src.l, ns = NULL "  # NOT NULL struct: not enforced
            "WHEN NOT MATCHED THEN INSERT (id, part, info, deep, l, m) VALUES (src.id, src.part, src.info, src.deep, "
            "src.l, src.m)",
            "DELETE FROM s WHERE id % 4 = 0",
        ):
            steps.append((statement, [statement], lambda st=statement: sql(st)))
        steps.append(("flush", [f"CALL ducklake_flush_inlined_data('{ALIAS}')"],
                      lambda: cli("maintain", "flush", b.catalog, "--yes")))
        steps.append(("rewrite", [f"CALL ducklake_rewrite_data_files('{ALIAS}', delete_threshold => 0.01)"],
                      lambda: cli("maintain", "rewrite", b.catalog, "--delete-threshold", "0.01", "--yes")))
        for name, duck, ours in steps:
            _duck(con, a, duck)
            ours()
            got, want = _rows(con, b), _rows(con, a)
            assert got == want, f"after {name}: rows differ (ours, DuckDB's)\n{got[:3]}\n{want[:3]}"

        # A NULL in a NOT NULL top-level column is refused by both; neither lake changes.
        before = _rows(con, b)
        with pytest.raises(duckdb.ConstraintException), used(con, a.attach(ALIAS), ALIAS) as c:
            c.execute("UPDATE s SET id = NULL WHERE part = 1")
        code, _out, err = run_main(capsys, "query", b.catalog, "UPDATE s SET id = NULL WHERE part = 1")
        assert code == 1 and err.startswith("error: NOT NULL constraint failed: ") and "id is NULL in" in err, err
        assert _rows(con, b) == before == _rows(con, a)
    finally:
        con.close()

    lake = connect(b.catalog)  # our reader on our lake agrees with DuckDB's reading of it
    try:
        cols = [f"`{c}`" for c in table_dataframe(lake, "s").columns]
        ours_read = sorted((tuple(normal(v) for v in r) for r in table_dataframe(lake, "s").select(*cols).collect()),
                           key=sort_key)
    finally:
        lake.close()
    assert ours_read == before
