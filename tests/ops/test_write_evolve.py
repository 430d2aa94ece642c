"""`write --evolve` (issue #14, item 4) on twin lakes: DuckDB runs ALTER … + INSERT in one transaction on one lake,
we run the same rows through `write --evolve` on the other. The catalogs match row for row (column ids and
versions, schema versions, inlined-data tables, change kinds), DuckDB reads every snapshot of our lake as it reads
its own and as we read it, and then keeps inserting. Without --evolve today's strict checks stay, and a column
DuckLake cannot widen is refused with nothing changed."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ducklake_cli.api import Lake, connect
from ducklake_cli.errors import InputError, UsageError
from tests.support.cli import run_main
from tests.support.oracle import FreshAttach, attach_clause, oracle_connect
from tests.support.services import pg_database, require_env

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

META = "ducklake_metadata"


class Side(FreshAttach):
    """One twin: its catalog as our CLI and DuckDB name it."""

    def __init__(self, backend: str, target: str, data: Path) -> None:
        self.backend, self.target, self.data = backend, target, data
        self.con = oracle_connect()

    def attach_sql(self) -> str:
        """DuckDB's ATTACH of this twin's lake, with its own metadata catalog name."""
        return attach_clause(self.backend, self.target, self.data, extra_options=f"METADATA_CATALOG '{META}'")

    def catalog(self) -> dict[str, list[tuple[Any, ...]]]:
        """The catalog rows an evolution writes (without uuids, times and file ids)."""
        con = self.attach()
        q = {
            "column": f"SELECT * FROM {META}.ducklake_column ORDER BY ALL",
            "schema_versions": f"SELECT * FROM {META}.ducklake_schema_versions ORDER BY ALL",
            "inlined": f"SELECT * FROM {META}.ducklake_inlined_data_tables ORDER BY ALL",
            "snapshot": f"SELECT snapshot_id, schema_version, next_catalog_id FROM {META}.ducklake_snapshot "
                        "ORDER BY ALL",
        }
        out = {k: con.execute(v).fetchall() for k, v in q.items()}
        changes = con.execute(f"SELECT snapshot_id, changes_made FROM {META}.ducklake_snapshot_changes "
                              "ORDER BY ALL").fetchall()
        # File-backed inserts: DuckDB lists `inserted_into_table` before `altered_table`, inlined ones after it.
        out["changes"] = [(s, sorted(c.split(","))) for s, c in changes]
        return out


@contextlib.contextmanager
def _twins(backend: str, tmp_path: Path) -> Iterator[tuple[Side, Side, str]]:
    """DuckDB's twin and ours (both catalogs made by DuckDB's ATTACH), and the catalog our side opens."""
    if backend == "sqlite":
        a, b = (str(tmp_path / f"{n}.sqlite") for n in ("duck", "ours"))
        yield Side(backend, a, tmp_path / "duck"), Side(backend, b, tmp_path / "ours"), b
        return
    server = require_env("DUCKLAKE_TEST_PG")
    with pg_database(server) as a, pg_database(server) as b:
        yield Side(backend, a, tmp_path / "duck"), Side(backend, b, tmp_path / "ours"), b


def _plain(value: Any) -> Any:
    from pyspark.sql import Row

    if isinstance(value, Row):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _sorted(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=repr)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_write_evolve_matches_duckdb_alter_and_insert_in_one_snapshot(backend: str, tmp_path: Path,
                                                                      spark: SparkSession,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with _twins(backend, tmp_path) as (duck, ours, catalog):
        start = ("CREATE TABLE lake.t (id INT, v FLOAT, s STRUCT(x INT), name VARCHAR, d INT DEFAULT 5, gone INT)",
                 "INSERT INTO lake.t VALUES (1, 1.5, {'x': 1}, 'a', 7, 0)",
                 "ALTER TABLE lake.t DROP COLUMN gone")  # new columns get ids after the dropped one's
        duck.sql(*start)
        ours.sql(*start)
        ours.con.execute("DETACH DATABASE IF EXISTS lake")
        lake: Lake = connect(catalog)
        try:
            _evolve_both(duck, ours, lake, spark, catalog, capsys)
        finally:
            lake.close()
        for side in (duck, ours):  # DuckDB keeps inserting into both
            side.sql("INSERT INTO lake.t (id, name) VALUES (99, 'z')")
        assert ours.catalog() == duck.catalog()
        last = ours.sql("SELECT max(snapshot_id) FROM lake.snapshots()")[0][0]
        lake = connect(catalog)
        try:
            for n in range(2, last + 1):
                at = f"SELECT * FROM lake.t AT (VERSION => {n})"
                theirs = _sorted(ours.sql(at))
                assert theirs == _sorted(duck.sql(at)), n
                if n < last:  # ours at each snapshot (DuckDB's own insert last: its rows read above)
                    mine = [tuple(_plain(v) for v in r) for r in lake.table("t", snapshot=n).collect()]
                    assert _sorted(mine) == theirs, n
        finally:
            lake.close()
        for side in (duck, ours):
            side.con.close()


def _evolve_both(duck: Side, ours: Side, lake: Lake, spark: SparkSession, catalog: str,
                 capsys: pytest.CaptureFixture[str]) -> None:
    """The evolving writes: ours through `write --evolve`, DuckDB's as ALTER … + INSERT in one transaction."""
    many = [(5_000_000_000 + i, i / 4, {"x": i, "y": f"y{i}"}, f"e{i}") for i in range(12)]  # Parquet on both
    duck.sql("BEGIN", "ALTER TABLE lake.t ALTER id TYPE BIGINT", "ALTER TABLE lake.t ALTER v TYPE DOUBLE",
             "ALTER TABLE lake.t ALTER s TYPE STRUCT(x INT, y VARCHAR)", "ALTER TABLE lake.t ADD COLUMN extra VARCHAR",
             "INSERT INTO lake.t (id, v, s, extra) SELECT 5000000000 + i, i / 4, {'x': i, 'y': 'y' || i}, "
             "'e' || i FROM range(12) r(i)", "COMMIT")
    got = lake.write(spark.createDataFrame(many, "id bigint, v double, s struct<x:int,y:string>, extra string"),
                     "t", evolve=True)
    assert got.columns_added == ("extra",) and got.columns_widened == ("id", "v", "s") and got.files >= 1
    lake.close()

    few = [(2, {"a": 1, "b": ["p", None]}, [1, 2], "n2"), (3, None, None, "n3")]  # inlined on both
    duck.sql("BEGIN", "ALTER TABLE lake.t ADD COLUMN n STRUCT(a INT, b VARCHAR[])",
             "ALTER TABLE lake.t ADD COLUMN l INT[]",
             "INSERT INTO lake.t (id, n, l, name) VALUES (2, {'a': 1, 'b': ['p', NULL]}, [1, 2], 'n2'), "
             "(3, NULL, NULL, 'n3')", "COMMIT")
    got = lake.write(spark.createDataFrame(few, "id int, n struct<a:int,b:array<string>>, l array<int>, "
                                                "name string"), "t", evolve=True)
    assert got.columns_added == ("n", "l") and got.columns_widened == () and got.inlined_rows == 2
    lake.close()

    before = ours.sql("SELECT count(*) FROM lake.snapshots()")
    ours.con.execute("DETACH DATABASE IF EXISTS lake")
    with pytest.raises(InputError, match="the input has columns the table does not: w"):  # strict without it
        lake.write(spark.createDataFrame([(4, "w")], "id int, w string"), "t")
    with pytest.raises(InputError, match="'d' is INTEGER in the table but BIGINT in the input; converting"):
        lake.write(spark.createDataFrame([(4, 1)], "id int, d bigint"), "t")
    with pytest.raises(InputError, match="'name' is VARCHAR in the table but INTEGER in the input, and DuckLake "
                                         "cannot widen"):
        lake.write(spark.createDataFrame([(4, 1, "w")], "id int, name int, w string"), "t", evolve=True)
    with pytest.raises(UsageError, match="evolve"):
        lake.write(spark.createDataFrame([(4,)], "id int"), "t", mode="merge", on=["id"],  # type: ignore[call-overload]
                   evolve=True)
    lake.close()
    assert ours.sql("SELECT count(*) FROM lake.snapshots()") == before

    # Through the CLI, from CSV: a new column (sniffed type), a missing one gets its DEFAULT (d = 5), others NULL.
    duck.sql("BEGIN", "ALTER TABLE lake.t ADD COLUMN note VARCHAR",
             "INSERT INTO lake.t (id, name, note) VALUES (4, 'cli', 'x y')", "COMMIT")
    ours.con.execute("DETACH DATABASE IF EXISTS lake")
    src = Path(os.fspath(ours.data)).parent / "cli.csv"
    src.write_text("id,name,note\n4,cli,x y\n")
    code, _, err = run_main(capsys, "write", catalog, "t", "--from", str(src))
    assert code == 1 and "the input has columns the table does not: note" in err and err.count("\n") == 1, err
    code, _, err = run_main(capsys, "write", catalog, "t", "--from", str(src), "--evolve")
    assert code == 0, err
