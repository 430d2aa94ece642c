"""`ducklake restore`: one new snapshot in which a table reads as it did at an earlier snapshot (plan → dry run →
confirm → apply)."""

from __future__ import annotations

from typing import Annotated

import typer

from ducklake_cli.catalog.snapshots import parse_timestamp
from ducklake_cli.cli.common import (
    AuthorOpt,
    DataPathOpt,
    DebugOpt,
    FormatOpt,
    MessageOpt,
    MetadataSchemaOpt,
    OptionalCatalogArg,
    exclusive,
    shift_catalog,
)
from ducklake_cli.cli.maintain import DryRunOpt, YesOpt, run_plan
from ducklake_cli.cli.render import OutputFormat
from ducklake_cli.errors import UsageError


def restore(
    catalog: OptionalCatalogArg = None,
    table: Annotated[str | None, typer.Argument(help="Table to restore: TABLE (schema main) or SCHEMA.TABLE, as "
                                                     "named now.", show_default=False)] = None,
    to_snapshot: Annotated[int | None, typer.Option("--to-snapshot", help="Restore the table as it was at this "
                                                                          "snapshot id.", show_default=False)] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="Restore the table as it was at this time (ISO 8601; "
                                                              "UTC if no zone).", show_default=False)] = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    msg: MessageOpt = None,
    author: AuthorOpt = None,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Undo changes to a table: commit one new snapshot in which it reads exactly as at an earlier snapshot —
    files, deletes, inlined rows, columns, partitioning. Earlier snapshots stay as they were, so a restore can be
    undone by another. No Spark; files that must come back are copied under new names.

    Refused (exit 1, nothing changed) when the snapshot was expired, files it reads are gone from storage, the
    table is encrypted, or files it changes have inlined deletions (flush them with DuckDB's
    ducklake_flush_inlined_data first).

    Examples:

      ducklake restore lake.sqlite events --to-snapshot 41 --dry-run

      ducklake restore lake.sqlite sales.orders --as-of 2026-03-01T09:00:00Z --yes -m "undo the bad load"

      ducklake restore postgresql://lake@db/lake events --to-snapshot 41 --yes --format json
    """
    catalog, target = shift_catalog(catalog, table, "TABLE")
    exclusive(("--to-snapshot", to_snapshot is not None), ("--as-of", as_of is not None))
    if to_snapshot is None and as_of is None:
        raise UsageError("say which snapshot to restore to", hint="pass --to-snapshot N or --as-of TIME")
    when = parse_timestamp(as_of, "--as-of") if as_of else None
    from ducklake_cli.ops.restore import plan_restore

    run_plan(lambda lake: plan_restore(lake, target, snapshot_id=to_snapshot, as_of=when, message=msg,
                                       author=author), catalog=catalog,
             data_path=data_path, metadata_schema=metadata_schema, dry_run=dry_run, yes=yes, fmt=fmt)
