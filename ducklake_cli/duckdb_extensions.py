"""DuckDB's extensions from the `duckdb-extension-<name>==1.5.5` wheels, loaded fully offline.

Each wheel ships `<name>.duckdb_extension`; it is INSTALLed into a private, cached extension directory (a plain
`LOAD '<file>'` fails for sqlite because of its entry-point name), so no connection reaches the network. Used by
the test oracle and the benchmarks (development dependencies); nothing in the tool's own commands needs it.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from pathlib import Path

import duckdb

DUCKDB_VERSION = "1.5.5"
EXTENSIONS = ("ducklake", "sqlite", "postgres", "httpfs", "tpch")  # every wheel in the dev extras

_MARKER = ".installed"
_ext_dir_cache: str | None = None


def wheel_extension_file(name: str) -> Path:
    """Path of ``<name>.duckdb_extension`` shipped inside the ``duckdb_extension_<name>`` wheel."""
    mod = importlib.import_module(f"duckdb_extension_{name}")
    # The package has an empty __init__; the binary sits next to it under extensions/v<version>/.
    pkg_dir = Path(next(iter(mod.__path__)))
    path = pkg_dir / "extensions" / f"v{DUCKDB_VERSION}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise FileNotFoundError(f"extension binary not found: {path}")
    return path


def _default_cache_root() -> Path:
    override = os.environ.get("DUCKLAKE_TEST_EXT_DIR")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "ducklake-cli" / f"duckdb-ext-{DUCKDB_VERSION}"


def _fingerprint() -> str:
    # Identifies the wheel binaries, so a re-released wheel (same version, new build) is re-installed.
    lines = [DUCKDB_VERSION]
    for name in EXTENSIONS:
        path = wheel_extension_file(name)
        lines.append(f"{name} {path.stat().st_size}")
    return "\n".join(lines) + "\n"


def _is_current(target: Path) -> bool:
    marker = target / _MARKER
    return marker.is_file() and marker.read_text() == _fingerprint()


def _install_into(target: Path) -> None:
    con = duckdb.connect(
        config={"extension_directory": str(target), "autoinstall_known_extensions": False}
    )
    try:
        for name in EXTENSIONS:
            con.execute(f"INSTALL '{wheel_extension_file(name)}'")
    finally:
        con.close()
    (target / _MARKER).write_text(_fingerprint())


def extension_dir() -> str:
    """The private extension directory holding the wheels' extensions, installed once and cached."""
    global _ext_dir_cache
    if _ext_dir_cache is not None:
        return _ext_dir_cache
    target = _default_cache_root()
    if not _is_current(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        # Install into a sibling temp dir and rename it into place, so that concurrent test processes
        # never see a half-populated directory.
        staging = Path(tempfile.mkdtemp(prefix=".ext-staging-", dir=target.parent))
        try:
            _install_into(staging)
            try:
                staging.rename(target)
            except OSError:
                # Target exists: another process won the race (keep it) or it is stale (replace it).
                if not _is_current(target):
                    shutil.rmtree(target, ignore_errors=True)
                    staging.rename(target)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    _ext_dir_cache = str(target)
    return _ext_dir_cache


def connect(database: str = ":memory:", extensions: tuple[str, ...] = EXTENSIONS) -> duckdb.DuckDBPyConnection:
    """DuckDB (in memory by default) with `extensions` loaded from the private directory, in UTC."""
    con = duckdb.connect(database, config={"extension_directory": extension_dir(),
                                           "autoinstall_known_extensions": False})
    for name in extensions:
        con.execute(f"LOAD {name}")
    # Timestamps with time zone render and cast deterministically regardless of the host TZ.
    con.execute("SET TimeZone='UTC'")
    return con
