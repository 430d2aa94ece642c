"""`ducklake copy-catalog`: JSON shape, refusals as one line with exit 1, --help with an example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_main
from tests.support.copy_lakes import build_history_lake


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DuckDB-built SQLite catalog with a varied history."""
    return build_history_lake(tmp_path_factory.mktemp("copy_cli"))


def test_copy_reports_every_table_in_json(source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dst = tmp_path / "copy.ducklake"
    code, out, err = run_main(capsys, "copy-catalog", str(source), str(dst), "--data-path", str(tmp_path / "d"),
                              "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["verified"] is True and doc["destination_backend"] == "duckdb" and doc["source_backend"] == "sqlite"
    assert doc["data_path"] == f"{tmp_path}/d/" and doc["data_path_rewritten"] is True
    tables = {t["table"]: t for t in doc["tables"]}
    assert tables["ducklake_snapshot"]["copied_rows"] == tables["ducklake_snapshot"]["source_rows"] == 22
    assert "ducklake_inlined_data_1_2" in tables and "ducklake_inlined_delete_2" in tables
    assert doc["rows"] == sum(t["copied_rows"] for t in doc["tables"])

    code, out, err = run_main(capsys, "copy-catalog", str(source), str(dst))
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "not empty" in err and "nothing was changed" in err


def test_missing_source_and_help(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "copy-catalog", str(tmp_path / "nope.sqlite"), str(tmp_path / "x.sqlite"))
    assert code == 1 and "does not exist" in err
    assert not (tmp_path / "x.sqlite").exists()
    code, out, _ = run_main(capsys, "copy-catalog", "--help")
    assert code == 0 and "ducklake copy-catalog lake.sqlite" in out and "--data-path" in out
