"""ducklake: inspect, query, load and maintain DuckLake lakehouses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ducklake_cli._version import __version__
from ducklake_cli.errors import DuckLakeError

if TYPE_CHECKING:
    from ducklake_cli.api import Lake, connect

__all__ = ["DuckLakeError", "Lake", "__version__", "connect"]


def __getattr__(name: str) -> Any:
    # SQLAlchemy loads only when the API is used, so `ducklake --help` and Tab-completion stay fast.
    if name in ("Lake", "connect"):
        from ducklake_cli import api

        return getattr(api, name)
    raise AttributeError(name)
