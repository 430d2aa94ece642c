"""File-system access through fsspec (local and S3), imported lazily."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ducklake_cli.errors import StorageError

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem


def ensure_dir(path: str) -> str:
    """A directory path with exactly one trailing separator."""
    return path if path.endswith("/") else path + "/"


def split_protocol(path: str) -> tuple[str, str]:
    """`s3://b/k` → (`s3`, `b/k`); plain paths are local."""
    if "://" in path:
        proto, rest = path.split("://", 1)
        return proto.lower(), rest
    return "file", path


def filesystem(path: str, storage_options: Mapping[str, Any] | None = None) -> AbstractFileSystem:
    """The fsspec file system for a path (s3/s3a share one implementation; local paths take no options)."""
    import fsspec

    proto, _ = split_protocol(path)
    if proto == "s3a":
        proto = "s3"
    if proto == "file":
        return fsspec.filesystem("file")
    return fsspec.filesystem(proto, **dict(storage_options or {}))


# Friendly names accepted in a profile's `[storage]` table, as the s3fs keyword they stand for.
_S3_ALIASES = {"endpoint": "endpoint_url", "access_key_id": "key", "secret_access_key": "secret",
               "session_token": "token", "region_name": "region"}


def s3_storage_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Profile/environment storage settings as s3fs keyword arguments.

    Accepts s3fs's own keywords (`key`, `secret`, `token`, `anon`, `client_kwargs`, `config_kwargs`, …) and
    the shorthands `endpoint_url`, `region` and `path_style` (default: on when an endpoint is given, as
    S3-compatible servers on an IP or a private host name need).
    """
    opts = {_S3_ALIASES.get(k, k): v for k, v in options.items() if v is not None and v != ""}
    endpoint = opts.pop("endpoint_url", None)
    region = opts.pop("region", None)
    path_style = opts.pop("path_style", None)
    client = dict(opts.pop("client_kwargs", None) or {})
    if endpoint:
        client.setdefault("endpoint_url", str(endpoint))
    if region:
        client.setdefault("region_name", str(region))
    if client:
        opts["client_kwargs"] = client
    if path_style is None:
        path_style = bool(client.get("endpoint_url"))
    if _truthy(path_style):
        config = dict(opts.pop("config_kwargs", None) or {})
        config["s3"] = {**dict(config.get("s3") or {}), "addressing_style": "path"}
        opts["config_kwargs"] = config
    return opts


def _truthy(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("1", "true", "yes", "on")


def read_int_column(path: str, column: str, storage_options: Mapping[str, Any] | None = None) -> list[int]:
    """Read one BIGINT column of a Parquet file (e.g. `_ducklake_internal_snapshot_id`)."""
    import pyarrow.parquet as pq

    fs = filesystem(path, storage_options)
    try:
        with fs.open(path, "rb") as fh:
            table = pq.read_table(fh, columns=[column])
    except (OSError, KeyError, ValueError) as exc:
        raise StorageError(f"cannot read column {column!r} of {path}: {exc}") from exc
    return [v for v in table.column(0).to_pylist() if v is not None]
