"""Destructive commands without a terminal: no --yes means refuse (exit 2, "pass --yes", nothing changed), whatever
stdin holds (a piped `n`, /dev/null); --yes applies, and an applied run never reports `dry_run: true`."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_cli, run_main
from tests.support.oracle import attach_clause, oracle_connect

# verb → its arguments (every one has something to do on the lake below)
VERBS: dict[str, list[str]] = {
    "expire": ["maintain", "expire", "--keep-last", "1"],
    "expire-snapshots": ["expire-snapshots", "--keep-last", "1"],
    "cleanup": ["maintain", "cleanup", "--all"],
    "orphans": ["maintain", "orphans", "--all"],
    "cleanup-orphans": ["cleanup-orphans", "--all"],
    "flush": ["maintain", "flush"],
    "compact": ["maintain", "compact", "--table", "t"],
    "rewrite": ["maintain", "rewrite", "--delete-threshold", "0.05"],
    "checkpoint": ["maintain", "checkpoint"],
}
SPARK_VERBS = {"flush", "compact", "rewrite", "checkpoint"}


def _build(root: Path) -> tuple[Path, Path]:
    """A small SQLite lake: three small files (compact), deletes (rewrite), inlined rows (flush), an expired
    snapshot's files scheduled for deletion (cleanup), old snapshots (expire) and an orphan file (orphans)."""
    catalog, data = root / "cat.sqlite", root / "data"
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data))
        con.execute("CREATE TABLE lake.t (id BIGINT, v VARCHAR)")
        for start in (0, 100, 200):
            con.execute(f"INSERT INTO lake.t SELECT i, 'v' || i FROM range({start}, {start + 50}) r(i)")
        con.execute("DELETE FROM lake.t WHERE id < 10 AND id % 2 = 0")  # the first file only
        con.execute("CREATE TABLE lake.gone AS SELECT i FROM range(40) r(i)")
        con.execute("DROP TABLE lake.gone")
        con.execute("CALL ducklake_expire_snapshots('lake', versions => [5, 6])")  # gone's file → scheduled
        con.execute("INSERT INTO lake.t VALUES (1000, 'inlined'), (1001, 'inlined')")
        con.execute("DETACH lake")
    finally:
        con.close()
    (data / "main" / "ducklake-orphan.parquet").write_bytes(b"PAR1")
    return catalog, data


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("noninteractive")
    _build(root)
    return root


