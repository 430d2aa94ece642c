"""Running `ducklake` from a test: as a subprocess, as a user would, or in this process on the test's Spark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m ducklake_cli ARGS` as a user would, capturing stdout and stderr."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("DUCKLAKE_CATALOG", "DUCKLAKE_CONFIG")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "ducklake_cli", *args], capture_output=True, text=True, cwd=cwd or REPO,
        env=full_env, timeout=120, check=False,
    )


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`ducklake ARGS` in this process (Spark is the test session's): exit code, and what it printed since the
    last read of `capsys` (stdout, stderr)."""
    from ducklake_cli.cli.app import main

    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
