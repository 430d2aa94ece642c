"""Throwaway venvs the tests run other versions in (DuckDB 2.0, ducklakepy), built once per machine in
``${XDG_CACHE_HOME:-~/.cache}/ducklake-cli/<name>`` and reused while their key (Python version, requirements) is
unchanged."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Sequence
from pathlib import Path


def venv_root() -> Path:
    """Where the test venvs live: ``${XDG_CACHE_HOME:-~/.cache}/ducklake-cli``."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "ducklake-cli"


def clean_env() -> dict[str, str]:
    """This environment without what would make another venv's interpreter import the main venv's packages."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


def cached_venv(name: str, requirements: Sequence[str]) -> Path:
    """The interpreter of the venv ``venv_root()/name`` holding `requirements` (installed with their dependencies from
    the registry pip is configured with), built first when it is missing or its key (Python version, requirements)
    changed. xdist workers share one build through an fcntl lock (``name.lock`` beside it); the marker
    (``ready.json``, holding the key) is written last, so a half-built venv is never used."""
    root = venv_root() / name
    python, marker = root / "bin" / "python", root / "ready.json"
    key = json.dumps({"python": sys.version, "requirements": list(requirements)}, sort_keys=True)
    if marker.is_file() and marker.read_text() == key:
        return python
    root.parent.mkdir(parents=True, exist_ok=True)
    with (root.parent / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be building it: wait, then look again
        if marker.is_file() and marker.read_text() == key:
            return python
        shutil.rmtree(root, ignore_errors=True)
        venv.EnvBuilder(with_pip=False, clear=True).create(root)
        # This interpreter's pip installs into the new venv (`--python`): no pip bootstrap there (saves seconds).
        pip = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check",
             *requirements],
            capture_output=True, text=True, timeout=900, check=False, env=clean_env())
        if pip.returncode != 0:
            raise RuntimeError(f"building {root} failed:\n{pip.stdout[-3000:]}\n{pip.stderr[-3000:]}")
        tmp = marker.with_suffix(".tmp")
        tmp.write_text(key)
        tmp.replace(marker)
    return python
