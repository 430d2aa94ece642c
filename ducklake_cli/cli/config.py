"""`ducklake.toml` profiles and CATALOG resolution: flag > environment > profile > default, resolved once."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ducklake_cli.catalog.url import CatalogTarget, parse_catalog
from ducklake_cli.errors import ConfigError, UsageError
from ducklake_cli.warm_socket import state_dir

CONFIG_FILE = "ducklake.toml"
_SECRET_WORDS = ("password", "secret", "token", "key", "credential")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def is_secret_key(name: str) -> bool:
    """Whether an option name holds a secret (its value is never printed)."""
    low = name.lower()
    return any(word in low for word in _SECRET_WORDS)


def mask_mapping(values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with secret values replaced by `***`."""
    return {k: ("***" if is_secret_key(k) and v else v) for k, v in values.items()}


@dataclass(frozen=True)
class Profile:
    """One `[profiles.NAME]` table of the config file."""

    name: str
    catalog: str | None = None
    data_path: str | None = None
    metadata_schema: str | None = None
    storage: Mapping[str, Any] = field(default_factory=dict, repr=False)
    spark: Mapping[str, str] = field(default_factory=dict, repr=False)
    master: str | None = None
    remote: str | None = None


_PROFILE_KEYS = frozenset({"catalog", "data_path", "metadata_schema", "storage", "spark", "master", "remote"})


@dataclass(frozen=True)
class Config:
    """The parsed config file (or an empty one); profiles stay unexpanded until one is used."""

    path: Path | None
    profiles: Mapping[str, Mapping[str, Any]]
    default_profile: str | None

    def profile(self, name: str, env: Mapping[str, str]) -> Profile:
        """Profile `name` with its `${VAR}` references expanded (only the profile in use needs its variables)."""
        if name not in self.profiles:
            raise ConfigError(f"no profile {name!r} in {self.path or 'any ducklake.toml'}")
        b = _expand(dict(self.profiles[name]), env, f"profile {name!r}")
        return Profile(
            name=name, catalog=b.get("catalog"), data_path=b.get("data_path"),
            metadata_schema=b.get("metadata_schema"), storage=dict(b.get("storage") or {}),
            spark={k: str(v) for k, v in (b.get("spark") or {}).items()},
            master=b.get("master"), remote=b.get("remote"),
        )


@dataclass(frozen=True)
class Resolved:
    """Everything a command needs to open a lake, resolved once."""

    target: CatalogTarget
    data_path: str | None
    storage_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    spark_conf: Mapping[str, str] = field(default_factory=dict, repr=False)
    master: str | None = None
    remote: str | None = None
    profile: str | None = None
    notes: tuple[str, ...] = ()  # things the user should know about how CATALOG was resolved


def _expand(value: Any, env: Mapping[str, str], where: str) -> Any:
    if isinstance(value, str):
        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in env:
                raise ConfigError(f"{where} refers to ${{{name}}}, which is not set in the environment")
            return env[name]

        return _ENV_REF.sub(sub, value)
    if isinstance(value, dict):
        return {k: _expand(v, env, f"{where}.{k}") for k, v in value.items()}
    return value


def find_config(env: Mapping[str, str], cwd: Path) -> Path | None:
    """`$DUCKLAKE_CONFIG`, else `./ducklake.toml`, else `~/.config/ducklake/ducklake.toml`."""
    if env.get("DUCKLAKE_CONFIG"):
        path = Path(env["DUCKLAKE_CONFIG"]).expanduser()
        if not path.is_file():
            raise ConfigError(f"DUCKLAKE_CONFIG points to {path}, which does not exist")
        return path
    for candidate in (cwd / CONFIG_FILE, Path(env.get("HOME", "~")).expanduser() / ".config/ducklake" / CONFIG_FILE):
        if candidate.is_file():
            return candidate
    return None


def load_config(path: Path | None, env: Mapping[str, str]) -> Config:
    """Parse the config file; `${VAR}` references are expanded from `env` when a profile is used (`Config.profile`)."""
    if path is None:
        return Config(None, {}, None)
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
    profiles: dict[str, Mapping[str, Any]] = {}
    for name, body in (raw.get("profiles") or {}).items():
        if not isinstance(body, dict):
            raise ConfigError(f"{path}: [profiles.{name}] must be a table")
        unknown = set(body) - _PROFILE_KEYS
        if unknown:
            raise ConfigError(f"{path}: unknown key(s) in [profiles.{name}]: {', '.join(sorted(unknown))}")
        profiles[name] = body
    default = raw.get("default_profile")
    if default is not None and default not in profiles:
        raise ConfigError(f"{path}: default_profile {default!r} is not a profile")
    return Config(path, profiles, default)


