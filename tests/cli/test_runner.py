"""The one command runner (`cli/runner.lake_command`): CATALOG is resolved once per command, so a note about how it
was resolved is printed once, by every command over a lake (Spark verbs included; --dry-run starts no Spark)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_main
from tests.support.lakes import build_lake

COMMANDS = [
    ("inspect",),
    ("maintain", "expire", "--keep-last", "1", "--dry-run"),
    ("maintain", "cleanup", "--dry-run"),
    ("maintain", "flush", "--dry-run"),
    ("maintain", "compact", "--dry-run"),
    ("maintain", "rewrite", "--dry-run"),
    ("maintain", "checkpoint", "--dry-run"),
]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runner")
    build_lake("sqlite", root / "cat.sqlite", root / "data", "catalog_example")
    return root / "cat.sqlite"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c[:2]))
def test_a_catalog_note_is_printed_once(command: tuple[str, ...], lake: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for key in ("DUCKLAKE_CATALOG", "DUCKLAKE_CONFIG", "DUCKLAKE_REMOTE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ducklake.toml").write_text(f'[profiles.lake]\ncatalog = "{lake}"\n')
    (tmp_path / "lake").write_bytes(b"not a catalog")  # a file named like the profile: the note says which is used
    with open(os.devnull) as null:
        monkeypatch.setattr(sys, "stdin", null)
        code, _, err = run_main(capsys, *command[:2], "lake", *command[2:])
    assert code == 0, err
    assert err.count("note: 'lake' is profile 'lake'") == 1, err
