"""`ducklake register`: add existing Parquet files to a table in place (nothing is copied)."""

from __future__ import annotations

from typing import Annotated

import typer

from ducklake_cli.cli.common import (
    AuthorOpt,
    DataPathOpt,
    DebugOpt,
    FormatOpt,
    MessageOpt,
    MetadataSchemaOpt,
    OptionalCatalogArg,
)
from ducklake_cli.cli.render import OutputFormat, render
from ducklake_cli.cli.runner import lake_command
from ducklake_cli.errors import UsageError


def register(
    catalog: OptionalCatalogArg = None,
    table: Annotated[str | None, typer.Argument(help="Table to add the files to: TABLE (schema main) or "
                                                     "SCHEMA.TABLE.", show_default=False)] = None,
    pattern: Annotated[str | None, typer.Argument(metavar="PATH|GLOB", help="A Parquet file or a glob "
                                                  "(quote it: 'data/*.parquet', 's3://bucket/events/**/*.parquet').",
                                                  show_default=False)] = None,
    hive_partitioning: Annotated[bool, typer.Option("--hive-partitioning", help="Read column values from "
                                                    "key=value directories in the paths (the default, as "
                                                    "DuckDB's).")] = False,
    no_hive_partitioning: Annotated[bool, typer.Option("--no-hive-partitioning", help="Do not read key=value "
                                                       "directories (DuckDB's hive_partitioning => false).")] = False,
    allow_missing: Annotated[bool, typer.Option("--allow-missing", help="Accept files that lack some of the "
                                                "table's columns (they read as the column default).")] = False,
    ignore_extra_columns: Annotated[bool, typer.Option("--ignore-extra-columns", help="Accept files with columns "
                                                       "the table does not have (they are not read).")] = False,
    msg: MessageOpt = None,
    author: AuthorOpt = None,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Register existing Parquet files in a table where they are, as DuckDB's ducklake_add_data_files does.

    Nothing is copied or rewritten, and Spark is not started.
    Columns are matched by name (any order, any case) and their types checked.
    Key=value directories in the paths give column and partition values (--hive-partitioning, the default).
    Each file is recorded with its absolute path, a name mapping and its footer statistics, all in one snapshot.
    A file that does not fit the table is refused and nothing changes.
    The lake owns the files afterwards: DuckDB's compaction and cleanup may delete them (ours never deletes a file
    outside the data path).

    Examples:

      ducklake register lake.sqlite events /data/events/2025-01.parquet

      ducklake register lake.sqlite sales.orders '/data/orders/*.parquet' --allow-missing

      ducklake register prod logs 's3://bucket/logs/**/*.parquet' -m "import from Hive"

      ducklake register lake.sqlite raw '/data/raw/k=1/*.parquet' --no-hive-partitioning --allow-missing
    """
    if catalog is not None and table is not None and pattern is None:  # `register TABLE PATH` (CATALOG from env)
        catalog, table, pattern = None, catalog, table
    if table is None or pattern is None:
        raise UsageError("missing TABLE or PATH|GLOB", hint="usage: ducklake register [CATALOG] TABLE PATH|GLOB")
    if hive_partitioning and no_hive_partitioning:
        raise UsageError("--hive-partitioning and --no-hive-partitioning exclude each other")
    from ducklake_cli.ops.register import register as run

    with lake_command(catalog, data_path=data_path, metadata_schema=metadata_schema, read_only=False) as lake:
        result = run(lake, table, pattern, hive_partitioning=not no_hive_partitioning, allow_missing=allow_missing,
                     ignore_extra_columns=ignore_extra_columns, author=author, message=msg)
        render(result, fmt)
