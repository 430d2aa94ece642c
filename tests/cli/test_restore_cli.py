"""`ducklake restore`: plan → --dry-run → confirm (--yes) → apply, the JSON shape, and one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ducklake_cli.lake import Lake
from tests.support.cli import run_main
from tests.support.restore_lakes import INLINED_DELETES, SCENARIOS, build, oracle_reads


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, dict[int, object]]:
    """The appends-and-deletes lake (snapshots 1–7), with DuckDB's reading of each snapshot."""
    root = tmp_path_factory.mktemp("restore_cli")
    catalog, data = str(root / "lake.sqlite"), root / "data"
    before = build("sqlite", catalog, data, SCENARIOS[0])
    return catalog, data, dict(before)


def _latest(catalog: str) -> int:
    with Lake.open(catalog) as lk, lk.reader() as r:
        return r.latest_snapshot().snapshot_id


def test_dry_run_then_yes_then_undo(capsys: pytest.CaptureFixture[str], lake: tuple[str, Path, dict[int, object]]
                                    ) -> None:
    catalog, data, before = lake
    latest = _latest(catalog)
    code, out, err = run_main(capsys, "restore", catalog, "t", "--to-snapshot", "3", "--dry-run", "--format", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["dry_run"] is True and plan["table"] == "main.t" and plan["to_snapshot"] == 3
    assert plan["from_snapshot"] == latest and plan["snapshot_id"] is None
    assert {f["action"] for f in plan["files"]} >= {"copy", "end"}
    assert _latest(catalog) == latest  # a dry run commits nothing

    code, out, err = run_main(capsys, "restore", catalog, "t", "--to-snapshot", "3")  # no terminal, no --yes
    assert code == 2 and "not confirmed" in err and "\n" not in err.strip()
    assert _latest(catalog) == latest

    code, out, err = run_main(capsys, "restore", catalog, "t", "--to-snapshot", "3", "--yes", "--format", "json",
                              "-m", "undo the bad load", "--author", "ops")
    assert code == 0, err
    done = json.loads(out)
    assert done["dry_run"] is False and done["snapshot_id"] == latest + 1 and done["bytes_copied"] > 0
    with Lake.open(catalog) as lk, lk.reader() as r:
        snap = r.snapshot(latest + 1)
        assert (snap.commit_message, snap.author) == ("undo the bad load", "ops")

    code, out, err = run_main(capsys, "restore", catalog, "t", "--to-snapshot", str(latest), "--yes")
    assert code == 0, err
    assert f"restore: main.t to snapshot {latest} as snapshot {latest + 2}" in err

    code, out, err = run_main(capsys, "restore", catalog, "t", "--to-snapshot", str(latest + 2), "--yes")
    assert code == 0 and "already reads as at snapshot" in err and _latest(catalog) == latest + 2

    after, _ = oracle_reads("sqlite", catalog, data)
    assert after[latest + 1] == before[3] and after[latest + 2] == before[latest]


def test_as_of(capsys: pytest.CaptureFixture[str], lake: tuple[str, Path, dict[int, object]]) -> None:
    catalog, _, _ = lake
    with Lake.open(catalog) as lk, lk.reader() as r:
        when = r.snapshot(2).snapshot_time
    code, out, err = run_main(capsys, "restore", catalog, "main.t", "--as-of", when.isoformat(), "--dry-run",
                              "--format", "json")
    assert code == 0, err
    assert json.loads(out)["to_snapshot"] == 2


@pytest.mark.parametrize(("args", "code", "text"), [
    (("t",), 2, "--to-snapshot N or --as-of TIME"),
    (("t", "--to-snapshot", "2", "--as-of", "2026-01-01"), 2, "--to-snapshot"),
    (("t", "--as-of", "yesterday"), 2, "not an ISO 8601 time"),
    (("nope", "--to-snapshot", "2"), 1, "table main.nope does not exist"),
    (("t", "--to-snapshot", "0"), 1, "did not exist at snapshot 0"),
    (("t", "--to-snapshot", "999"), 1, "snapshot 999 does not exist"),
    (("t", "--to-snapshot", "-1"), 1, "snapshot -1 does not exist (hint"),
])
def test_refusals_are_one_line(capsys: pytest.CaptureFixture[str], lake: tuple[str, Path, dict[int, object]],
                               args: tuple[str, ...], code: int, text: str) -> None:
    catalog, _, _ = lake
    latest = _latest(catalog)
    got, out, err = run_main(capsys, "restore", catalog, *args, "--yes")
    assert got == code, err
    assert text in err and "Traceback" not in err
    assert _latest(catalog) == latest


def test_inlined_deletions_and_encrypted_files_are_bad_input(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    import sqlite3

    catalog = str(tmp_path / "lake.sqlite")
    build("sqlite", catalog, tmp_path / "data", INLINED_DELETES)
    latest = _latest(catalog)
    code, _, err = run_main(capsys, "restore", catalog, "t", "--to-snapshot", "1", "--yes")
    assert code == 1 and "inlined deletions" in err and "\n" not in err.strip()
    db = sqlite3.connect(catalog)
    db.execute("UPDATE ducklake_data_file SET encryption_key = 'a2V5'")  # metadata only: refused before any read
    db.commit()
    db.close()
    code, _, err = run_main(capsys, "restore", catalog, "t", "--to-snapshot", "3", "--yes")
    assert code == 1 and "has encrypted files" in err and "\n" not in err.strip()
    assert _latest(catalog) == latest


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "restore", "--help")
    assert code == 0 and "--to-snapshot" in out and "ducklake restore lake.sqlite" in out
