"""Options shared by every command, and the one place a command turns CATALOG into a Lake."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ducklake_cli.cli.config import Resolved, resolve_from_environment
from ducklake_cli.cli.render import OutputFormat
from ducklake_cli.errors import StorageError, UsageError

if TYPE_CHECKING:
    from ducklake_cli.engine.session import SparkSettings
    from ducklake_cli.lake import Lake

CatalogArg = Annotated[
    str,
    typer.Argument(
        help="Catalog: a file (lake.sqlite, lake.ducklake), a URL (postgresql://u:p@host/db, mysql://…), "
        "a DuckDB ATTACH string (ducklake:sqlite:lake.db) or a profile name from ducklake.toml.",
        show_default=False,
    ),
]
OptionalCatalogArg = Annotated[
    str | None,
    typer.Argument(
        help="Catalog (path, URL, ATTACH string or profile name); when left out: $DUCKLAKE_CATALOG, then the "
        "config's default_profile.",
        show_default=False,
    ),
]
DataPathOpt = Annotated[
    str | None, typer.Option("--data-path", help="Override the data path stored in the catalog.", show_default=False)
]
MetadataSchemaOpt = Annotated[
    str | None,
    typer.Option("--metadata-schema", help="PostgreSQL schema / MySQL database holding the catalog tables.",
                 show_default=False),
]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")]
SnapshotOpt = Annotated[
    int | None, typer.Option("--snapshot", help="Look at this snapshot id instead of the latest.", show_default=False)
]
AsOfOpt = Annotated[
    str | None,
    typer.Option("--as-of", help="Look at the newest snapshot at or before this time (ISO 8601; UTC if no zone).",
                 show_default=False),
]

MasterOpt = Annotated[
    str | None,
    typer.Option("--master", help="Spark master URL (spark://host:7077, yarn, k8s://…); default: embedded local[*].",
                 show_default=False),
]
RemoteOpt = Annotated[str | None, typer.Option("--remote", help="Spark Connect server (sc://host:15002).",
                                               show_default=False)]
ConfOpt = Annotated[list[str] | None, typer.Option("--conf", help="Spark setting key=value (repeatable).",
                                                   show_default=False)]


def parse_time(text: str) -> dt.datetime:
    """An ISO timestamp or date; naive values are UTC."""
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(f"--as-of {text!r} is not an ISO 8601 time (e.g. 2026-01-31 or 2026-01-31T12:00:00Z)") from exc
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def resolve_catalog(
    catalog: str | None, *, data_path: str | None = None, metadata_schema: str | None = None, must_exist: bool = True
) -> Resolved:
    """Resolve CATALOG once: argument, environment, profile (notes about the choice go to stderr)."""
    resolved = resolve_from_environment(catalog, data_path=data_path, metadata_schema=metadata_schema,
                                        must_exist=must_exist)
    for note in resolved.notes:
        typer.echo(f"note: {note}", err=True)
    return resolved


def shift_catalog(catalog: str | None, rest: str | None, what: str) -> tuple[str | None, str]:
    """`CMD [CATALOG] ARG`: a single positional is ARG, and CATALOG comes from $DUCKLAKE_CATALOG or the default
    profile (the one rule for every command)."""
    if rest is None:
        if catalog is None:
            raise UsageError(f"missing {what}", hint=f"usage: ducklake … [CATALOG] {what}")
        return None, catalog
    return catalog, rest


def parse_conf(items: list[str]) -> dict[str, str]:
    """`--conf key=value` options as a dict (later ones win)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf {item!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out


def finish_spark() -> None:
    """After a command's output: release its Spark Connect sessions and exit at once.

    Skips the interpreter's teardown, which takes ~0.3 s once the Connect client's protobuf modules are loaded
    (most of a warm `query`'s exit time); an embedded Spark exits the normal way.
    """
    from ducklake_cli.ops.spark_server import release_sessions

    if release_sessions():
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def spark_settings(
    resolved: Resolved, *, master: str | None, remote: str | None, conf: list[str], debug: bool = False
) -> SparkSettings:
    """Spark settings: flags over the profile's `[spark]` section, `master` and `remote`."""
    from ducklake_cli.engine.session import SparkSettings

    settings = {**resolved.spark_conf, **parse_conf(conf)}
    # A flag beats the environment and the profile, whichever of master/remote it names.
    if master or remote:
        return SparkSettings(master=master, remote=remote, conf=settings, quiet=not debug)
    return SparkSettings(master=resolved.master, remote=resolved.remote, conf=settings, quiet=not debug)


def open_lake(resolved: Resolved, *, read_only: bool = True, spark_settings: SparkSettings | None = None) -> Lake:
    """A Lake for a resolved catalog (read-only commands never write the catalog); a command that writes is
    stopped here, before any work, when its local catalog file cannot be written."""
    from ducklake_cli.lake import open_lake as connect

    if not read_only:
        check_catalogwritable(resolved)
    lake = connect(resolved.target, data_path=resolved.data_path, storage_options=resolved.storage_options,
                   read_only=read_only, spark_settings=spark_settings)
    if spark_settings is not None and not spark_settings.remote and spark_settings.data_path is None:
        import dataclasses

        # Spark's classpath depends on where the data lives (s3a jars for an s3:// lake): read it once, here.
        with lake.reader() as reader:
            lake.spark_settings = dataclasses.replace(spark_settings, data_path=reader.data_path)
        if not read_only:  # this command writes data files through Spark: fail now, not after the JVM started
            check_datawritable(lake.spark_settings.data_path or "")
    return lake


def check_catalogwritable(resolved: Resolved) -> None:
    """A local catalog file (and its directory, where SQLite and DuckDB keep their journal) must be writable."""
    path = resolved.target.path
    if path is None or not path.exists():
        return
    if not writable(path):
        raise StorageError(f"the catalog file {path} is read-only", hint="make it writable, or use a read-only "
                                                                          "command (inspect, query, --dry-run)")
    if not writable(path.parent):
        raise StorageError(f"the directory of the catalog file, {path.parent}, is read-only (the catalog "
                           "database needs it for its journal)")


def writable(path: Path) -> bool:
    """Whether this process may write `path` (root too: an immutable or read-only mount says no)."""
    if not os.access(path, os.W_OK):
        return False
    if path.is_dir():
        try:
            import tempfile

            with tempfile.TemporaryFile(dir=path):
                return True
        except OSError:
            return False
    try:
        with open(path, "r+b"):
            return True
    except OSError:
        return False


def check_datawritable(data_path: str) -> None:
    """A local data path must be writable and its device not full (checked before Spark starts)."""
    import shutil

    if "://" in data_path and not data_path.startswith("file://"):
        return
    root = Path(data_path.removeprefix("file://"))
    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not writable(existing):
        raise StorageError(f"the data directory {existing} is read-only",
                           hint="make it writable, or pass --data-path to another directory")
    if shutil.disk_usage(existing).free == 0:
        raise StorageError(f"no space left on the device of the data directory {existing}")


def check_deletable(paths: list[str]) -> None:
    """Local files a verb is about to delete: each directory holding them must be writable (one line, exit 1,
    before anything changes)."""
    parents = sorted({os.path.dirname(p.removeprefix("file://")) for p in paths if "://" not in p
                      or p.startswith("file://")})
    stuck = [d for d in parents if os.path.isdir(d) and not writable(Path(d))]
    if stuck:
        more = f" (and {len(stuck) - 1} more)" if len(stuck) > 1 else ""
        raise StorageError(f"cannot delete files: the data directory {stuck[0]} is read-only{more}; nothing changed",
                           hint="make it writable, then run the command again")