def storage_options(profile_storage: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The profile's `[storage]` settings as s3fs options; `AWS_*` variables fill what it leaves out.

    Credentials count as one group: a profile naming `key`, `token`, `anon` or an AWS `profile` takes none
    of `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN` from the environment.
    """
    from ducklake_cli.storage.files import s3_storage_options

    opts = s3_storage_options(profile_storage)
    client = opts.get("client_kwargs") or {}
    fill: dict[str, Any] = {}
    if "endpoint_url" not in client and (endpoint := env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")):
        fill["endpoint_url"] = endpoint
    if "region_name" not in client and (region := env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")):
        fill["region"] = region
    own_credentials = {"key", "secret", "token", "anon", "profile"} & opts.keys()
    if not own_credentials and env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        fill.update(key=env["AWS_ACCESS_KEY_ID"], secret=env["AWS_SECRET_ACCESS_KEY"],
                    token=env.get("AWS_SESSION_TOKEN"))
    return s3_storage_options({**fill, **profile_storage}) if fill else opts


def resolve(
    catalog: str | None,
    *,
    config: Config,
    env: Mapping[str, str],
    data_path: str | None = None,
    metadata_schema: str | None = None,
    must_exist: bool = True,
) -> Resolved:
    """Pick the catalog: the argument (path/URL/ATTACH or a profile name), `$DUCKLAKE_CATALOG`, the default profile.

    A bare name that is a profile is the profile, even when a file of that name exists (a note says so; write
    `./NAME` for the file).
    """
    profile: Profile | None = None
    notes: list[str] = []
    raw = catalog
    if raw is None:
        raw = env.get("DUCKLAKE_CATALOG") or None
    if raw is None and config.default_profile:
        profile = config.profile(config.default_profile, env)
    elif raw is not None and raw in config.profiles:
        profile = config.profile(raw, env)
        if os.path.exists(raw):
            notes.append(f"{raw!r} is profile {raw!r} from {config.path}, not the file {raw} "
                         f"(write ./{raw} for the file)")
    if profile is not None:
        if not profile.catalog:
            raise ConfigError(f"profile {profile.name!r} has no `catalog`")
        raw = profile.catalog
    if raw is None:
        raise UsageError(
            "no CATALOG given",
            hint="pass a catalog path or URL, set $DUCKLAKE_CATALOG, or set default_profile in ducklake.toml",
        )
    target = parse_catalog(raw, must_exist=must_exist)
    schema = metadata_schema or (profile.metadata_schema if profile else None)
    return Resolved(
        target=target.with_schema(schema),
        data_path=data_path or (profile.data_path if profile else None),
        storage_options=storage_options(profile.storage if profile else {}, env),
        spark_conf=dict(profile.spark) if profile else {},
        # $DUCKLAKE_REMOTE (environment) beats the profile's `master` and `remote`.
        master=None if env.get("DUCKLAKE_REMOTE") else (profile.master if profile else None),
        remote=env.get("DUCKLAKE_REMOTE") or (profile.remote if profile else None),
        profile=profile.name if profile else None,
        notes=tuple(notes),
    )


def resolve_from_environment(catalog: str | None, **kwargs: Any) -> Resolved:
    """`resolve` with the process environment and the config file it points to (the CLI's entry)."""
    env = dict(os.environ)
    config = load_config(find_config(env, Path.cwd()), env)
    return resolve(catalog, config=config, env=env, **kwargs)


@dataclass(frozen=True)
class ServerSettings:
    """What `ducklake spark start` needs: where to record the server, and a profile's Spark settings."""

    state_dir: Path
    spark_conf: Mapping[str, str] = field(default_factory=dict, repr=False)
    master: str | None = None


def server_settings(profile: str | None, *, env: Mapping[str, str] | None = None) -> ServerSettings:
    """State dir (`$XDG_STATE_HOME/ducklake`, else `~/.local/state/ducklake`) and the `[spark]` table and
    `master` of `profile` (default: the config's default profile, if any)."""
    env = dict(os.environ) if env is None else env
    config = load_config(find_config(env, Path.cwd()), env)
    name = profile or config.default_profile
    if name is None:
        return ServerSettings(state_dir(env))
    chosen = config.profile(name, env)
    return ServerSettings(state_dir(env), dict(chosen.spark), chosen.master)
