"""`ducklake verify`: exit 0 healthy, 4 problems found (JSON lists them), 1/2 bad input; `--repair` goes through
plan → dry run → confirm → apply and DuckDB reads the repaired lake. No Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_main
from tests.support.damage import META, DamagedLake, delete_data_file, wrong_size
from tests.support.spot import Spot

sqlite = pytest.mark.parametrize("spot", ["sqlite"], indirect=True)


def _snapshots(lake: DamagedLake) -> int:
    return int(lake.run(f"SELECT count(*) FROM {META}.ducklake_snapshot")[0][0])


@sqlite
def test_healthy_lake_and_bad_input(spot: Spot, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lake = DamagedLake(spot)
    code, out, err = run_main(capsys, "verify", spot.catalog, "--deep", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["healthy"] is True and doc["problems"] == [] and doc["deep"] is True
    assert set(doc["checked"]) == {"tables", "data_files", "delete_files", "bytes", "inlined_tables", "snapshots",
                                   "footers", "stats_bounds", "footers_skipped_encrypted"}
    assert doc["checked"]["data_files"] == 4 and doc["checked"]["delete_files"] == 1
    assert doc["checked"]["footers_skipped_encrypted"] == 0
    code, out, err = run_main(capsys, "verify", spot.catalog, "--table", "u")
    assert code == 0 and "healthy" in err and "Problems" not in out
    for args, want in ((["--table", "nosuch"], 1), (["--dry-run"], 2), (["--yes"], 2)):
        code, _, err = run_main(capsys, "verify", spot.catalog, *args)
        assert code == want and err.startswith("error: ") and err.count("\n") == 1, (args, err)
    code, _, err = run_main(capsys, "verify", str(tmp_path / "nothing.sqlite"))
    assert code == 1 and err.count("\n") == 1
    # An encrypted file's footer needs its key: still healthy, but said (not silently "checked").
    lake.run(f"UPDATE {META}.ducklake_data_file SET encryption_key = 'a2V5' WHERE data_file_id = "
             f"(SELECT min(data_file_id) FROM {META}.ducklake_data_file WHERE end_snapshot IS NULL)")
    code, out, err = run_main(capsys, "verify", spot.catalog, "--deep")
    assert code == 0 and "1 encrypted file(s) not read deeply" in " ".join(err.split())
    assert "footers_skipped_encrypted" in out


@sqlite
def test_problems_exit_4_and_repair_flow(spot: Spot, capsys: pytest.CaptureFixture[str]) -> None:
    lake = DamagedLake(spot)
    gone = delete_data_file(lake)
    sized = wrong_size(lake)
    code, out, err = run_main(capsys, "verify", spot.catalog, "--format", "json")
    assert code == 4 and err.count("\n") == 1 and "2 problem(s)" in err
    doc = json.loads(out)
    assert doc["healthy"] is False
    assert [(p["kind"], p["path"], p["repairable"]) for p in doc["problems"]] == [
        ("missing_file", gone, True), ("size_mismatch", sized, False)]
    code, out, _ = run_main(capsys, "verify", spot.catalog)  # a table for people, same exit code
    assert code == 4 and "Problems" in out

    before = _snapshots(lake)
    code, _, err = run_main(capsys, "verify", spot.catalog, "--repair")  # no terminal, no --yes: refused
    assert code == 2 and "--yes" in err
    code, out, _ = run_main(capsys, "verify", spot.catalog, "--repair", "--dry-run", "--format", "json")
    assert code == 4 and json.loads(out)["files"] == [{"path": gone, "action": "end", "bytes": 1613,
                                                       "reason": "missing file"}]
    assert _snapshots(lake) == before
    code, out, err = run_main(capsys, "verify", spot.catalog, "--repair", "--yes", "--format", "json")
    doc = json.loads(out)
    assert code == 4 and doc["dry_run"] is False and doc["snapshot_id"] == before  # the size problem is left
    assert set(doc) == {"verb", "catalog", "dry_run", "files", "notes", "rows_lost", "healthy", "unrepairable",
                        "snapshot_id", "problems"}  # no expire/cleanup counts
    assert doc["healthy"] is False and doc["unrepairable"] == 1
    assert _snapshots(lake) == before + 1
    assert lake.count() == 269 - 100  # DuckDB reads t without the ended file
    code, out, _ = run_main(capsys, "verify", spot.catalog, "--format", "json")
    assert code == 4 and [p["kind"] for p in json.loads(out)["problems"]] == ["size_mismatch"]
    code, out, err = run_main(capsys, "verify", spot.catalog, "--repair", "--yes")  # nothing left to end
    assert code == 4 and "nothing to do" in err
