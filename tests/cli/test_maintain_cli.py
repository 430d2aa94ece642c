"""The maintenance CLI contract: --dry-run changes nothing (byte for byte), the question on a terminal, --yes,
the JSON summary, the aliases, usage errors, no Spark, no secrets in output."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import REPO, run_cli, run_main
from tests.support.lakes import build_lake
from tests.support.spot import Spot

SUMMARY_KEYS = {"verb", "catalog", "dry_run", "snapshots_expired", "files_scheduled", "files_deleted", "bytes_freed",
                "bytes_scheduled", "snapshot_ids", "tables_removed", "files", "notes"}


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("maintain-cli")
    build_lake("sqlite", root / "cat.sqlite", root / "data", "deletes")
    return root / "cat.sqlite", root / "data"


cli = run_main  # stdin is not a terminal under pytest


def tree(data: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in data.rglob("*")}


def copy_lake(lake: tuple[Path, Path], tmp_path: Path) -> Path:
    """A private copy whose catalog points at the shared data files (for verbs that only change the catalog)."""
    target = tmp_path / "cat.sqlite"
    target.write_bytes(lake[0].read_bytes())
    return target


def test_dry_runs_change_nothing(lake: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    catalog, data = lake
    before = catalog.read_bytes()
    orphan = data / "main" / "ducklake-orphan.parquet"
    orphan.write_bytes(b"PAR1")
    files = tree(data)
    for args in (["maintain", "expire", "--keep-last", "1"], ["expire-snapshots", "--older-than", "0s"],
                 ["maintain", "cleanup", "--all"], ["maintain", "orphans", "--all"], ["cleanup-orphans", "--all"]):
        code, out, err = cli(capsys, *args, str(catalog), "--dry-run", "--format", "json")
        assert code == 0, err
        report = json.loads(out)
        assert report.keys() >= SUMMARY_KEYS and report["dry_run"] is True
    assert report["files_deleted"] == 1 and report["files"][0]["path"] == str(orphan)
    code, out, err = cli(capsys, "maintain", "expire", str(catalog), "--keep-last", "2", "--dry-run")
    assert code == 0 and "dry run: nothing changed" in err and "Snapshots" in out
    assert catalog.read_bytes() == before and tree(data) == files
    orphan.unlink()


def test_asks_on_a_terminal_and_yes_skips_the_question(lake: tuple[Path, Path], tmp_path: Path) -> None:
    catalog = copy_lake(lake, tmp_path)
    before = catalog.read_bytes()
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("DUCKLAKE_CATALOG", "DUCKLAKE_CONFIG")}
    proc = subprocess.Popen([sys.executable, "-m", "ducklake_cli", "maintain", "expire", str(catalog),
                             "--keep-last", "2"], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=REPO, env=env)
    os.close(slave)
    os.write(master, b"n\n")
    _, err = proc.communicate(timeout=60)
    os.close(master)
    assert proc.returncode == 1 and b"aborted: nothing changed" in err and b"go ahead?" in err
    assert catalog.read_bytes() == before
    done = run_cli("maintain", "expire", str(catalog), "--keep-last", "2", "--yes")
    assert done.returncode == 0 and "did expire 11 snapshot(s)" in done.stderr
    again = run_cli("maintain", "expire", str(catalog), "--keep-last", "2", "--format", "json")
    assert json.loads(again.stdout)["snapshots_expired"] == 0


@pytest.mark.parametrize("args", [
    ["maintain", "expire", "--snapshots", "1", "--older-than", "7d"],
    ["maintain", "expire", "--older-than", "seven days"],
    ["maintain", "expire", "--keep-last", "0"],
    ["maintain", "expire", "--snapshots", "1,x"],
    ["maintain", "cleanup", "--all", "--older-than", "1d"],
    ["maintain", "expire"],  # no criterion and no expire_older_than option
])
def test_usage_errors(lake: tuple[Path, Path], args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, *args, str(lake[0]))
    assert code == (0 if args == ["maintain", "expire"] else 2), err
    assert ("nothing to do" if args == ["maintain", "expire"] else "rror") in err


@pytest.mark.postgres
@pytest.mark.parametrize("spot", ["postgres"], indirect=True)
def test_no_secrets_and_no_spark(spot: Spot, capsys: pytest.CaptureFixture[str]) -> None:
    build_lake("postgres", spot.catalog, spot.data_path, "catalog_example")
    secret = ":" + spot.catalog.split(":")[2].split("@")[0] + "@"  # ":<password>@"
    for args in (["maintain", "expire", "--keep-last", "3"], ["maintain", "cleanup", "--all"],
                 ["maintain", "orphans"], ["maintain", "expire", "--keep-last", "0"]):
        for fmt in ("json", "table"):
            _, out, err = cli(capsys, *args, spot.catalog, "--format", fmt, "--dry-run")
            assert secret not in out + err
            if fmt == "json" and out:
                assert json.loads(out)["catalog"].startswith("postgres://lake:***@")
    code = ("import sys; from ducklake_cli.cli.app import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "assert 'pyspark' not in sys.modules, 'pyspark loaded'\n")
    result = subprocess.run([sys.executable, "-c", code, "maintain", "expire", spot.catalog, "--keep-last", "1",
                             "--yes"], capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert result.returncode == 0, result.stderr


def test_spark_verbs_plan_without_spark_and_dry_runs_change_nothing(tmp_path: Path) -> None:
    """flush, compact, rewrite and checkpoint plan from metadata alone: no JVM for a dry run, nothing changed."""
    catalog, data = tmp_path / "cat.sqlite", tmp_path / "data"
    build_lake("sqlite", catalog, data, "inlined")
    before, files = catalog.read_bytes(), tree(data)
    probe = ("import sys\nfrom ducklake_cli.cli.app import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n"
             "    pass\nprint('pyspark loaded:', 'pyspark' in sys.modules, file=sys.stderr)")
    for verb in ("flush", "compact", "rewrite", "checkpoint"):
        proc = subprocess.run([sys.executable, "-c", probe, "maintain", verb, str(catalog), "--dry-run", "--format",
                               "json"], capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
        assert proc.returncode == 0 and "pyspark loaded: False" in proc.stderr, proc.stderr
        report = json.loads(proc.stdout)
        assert report.keys() >= SUMMARY_KEYS and report["dry_run"] is True and report["verb"] == verb
    assert report["steps"].keys() == {"flush", "expire", "compact", "rewrite", "cleanup", "orphans"}
    assert catalog.read_bytes() == before and tree(data) == files
