"""Row-level changes on a standalone master + worker (`--master spark://…`) and through Spark Connect (`--remote
sc://…`): executors in other JVMs find the deleted positions and write the delete and data files, and the lake
reads as DuckDB's twin lake does after DuckDB ran the same script in one transaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.connect import ConnectServer
from tests.support.oracle import oracle_connect

pytestmark = pytest.mark.spark

LEAN_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
SCRIPT = [
    "DELETE FROM t WHERE id % 7 = 0",  # > 10 rows from each file: delete files
    "DELETE FROM t WHERE id IN (1, 2)",  # inlined deletions
    "UPDATE t SET v = concat(v, '!'), p = 9 WHERE id BETWEEN 100 AND 160",  # a data file; partition key moves
    "MERGE INTO t USING (SELECT * FROM (VALUES (3, 'm', 1), (5000, 'n', 2)) AS x(id, v, p)) AS s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, s.v, s.p)",
]


def _twins(tmp_path: Path) -> dict[str, str]:
    """Two identical partitioned lakes built by DuckDB: `duck` (DuckDB changes it) and `ours`."""
    con = oracle_connect()
    out = {}
    for name in ("duck", "ours"):
        cat = tmp_path / f"{name}.sqlite"
        con.execute(f"ATTACH 'ducklake:sqlite:{cat}' AS {name} (DATA_PATH '{tmp_path / name}/')")
        con.execute(f"CREATE TABLE {name}.t(id INT, v VARCHAR, p INT)")
        con.execute(f"ALTER TABLE {name}.t SET PARTITIONED BY (p)")
        for lo in (0, 300):
            con.execute(f"INSERT INTO {name}.t SELECT i, 'v' || i, i % 3 FROM range({lo}, {lo + 300}) r(i)")
        con.execute(f"DETACH {name}")
        out[name] = str(cat)
    con.execute(f"ATTACH 'ducklake:sqlite:{out['duck']}' AS duck (DATA_PATH '{tmp_path / 'duck'}/')")
    con.execute("BEGIN")
    for sql in SCRIPT:
        con.execute(sql.replace(" t ", " duck.t ").replace("FROM t", "FROM duck.t").replace("INTO t", "INTO duck.t"))
    con.execute("COMMIT")
    con.close()
    return out


def _state(con: Any, name: str) -> tuple[list[Any], list[Any]]:
    snaps = con.execute(f"SELECT snapshot_id, changes FROM {name}.snapshots() ORDER BY 1").fetchall()
    rows = [con.execute(f"SELECT rowid, * FROM {name}.t AT (VERSION => {s}) ORDER BY rowid").fetchall()
            for s, _ in snaps[1:]]
    return snaps, rows


def _run_and_compare(tmp_path: Path, extra: list[str], env: dict[str, str] | None = None) -> None:
    cats = _twins(tmp_path)
    script = tmp_path / "changes.sql"
    script.write_text(";\n".join(SCRIPT) + ";\n")
    res = run_cli("query", cats["ours"], "--file", str(script), "--format", "json", *extra, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout)
    assert (got["statements"], got["rows_inserted"]) == (4, 1) and got["delete_files"] >= 2, got
    con = oracle_connect()
    try:
        for name in ("duck", "ours"):
            con.execute(f"ATTACH 'ducklake:sqlite:{cats[name]}' AS {name} (DATA_PATH '{tmp_path / name}/', "
                        "READ_ONLY)")
        assert _state(con, "ours") == _state(con, "duck")
    finally:
        con.close()


def test_script_on_standalone_cluster(master: str, tmp_path: Path) -> None:
    """One `query --file --master` process: the cluster's executors write the delete and data files."""
    _run_and_compare(tmp_path, ["--master", master, "--conf", f"spark.executorEnv.JAVA_TOOL_OPTIONS={LEAN_JVM}"],
                     env={"JAVA_TOOL_OPTIONS": LEAN_JVM})


def test_script_through_spark_connect(spark_connect: ConnectServer, tmp_path: Path) -> None:
    """One `query --file --remote` process: no JVM on the client."""
    _run_and_compare(tmp_path, ["--remote", spark_connect.url])
