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
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Create a new, empty DuckLake v1.0 catalog that DuckDB and every DuckLake client can attach.

    A new file ending in .ducklake/.duckdb becomes a DuckDB catalog, any other new file a SQLite one
    (force either with sqlite:///path or duckdb:///path). An existing catalog is never touched.

    Examples:

      ducklake create-catalog lake.sqlite --data-path ./data

      ducklake create-catalog postgresql://lake:secret@db:5432/lake --data-path s3://bucket/lake/
    """
    from ducklake_cli.ops.create import create_catalog as create_op

    resolved = resolve_catalog(catalog, metadata_schema=metadata_schema, must_exist=False)
    result = create_op(resolved.target, data_path=data_path)
    if fmt is OutputFormat.table:
        message(f"created DuckLake catalog {result.catalog} (data in {result.data_path})")
    else:
        render(result, fmt)
