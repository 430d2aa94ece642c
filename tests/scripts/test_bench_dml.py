"""The DML section of ``scripts/bench.py``: each engine works on its own copy of the lake, DuckDB accepts the
statements as written, the report gives the ratios and flags a missed target, and (with Spark) ours and the
floor run on a tiny lineitem and ours matches DuckDB. No timing is asserted."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def bd() -> ModuleType:
    """The bench's DuckDB side."""
    return _load("bench_duckdb")


@pytest.fixture(scope="module")
def dml() -> ModuleType:
    """The DML section."""
    return _load("bench_dml")


@pytest.fixture(scope="module")
def lineitem(bd: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TPC-H lineitem at sf 0.001 (about 6,000 rows) as one Parquet file."""
    path = tmp_path_factory.mktemp("tpch") / "lineitem.parquet"
    con = bd.connect()
    try:
        bd.generate_tpch(con, 0.001)
        bd.export_parquet(con, "lineitem", path)
    finally:
        con.close()
    return path


def test_duckdb_runs_each_statement_on_its_own_copy(bd: ModuleType, dml: ModuleType, lineitem: Path,
                                                    tmp_path: Path) -> None:
    base = dml.build_base(bd, lineitem, tmp_path)
    before = dml.checked(bd, base.catalog)
    assert before[0] == base.rows and len(base.data_files) == 1
    changed = {}
    for kind in dml.KINDS:
        dest = tmp_path / "runs" / kind
        _, got = dml.run_duckdb(bd, base, kind, dest)
        with sqlite3.connect(dest / "cat.sqlite") as db:
            row = db.execute("SELECT value FROM ducklake_metadata WHERE key = 'data_path'").fetchone()
        db.close()
        assert row[0] == str(dest / "data") + "/"
        assert got["files_written"]["deletes"] + got["files_written"]["data"] >= 1
        changed[kind] = got["changed"]
    assert dml.checked(bd, base.catalog) == before  # the base lake never changes
    for kind in ("delete", "update"):
        assert 0.005 * base.rows < changed[kind] < 0.02 * base.rows, changed
    source = bd.connect()
    try:
        row = source.execute(f"SELECT count(*) FROM read_parquet({bd.quote(str(base.source))})").fetchone()
    finally:
        source.close()
    assert changed["merge"] == row[0]  # every source row either updates one row or is inserted


def _results(ratio: float) -> dict[str, Any]:
    stats = {"ours": {"median": ratio}, "floor": {"median": 1.0}, "duckdb": {"median": 0.5}}
    outputs = {"ours": {"deleted": 60, "updated": 0, "inserted": 0, "files_written": {"deletes": 1, "data": 0}}}
    return {"meta": {"date": "d", "mode": "quick", "settings": {"mode": "quick", "sf": 0.02, "reps": 3},
                     "versions": {}, "loadavg_start": [1.0, 1.0, 1.0], "cores": 2, "spark_master": "local[2]"},
            "dml": {"rows": 6000, "data_files": 1, "meta": {"sf": 0.02, "loadavg_start": [1.0], "loadavg_end": [1.0]},
                    "statements": {"delete": {"sql": "DELETE FROM lineitem WHERE x", **stats, "outputs": outputs,
                                              "match": True}}}}


@pytest.mark.parametrize(("ratio", "met"), [(1.5, True), (3.0, False)])
def test_report_gives_ratios_and_flags_a_missed_target(ratio: float, met: bool) -> None:
    report = _load("bench_report")
    results = _results(ratio)
    results["targets"] = report.targets(results)
    floor, duck = (t for t in results["targets"] if t["name"].startswith("DELETE 1%"))
    assert (floor["met"], floor["value"], duck["value"]) == (met, ratio, ratio / 0.5)
    text = report.render_markdown(results, "r.json", "")
    assert "## Row-level changes" in text
    assert (f"**{ratio:.2f}** (target ≤ 2)" in text) is not met
    assert "| 60 | 1 / 0 |" in text


@pytest.mark.spark
def test_section_runs_ours_floor_and_duckdb_on_merge(bd: ModuleType, dml: ModuleType, lineitem: Path, tmp_path: Path,
                                            spark: SparkSession) -> None:
    import ducklake_cli

    report = _load("bench_report")
    # MERGE alone (CI time): it has every part the others have (delete files, data files, the floor's join).
    out = dml.dml(bd, report.stat, lambda _: None, 1, lineitem, tmp_path, spark,
                  lambda c: ducklake_cli.connect(str(c)), kinds=("merge",), warm_up=False)
    assert set(out["statements"]) == {"merge"}
    for kind, entry in out["statements"].items():
        assert {"ours", "floor", "duckdb"} <= {k for k, v in entry.items() if isinstance(v, dict) and "median" in v}
        assert entry["match"] is True, (kind, entry["outputs"])
        ours = entry["outputs"]["ours"]
        # The floor writes as many files as ours wrote.
        assert entry["outputs"]["floor"]["files_written"] == {
            k: v for k, v in (("deletes", ours["delete_files"]), ("data", ours["data_files"])) if v or k == "deletes"}
    assert not (tmp_path / "dml").exists()  # every copy is removed
