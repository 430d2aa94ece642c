"""`ducklake.toml` profiles, `$DUCKLAKE_CATALOG`, `${ENV}` secrets and masking."""

from __future__ import annotations

from pathlib import Path

import pytest

from ducklake_cli.cli.config import find_config, load_config, mask_mapping, resolve
from ducklake_cli.errors import ConfigError, UsageError

CONFIG = """
default_profile = "local"

[profiles.local]
catalog = "{cat}"
data_path = "/data/lake/"

[profiles.prod]
catalog = "postgresql://lake:${{PG_PASSWORD}}@db.internal:5432/lake"
metadata_schema = "lake_meta"
[profiles.prod.storage]
endpoint_url = "http://127.0.0.1:8333"
key = "${{S3_KEY}}"
secret = "${{S3_SECRET}}"
[profiles.prod.spark]
"spark.executor.memory" = "4g"
"""


@pytest.fixture
def cfg_path(tmp_path: Path) -> Path:
    path = tmp_path / "ducklake.toml"
    path.write_text(CONFIG.format(cat=tmp_path / "lake.sqlite"))
    return path


ENV = {"PG_PASSWORD": "pw-123", "S3_KEY": "AKIA-x", "S3_SECRET": "shh"}


def test_profile_resolution_and_secrets(cfg_path: Path) -> None:
    cfg = load_config(cfg_path, ENV)
    r = resolve("prod", config=cfg, env=ENV)
    assert r.target.backend == "postgres" and r.target.password == "pw-123"
    assert r.target.metadata_schema == "lake_meta"
    assert r.spark_conf == {"spark.executor.memory": "4g"}
    assert "pw-123" not in repr(r) and "shh" not in repr(r) and "pw-123" not in r.target.display()
    # Normalised to s3fs keywords: the endpoint goes to botocore, path-style addressing for a custom endpoint.
    assert mask_mapping(r.storage_options) == {"key": "***", "secret": "***",
                                               "client_kwargs": {"endpoint_url": "http://127.0.0.1:8333"},
                                               "config_kwargs": {"s3": {"addressing_style": "path"}}}


def test_precedence_argument_env_default(cfg_path: Path, tmp_path: Path) -> None:
    cfg = load_config(cfg_path, ENV)
    other = tmp_path / "other.sqlite"
    assert resolve(str(other), config=cfg, env=ENV, must_exist=False).target.path == other
    env = {**ENV, "DUCKLAKE_CATALOG": "prod"}
    assert resolve(None, config=cfg, env=env).target.backend == "postgres"
    default = resolve(None, config=cfg, env=ENV, must_exist=False)
    assert default.profile == "local" and default.data_path == "/data/lake/"
    assert resolve(None, config=cfg, env=ENV, data_path="/x/", must_exist=False).data_path == "/x/"


def test_missing_env_reference_names_the_variable_only(cfg_path: Path) -> None:
    cfg = load_config(cfg_path, {})
    with pytest.raises(ConfigError, match=r"\$\{PG_PASSWORD\}"):
        resolve("prod", config=cfg, env={})


def test_only_the_profile_in_use_is_expanded(cfg_path: Path, tmp_path: Path) -> None:
    """An unset variable in another profile breaks nothing: not the default, not a path, not $DUCKLAKE_CATALOG."""
    cfg = load_config(cfg_path, {})
    assert resolve(None, config=cfg, env={}, must_exist=False).profile == "local"
    assert resolve("local", config=cfg, env={}, must_exist=False).profile == "local"
    assert resolve(str(tmp_path / "x.sqlite"), config=cfg, env={}, must_exist=False).profile is None
    env = {"DUCKLAKE_CATALOG": str(tmp_path / "y.sqlite")}
    assert resolve(None, config=cfg, env=env, must_exist=False).target.path == tmp_path / "y.sqlite"


def test_a_file_named_like_a_profile_is_not_taken_silently(cfg_path: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare name that is a profile is the profile, with a note naming the file; ./NAME is the file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "local").write_bytes(b"")
    cfg = load_config(cfg_path, {})
    r = resolve("local", config=cfg, env={}, must_exist=False)
    assert r.profile == "local" and r.target.path == tmp_path / "lake.sqlite"
    assert len(r.notes) == 1 and "./local" in r.notes[0]
    f = resolve("./local", config=cfg, env={}, must_exist=False)
    assert f.profile is None and f.notes == ()


def test_no_catalog_anywhere() -> None:
    with pytest.raises(UsageError):
        resolve(None, config=load_config(None, {}), env={})


def test_config_search(tmp_path: Path, cfg_path: Path) -> None:
    assert find_config({"HOME": str(tmp_path / "home")}, tmp_path) == cfg_path
    assert find_config({"HOME": str(tmp_path / "home")}, tmp_path / "elsewhere") is None
    with pytest.raises(ConfigError):
        find_config({"DUCKLAKE_CONFIG": str(tmp_path / "missing.toml")}, tmp_path)


def test_unknown_profile_key(tmp_path: Path) -> None:
    p = tmp_path / "ducklake.toml"
    p.write_text('[profiles.x]\ncatalgo = "typo"\n')
    with pytest.raises(ConfigError, match="catalgo"):
        load_config(p, {})
