"""Concurrent `ducklake query … "DELETE …"` and `ducklake write --mode append` processes on one PostgreSQL table
(issue #13, acceptance).

Real CLI processes (each with its own JVM) start at once and race for the commit. DuckDB's rules apply: a delete
and a concurrently committed append on the same table conflict, so some processes exit 3 (one line on stderr
naming the table) having changed nothing. The lake then holds exactly what a serial run of the committed
operations gives, snapshot by snapshot; rerunning the ones that exited 3 gives the state with all of them applied;
DuckDB 1.5.5 and our reader see the same rows."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.cli import run_cli
from tests.support.oracle import attach_clause, oracle_connect
from tests.support.writes import (
    LEAN_JVM_ENV,
    LEAN_SPARK,
    CliProcess,
    Finished,
    cli_args,
    data_files,
    make_parquet,
    oracle_lake,
    scalar,
)
from tests.support.xdist_groups import RACES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.postgres, pytest.mark.spark, pytest.mark.xdist_group(RACES)]

FILES = 8  # DuckDB writes one 1,000-row file per INSERT
FILE_ROWS = 1_000
APPEND_ROWS = 1_000
APPEND_BASE = 100_000  # appended ids never meet a delete's range
TIMEOUT_S = 300


@dataclass(frozen=True)
class Op:
    """One racing process: a delete of ids [lo, hi) or an append of a Parquet file; `name` is its commit message."""

    name: str
    lo: int = 0
    hi: int = 0
    source: Path | None = None
    ids: tuple[int, ...] = ()

    @property
    def sql(self) -> str:
        """The delete statement."""
        return f"DELETE FROM main.t WHERE id >= {self.lo} AND id < {self.hi}"

    def apply(self, rows: dict[int, str], appended: dict[int, str]) -> dict[int, str]:
        """The table after this operation, run alone on `rows`."""
        if self.source is None:
            return {k: v for k, v in rows.items() if not self.lo <= k < self.hi}
        return {**rows, **appended}


def _seed(url: str, data: Path) -> dict[int, str]:
    """Our catalog; DuckDB creates main.t with FILES files; returns the rows (id → s)."""
    created = run_cli("create-catalog", url, "--data-path", str(data))
    assert created.returncode == 0, created.stderr
    con = oracle_connect()
    try:
        con.execute(attach_clause("postgres", url, data))
        con.execute("CREATE TABLE lake.main.t (id BIGINT, s VARCHAR)")
        for f in range(FILES):
            con.execute(f"INSERT INTO lake.main.t SELECT i, 'f{f}-' || i FROM range({f * FILE_ROWS}, "
                        f"{(f + 1) * FILE_ROWS}) r(i)")
        files = scalar(con, "SELECT count(*) FROM __ducklake_metadata_lake.ducklake_data_file")
        assert files == FILES
    finally:
        con.close()
    return {i: f"f{i // FILE_ROWS}-{i}" for i in range(FILES * FILE_ROWS)}


def _lake_rows(url: str, data: Path, version: int | None = None) -> dict[int, str]:
    """What DuckDB reads (at `version`, or the latest snapshot)."""
    at = f" AT (VERSION => {version})" if version is not None else ""
    with oracle_lake("postgres", url, data) as con:
        rows = con.execute(f"SELECT id, s FROM lake.main.t{at}").fetchall()
    out = {int(i): str(s) for i, s in rows}
    assert len(out) == len(rows), "duplicate ids"
    return out


def _start(url: str, op: Op, logs: Path) -> CliProcess:
    """The CLI process of one operation."""
    if op.source is None:
        args = cli_args("query", url, op.sql, "-m", op.name, "--format", "json", *LEAN_SPARK)
    else:
        args = cli_args("write", url, "main.t", "--from", str(op.source), "--mode", "append", "--format", "json",
                        "--message", op.name, *LEAN_SPARK)
    return CliProcess(args, log_dir=logs, name=op.name, env=LEAN_JVM_ENV)


def _check_exits(done: Sequence[Finished]) -> None:
    """Each process committed (JSON on stdout) or exited 3 with one error line naming the table."""
    unexpected = [(f.name, f.returncode, f.stderr[-2000:]) for f in done if f.returncode not in (0, 3)]
    assert not unexpected, unexpected
    for f in done:
        if f.returncode == 3:
            lines = [ln for ln in f.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1 and lines[0].startswith("error: "), f.stderr
            assert "main.t" in lines[0], f"the error does not name the table: {lines[0]}"
            assert f.stdout == ""
        else:
            assert json.loads(f.stdout)["snapshot_id"] is not None, f.stdout


def _snapshots(url: str, data: Path, base: int) -> list[tuple[int, str]]:
    """(snapshot id, commit message) of every snapshot after `base`, in order."""
    with oracle_lake("postgres", url, data) as con:
        snaps = con.execute("SELECT snapshot_id, commit_message FROM ducklake_snapshots('lake') "
                            "WHERE snapshot_id > ? ORDER BY snapshot_id", [base]).fetchall()
    return [(int(s), str(m)) for s, m in snaps]


def _check_files(url: str, data: Path) -> None:
    """Every data and delete file on disk is in the catalog: a process that exited 3 removed what it wrote."""
    with oracle_lake("postgres", url, data) as con:
        referenced = {Path(r[0]).name for r in con.execute(
            "SELECT path FROM __ducklake_metadata_lake.ducklake_data_file UNION ALL "
            "SELECT path FROM __ducklake_metadata_lake.ducklake_delete_file").fetchall()}
    assert {p.name for p in data_files(data)} == referenced


def _check_serial(url: str, data: Path, start: dict[int, str], base: int, ops: dict[str, Op],
                  appended: dict[str, dict[int, str]]) -> dict[int, str]:
    """Every snapshot after `base` is one operation, and holds exactly what running them one after the other
    gives; returns the final rows."""
    rows = start
    for sid, message in _snapshots(url, data, base):
        op = ops[message]
        rows = op.apply(rows, appended.get(op.name, {}))
        assert _lake_rows(url, data, sid) == rows, f"snapshot {sid} ({message}) is not the serial result"
    return rows


def _in_process(url: str, steps: list[dict[str, Any]]) -> list[Any]:
    """Run steps one after the other in this process, on the test session's Spark (what
    tests/support/dml_worker.py does in a process of its own): a change's or append's JSON, a read's rows."""
    from ducklake_cli.api import connect
    from ducklake_cli.ops.dml import run_change
    from ducklake_cli.ops.query import sql_dataframe
    from ducklake_cli.ops.write import run_write

    results: list[Any] = []
    with connect(url) as lake:
        for step in steps:
            if "change" in step:
                results.append(run_change(lake, [step["change"]], message=step["message"]).to_json())
            elif "append" in step:
                results.append(run_write(lake, step["append"], source=[step["source"]], mode="append",
                                         message=step["message"]).to_json())
            else:
                results.append([list(r) for r in sql_dataframe(lake, step["read"]).collect()])
    return results


