"""Options shared by every command and the checks of what they were given (`cli/runner.py` runs a command)."""

from __future__ import annotations

from typing import Annotated

import typer

from ducklake_cli.catalog.snapshots import SnapshotSelector, parse_timestamp
from ducklake_cli.cli.render import OutputFormat
from ducklake_cli.errors import UsageError

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
MessageOpt = Annotated[str | None, typer.Option("--message", "-m", help="Commit message stored with the snapshot.",
                                                show_default=False)]
AuthorOpt = Annotated[str | None, typer.Option("--author", help="Author stored with the snapshot.",
                                               show_default=False)]
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


def exclusive(*options: tuple[str, bool]) -> None:
    """Options that exclude each other, each with whether it was given: at most one may be."""
    given = [name for name, present in options if present]
    if len(given) > 1:
        raise UsageError(f"{given[0]} and {given[1]} cannot be used together")


def time_travel(snapshot: int | None, as_of: str | None) -> SnapshotSelector:
    """`--snapshot` / `--as-of` as one snapshot choice (the latest when neither is given)."""
    exclusive(("--snapshot", snapshot is not None), ("--as-of", as_of is not None))
    return SnapshotSelector(snapshot, parse_timestamp(as_of, "--as-of") if as_of else None)


def shift_catalog(catalog: str | None, rest: str | None, what: str) -> tuple[str | None, str]:
    """`CMD [CATALOG] ARG`: a single positional is ARG, and CATALOG comes from $DUCKLAKE_CATALOG or the default
    profile (the one rule for every command)."""
    if rest is None:
        if catalog is None:
            raise UsageError(f"missing {what}", hint=f"usage: ducklake … [CATALOG] {what}")
        return None, catalog
    return catalog, rest


def key_values(items: list[str], option: str, *, strip_values: bool = True) -> dict[str, str]:
    """`OPTION key=value` items as a dict (later ones win)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} {item!r}: expected key=value")
        out[key.strip()] = value.strip() if strip_values else value
    return out
