"""``scripts/bench.py`` runs from any directory and in any way (file, ``-m``, imported by path), and its DuckDB side
loads the extensions through the package's one loader (a tiny TPC-H lake, no Spark)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "bench.py"


@pytest.mark.parametrize(("args", "cwd"), [
    pytest.param([str(SCRIPT)], REPO, id="file-from-repo-root"),
    pytest.param([str(SCRIPT)], None, id="file-from-elsewhere"),
    pytest.param(["-m", "scripts.bench"], REPO, id="module-from-repo-root"),
])
def test_help_runs(args: list[str], cwd: Path | None, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, *args, "--help"], cwd=cwd or tmp_path, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "--quick" in proc.stdout


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """The script imported by its path, as a test or another tool would."""
    spec = importlib.util.spec_from_file_location("bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_duckdb_side_builds_a_tiny_lake(bench: ModuleType, tmp_path: Path) -> None:
    settings = bench.Settings("quick", 0.001, 3, 1000, 10, 10, 10, 10, False, (1, 6), ())
    setup: dict[str, float] = {}
    lakes = bench.build_lakes(settings, tmp_path, setup)
    assert set(lakes.queries) == set(range(1, 23))
    assert 0 < lakes.deleted_fraction < 0.2
    con = bench.bd.connect()
    try:
        bench.bd.attach(con, lakes.a_catalog, lakes.a_catalog.parent / "data")
        con.execute("USE lake")
        rows = con.execute(lakes.queries[6]).fetchall()
        files = bench.bd.lake_files(con, "lake", "lineitem")
    finally:
        con.close()
    assert len(rows) == 1 and files
    assert all(Path(f).is_file() for f in files)
