"""The shell completion scripts in `completions/`: current with the app, and working in a real bash."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import typer

from ducklake_cli.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "scripts" / "gen_completions.py"
BASH_SCRIPT = ROOT / "completions" / "ducklake.bash"

# Source the completion script, find the function it registered for `ducklake`, and call it the way bash's
# programmable completion does (COMP_WORDS/COMP_CWORD set; args: command, word being completed, previous word).
_BASH_DRIVER = r"""
set -eu
source "$1"
spec="$(complete -p ducklake)"
func="$(printf '%s\n' "$spec" | sed -n 's/.* -F \([^ ]*\) .*/\1/p')"
[[ -n "$func" ]] || { echo "no completion function in: $spec" >&2; exit 3; }
shift
COMP_WORDS=("$@")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMPREPLY=()
"$func" ducklake "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
"""


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_completions", GEN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ducklake_bin_dir(tmp_path: Path) -> Path:
    """A directory holding a `ducklake` executable: this venv's console script, else a wrapper around it."""
    venv_bin = Path(sys.executable).parent
    if (venv_bin / "ducklake").is_file():
        return venv_bin
    wrapper = tmp_path / "bin" / "ducklake"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ducklake_cli "$@"\n')
    wrapper.chmod(0o755)
    return wrapper.parent


def _bash_complete(tmp_path: Path, *words: str) -> list[str]:
    """What the committed bash completion offers for the command line `words` (the last one is being typed)."""
    bash = shutil.which("bash")
    assert bash, "bash is needed for this test"
    env = {k: v for k, v in os.environ.items() if k != "_DUCKLAKE_COMPLETE"}
    env["PATH"] = f"{_ducklake_bin_dir(tmp_path)}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        [bash, "--norc", "--noprofile", "-c", _BASH_DRIVER, "bash", str(BASH_SCRIPT), *words],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if line]


def test_committed_completions_are_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(GEN), "--check"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"{proc.stderr.strip()}\n(regenerate with: python scripts/gen_completions.py)"


def test_bash_completes_subcommand_prefix(tmp_path: Path) -> None:
    assert _bash_complete(tmp_path, "ducklake", "ins") == ["inspect"]


def test_bash_offers_every_command(tmp_path: Path) -> None:
    group = typer.main.get_command(app)
    commands = {name for name, cmd in getattr(group, "commands", {}).items() if not cmd.hidden}
    assert {"inspect", "create-catalog"} <= commands
    assert set(_bash_complete(tmp_path, "ducklake", "")) == commands


def test_check_names_stale_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    gen = _load_generator()
    expected = {name: f"# {name}\n" for name in gen.FILES.values()}
    monkeypatch.setattr(gen, "generate", lambda: expected)
    stale, missing, current = sorted(expected)
    (tmp_path / stale).write_text("# edited by hand\n")
    (tmp_path / current).write_text(expected[current])

    assert gen.main(["--check", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert stale in err and missing in err and current not in err
    assert not (tmp_path / missing).exists()  # --check writes nothing

    assert gen.main(["--dir", str(tmp_path)]) == 0
    assert gen.main(["--check", "--dir", str(tmp_path)]) == 0
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == expected