def _copy(template: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A private copy of the lake (the catalog stores an absolute data path: point it at the copy)."""
    shutil.copytree(template, tmp_path / "lake")
    catalog, data = tmp_path / "lake" / "cat.sqlite", tmp_path / "lake" / "data"
    import sqlite3

    with sqlite3.connect(catalog) as con:
        con.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", (f"{data}/",))
    return catalog, data


def _state(catalog: Path, data: Path) -> tuple[str, dict[str, str]]:
    files = {str(p.relative_to(data)): hashlib.sha256(p.read_bytes()).hexdigest() for p in data.rglob("*")
             if p.is_file()}
    return hashlib.sha256(catalog.read_bytes()).hexdigest(), files


def _cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stdin: io.TextIOBase | None,
         *args: str) -> tuple[int, str, str]:
    monkeypatch.delenv("DUCKLAKE_CATALOG", raising=False)
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", stdin)
    return run_main(capsys, *args)


def test_the_lake_gives_every_verb_work(template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard for the tests below: each verb's dry run has something to change."""
    catalog, _ = _copy(template, tmp_path)
    for verb, args in VERBS.items():
        code, out, err = _cli(capsys, monkeypatch, None, *args, str(catalog), "--dry-run", "--format", "json")
        report = json.loads(out)
        assert code == 0 and report["dry_run"] is True, err
        assert report["files"] or report.get("rows_flushed") or report["snapshot_ids"], (verb, report)


@pytest.mark.parametrize("stdin", ["n", "y", "devnull"])
@pytest.mark.parametrize("verb", list(VERBS))
def test_no_terminal_and_no_yes_refuses(verb: str, stdin: str, template: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped input is not consent (not even `y`): exit 2, one line naming --yes, catalog and files unchanged."""
    catalog, data = _copy(template, tmp_path)
    before = _state(catalog, data)
    source = open("/dev/null") if stdin == "devnull" else io.StringIO(stdin + "\n")  # noqa: SIM115
    try:
        for fmt in ("table", "json"):
            code, out, err = _cli(capsys, monkeypatch, source, *VERBS[verb], str(catalog), "--format", fmt)
            assert code == 2, (verb, err)
            assert err.startswith("error: ") and err.count("\n") == 1 and "pass --yes" in err, err
            assert "dry run" not in out + err
    finally:
        source.close()
    assert _state(catalog, data) == before


def test_refusal_starts_no_spark_and_a_real_pipe_refuses(template: Path, tmp_path: Path) -> None:
    """`echo n | ducklake maintain cleanup CAT --all` (the reported case) and `</dev/null` checkpoint, as processes."""
    catalog, data = _copy(template, tmp_path)
    before = _state(catalog, data)
    import subprocess

    from tests.support.cli import REPO

    for args, stdin in ((VERBS["cleanup"], "n\n"), (VERBS["checkpoint"], None), (VERBS["compact"], "")):
        code = ("import sys\nfrom ducklake_cli.cli.app import main\ntry:\n    main(sys.argv[1:])\n"
                "except SystemExit as e:\n    print('pyspark loaded:', 'pyspark' in sys.modules, file=sys.stderr)\n"
                "    raise\n")
        proc = subprocess.run([sys.executable, "-c", code, *args, str(catalog)], input=stdin,
                              stdin=subprocess.DEVNULL if stdin is None else None, capture_output=True, text=True,
                              cwd=REPO, timeout=120, check=False)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.splitlines()
        assert lines[-1] == "pyspark loaded: False" and "pass --yes" in lines[-2], proc.stderr
    assert _state(catalog, data) == before
    assert run_cli("maintain", "cleanup", str(catalog), "--all", "--dry-run").returncode == 0


@pytest.mark.parametrize("verb", [v for v in VERBS if v not in SPARK_VERBS])
def test_yes_applies_without_a_terminal(verb: str, template: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """--yes with stdin at /dev/null applies; the JSON and the table say so, never "dry run"."""
    catalog, data = _copy(template, tmp_path)
    before = _state(catalog, data)
    with open("/dev/null") as null:
        code, out, err = _cli(capsys, monkeypatch, null, *VERBS[verb], str(catalog), "--yes", "--format", "json")
        assert code == 0, err
        report = json.loads(out)
        assert report["dry_run"] is False and (report["files"] or report["snapshot_ids"])
        assert _state(catalog, data) != before
        # again: nothing left to do, still an applied run
        code, out, err = _cli(capsys, monkeypatch, null, *VERBS[verb], str(catalog), "--yes", "--format", "json")
        assert code == 0 and json.loads(out)["dry_run"] is False, err
        code, out, err = _cli(capsys, monkeypatch, null, *VERBS[verb], str(catalog), "--yes")
        assert code == 0 and "dry run" not in (out + err).lower(), out + err


@pytest.mark.spark
@pytest.mark.parametrize("verb", sorted(SPARK_VERBS))
def test_yes_applies_spark_verbs(verb: str, template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """flush, compact, rewrite and checkpoint with --yes and no terminal apply (one in-process Spark for all)."""
    catalog, data = _copy(template, tmp_path)
    before = _state(catalog, data)
    with open("/dev/null") as null:
        code, out, err = _cli(capsys, monkeypatch, null, *VERBS[verb], str(catalog), "--yes", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["dry_run"] is False and "dry run" not in out.lower()
    assert all(step["dry_run"] is False for step in report.get("steps", {}).values())
    assert _state(catalog, data) != before


@pytest.mark.parametrize(("verb", "directory"), [("orphans", "main"), ("cleanup", "main/gone")])
def test_files_in_a_read_only_directory_stop_the_run(verb: str, directory: str, template: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """With --yes, a file to delete in a read-only directory: one line naming it, exit 1, nothing changed."""
    from tests.cli.test_bad_input_matrix import read_only

    catalog, data = _copy(template, tmp_path)
    before = _state(catalog, data)
    with read_only(data / directory), open("/dev/null") as null:
        code, out, err = _cli(capsys, monkeypatch, null, *VERBS[verb], str(catalog), "--yes", "--format", "json")
    assert code == 1 and err.count("\n") == 1 and "read-only" in err and str(data / directory) in err, err
    assert out == "" and _state(catalog, data) == before