def test_deletes_and_appends_race_on_postgres(pg_url: str, tmp_path: Path, spark: SparkSession) -> None:
    """3 deletes of disjoint id ranges (2 files each) race 3 appends: each commits or exits 3; the result is the
    serial run of the committed ones; rerunning the others gives all 6 applied."""
    data = tmp_path / "data"
    start = _seed(pg_url, data)
    base = _snapshots(pg_url, data, -1)[-1][0]
    ops: dict[str, Op] = {}
    appended: dict[str, dict[int, str]] = {}
    for j in range(3):  # 900 rows of file 2j and 100 of file 2j+1: a delete file for each (> inlining limit)
        lo = 2 * j * FILE_ROWS + 100
        ops[f"delete-{j}"] = Op(f"delete-{j}", lo=lo, hi=lo + FILE_ROWS)
    for k in range(3):
        lo = APPEND_BASE + k * APPEND_ROWS
        src = make_parquet(tmp_path / "in" / f"a{k}.parquet",
                           f"SELECT i::BIGINT AS id, 'a{k}-' || i AS s FROM range({lo}, {lo + APPEND_ROWS}) r(i)")
        ops[f"append-{k}"] = Op(f"append-{k}", source=src)
        appended[f"append-{k}"] = {i: f"a{k}-{i}" for i in range(lo, lo + APPEND_ROWS)}

    procs = [_start(pg_url, op, tmp_path / "logs") for op in ops.values()]
    done = [p.wait(TIMEOUT_S) for p in procs]
    _check_exits(done)
    landed = [f.name for f in done if f.returncode == 0]
    lost = [f.name for f in done if f.returncode == 3]
    sys.stderr.write(f"postgres delete/append race: landed {landed}, exited 3 {lost}; "
                     f"{', '.join(f'{f.name} {f.seconds:.0f}s' for f in done)}\n")
    assert landed, "nothing committed"
    assert sorted(m for _, m in _snapshots(pg_url, data, base)) == sorted(landed)
    rows = _check_serial(pg_url, data, start, base, ops, appended)
    _check_files(pg_url, data)

    # Rerun what exited 3, one after the other, then read the table with our reader in the same process.
    last = _snapshots(pg_url, data, base)[-1][0]
    steps: list[dict[str, Any]] = [
        {"change": ops[n].sql, "message": n} if ops[n].source is None
        else {"append": "main.t", "source": str(ops[n].source), "message": n} for n in lost]
    got = _in_process(pg_url, [*steps, {"read": "SELECT id, s FROM main.t"}])
    final = _check_serial(pg_url, data, rows, last, ops, appended)
    every = start
    for op in ops.values():
        every = op.apply(every, appended.get(op.name, {}))
    assert final == every
    assert _lake_rows(pg_url, data) == every
    ours = {int(i): str(s) for i, s in got[-1]}
    assert len(ours) == len(got[-1]) and ours == every


