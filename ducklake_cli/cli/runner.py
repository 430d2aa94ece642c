"""The one flow of every command over a lake: resolve CATALOG, Spark settings, open the lake, run and render, close
it, release Spark; and the writability checks a writing command makes before any work."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ducklake_cli.cli.common import key_values
from ducklake_cli.cli.config import Resolved, resolve_from_environment
from ducklake_cli.errors import StorageError

if TYPE_CHECKING:
    from ducklake_cli.engine.session import SparkSettings
    from ducklake_cli.lake import Lake


@dataclass(frozen=True)
class SparkFlags:
    """`--master`, `--remote`, `--conf` and `--debug` as a command was given them."""

    master: str | None = None
    remote: str | None = None
    conf: list[str] | None = None
    debug: bool = False


@contextmanager
def lake_command(catalog: str | None, *, data_path: str | None, metadata_schema: str | None,
                 read_only: bool = True, spark: SparkFlags | None = None) -> Iterator[Lake]:
    """Resolve CATALOG once, work out Spark's settings (commands that may use Spark), open the lake for the body
    (which runs the op and renders), close it; then, when the body finished, release Spark (`finish_spark`)."""
    resolved = resolve_catalog(catalog, data_path=data_path, metadata_schema=metadata_schema)
    settings = None if spark is None else spark_settings(resolved, master=spark.master, remote=spark.remote,
                                                         conf=spark.conf or [], debug=spark.debug)
    with open_lake(resolved, read_only=read_only, spark_settings=settings) as lake:
        yield lake
    if spark is not None:
        finish_spark()


def resolve_catalog(
    catalog: str | None, *, data_path: str | None = None, metadata_schema: str | None = None, must_exist: bool = True
) -> Resolved:
    """Resolve CATALOG once: argument, environment, profile (notes about the choice go to stderr)."""
    resolved = resolve_from_environment(catalog, data_path=data_path, metadata_schema=metadata_schema,
                                        must_exist=must_exist)
    for note in resolved.notes:
        typer.echo(f"note: {note}", err=True)
    return resolved


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

    settings = {**resolved.spark_conf, **key_values(conf, "--conf")}
    # A flag beats the environment and the profile, whichever of master/remote it names.
    if master or remote:
        return SparkSettings(master=master, remote=remote, conf=settings, quiet=not debug)
    return SparkSettings(master=resolved.master, remote=resolved.remote, conf=settings, quiet=not debug)


def open_lake(resolved: Resolved, *, read_only: bool = True, spark_settings: SparkSettings | None = None) -> Lake:
    """A Lake for a resolved catalog (read-only commands never write the catalog); a command that writes is
    stopped here, before any work, when its local catalog file cannot be written."""
    from ducklake_cli.lake import Lake

    if not read_only:
        check_catalogwritable(resolved)
    lake = Lake.open(resolved.target, data_path=resolved.data_path, storage_options=resolved.storage_options,
                   read_only=read_only, spark_settings=spark_settings)
    if not read_only:
        try:
            lake.refuse_writes()
        except BaseException:
            lake.release()
            raise
    if spark_settings is not None and not spark_settings.remote and spark_settings.data_path is None:
        import dataclasses

        # Spark's classpath depends on where the data lives (s3a jars for an s3:// lake): opening the lake read it.
        lake.spark_settings = dataclasses.replace(spark_settings, data_path=lake.data_path)
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
