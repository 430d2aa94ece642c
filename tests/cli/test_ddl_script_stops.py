"""A DDL script commits a snapshot per statement; one that fails part-way says, on stderr and in JSON, which statements
committed (with their snapshots), which failed and which did not run, and exits non-zero (issue #24, item 4).
Scripts split as DuckDB splits them: comments and semicolons in strings or comments never make a statement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_main
from tests.support.oracle import oracle_connect, used
from tests.support.spot import ORACLE_BACKENDS, Spot

SCRIPT = """-- nightly DDL; it's split as DuckDB splits it
CREATE TABLE a (x INTEGER, note VARCHAR DEFAULT 'a;b');
/* ; */ CREATE TABLE "b; c" (x INTEGER);
DROP TABLE nope;
CREATE TABLE d (x INTEGER); -- never runs
/* the end */
"""


@pytest.mark.parametrize("spot", ORACLE_BACKENDS, indirect=True)
def test_a_script_that_stops_part_way_says_what_committed(spot: Spot, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    con = oracle_connect()
    with used(con, spot.attach("lk"), "lk"):
        pass  # DuckDB makes the empty catalog
    script = tmp_path / "ddl.sql"
    script.write_text(SCRIPT, encoding="utf-8")
    code, out, err = run_main(capsys, "query", spot.catalog, "--file", str(script), "--format", "json")
    assert code == 1
    assert len(err.strip().splitlines()) == 1, err
    assert "statement 3 of 4 (drop table main.nope) failed" in err and "does not exist" in err
    assert "committed before it: 1 (snapshot 1), 2 (snapshot 2); not run: 1 statement(s) after it" in err
    doc = json.loads(out)
    assert [(s["status"], s["snapshot_id"]) for s in doc["statements"]] == [
        ("committed", 1), ("committed", 2), ("failed", None), ("not run", None)]
    assert "does not exist" in doc["error"]
    with used(con, spot.attach("lk"), "lk") as duck:
        assert [r[0] for r in duck.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'lk' "
                                           "ORDER BY 1").fetchall()] == ["a", "b; c"]
        duck.execute("INSERT INTO a (x) VALUES (1)")
        assert duck.execute("SELECT note FROM a").fetchall() == [("a;b",)]
    con.close()
    # A statement given as the argument with a trailing comment or semicolons is one statement.
    code, out, err = run_main(capsys, "query", spot.catalog, "CREATE TABLE e (x INTEGER);; -- done")
    assert code == 0, err
    code, out, err = run_main(capsys, "query", spot.catalog, "DROP TABLE e; /* done */", "--format", "json")
    assert code == 0 and json.loads(out)["statements"][0]["status"] == "committed", err