def test_two_deletes_from_one_file_on_postgres(pg_url: str, tmp_path: Path) -> None:
    """Four deletes at once, two of them from the same data file: the two from other files always commit (deletes
    from different files do not conflict); of the same-file pair one commits and the other exits 3 with one line
    (or, had it started after the first committed, commits on top of it); DuckDB reads a consistent lake."""
    data = tmp_path / "data"
    start = _seed(pg_url, data)
    base = _snapshots(pg_url, data, -1)[-1][0]
    ops = {"left": Op("left", lo=3 * FILE_ROWS + 100, hi=3 * FILE_ROWS + 400),
           "right": Op("right", lo=3 * FILE_ROWS + 500, hi=3 * FILE_ROWS + 800),
           "other-0": Op("other-0", lo=100, hi=400),
           "other-6": Op("other-6", lo=6 * FILE_ROWS + 600, hi=6 * FILE_ROWS + 900)}
    procs = [_start(pg_url, op, tmp_path / "logs") for op in ops.values()]
    done = [p.wait(TIMEOUT_S) for p in procs]
    _check_exits(done)
    landed = [f.name for f in done if f.returncode == 0]
    sys.stderr.write(f"postgres concurrent deletes, two on one file: landed {landed}; "
                     f"{', '.join(f'{f.name} {f.seconds:.0f}s' for f in done)}\n")
    assert {"other-0", "other-6"} <= set(landed), landed
    assert {"left", "right"} & set(landed), landed
    for f in done:
        if f.returncode == 3:  # it planned against the snapshot before the winner's: a real race, caught per file
            assert "same data files" in f.stderr, f.stderr
    assert sorted(m for _, m in _snapshots(pg_url, data, base)) == sorted(landed)
    rows = _check_serial(pg_url, data, start, base, ops, {})
    _check_files(pg_url, data)
    expected = start
    for name in landed:
        expected = ops[name].apply(expected, {})
    assert rows == expected == _lake_rows(pg_url, data)
    with oracle_lake("postgres", pg_url, data) as con:
        # One live delete file per data file deleted from, holding exactly the landed deletes' positions.
        got = con.execute("SELECT count(*), sum(delete_count) FROM __ducklake_metadata_lake.ducklake_delete_file "
                          "WHERE end_snapshot IS NULL").fetchone()
    assert got == (3, 300 * len(landed)), got
