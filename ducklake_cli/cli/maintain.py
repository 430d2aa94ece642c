"""`ducklake maintain …` (and the aliases `expire-snapshots`, `cleanup-orphans`): plan → dry run → confirm → apply."""

from __future__ import annotations

import dataclasses
import datetime as dt
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

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
    exclusive,
)
from ducklake_cli.cli.render import OutputFormat, message, render
from ducklake_cli.cli.runner import SparkFlags, check_deletable, lake_command
from ducklake_cli.errors import UsageError

if TYPE_CHECKING:
    from ducklake_cli.lake import Lake
    from ducklake_cli.ops.maintenance import Plan

maintain_app = typer.Typer(
    name="maintain",
    help="Keep a lake healthy: expire snapshots, delete unused files, flush inlined rows, compact and rewrite files; "
         "safe to run from cron (plan, --dry-run, --yes, JSON summary).",
    no_args_is_help=True,
)

DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print the plan and change nothing.")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Apply without asking (needed when stdin is not a "
                                                          "terminal, as under cron).")]
AllOpt = Annotated[bool, typer.Option("--all", help="Ignore file age: every candidate qualifies.")]


def _age_option(default_text: str) -> object:
    return typer.Option("--older-than", help=f"An age (7d, 12h, 2w, 30m, '1 week') or an ISO time. {default_text}",
                        show_default=False)


def run_plan(
    make_plan: Callable[[Lake], Plan],
    *,
    catalog: str | None,
    data_path: str | None,
    metadata_schema: str | None,
    dry_run: bool,
    yes: bool,
    fmt: OutputFormat,
    spark: SparkFlags | None = None,
) -> None:
    """The shared flow of every destructive verb: build the plan read-only, print it, stop on --dry-run, ask
    (a terminal) or refuse (no terminal and no --yes), apply, print the summary. `spark`: the verb writes files
    through Spark (started only when applying)."""
    with lake_command(catalog, data_path=data_path, metadata_schema=metadata_schema, read_only=dry_run,
                      spark=spark) as lake:
        plan = make_plan(lake)
        report = plan.report()
        if dry_run or plan.is_empty():
            if not dry_run:  # an applied run with nothing to do is not a dry run
                report = dataclasses.replace(report, dry_run=False)
            render(report, fmt)
            if fmt is OutputFormat.table:
                message(report.headline() + (" (dry run: nothing changed)" if dry_run else " — nothing to do"))
            return
        check_deletable([f.path for f in report.files if f.action == "delete"])
        if fmt is OutputFormat.table:
            render(report, fmt)
        if not yes:
            confirm(report.headline(), plan.question())
        result = plan.apply(lake)
        if fmt is OutputFormat.table:
            message(result.headline())
        else:
            render(result, fmt)


def confirm(headline: str, question: str) -> None:
    """Ask on a terminal; without one, refuse (nobody can answer, and piped input is not consent)."""
    if not sys.stdin.isatty():
        raise UsageError(f"{headline}: not confirmed (stdin is not a terminal); nothing changed",
                         hint="pass --yes to apply, or --dry-run to only print the plan")
    if not typer.confirm(question, default=False, err=True):
        message("aborted: nothing changed")
        raise typer.Exit(1)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _ids(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in text.replace(" ", "").split(",") if p)
    except ValueError:
        raise UsageError(f"--snapshots {text!r}: expected snapshot ids separated by commas, e.g. 3,4,7") from None


def _file_verb(verb: str, older_than: str | None, all_files: bool, **common: Any) -> None:
    """cleanup and orphans: an age threshold or --all, then the shared plan flow."""
    from ducklake_cli.ops import cleanup as ops
    from ducklake_cli.ops.maintenance import threshold

    exclusive(("--all", all_files), ("--older-than", bool(older_than)))
    now = _now()
    before = threshold(older_than, now=now) if older_than else None
    make = ops.plan_cleanup if verb == "cleanup" else ops.plan_orphans
    run_plan(lambda lake: make(lake, older_than=before, all_files=all_files, now=now), **common)


