"""catalog/columns.py against DuckDB 1.5.5: the same ALTERs staged by us and run by DuckDB on twin lakes leave the
same `ducklake_column`, schema-version, inlined-table, snapshot and change rows (nested changes and DuckDB's quirks
included); what DuckDB refuses changes nothing here either. Metadata only: no Spark."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from ducklake_cli.catalog import columns as c
from ducklake_cli.catalog.models import ColumnInfo, TableInfo
from ducklake_cli.catalog.transaction import Transaction
from ducklake_cli.errors import QueryError
from ducklake_cli.lake import Lake
from tests.support.oracle import oracle_connect

SETUP = ("CREATE TABLE lk.t (a INT, s STRUCT(x INT, y VARCHAR, n STRUCT(p INT, q INT)), l INT[], "
         "m MAP(VARCHAR, INT), e INT, k INT DEFAULT 3)",
         "INSERT INTO lk.t VALUES (1, {'x': 1, 'y': 'a', 'n': {'p': 1, 'q': 2}}, [1], MAP {'k': 1}, 1, 1)")


def col(name: str, typ: str, *kids: ColumnInfo) -> ColumnInfo:
    """A column to add or retype to (ids are assigned by catalog/columns)."""
    return ColumnInfo(column_id=0, name=name, type=typ, nulls_allowed=True, initial_default=None,
                      default_value="NULL", default_value_type="literal", parent_column=None, column_order=0,
                      begin_snapshot=0, children=kids)


def at(table: TableInfo, path: str) -> int:
    """The id of the column at a dotted path."""
    cols, found = table.columns, None
    for part in path.split("."):
        found = next(x for x in cols if x.name == part)
        cols = found.children
    assert found is not None
    return found.column_id


Change = Callable[[Transaction, TableInfo], TableInfo]
INT_LIST = col("q", "list", col("element", "int32"))
STEPS: list[tuple[str, Change]] = [
    ("ALTER TABLE lk.t ADD COLUMN b INT DEFAULT 5", lambda tx, t: c.add_column(tx, t, col("b", "int32"),
                                                                               default=c.Default("5", "5"))),
    ("ALTER TABLE lk.t ADD COLUMN s.z BIGINT", lambda tx, t: c.add_column(tx, t, col("z", "int64"),
                                                                          parent_id=at(t, "s"))),
    ("ALTER TABLE lk.t ADD COLUMN s.sub STRUCT(p INT, q INT[])",
     lambda tx, t: c.add_column(tx, t, col("sub", "struct", col("p", "int32"), INT_LIST), parent_id=at(t, "s"))),
    ("ALTER TABLE lk.t RENAME COLUMN s.x TO xx", lambda tx, t: c.rename_column(tx, t, at(t, "s.x"), "xx")),
    ("ALTER TABLE lk.t RENAME COLUMN s TO s2", lambda tx, t: c.rename_column(tx, t, at(t, "s"), "s2")),
    ("ALTER TABLE lk.t DROP COLUMN s2.y", lambda tx, t: c.drop_column(tx, t, at(t, "s2.y"))),
    ("ALTER TABLE lk.t ALTER COLUMN a TYPE BIGINT", lambda tx, t: c.set_column_type(tx, t, at(t, "a"),
                                                                                    col("a", "int64"))),
    ("ALTER TABLE lk.t ALTER COLUMN a SET NOT NULL", lambda tx, t: c.set_nulls_allowed(tx, t, at(t, "a"), False)),
    ("ALTER TABLE lk.t ALTER COLUMN b SET DEFAULT 7", lambda tx, t: c.set_default(tx, t, at(t, "b"),
                                                                                  c.Default("5", "7"))),
    ("ALTER TABLE lk.t ALTER COLUMN e SET DEFAULT 1+1",
     lambda tx, t: c.set_default(tx, t, at(t, "e"), c.Default(None, "(1 + 1)", "expression"))),
    ("ALTER TABLE lk.t RENAME COLUMN e TO e2", lambda tx, t: c.rename_column(tx, t, at(t, "e"), "e2")),
    ("ALTER TABLE lk.t ALTER COLUMN b DROP DEFAULT", lambda tx, t: c.set_default(tx, t, at(t, "b"), c.NO_DEFAULT)),
    ("ALTER TABLE lk.t ALTER COLUMN a DROP NOT NULL", lambda tx, t: c.set_nulls_allowed(tx, t, at(t, "a"), True)),
    ("ALTER TABLE lk.t ADD COLUMN h DECIMAL(10,2) DEFAULT 3",
     lambda tx, t: c.add_column(tx, t, col("h", "decimal(10,2)"), default=c.Default("3.00", "3"))),
    ("ALTER TABLE lk.t ALTER COLUMN s2 TYPE STRUCT(xx BIGINT, n STRUCT(p INT, q INT), z BIGINT, "
     "sub STRUCT(p INT, q INT[]), nn INT)",
     lambda tx, t: c.set_column_type(tx, t, at(t, "s2"), col(
         "s2", "struct", col("xx", "int64"), col("n", "struct", col("p", "int32"), col("q", "int32")),
         col("z", "int64"), col("sub", "struct", col("p", "int32"), INT_LIST), col("nn", "int32")))),
    ("ALTER TABLE lk.t DROP COLUMN s2.n", lambda tx, t: c.drop_column(tx, t, at(t, "s2.n"))),
]
COMPARED = ("ducklake_column", "ducklake_snapshot_changes", "ducklake_schema_versions", "ducklake_inlined_data_tables")


def _lake(root: Path, statements: tuple[str, ...]) -> Path:
    root.mkdir()
    con = oracle_connect()
    con.execute(f"ATTACH 'ducklake:sqlite:{root}/cat.db' AS lk (DATA_PATH '{root}/data/')")
    for st in statements:
        con.execute(st)
    con.execute("DETACH lk")
    con.close()
    return root / "cat.db"


def _apply(catalog: Path, change: Change) -> None:
    def build(tx: Transaction) -> None:
        change(tx, tx.reader.find_table(tx.latest.snapshot_id, "main.t"))

    with Lake.open(f"sqlite:///{catalog}") as lake:
        lake.commit(build)


def _not_null_new_column(tx: Transaction, table: TableInfo) -> TableInfo:
    """SET NOT NULL on a column no data has reached yet: DuckDB refuses (no statistics prove it)."""
    table = c.add_column(tx, table, col("w", "int32"))
    return c.set_nulls_allowed(tx, table, at(table, "w"), False)


def _rows(catalog: Path) -> dict[str, list[tuple[object, ...]]]:
    con = sqlite3.connect(catalog)
    try:
        out = {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in COMPARED}
        out["snapshots"] = con.execute("SELECT snapshot_id, schema_version, next_catalog_id, next_file_id "
                                       "FROM ducklake_snapshot ORDER BY 1").fetchall()
        return out
    finally:
        con.close()


def test_column_changes_are_recorded_as_duckdb_records_them(tmp_path: Path) -> None:
    theirs = _lake(tmp_path / "duck", (*SETUP, *(duck for duck, _ in STEPS)))
    ours = _lake(tmp_path / "ours", SETUP)
    for _, change in STEPS:
        _apply(ours, change)
    assert _rows(ours) == _rows(theirs)
    con = oracle_connect()
    con.execute(f"ATTACH 'ducklake:sqlite:{ours}' AS lk (DATA_PATH '{tmp_path}/ours/data/')")
    con.execute("INSERT INTO lk.t (a) VALUES (9)")
    assert con.execute("SELECT a, b, h, e2 FROM lk.t ORDER BY a").fetchall() == [
        (1, 5, 3, 1), (9, None, 3, 2)]


@pytest.mark.parametrize(("what", "change"), [
    ("part of a map", lambda tx, t: c.rename_column(tx, t, at(t, "m.value"), "v")),
    ("part of a map", lambda tx, t: c.drop_column(tx, t, at(t, "m.key"))),
    ("part of a list", lambda tx, t: c.drop_column(tx, t, at(t, "l.element"))),
    ("already exists", lambda tx, t: c.rename_column(tx, t, at(t, "a"), "E")),
    ("only widening", lambda tx, t: c.set_column_type(tx, t, at(t, "a"), col("a", "int16"))),
    ("no statistics", lambda tx, t: _not_null_new_column(tx, t)),
])
def test_what_duckdb_refuses_changes_nothing(tmp_path: Path, what: str, change: Change) -> None:
    catalog = _lake(tmp_path / "lake", SETUP)
    before = hashlib.sha256(catalog.read_bytes()).hexdigest()
    with pytest.raises(QueryError, match=what):
        _apply(catalog, change)
    assert hashlib.sha256(catalog.read_bytes()).hexdigest() == before
