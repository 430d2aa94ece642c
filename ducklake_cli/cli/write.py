"""`ducklake write`."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ducklake_cli.cli.common import (
    AsOfOpt,
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
    SnapshotOpt,
    key_values,
    shift_catalog,
    time_travel,
)
from ducklake_cli.cli.render import OutputFormat, render
from ducklake_cli.cli.runner import SparkFlags, lake_command
from ducklake_cli.errors import InputError, NotFoundError, UsageError
from ducklake_cli.ops.results import Result


def write(
    catalog: OptionalCatalogArg = None,
    table: Annotated[str | None, typer.Argument(help="Target table: TABLE (schema main) or SCHEMA.TABLE; missing "
                                                     "schemas are created.", show_default=False)] = None,
    source: Annotated[list[str] | None, typer.Option("--from", help="Input files: a path, a glob "
                                                                    "('data/*.csv'), a directory, or - for "
                                                                    "standard input (repeatable).",
                                                     show_default=False)] = None,
    query: Annotated[str | None, typer.Option("--query", help="Spark SQL over the same lake whose rows to write, "
                                                              "quoted as in DuckDB (time travel allowed: "
                                                              "`t VERSION AS OF 3`).",
                                              show_default=False)] = None,
    input_format: Annotated[str | None, typer.Option("--input-format", help="parquet, csv, json or orc "
                                                                            "(default: from the file extension).",
                                                     show_default=False)] = None,
    option: Annotated[list[str] | None, typer.Option("--option", help="Reader option key=value, e.g. "
                                                                      "--option delimiter=';' (repeatable).",
                                                     show_default=False)] = None,
    mode: Annotated[str, typer.Option("--mode", help="append (creates a missing table), overwrite (replaces "
                                                     "every row in one snapshot), create (fails if the table "
                                                     "exists) or merge (upsert on the --on keys: matching rows "
                                                     "are replaced, the others inserted).")] = "append",
    on: Annotated[list[str] | None, typer.Option("--on", help="With --mode merge: the key column(s) that identify "
                                                              "a row, KEY[,KEY…] (repeatable). The input must "
                                                              "have one row per key.",
                                                 show_default=False)] = None,
    partition_by: Annotated[list[str] | None, typer.Option(
        "--partition-by", help="Partition key when the table is created: COLUMN, year|month|day|hour(COLUMN) or "
                               "bucket(N, COLUMN) (repeatable, in key order).", show_default=False)] = None,
    message: MessageOpt = None,
    author: AuthorOpt = None,
    no_inline: Annotated[bool, typer.Option("--no-inline", help="Always write Parquet, even for a few rows "
                                                                "(default: up to data_inlining_row_limit rows, "
                                                                "10, go into the catalog like DuckDB).")] = False,
    ignore_extra_columns: Annotated[bool, typer.Option("--ignore-extra-columns",
                                                       help="Drop input columns the table does not have.")] = False,
    evolve: Annotated[bool, typer.Option("--evolve", help="Add input columns the table does not have and widen "
                                                          "column types where DuckLake allows it (e.g. INTEGER to "
                                                          "BIGINT, FLOAT to DOUBLE), in the snapshot that adds "
                                                          "the rows. Columns the input lacks get their DEFAULT "
                                                          "(or NULL) either way.")] = False,
    schema: Annotated[str | None, typer.Option("--schema", help="Column types of CSV/JSON input for a new table, "
                                                                "e.g. \"id BIGINT, price DECIMAL(10,2)\" (DuckDB "
                                                                "type names; default: sniffed).",
                                               show_default=False)] = None,
    on_error: Annotated[str, typer.Option("--on-error", help="fail (default) or skip: what to do with CSV rows "
                                                             "that do not parse.")] = "fail",
    snapshot: SnapshotOpt = None,
    as_of: AsOfOpt = None,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Write files or a query result into a table as one new snapshot (Parquet written by Spark executors).

    Appending to a table that does not exist creates it, with column types taken from the input.

    Examples:

      ducklake write lake.sqlite trips --from 'raw/trips/*.parquet'

      ducklake write lake.sqlite sales.orders --from orders.csv --mode create --partition-by 'month(ordered_at)'

      gunzip -c events.csv.gz | ducklake write lake.sqlite events --from - --input-format csv

      ducklake write prod daily --query "SELECT day, count(*) AS n FROM events GROUP BY day" --mode overwrite

      ducklake write lake.sqlite customers --from 'extract/customers-*.parquet' --mode merge --on customer_id

      ducklake write lake.sqlite events --from 'new-export/*.parquet' --evolve
    """
    catalog, target = shift_catalog(catalog, table, "TABLE")
    if on_error not in ("fail", "skip"):  # also checked by the reader, but only after Spark started
        raise UsageError(f"--on-error must be fail or skip, not {on_error!r}")
    at = time_travel(snapshot, as_of)
    options = key_values(option or [], "--option", strip_values=False)
    _check_sources(source or [])
    from ducklake_cli.ops.changes import split_keys

    keys = split_keys(on or [])
    if mode == "merge":
        if not keys:
            raise UsageError("--mode merge needs --on KEY[,KEY…]: the columns that identify a row")
        if no_inline or on_error != "fail" or evolve:
            raise UsageError("--no-inline, --on-error skip and --evolve do not apply to --mode merge")
    elif on:
        raise UsageError("--on applies to --mode merge only")
    if evolve and ignore_extra_columns:
        raise UsageError("give --evolve (add the extra columns) or --ignore-extra-columns (drop them), not both")
    from ducklake_cli.engine.progress import spark_progress
    from ducklake_cli.ops.changes import run_upsert
    from ducklake_cli.ops.write import run_write

    with lake_command(catalog, data_path=data_path, metadata_schema=metadata_schema, read_only=False,
                      spark=SparkFlags(master, remote, conf, debug)) as lake:
        with spark_progress():
            result: Result
            if mode == "merge":
                result = run_upsert(lake, target, on=keys, source=source or [], query=query,
                                    input_format=input_format, options=options, partition_by=partition_by or [],
                                    message=message, author=author, ignore_extra_columns=ignore_extra_columns,
                                    at=at, schema=schema)
            else:
                result = run_write(lake, target, source=source or [], query=query, input_format=input_format,
                                   options=options, mode=mode, partition_by=partition_by or [], message=message,
                                   author=author, inline=not no_inline, ignore_extra_columns=ignore_extra_columns,
                                   at=at, schema=schema, on_error=on_error, evolve=evolve)
        render(result, fmt)


def _check_sources(sources: list[str]) -> None:
    """A local --from path or glob that matches nothing, or only empty files, is bad input (exit 1), found before
    Spark starts."""
    import glob

    for src in sources:
        if src == "-" or "://" in src:  # stdin, or object storage (listed by the reader)
            continue
        matches = glob.glob(os.path.expanduser(src))
        if not matches:
            raise NotFoundError(f"--from {src}: no such file or directory" if not glob.has_magic(src)
                                else f"--from {src}: no file matches")
        if all(os.path.isfile(m) and os.path.getsize(m) == 0 for m in matches):
            raise InputError(f"--from {src}: {'the file is' if len(matches) == 1 else 'every file is'} empty "
                             "(0 bytes): no columns and no rows to write")
