"""`ducklake delete`: remove rows matching a condition, for scheduled and GDPR deletions (plan → confirm → apply)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ducklake_cli.cli.common import (
    AuthorOpt,
    ConfOpt,
    DataPathOpt,
    DebugOpt,
    FormatOpt,
    MasterOpt,
    MessageOpt,
    MetadataSchemaOpt,
    OptionalCatalogArg,
    RemoteOpt,
    exclusive,
    shift_catalog,
)
from ducklake_cli.cli.render import OutputFormat, message, render
from ducklake_cli.cli.runner import SparkFlags, lake_command
from ducklake_cli.errors import UsageError


def delete(
    catalog: OptionalCatalogArg = None,
    table: Annotated[str | None, typer.Argument(help="Table to delete from: TABLE (schema main) or SCHEMA.TABLE.",
                                                show_default=False)] = None,
    where: Annotated[str | None, typer.Option("--where", help="SQL condition on the table's columns, quoted as in "
                                                              "DuckDB (\"my col\" is a column, 'it''s' a string); the "
                                                              "rows it holds for are deleted.",
                                              show_default=False)] = None,
    every_row: Annotated[bool, typer.Option("--all", help="Delete every row (needs --yes, or --dry-run).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count the rows that would be deleted; commit "
                                                            "nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking (needed when stdin is not a "
                                                          "terminal, as under cron).")] = False,
    msg: MessageOpt = None,
    author: AuthorOpt = None,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Delete the rows of a table that match --where, as one new snapshot (earlier snapshots keep them).

    Without --yes it counts the rows and asks; without a terminal (cron) it refuses. Every row: --all --yes.

    Examples:

      ducklake delete lake.sqlite events --where "day < DATE '2025-01-01'" --dry-run

      ducklake delete prod crm.customers --where "customer_id = 4711" --yes -m "GDPR request 2026-118"

      ducklake delete lake.sqlite staging --all --yes --format json
    """
    catalog, target = shift_catalog(catalog, table, "TABLE")
    exclusive(("--where", where is not None), ("--all", every_row))
    if where is None and not every_row:
        raise UsageError("say which rows to delete with --where CONDITION", hint="or --all --yes for every row")
    if where is not None and not where.strip():
        raise UsageError("--where is empty", hint="or --all --yes for every row")
    if every_row and not (yes or dry_run):
        raise UsageError("deleting every row needs --all --yes; nothing changed",
                         hint="pass --dry-run to count them first")
    if not (yes or dry_run) and not sys.stdin.isatty():  # before Spark starts: nobody can answer
        raise UsageError("not confirmed (stdin is not a terminal); nothing changed",
                         hint="pass --yes to delete, or --dry-run to count the rows")
    from ducklake_cli.engine.progress import spark_progress
    from ducklake_cli.ops.changes import delete_sql
    from ducklake_cli.ops.dml import run_change

    statements = [delete_sql(target, where)]
    with lake_command(catalog, data_path=data_path, metadata_schema=metadata_schema, read_only=dry_run,
                      spark=SparkFlags(master, remote, conf, debug)) as lake:
        if not (yes or dry_run):
            with spark_progress():
                plan = run_change(lake, statements, dry_run=True)
            if plan.deleted and not typer.confirm(f"Delete {plan.deleted:,} rows from {', '.join(plan.tables)}?",
                                                  default=False, err=True):
                message("aborted: nothing changed")
                raise typer.Exit(1)
        with spark_progress():
            result = run_change(lake, statements, dry_run=dry_run, message=msg, author=author)
        render(result, fmt)
