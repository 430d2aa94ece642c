"""`ducklake copy-catalog`."""

from __future__ import annotations

from typing import Annotated

import typer

from ducklake_cli.cli.common import DebugOpt, FormatOpt
from ducklake_cli.cli.render import OutputFormat, message, render
from ducklake_cli.cli.runner import resolve_catalog


def copy_catalog(
    source: Annotated[str, typer.Argument(help="The catalog to copy: a file, a URL, an ATTACH string or a profile.",
                                          show_default=False)],
    destination: Annotated[str, typer.Argument(
        help="Where to copy it: a new file (.ducklake/.duckdb: DuckDB, otherwise SQLite) or an empty "
        "PostgreSQL/MySQL database (postgresql://…, mysql://…).", show_default=False)],
    data_path: Annotated[str | None, typer.Option(
        "--data-path", help="Store this data path in the copy (the data files were moved, e.g. to another bucket); "
        "absolute file paths under the old data path move with it.", show_default=False)] = None,
    metadata_schema: Annotated[str | None, typer.Option(
        "--metadata-schema", help="PostgreSQL schema / MySQL database holding the source's catalog tables.",
        show_default=False)] = None,
    dest_metadata_schema: Annotated[str | None, typer.Option(
        "--dest-metadata-schema", help="PostgreSQL schema / MySQL database to create the copy's tables in.",
        show_default=False)] = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Copy a DuckLake catalog to another backend (SQLite, DuckDB, PostgreSQL, MySQL), with that backend's own
    column types, then verify the copy row for row. The destination must be empty; nothing is written unless the
    whole copy verified. Data files are not copied.

    Examples:

      ducklake copy-catalog lake.sqlite postgresql://lake:secret@db:5432/lake

      ducklake copy-catalog lake.sqlite moved.ducklake --data-path s3://new-bucket/lake/
    """
    from ducklake_cli.ops.copy_catalog import copy_catalog as copy_op

    src = resolve_catalog(source, metadata_schema=metadata_schema)
    dst = resolve_catalog(destination, metadata_schema=dest_metadata_schema, must_exist=False)
    result = copy_op(src.target, dst.target, data_path=data_path)
    if fmt is OutputFormat.table:
        render(result, fmt)
        message(f"copied {result.rows} rows in {len(result.tables)} tables from {result.source} to "
                f"{result.destination}; verified (data in {result.data_path})")
    else:
        render(result, fmt)
