"""`verify --repair` plans in rows: ending a data file (for its own damage or its delete file's) shows the rows each
table loses, in the plan and in the confirmation; a file that only has bytes appended after a whole Parquet file of
its recorded size is truncated back (no rows lost) instead of ended; a recorded size that is merely wrong is not
"repaired" by cutting the file. DuckDB reads the repaired lake. No Spark."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.cli import run_main
from tests.support.damage import META, DamagedLake, delete_delete_file
from tests.support.spot import ORACLE_BACKENDS, Spot


def _append(path: str, data: bytes) -> int:
    """Append bytes to a local file; its size before."""
    size = os.path.getsize(path)
    with open(path, "ab") as fh:
        fh.write(data)
    return size


@pytest.mark.parametrize("spot", ORACLE_BACKENDS, indirect=True)
def test_repair_plan_counts_rows_and_truncates_appended_bytes(spot: Spot,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    lake = DamagedLake(spot)
    lake.run("DELETE FROM lk.t WHERE a IN (151, 152)")  # inlined deletions of the file with a delete file
    before_t, before_u = lake.count("t"), lake.count("u")
    plain, damaged, grown = lake.files()  # t: rows 0-99; 100-199 with 33 + 2 deleted; 200-299
    (u_file,) = lake.files("u")
    gone = delete_delete_file(lake)  # ends `damaged`: its 65 live rows leave t
    garbage = _append(grown.path, b"\x00garbage" * 128)
    other = _append(u_file.path, Path(plain.path).read_bytes())  # a whole Parquet file appended: still ours
    lake.run(f"UPDATE {META}.ducklake_data_file SET file_size_bytes = file_size_bytes - 7 "
             f"WHERE data_file_id = {plain.data_file_id}")  # recorded size too small: not a truncation

    code, out, _ = run_main(capsys, "verify", spot.catalog, "--format", "json")
    kinds = sorted((p["kind"], p["path"], p["repairable"]) for p in json.loads(out)["problems"])
    assert code == 4 and kinds == sorted([("missing_file", gone, True), ("appended_bytes", grown.path, True),
                                          ("appended_bytes", u_file.path, True),
                                          ("size_mismatch", plain.path, False)]), kinds

    code, out, _ = run_main(capsys, "verify", spot.catalog, "--repair", "--dry-run", "--format", "json")
    plan = json.loads(out)
    assert code == 4 and plan["rows_lost"] == {"main.t": 65}
    assert sorted((f["action"], f["path"], f["bytes"]) for f in plan["files"]) == sorted([
        ("end", damaged.path, os.path.getsize(damaged.path)), ("truncate", grown.path, garbage),
        ("truncate", u_file.path, other)])
    assert "1,024 byte(s) appended" in next(f["reason"] for f in plan["files"] if f["path"] == grown.path)
    code, out, err = run_main(capsys, "verify", spot.catalog, "--repair", "--dry-run")  # for people: rows shown
    said = " ".join((out + err).split())
    assert "main.t loses 65 row(s)" in said and "truncate 2 file(s)" in said and "no rows lost" in said, said
    code, _, err = run_main(capsys, "verify", spot.catalog, "--repair")  # no terminal: the refusal says it too
    assert code == 2 and "main.t loses 65 row(s)" in " ".join(err.split())

    code, out, _ = run_main(capsys, "verify", spot.catalog, "--repair", "--yes", "--format", "json")
    done = json.loads(out)
    assert code == 4 and done["dry_run"] is False and done["rows_lost"] == {"main.t": 65}
    assert done["unrepairable"] == 1 and done["snapshot_id"] is not None
    assert (os.path.getsize(grown.path), os.path.getsize(u_file.path)) == (garbage, other)
    code, out, _ = run_main(capsys, "verify", spot.catalog, "--deep", "--format", "json")
    assert [p["kind"] for p in json.loads(out)["problems"]] == ["size_mismatch"]  # left alone, as planned
    lake.run(f"UPDATE {META}.ducklake_data_file SET file_size_bytes = file_size_bytes + 7 "
             f"WHERE data_file_id = {plain.data_file_id}")
    assert (lake.count("t"), lake.count("u")) == (before_t - 65, before_u)  # DuckDB reads it again
    code, _, err = run_main(capsys, "verify", spot.catalog, "--deep")
    assert code == 0, err
