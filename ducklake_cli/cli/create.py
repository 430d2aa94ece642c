"""`ducklake create-catalog`."""

from __future__ import annotations

from typing import Annotated

import typer

from ducklake_cli.cli.common import DebugOpt, FormatOpt, MetadataSchemaOpt, OptionalCatalogArg
from ducklake_cli.cli.render import OutputFormat, message, render
from ducklake_cli.cli.runner import resolve_catalog


def create_catalog(
    data_path: Annotated[str, typer.Option("--data-path", help="Root of the lake's data files: a local directory "
                                                               "or s3://bucket/prefix/.", show_default=False)],
    catalog: OptionalCatalogArg = None,
    metadata_schema: MetadataSchemaOpt = None,
    format_version: Annotated[str, typer.Option(
        "--format-version", metavar="1.0|1.1",
        help="DuckLake format of the new catalog. 1.0 (the default) is attached by DuckDB 1.5.2+ and DuckDB 2.0 "
             "alike; 1.1 (DuckDB 2.0's default: nested schemas, view column comments, epoch partition "
             "transforms) is attached by DuckDB 2.0 only.")] = "1.0",
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Create a new, empty DuckLake catalog that DuckDB and every DuckLake client can attach.

    A new file ending in .ducklake/.duckdb becomes a DuckDB catalog, any other new file a SQLite one
    (force either with sqlite:///path or duckdb:///path). An existing catalog is never touched.

    Examples:

      ducklake create-catalog lake.sqlite --data-path ./data

      ducklake create-catalog lake.sqlite --data-path ./data --format-version 1.1

      ducklake create-catalog postgresql://lake:secret@db:5432/lake --data-path s3://bucket/lake/
    """
    from ducklake_cli.ops.create import create_catalog as create_op

    resolved = resolve_catalog(catalog, metadata_schema=metadata_schema, must_exist=False)
    result = create_op(resolved.target, data_path=data_path, version=format_version)
    if fmt is OutputFormat.table:
        message(f"created DuckLake catalog {result.catalog} (data in {result.data_path})")
    else:
        render(result, fmt)
