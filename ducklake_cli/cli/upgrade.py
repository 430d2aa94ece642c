"""`ducklake upgrade`: plan, check, back up, migrate and verify an older catalog."""

from __future__ import annotations

from typing import Annotated

import typer

from ducklake_cli.cli.common import DebugOpt, FormatOpt, MetadataSchemaOpt, OptionalCatalogArg, exclusive
from ducklake_cli.cli.maintain import DryRunOpt, YesOpt, confirm
from ducklake_cli.cli.render import OutputFormat, message, render
from ducklake_cli.cli.runner import check_catalogwritable, resolve_catalog
from ducklake_cli.errors import ProblemsFoundError, UsageError


def upgrade(
    catalog: OptionalCatalogArg = None,
    to: Annotated[str, typer.Option(
        "--to", metavar="1.0|1.1", help="The DuckLake version to move the catalog to: 1.0 (DuckDB 1.5.2+ and 2.0 "
        "attach it) or 1.1 (DuckDB 2.0's format; DuckDB 1.5 cannot attach it).")] = "1.0",
    backup: Annotated[str | None, typer.Option(
        "--backup", help="Where to back the catalog up first: a new file (.ducklake/.duckdb: DuckDB, otherwise "
        "SQLite) or an empty database URL. Default: a file beside a catalog file (same backend), or a SQLite file in "
        "the working directory for a server catalog.", show_default=False)] = None,
    no_backup: Annotated[bool, typer.Option("--no-backup", help="Skip the backup (refused on MySQL, whose DDL "
                                                                "cannot roll back).")] = False,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Upgrade an older DuckLake catalog (0.2 from DuckDB 1.3, 0.3 from 1.4, 0.4 from 1.5.0/1.5.1) to 1.0, the
    version DuckDB 1.5.2+ and 2.0 attach, or any of those and 1.0 (and a 1.1-dev1 nightly catalog) to 1.1, DuckDB
    2.0's format (--to 1.1: every client must read 1.1 first). The same steps as DuckDB's AUTOMATIC_MIGRATION, but
    planned first (--dry-run, also as JSON), refused before anything is written when the catalog is read-only, when
    the user may not alter its tables or when its version is a development or fork string, backed up first (a
    verified copy; the restore command is printed), run in one transaction (MySQL: step by step, restore from the
    backup on failure), retried when another client commits meanwhile, and verified after. Older DuckDB releases
    cannot attach the result: stop every writer first. Reading needs no upgrade: every command reads 0.2-0.4
    catalogs as they are.

    Examples:

      ducklake upgrade lake.sqlite --dry-run

      ducklake upgrade lake.ducklake --yes

      ducklake upgrade lake.sqlite --to 1.1 --dry-run

      ducklake upgrade postgresql://lake@db/lake --backup /backups/lake-0.3.sqlite --format json --yes
    """
    from ducklake_cli.catalog.url import parse_catalog
    from ducklake_cli.ops.upgrade import apply_upgrade, plan_upgrade

    exclusive(("--backup", backup is not None), ("--no-backup", no_backup))
    resolved = resolve_catalog(catalog, metadata_schema=metadata_schema)
    backup_ref = parse_catalog(backup, must_exist=False) if backup is not None else None
    if backup_ref is not None and backup_ref.path is not None and backup_ref.path.exists():
        raise UsageError(f"--backup {backup_ref.path} already exists; nothing was changed",
                         hint="name a new file: the backup never overwrites one")
    plan = plan_upgrade(resolved.target, to=to, backup=backup_ref, no_backup=no_backup)
    if plan.is_empty():
        if fmt is OutputFormat.table:
            message(plan.headline())
        else:
            render(plan, fmt)
        return
    if dry_run:
        render(plan, fmt)
        if fmt is OutputFormat.table:
            message(plan.headline() + " (dry run: nothing changed)")
        return
    check_catalogwritable(resolved)
    if fmt is OutputFormat.table:
        render(plan, fmt)
    if not yes:
        confirm(plan.headline(), f"Upgrade {plan.catalog} to DuckLake {plan.target}? Older clients lose access"
                + (" (DuckDB 1.5 and older)." if plan.target == "1.1" else "."))
    result = apply_upgrade(plan)
    if fmt is OutputFormat.table:
        message(result.headline())
    else:
        render(result, fmt)
    if not result.verified.healthy:
        raise ProblemsFoundError(f"upgraded, but verify found {len(result.verified.problems)} problem(s) in "
                                 f"{plan.catalog}", hint="`ducklake verify --format json` lists them")
