"""`ducklake changes`: DuckDB's change feed of a DuckDB-built lake from the command line; its errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.support.cli import run_main
from tests.support.oracle import attach_clause, oracle_connect

STEPS = (
    "CREATE TABLE t(id INT, name VARCHAR)",
    "INSERT INTO t SELECT i, 'n' || i FROM range(30) r(i)",
    "UPDATE t SET name = 'changed' WHERE id IN (3, 4)",
    "DELETE FROM t WHERE id = 7",
    "INSERT INTO t VALUES (100, 'late')",
)


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[tuple[object, ...]]]:
    """A SQLite-catalog lake DuckDB built (snapshots 0-5) and DuckDB's `table_changes('t', 2, 5)`."""
    tmp = tmp_path_factory.mktemp("changes-cli")
    (tmp / "data").mkdir()
    cat = str(tmp / "cat.sqlite")
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", cat, tmp / "data"))
        con.execute("USE lake")
        for step in STEPS:
            con.execute(step)
        rows = con.execute("FROM table_changes('t', 2, 5)").fetchall()
        con.execute("USE memory")
        con.execute("DETACH lake")
    finally:
        con.close()
    return cat, rows


@pytest.mark.spark
def test_changes_as_duckdb_gives_them(lake: tuple[str, list[tuple[object, ...]]], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str], spark: object) -> None:
    cat, rows = lake
    code, out, err = run_main(capsys, "changes", cat, "t", "--from", "2", "--kind", "update", "--format", "json")
    assert code == 0, err
    got = sorted((r["snapshot_id"], r["rowid"], r["change_type"], r["id"], r["name"]) for r in json.loads(out))
    assert got == sorted(r for r in rows if str(r[2]).startswith("update"))
    assert len(got) == 4
    target = tmp_path / "all.csv"
    code, out, err = run_main(capsys, "changes", cat, "t", "--from", "1970-01-01", "--to", "5", "--output",
                              str(target))
    assert code == 0, err
    with target.open() as fh:
        written = list(csv.DictReader(fh))
    assert list(written[0]) == ["snapshot_id", "rowid", "change_type", "id", "name"]
    assert len(written) == 30 + 4 + 1 + 1  # inserts of 2, update pairs of 3, a delete, an insert


@pytest.mark.parametrize(("args", "code", "says"), [
    (["t"], 2, "missing --from"),
    (["t", "--from", "yesterday"], 2, "neither a snapshot id nor an ISO 8601 time"),
    (["t", "--from", "2", "--kind", "upsert"], 2, "upsert"),
    (["t", "--from", "2", "--to", "99"], 1, "snapshot 99 does not exist"),
    (["nope", "--from", "2"], 1, "table main.nope does not exist"),
    (["t", "--from", "2999-01-01"], 1, "no snapshot at or after"),
])
def test_changes_errors(lake: tuple[str, list[tuple[object, ...]]], capsys: pytest.CaptureFixture[str],
                        args: list[str], code: int, says: str) -> None:
    """Bad input fails in one line before Spark starts."""
    got, out, err = run_main(capsys, "changes", lake[0], *args)
    assert got == code
    assert says in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2
