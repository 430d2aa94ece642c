"""`ducklake options`: show and change the catalog's options (lake-wide, per schema or per table)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ducklake_cli.cli.common import (
    DataPathOpt,
    DebugOpt,
    FormatOpt,
    MetadataSchemaOpt,
    OptionalCatalogArg,
    exclusive,
    key_values,
)
from ducklake_cli.cli.render import OutputFormat, render
from ducklake_cli.cli.runner import lake_command

if TYPE_CHECKING:
    from ducklake_cli.ops.results import Result


def options(
    catalog: OptionalCatalogArg = None,
    schema: Annotated[str | None, typer.Option("--schema", help="Show or change the options of this schema.",
                                               show_default=False)] = None,
    table: Annotated[str | None, typer.Option("--table", help="Show or change the options of this table (TABLE in "
                                                              "schema main, or SCHEMA.TABLE).",
                                              show_default=False)] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Set an option: KEY=VALUE (repeatable).",
                                                   show_default=False)] = None,
    unset: Annotated[list[str] | None, typer.Option("--unset", help="Remove an option at this scope, so the "
                                                                    "schema's, the lake's or the default value "
                                                                    "applies again (repeatable).",
                                                    show_default=False)] = None,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Show the options in effect, or set and unset them as DuckDB's ducklake_set_option does.

    Without --set/--unset: every option of the lake (stored, scoped and default values).
    With --schema/--table: the value each option has there, and where it comes from (TABLE, SCHEMA, GLOBAL, DEFAULT).
    Values are stored as DuckDB stores them (10MB -> 10000000, parquet_version 2 -> V2, 0.5 -> 0.500000).
    Options are not versioned: changing one creates no snapshot. A bad option or value changes nothing.

    Files: target_file_size, parquet_compression, parquet_compression_level, parquet_version.
    Row groups: parquet_row_group_size, parquet_row_group_size_bytes.
    Writes: data_inlining_row_limit, hive_file_pattern, per_thread_output, write_deletion_vectors, sort_on_insert.
    Maintenance: auto_compact, rewrite_delete_threshold.
    Whole lake only: require_commit_message, expire_older_than, delete_older_than.

    Examples:

      ducklake options lake.sqlite

      ducklake options lake.sqlite --set expire_older_than='7 days' --set target_file_size=128MB

      ducklake options lake.sqlite --table sales.orders --set parquet_compression=zstd

      ducklake options lake.sqlite --table sales.orders --unset parquet_compression --format json
    """
    exclusive(("--schema", schema is not None), ("--table", table is not None))
    assignments = key_values(set_ or [], "--set")
    from ducklake_cli.ops import options as ops

    changing = bool(assignments or unset)
    with lake_command(catalog, data_path=data_path, metadata_schema=metadata_schema,
                      read_only=not changing) as lake:
        result: Result
        if changing:
            result = ops.change_options(lake, assignments=assignments, unset=unset or [], schema=schema, table=table)
        else:
            result = ops.list_options(lake, schema=schema, table=table)
        render(result, fmt)
