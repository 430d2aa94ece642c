"""One rule for CATALOG on every command: the argument, else $DUCKLAKE_CATALOG, else the config's default_profile;
only the profile in use is expanded; a file named like a profile is never taken silently."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import run_main
from tests.support.lakes import build_lake

Runner = Callable[..., tuple[int, str, str]]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("config-catalog")
    build_lake("sqlite", root / "cat.sqlite", root / "data", "catalog_example")
    return root / "cat.sqlite"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Runner:
    """Run `main()` in `tmp_path` with a clean environment plus `env`: (exit code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)
    for key in ("DUCKLAKE_CATALOG", "DUCKLAKE_CONFIG", "DUCKLAKE_REMOTE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))

    def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        with open(os.devnull) as null:
            monkeypatch.setattr(sys, "stdin", null)
            return run_main(capsys, *args)

    return run


def test_every_command_takes_catalog_from_the_environment(lake: Path, tmp_path: Path, cli: Runner) -> None:
    env = {"DUCKLAKE_CATALOG": str(lake)}
    code, out, err = cli("inspect", "--format", "json", env=env)
    assert code == 0 and json.loads(out)["catalog"].endswith("cat.sqlite"), err
    # query [CATALOG] SQL: one argument is the SQL (a metadata-only count, so no Spark)
    code, out, err = cli("query", "SELECT count(*) FROM t", "--format", "json", env=env)
    assert code == 0 and json.loads(out) == [{"count(1)": 913}], (out, err)
    code, out, err = cli("maintain", "expire", "--keep-last", "1", "--dry-run", "--format", "json", env=env)
    assert code == 0 and json.loads(out)["dry_run"] is True, err
    # write [CATALOG] TABLE: one argument is the TABLE (the --from check runs after CATALOG resolved)
    code, _, err = cli("write", "t", "--from", str(tmp_path / "missing.csv"), env=env)
    assert code == 1 and "missing.csv: no such file" in err, err
    code, _, err = cli("write", env=env)
    assert code == 2 and "missing TABLE" in err, err
    # create-catalog with the catalog from the environment
    new = tmp_path / "new.sqlite"
    code, _, err = cli("create-catalog", "--data-path", str(tmp_path / "d"), env={"DUCKLAKE_CATALOG": str(new)})
    assert code == 0 and new.exists(), err


def test_the_argument_beats_the_environment(lake: Path, tmp_path: Path, cli: Runner) -> None:
    code, out, err = cli("inspect", str(lake), "--format", "json",
                         env={"DUCKLAKE_CATALOG": str(tmp_path / "nope.sqlite")})
    assert code == 0, err
    code, _, err = cli("inspect", env={"DUCKLAKE_CATALOG": str(tmp_path / "nope.sqlite")})
    assert code == 1 and "nope.sqlite" in err


def test_no_catalog_anywhere_is_a_usage_error(cli: Runner) -> None:
    for args in (["inspect"], ["query", "SELECT 1"], ["maintain", "cleanup"], ["create-catalog", "--data-path", "d"]):
        code, _, err = cli(*args)
        assert code == 2 and "no CATALOG given" in err and err.count("\n") == 1, err


def test_an_unset_variable_in_another_profile_breaks_nothing(lake: Path, tmp_path: Path, cli: Runner) -> None:
    (tmp_path / "ducklake.toml").write_text(
        f'default_profile = "local"\n[profiles.local]\ncatalog = "{lake}"\n'
        '[profiles.prod]\ncatalog = "postgresql://lake:${UNSET_PASSWORD_X}@db/lake"\n')
    assert cli("inspect")[0] == 0
    assert cli("inspect", "local")[0] == 0
    assert cli("inspect", str(lake))[0] == 0
    assert cli("maintain", "expire", "--keep-last", "1", "--dry-run")[0] == 0
    code, _, err = cli("inspect", "prod")
    assert code == 1 and "${UNSET_PASSWORD_X}" in err


def test_a_file_named_like_a_profile_is_named_in_a_note(lake: Path, tmp_path: Path, cli: Runner) -> None:
    (tmp_path / "ducklake.toml").write_text(f'[profiles.lake]\ncatalog = "{lake}"\n')
    (tmp_path / "lake").write_bytes(b"not a catalog")
    code, out, err = cli("inspect", "lake", "--format", "json")
    assert code == 0 and json.loads(out)["catalog"].endswith("cat.sqlite")
    assert err.startswith("note: 'lake' is profile 'lake'") and "./lake" in err, err
    code, _, err = cli("inspect", "./lake")
    assert code == 1 and "note:" not in err
