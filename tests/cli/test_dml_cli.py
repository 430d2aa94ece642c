"""`ducklake delete` and `ducklake write --mode merge`, and the bad input of row-level changes: one line, exit 1,
the catalog byte-identical. Spark tests share the session's Spark through `run_main`."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_main
from tests.support.oracle import attach_clause, oracle_connect

CATALOG_FILE = {"sqlite": "cat.sqlite", "duckdb": "cat.ducklake"}


def _lake(root: Path, backend: str = "sqlite") -> tuple[Path, Path]:
    """Table t(id INT, v VARCHAR): two 100-row files (ids 0..199), and view vw over it, written by DuckDB."""
    catalog, data = root / CATALOG_FILE[backend], root / "data"
    con = oracle_connect()
    try:
        con.execute(attach_clause(backend, catalog, data))
        con.execute("CREATE TABLE lake.t (id INT, v VARCHAR)")
        for start in (0, 100):
            con.execute(f"INSERT INTO lake.t SELECT i, 'v' || i FROM range({start}, {start + 100}) r(i)")
        con.execute("CREATE VIEW lake.vw AS SELECT * FROM lake.t")
        con.execute("DETACH lake")
    finally:
        con.close()
    return catalog, data


def _digest(catalog: Path, data: Path) -> tuple[str, frozenset[str]]:
    """The catalog file's hash and the data files present."""
    return (hashlib.sha256(catalog.read_bytes()).hexdigest(),
            frozenset(str(p.relative_to(data)) for p in data.rglob("*") if p.is_file()))


def _rows(backend: str, catalog: Path, data: Path, sql: str = "SELECT rowid, id, v FROM lake.t ORDER BY id"
          ) -> list[tuple[Any, ...]]:
    con = oracle_connect()
    try:
        con.execute(attach_clause(backend, catalog, data))
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str,
         stdin: io.TextIOBase | None = None) -> tuple[int, str, str]:
    monkeypatch.delenv("DUCKLAKE_CATALOG", raising=False)
    monkeypatch.setattr(sys, "stdin", stdin if stdin is not None else io.StringIO(""))
    return run_main(capsys, *args)


class _Terminal(io.StringIO):
    """Standard input that says it is a terminal, with a typed answer."""

    def isatty(self) -> bool:
        return True


def _write_parquet(path: Path, sql: str) -> Path:
    con = oracle_connect()
    try:
        con.execute(f"COPY ({sql}) TO '{path}' (FORMAT parquet)")
    finally:
        con.close()
    return path


# ----- refusals before any Spark work ---------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "needle"), [
    ((), "--where"),
    (("--where", "  "), "empty"),
    (("--all",), "--all --yes"),
    (("--where", "id = 1", "--all", "--yes"), "cannot be used together"),
    (("--where", "id = 1"), "--yes"),  # no terminal and no --yes: a cron job must say so
])
def test_delete_refuses_without_clear_consent(args: tuple[str, ...], needle: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 2, one line, nothing changed, and no Spark started (this test has no `spark` marker)."""
    catalog, data = _lake(tmp_path)
    before = _digest(catalog, data)
    code, out, err = _cli(capsys, monkeypatch, "delete", str(catalog), "t", *args)
    assert code == 2 and err.count("\n") == 1 and needle in err and out == "", err
    assert _digest(catalog, data) == before


def test_change_without_a_required_commit_message_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A lake with `require_commit_message`: a change without -m exits 2 before Spark starts, nothing changed."""
    catalog, data = _lake(tmp_path)
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data))
        con.execute("CALL lake.set_option('require_commit_message', true)")
    finally:
        con.close()
    before = _digest(catalog, data)
    code, _, err = _cli(capsys, monkeypatch, "query", str(catalog), "DELETE FROM t WHERE id = 1")
    assert code == 2 and "requires a commit message" in err and err.count("\n") == 1, err
    assert _digest(catalog, data) == before


@pytest.mark.parametrize("args", [("--mode", "merge"), ("--on", "id"), ("--mode", "merge", "--on", "id",
                                                                        "--no-inline")])
