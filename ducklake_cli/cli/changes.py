"""`ducklake changes`: a table's change feed between two snapshots."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from ducklake_cli.cli.common import (
    ConfOpt,
    DataPathOpt,
    DebugOpt,
    FormatOpt,
    MasterOpt,
    MetadataSchemaOpt,
    OptionalCatalogArg,
    RemoteOpt,
    shift_catalog,
)
from ducklake_cli.cli.render import MAX_TABLE_ROWS, OutputFormat, render, render_stream
from ducklake_cli.cli.render import message as notice
from ducklake_cli.cli.runner import SparkFlags, lake_command
from ducklake_cli.errors import UsageError


class ChangeKind(StrEnum):
    """Which changes `--kind` keeps."""

    all = "all"
    insert = "insert"
    delete = "delete"
    update = "update"


def changes(
    catalog: OptionalCatalogArg = None,
    table: Annotated[str | None, typer.Argument(
        help="The table (`name` in schema main, or `schema.name`). With one argument, CATALOG is "
             "$DUCKLAKE_CATALOG.", show_default=False)] = None,
    start: Annotated[str | None, typer.Option(
        "--from", help="First snapshot (required): an id, or an ISO 8601 time (the first snapshot at or after "
                       "it).", show_default=False)] = None,
    end: Annotated[str | None, typer.Option(
        "--to", help="Last snapshot (inclusive): an id, or an ISO 8601 time (the last snapshot at or before it). "
                     "Default: the latest.", show_default=False)] = None,
    kind: Annotated[ChangeKind, typer.Option(
        "--kind", help="Keep only inserts, deletes, or updates (update_preimage and update_postimage rows).")
    ] = ChangeKind.all,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", help="Write all rows to one .parquet, .csv or .json file instead of printing them.",
        show_default=False)] = None,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Show what changed in a table between two snapshots (bounds inclusive), as DuckDB's table_changes returns
    it: snapshot_id, rowid, change_type (insert, delete, update_preimage, update_postimage) and the table's
    columns as of the last snapshot.

    Examples:

      ducklake changes lake.sqlite orders --from 10

      ducklake changes lake.sqlite orders --from 2026-01-01 --to 2026-01-31T23:59:59Z --kind delete

      ducklake changes prod crm.customers --from 120 --to 130 --format json --output changes.json
    """
    catalog, name = shift_catalog(catalog, table, "TABLE")
    if start is None:
        raise UsageError("missing --from", hint="e.g. `ducklake changes lake.sqlite orders --from 10`")
    from ducklake_cli.ops.feed import parse_bound, run_changes

    first = parse_bound(start, "--from")
    last = parse_bound(end, "--to") if end is not None else None
    machine = fmt is not OutputFormat.table
    with lake_command(catalog, data_path=data_path, metadata_schema=metadata_schema,
                      spark=SparkFlags(master, remote, conf, debug)) as lake:
        result = run_changes(lake, name, first, last, kind=kind.value, output=output,
                             stream=machine and output is None, display=None if machine else MAX_TABLE_ROWS)
        if result.stream is not None:  # rows are fetched while they are written, so inside the open lake
            render_stream(result.stream, fmt)
        else:
            render(result, fmt)
        if result.truncated and not machine:
            notice(f"showing first {len(result.rows):,} of {result.row_count:,} rows; "
                   "use --format csv|json or --output FILE for all")
