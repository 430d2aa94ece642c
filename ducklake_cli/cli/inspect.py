"""`ducklake inspect`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ducklake_cli.cli.common import (
    AsOfOpt,
    DataPathOpt,
    DebugOpt,
    FormatOpt,
    MetadataSchemaOpt,
    OptionalCatalogArg,
    SnapshotOpt,
    exclusive,
    time_travel,
)
from ducklake_cli.cli.render import OutputFormat, render, render_streamed
from ducklake_cli.cli.runner import lake_command

if TYPE_CHECKING:
    from ducklake_cli.ops.results import Result


def inspect(
    catalog: OptionalCatalogArg = None,
    table: Annotated[str | None, typer.Argument(help="A table or view (name in schema main, or schema.name) to "
                                                     "show in detail.", show_default=False)] = None,
    snapshots: Annotated[bool, typer.Option(
        "--snapshots", help="List every snapshot with its changes and the rows, files and bytes it added and "
        "removed, per table (with TABLE: the snapshots that changed it).")] = False,
    files: Annotated[bool, typer.Option("--files", help="List the data files (and delete files) live at the "
                                                        "snapshot.")] = False,
    snapshot: SnapshotOpt = None,
    as_of: AsOfOpt = None,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Show a lake's tables, snapshots and files from its metadata alone (no Spark).

    Examples:

      ducklake inspect lake.sqlite

      ducklake inspect lake.sqlite main.events --snapshot 42

      ducklake inspect postgresql://lake@db/lake --snapshots --format json

      ducklake inspect lake.sqlite main.events --snapshots
    """
    at = time_travel(snapshot, as_of)
    exclusive(("--snapshots", snapshots), ("--files", files))
    from ducklake_cli.ops import inspect as ops

    with lake_command(catalog, data_path=data_path, metadata_schema=metadata_schema) as lake:
        result: Result
        if (snapshots or files) and fmt is not OutputFormat.table:  # listings that can be long: streamed
            render_streamed(ops.snapshot_stream(lake, table) if snapshots else ops.file_stream(lake, table, at=at),
                            fmt)
            return
        if snapshots:
            result = ops.snapshots(lake, table)
        elif files:
            result = ops.files(lake, table, at=at)
        elif table:
            result = ops.table_detail(lake, table, at=at)
        else:
            result = ops.summary(lake, at=at)
        render(result, fmt)