def test_write_merge_options(args: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """--on goes with --mode merge, both ways: exit 2 before Spark starts."""
    catalog, data = _lake(tmp_path)
    src = _write_parquet(tmp_path / "in.parquet", "SELECT 1::INT AS id, 'x' AS v")
    code, _, err = _cli(capsys, monkeypatch, "write", str(catalog), "t", "--from", str(src), *args)
    assert code == 2 and err.count("\n") == 1 and ("--on" in err or "--no-inline" in err), err


# ----- bad input: one line, exit 1, catalog byte-identical ------------------------------------------------------

BAD_INPUT: dict[str, tuple[tuple[str, ...], str]] = {
    "unknown column in WHERE": (("delete", "{cat}", "t", "--where", "nope = 1", "--yes"), "nope"),
    "unknown column in SET": (("query", "{cat}", "UPDATE t SET nope = 1 WHERE id = 1"), "nope"),
    "type mismatch in SET": (("query", "{cat}", "UPDATE t SET id = 'abc' WHERE id = 1"), "id"),
    "MERGE with duplicate source keys": (("query", "{cat}", "MERGE INTO t USING (SELECT * FROM VALUES (1, 'a'), "
                                          "(1, 'b') AS x(id, v)) AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"
                                          " WHEN NOT MATCHED THEN INSERT *"), "1"),
    "write --mode merge with duplicate keys": (("write", "{cat}", "t", "--from", "{dup}", "--mode", "merge",
                                                "--on", "id"), "id=7"),
    "DELETE on a view": (("delete", "{cat}", "vw", "--where", "id = 1", "--yes"), "view"),
    "WHERE that does not parse": (("delete", "{cat}", "t", "--where", "id = = 1", "--yes"), ""),
}


@pytest.mark.spark
@pytest.mark.parametrize("backend", ["sqlite", "duckdb"])
@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input(case: str, backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's bad-input list: one line on stderr, exit 1, no traceback, the catalog file unchanged."""
    catalog, data = _lake(tmp_path, backend)
    dup = _write_parquet(tmp_path / "dup.parquet",
                         "SELECT * FROM (VALUES (7, 'a'), (300, 'b'), (7, 'c')) x(id, v)")
    before = _digest(catalog, data)
    template, needle = BAD_INPUT[case]
    args = [a.format(cat=catalog, dup=dup) for a in template]
    code, out, err = _cli(capsys, monkeypatch, *args)
    assert code == 1 and err.count("\n") == 1 and err.startswith("error: ") and needle in err, err
    assert "Traceback" not in err and out == ""
    assert _digest(catalog, data) == before


# ----- delete ---------------------------------------------------------------------------------------------------

@pytest.mark.spark
def test_delete_dry_run_then_delete(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """--dry-run counts and commits nothing; --yes deletes exactly those rows, which DuckDB then no longer reads."""
    catalog, data = _lake(tmp_path)
    before = _digest(catalog, data)
    expected = [r for r in _rows("sqlite", catalog, data) if not (r[1] < 30 or r[1] % 50 == 0)]
    where = "id < 30 OR id % 50 = 0"
    code, out, err = _cli(capsys, monkeypatch, "delete", str(catalog), "t", "--where", where, "--dry-run",
                          "--format", "json")
    assert code == 0, err
    assert json.loads(out) == {"tables": ["main.t"], "statements": 1, "snapshot_id": None, "rows_deleted": 33,
                               "rows_updated": 0, "rows_inserted": 0, "data_files": 0, "delete_files": 0,
                               "dry_run": True}
    assert _digest(catalog, data) == before
    code, out, err = _cli(capsys, monkeypatch, "delete", str(catalog), "t", "--where", where, "--yes",
                          "-m", "GDPR 1", "--author", "ops", "--format", "json")
    assert code == 0, err
    got = json.loads(out)
    assert got["rows_deleted"] == 33 and got["dry_run"] is False and got["snapshot_id"] == 5
    assert (got["delete_files"], got["data_files"]) == (1, 0)  # 31 rows of file 1 (a file), 2 of file 2 (inlined)
    assert _rows("sqlite", catalog, data) == expected
    assert _rows("sqlite", catalog, data, "SELECT author, commit_message FROM lake.snapshots() "
                                          "WHERE snapshot_id = 5") == [("ops", "GDPR 1")]


@pytest.mark.spark
def test_delete_asks_on_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal without --yes: the count in the question; `n` changes nothing, `y` deletes."""
    catalog, data = _lake(tmp_path)
    before = _digest(catalog, data)
    code, _, err = _cli(capsys, monkeypatch, "delete", str(catalog), "t", "--where", "id >= 190",
                        stdin=_Terminal("n\n"))
    assert code == 1 and "Delete 10 rows from main.t?" in err and "aborted" in err, err
    assert _digest(catalog, data) == before
    code, out, err = _cli(capsys, monkeypatch, "delete", str(catalog), "t", "--where", "id >= 190",
                          "--format", "json", stdin=_Terminal("y\n"))
    assert code == 0 and json.loads(out)["rows_deleted"] == 10, err
    assert [r[1] for r in _rows("sqlite", catalog, data)] == list(range(190))


@pytest.mark.spark
def test_delete_all(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """--all --yes empties the table in one snapshot (DuckDB then reads no rows)."""
    catalog, data = _lake(tmp_path)
    code, out, err = _cli(capsys, monkeypatch, "delete", str(catalog), "t", "--all", "--yes", "--format", "json")
    assert code == 0 and json.loads(out)["rows_deleted"] == 200, err
    assert _rows("sqlite", catalog, data) == []


# ----- write --mode merge ---------------------------------------------------------------------------------------

@pytest.mark.spark
def test_write_merge_equals_duckdb_merge(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An upsert of 25 changed and 15 new rows reads like DuckDB's MERGE of the same file on a twin lake: the same
    rows, with the same row ids for every row that existed, in one snapshot with DuckDB's change kinds."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    ours_cat, ours_data = _lake(ours)
    theirs_cat, theirs_data = _lake(theirs)
    src = _write_parquet(tmp_path / "upd.parquet", "SELECT i::INT AS id, 'new' || i AS v FROM range(175, 215) r(i) "
                                                   "ORDER BY i")
    code, out, err = _cli(capsys, monkeypatch, "write", str(ours_cat), "t", "--from", str(src), "--mode", "merge",
                          "--on", "id", "--format", "json")
    assert code == 0, err
    got = json.loads(out)
    assert (got["rows_deleted"], got["rows_updated"], got["rows_inserted"]) == (0, 25, 15), got
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", theirs_cat, theirs_data))
        con.execute(f"MERGE INTO lake.t USING read_parquet('{src}') AS s ON t.id = s.id "
                    "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)")
        con.execute("DETACH lake")
    finally:
        con.close()
    mine, oracle = _rows("sqlite", ours_cat, ours_data), _rows("sqlite", theirs_cat, theirs_data)
    assert [r[1:] for r in mine] == [r[1:] for r in oracle]
    assert [r for r in mine if r[1] < 200] == [r for r in oracle if r[1] < 200]  # updated rows keep their ids
    assert {r[0] for r in mine} == {r[0] for r in oracle}  # new rows' ids: the same set (row order may differ)
    changes = "SELECT changes FROM lake.snapshots() ORDER BY snapshot_id DESC LIMIT 1"
    assert _rows("sqlite", ours_cat, ours_data, changes) == _rows("sqlite", theirs_cat, theirs_data, changes)


@pytest.mark.spark
def test_write_merge_creates_a_missing_table(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The first merge load creates the table with the input's rows."""
    catalog, data = _lake(tmp_path)
    src = _write_parquet(tmp_path / "in.parquet", "SELECT i::INT AS k, i * 2 AS n FROM range(20) r(i)")
    code, out, err = _cli(capsys, monkeypatch, "write", str(catalog), "s.fresh", "--from", str(src), "--mode",
                          "merge", "--on", "k", "--format", "json")
    assert code == 0, err
    got = json.loads(out)
    assert got["tables"] == ["s.fresh"] and got["rows_inserted"] == 20 and got["snapshot_id"] == 5, got
    assert _rows("sqlite", catalog, data, "SELECT count(*), sum(n) FROM lake.s.fresh") == [(20, 380)]
