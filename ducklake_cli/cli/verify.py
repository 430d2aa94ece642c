"""`ducklake verify`: a health check of the lake from metadata, file sizes and (with --deep) Parquet footers;
`--repair` ends damaged files (rows lost per table shown) and truncates appended bytes through the shared plan
flow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ducklake_cli.cli.common import DataPathOpt, DebugOpt, FormatOpt, MetadataSchemaOpt, OptionalCatalogArg
from ducklake_cli.cli.render import OutputFormat, message, render
from ducklake_cli.errors import ProblemsFoundError, UsageError

if TYPE_CHECKING:
    from ducklake_cli.lake import Lake
    from ducklake_cli.ops.verify import RepairPlan, VerifyReport

PROBLEMS_EXIT = ProblemsFoundError.exit_code


def _unhealthy(found: VerifyReport, *, left: int | None = None) -> ProblemsFoundError:
    n = len(found.problems) if left is None else left
    return ProblemsFoundError(f"verify: {n} problem(s) found in {found.catalog} (exit {PROBLEMS_EXIT})",
                              hint="--format json lists them; --repair ends missing, empty or unreadable files "
                                   "and truncates bytes appended to a file")


def verify(
    catalog: OptionalCatalogArg = None,
    table: Annotated[str | None, typer.Option("--table", help="Only this table (TABLE or SCHEMA.TABLE); the "
                                                              "catalog-wide sequence checks run anyway.",
                                              show_default=False)] = None,
    deep: Annotated[bool, typer.Option("--deep", help="Also read every Parquet footer: row counts, field ids and "
                                                      "min/max bounds against the catalog.")] = False,
    repair: Annotated[bool, typer.Option("--repair", help="End missing, empty or unreadable data files (and the "
                                                          "data files of such delete files) in one new snapshot, "
                                                          "showing the rows each table loses; truncate files with "
                                                          "bytes appended after a whole Parquet file of their "
                                                          "recorded size back to it (no rows lost); never deletes "
                                                          "a file.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With --repair: print the plan, change nothing.")]
    = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --repair: apply without asking.")] = False,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Check that a lake is healthy at its latest snapshot, without Spark: every live data and delete file exists
    with the size the catalog records; with --deep, footers agree with record counts, field ids and stats bounds;
    registered inlined tables exist; snapshot, schema-version and id sequences are consistent.

    Exit 0: healthy. Exit 4: problems found (listed; --format json for machines). Exit 1/2: bad input.

    Examples:

      ducklake verify lake.sqlite

      ducklake verify lake.sqlite --table events --deep --format json

      ducklake verify lake.sqlite --repair --dry-run

      ducklake verify postgresql://lake@db/lake --repair --yes
    """
    if (dry_run or yes) and not repair:
        raise UsageError(f"{'--dry-run' if dry_run else '--yes'} only goes with --repair")
    if repair:
        _repair(catalog, table=table, deep=deep, dry_run=dry_run, yes=yes, data_path=data_path,
                metadata_schema=metadata_schema, fmt=fmt)
        return
    from ducklake_cli.cli.runner import lake_command
    from ducklake_cli.ops.verify import verify as run_verify

    with lake_command(catalog, data_path=data_path, metadata_schema=metadata_schema) as lake:
        found = run_verify(lake, table=table, deep=deep)
    render(found, fmt)
    if fmt is OutputFormat.table:
        message(found.headline())
    if not found.healthy:
        raise _unhealthy(found)


def _repair(catalog: str | None, *, table: str | None, deep: bool, dry_run: bool, yes: bool,
            data_path: str | None, metadata_schema: str | None, fmt: OutputFormat) -> None:
    from ducklake_cli.cli.maintain import run_plan
    from ducklake_cli.ops.verify import plan_repair

    made: list[RepairPlan] = []

    def make(lake: Lake) -> RepairPlan:
        plan = plan_repair(lake, table=table, deep=deep)
        made.append(plan)
        if fmt is OutputFormat.table and not plan.found.healthy:
            render(plan.found, fmt)
        return plan

    run_plan(make, catalog=catalog, data_path=data_path, metadata_schema=metadata_schema, dry_run=dry_run,
             yes=yes, fmt=fmt)
    plan = made[0]
    # Healthy now only if every problem was repairable and the repair ran (not a dry run).
    left = sum(not p.repairable for p in plan.found.problems)
    if dry_run or plan.is_empty():
        left = len(plan.found.problems)
    if left:
        raise _unhealthy(plan.found, left=left)