@maintain_app.command("expire")
def expire(
    catalog: OptionalCatalogArg = None,
    older_than: Annotated[str | None, _age_option("Default: the catalog option expire_older_than.")] = None,
    keep_last: Annotated[int | None, typer.Option("--keep-last", help="Keep the newest N snapshots (combines with "
                                                                      "--older-than).", show_default=False)] = None,
    snapshots: Annotated[str | None, typer.Option("--snapshots", help="Expire exactly these ids, e.g. 3,4,7.",
                                                  show_default=False)] = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Expire old snapshots: remove them and every catalog row only they use, and schedule the files only they
    used for deletion (`maintain cleanup` deletes them later). Never the latest snapshot; no Spark.

    Examples:

      ducklake maintain expire lake.sqlite --older-than 7d --dry-run

      ducklake maintain expire lake.sqlite --older-than 2w --keep-last 100 --yes --format json

      ducklake maintain expire postgresql://lake@db/lake --snapshots 3,4,7
    """
    from ducklake_cli.ops.expire import ExpireCriteria, plan_expire
    from ducklake_cli.ops.maintenance import threshold

    now = _now()
    criteria = ExpireCriteria(
        older_than=threshold(older_than, now=now) if older_than else None, keep_last=keep_last,
        snapshot_ids=_ids(snapshots) if snapshots is not None else None,
    )
    run_plan(lambda lake: plan_expire(lake, criteria, now=now), catalog=catalog, data_path=data_path,
             metadata_schema=metadata_schema, dry_run=dry_run, yes=yes, fmt=fmt)


@maintain_app.command("cleanup")
def cleanup(
    catalog: OptionalCatalogArg = None,
    older_than: Annotated[str | None, _age_option("Default: the catalog option delete_older_than, else 2 days.")]
    = None,
    all_files: AllOpt = False,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Delete the files scheduled for deletion (by expire, compaction, rewrites) long enough ago, then their
    catalog rows. Never a file outside the data path or one a catalog row still references.

    Examples:

      ducklake maintain cleanup lake.sqlite --dry-run

      ducklake maintain cleanup lake.sqlite --older-than 1d --yes --format json
    """
    _file_verb("cleanup", older_than, all_files, catalog=catalog, data_path=data_path,
               metadata_schema=metadata_schema, dry_run=dry_run, yes=yes, fmt=fmt)


@maintain_app.command("orphans")
def orphans(
    catalog: OptionalCatalogArg = None,
    older_than: Annotated[str | None, _age_option("Grace period; default: the catalog option delete_older_than, "
                                                  "else 2 days.")] = None,
    all_files: AllOpt = False,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Delete DuckLake data and delete files (.parquet, .puffin) under the data path that no catalog row
    references, once older than the grace period. Lists schema and table prefixes in parallel (local or S3);
    never follows links, never touches the catalog file or any other file.

    Examples:

      ducklake maintain orphans lake.sqlite --dry-run

      ducklake cleanup-orphans prod --older-than 7d --yes --format json
    """
    _file_verb("orphans", older_than, all_files, catalog=catalog, data_path=data_path,
               metadata_schema=metadata_schema, dry_run=dry_run, yes=yes, fmt=fmt)


TableOpt = Annotated[str | None, typer.Option("--table", help="Only this table (TABLE or SCHEMA.TABLE); default: "
                                                              "every table whose auto_compact option is on.",
                                              show_default=False)]


def _spark_verb(make: Callable[[Lake], Plan], *, master: str | None, remote: str | None, conf: list[str] | None,
                debug: bool, **common: Any) -> None:
    """The plan flow for verbs that write files through Spark (started only when applying)."""
    run_plan(make, spark=SparkFlags(master, remote, conf, debug), **common)


@maintain_app.command("flush")
def flush(
    catalog: OptionalCatalogArg = None, table: TableOpt = None, dry_run: DryRunOpt = False, yes: YesOpt = False,
    master: MasterOpt = None, remote: RemoteOpt = None, conf: ConfOpt = None,
    data_path: DataPathOpt = None, metadata_schema: MetadataSchemaOpt = None, fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Move rows inlined in the catalog into Parquet files, keeping their row ids and snapshots, and inlined
    deletions of Parquet rows into delete files, as DuckDB's flush does (one snapshot; changes inline_flush and
    deleted_from_table).

    Examples:

      ducklake maintain flush lake.sqlite --dry-run

      ducklake maintain flush lake.sqlite --table events --yes
    """
    from ducklake_cli.ops.flush import plan_flush

    _spark_verb(lambda lake: plan_flush(lake, table=table), catalog=catalog, data_path=data_path,
                metadata_schema=metadata_schema, dry_run=dry_run, yes=yes, fmt=fmt, master=master, remote=remote,
                conf=conf, debug=debug)


@maintain_app.command("compact")
def compact(
    catalog: OptionalCatalogArg = None, table: TableOpt = None,
    max_input_files: Annotated[int | None, typer.Option("--max-input-files", help="Compact at most this many "
                                                                                  "files in this run.",
                                                        show_default=False)] = None,
    target_size: Annotated[str | None, typer.Option("--target-size", help="Output size (e.g. 256MB); default: "
                                                                          "the option target_file_size (512 MiB).",
                                                    show_default=False)] = None,
    partition: Annotated[list[str] | None, typer.Option("--partition", help="Only files with this partition value, "
                                                                            "KEY=VALUE as in the hive directories "
                                                                            "(region=eu, day=31; repeatable).",
                                                        show_default=False)] = None,
    dry_run: DryRunOpt = False, yes: YesOpt = False, master: MasterOpt = None, remote: RemoteOpt = None,
    conf: ConfOpt = None, data_path: DataPathOpt = None, metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table, debug: DebugOpt = False,
) -> None:
    """Merge adjacent small files of a table (same schema version and partition) into files near the target
    size, on Spark; row ids and time travel are kept, replaced files are scheduled for deletion.

    Examples:

      ducklake maintain compact lake.sqlite --dry-run

      ducklake maintain compact lake.sqlite --table events --max-input-files 500 --yes --format json

      ducklake maintain compact lake.sqlite --table events --partition region=eu --partition day=31
    """
    from ducklake_cli.ops.rewrite import plan_compact

    _spark_verb(lambda lake: plan_compact(lake, table=table, max_input_files=max_input_files,
                                          target_size=target_size, partition=partition or []),
                catalog=catalog, data_path=data_path, metadata_schema=metadata_schema, dry_run=dry_run, yes=yes,
                fmt=fmt, master=master, remote=remote, conf=conf, debug=debug)


@maintain_app.command("rewrite")
def rewrite(
    catalog: OptionalCatalogArg = None, table: TableOpt = None,
    delete_threshold: Annotated[float | None, typer.Option("--delete-threshold", help="Deleted fraction that "
                                                                                     "triggers a rewrite; default: "
                                                                                     "option rewrite_delete_threshold"
                                                                                     " (0.95).",
                                                           show_default=False)] = None,
    dry_run: DryRunOpt = False, yes: YesOpt = False, master: MasterOpt = None, remote: RemoteOpt = None,
    conf: ConfOpt = None, data_path: DataPathOpt = None, metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table, debug: DebugOpt = False,
) -> None:
    """Rewrite files whose deleted fraction reached the threshold without the deleted rows, on Spark (the old
    files stay for time travel until expired).

    Examples:

      ducklake maintain rewrite lake.sqlite --dry-run

      ducklake maintain rewrite lake.sqlite --delete-threshold 0.5 --yes
    """
    from ducklake_cli.ops.rewrite import plan_rewrite

    _spark_verb(lambda lake: plan_rewrite(lake, table=table, threshold=delete_threshold), catalog=catalog,
                data_path=data_path, metadata_schema=metadata_schema, dry_run=dry_run, yes=yes, fmt=fmt,
                master=master, remote=remote, conf=conf, debug=debug)


@maintain_app.command("checkpoint")
def checkpoint(
    catalog: OptionalCatalogArg = None, table: TableOpt = None, dry_run: DryRunOpt = False, yes: YesOpt = False,
    master: MasterOpt = None, remote: RemoteOpt = None, conf: ConfOpt = None,
    data_path: DataPathOpt = None, metadata_schema: MetadataSchemaOpt = None, fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Everything, in DuckDB's CHECKPOINT order with the catalog's defaults: flush, expire, compact, rewrite,
    cleanup, orphans.

    Examples:

      ducklake maintain checkpoint lake.sqlite --dry-run

      ducklake maintain checkpoint prod --yes --format json
    """
    from ducklake_cli.ops.checkpoint import plan_checkpoint

    now = _now()
    _spark_verb(lambda lake: plan_checkpoint(lake, table=table, now=now), catalog=catalog, data_path=data_path,
                metadata_schema=metadata_schema, dry_run=dry_run, yes=yes, fmt=fmt, master=master, remote=remote,
                conf=conf, debug=debug)
