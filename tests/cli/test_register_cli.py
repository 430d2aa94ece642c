"""`ducklake register` from the command line: CATALOG from the environment, JSON output, no Spark (not even
imported), help with examples."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.cli import run_main
from tests.support.oracle import oracle_connect


def _lake(tmp_path: Path) -> Path:
    cat = tmp_path / "c.sqlite"
    con = oracle_connect()
    try:
        con.execute(f"ATTACH 'ducklake:sqlite:{cat}' AS lake (DATA_PATH '{tmp_path / 'data'}/')")
        con.execute("CREATE TABLE lake.t (id INTEGER, name VARCHAR)")
        con.execute("DETACH lake")
    finally:
        con.close()
    pq.write_table(pa.table({"name": ["a", "b"], "id": pa.array([1, 2], pa.int32())}), tmp_path / "f.parquet")
    pq.write_table(pa.table({"id": pa.array([], pa.int32()), "name": pa.array([], pa.string())}),
                   tmp_path / "g-empty.parquet")
    return cat


def test_register_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    cat = _lake(tmp_path)
    monkeypatch.setenv("DUCKLAKE_CATALOG", str(cat))
    code, out, err = run_main(capsys, "register", "t", str(tmp_path / "*.parquet"), "--format", "json", "-m", "import")
    assert code == 0, err
    got = json.loads(out)
    assert (got["table"], got["rows"], got["snapshot_id"]) == ("main.t", 2, 2)
    assert got["files"][0]["path"] == str(tmp_path / "f.parquet") and got["files"][0]["mapping_id"] == 0
    assert got["skipped"] == [str(tmp_path / "g-empty.parquet")]  # DuckDB registers no empty file either
    code, out, _ = run_main(capsys, "register", "--help")
    assert code == 0 and "ducklake_add_data_files" in out and "--hive-partitioning" in out and "Examples" in out
    assert "--no-hive-partitioning" in out
    code, _, err = run_main(capsys, "register", "t")
    assert code == 2 and "missing TABLE or PATH|GLOB" in err
    code, _, err = run_main(capsys, "register", "t", "f.parquet", "--hive-partitioning", "--no-hive-partitioning")
    assert code == 2 and "exclude each other" in err


def test_register_never_imports_pyspark(tmp_path: Path) -> None:
    cat = _lake(tmp_path)
    script = ("import sys\nfrom ducklake_cli.cli.app import main\ntry:\n"
              f"    main(['register', {str(cat)!r}, 't', {str(tmp_path / 'f.parquet')!r}])\n"
              "except SystemExit as e:\n    assert not e.code, e.code\n"
              "assert 'pyspark' not in sys.modules, 'pyspark imported'\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
