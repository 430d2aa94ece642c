"""ducklake: inspect, query, load and maintain DuckLake lakehouses."""

from __future__ import annotations

from ducklake_cli._version import __version__
from ducklake_cli.api import Lake, connect
from ducklake_cli.errors import DuckLakeError

__all__ = ["DuckLakeError", "Lake", "__version__", "connect"]
