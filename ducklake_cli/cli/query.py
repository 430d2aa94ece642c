"""`ducklake query`."""

from __future__ import annotations

from typing import Annotated

import typer

from ducklake_cli.cli.common import (
    AsOfOpt,
    ConfOpt,
    DataPathOpt,
    DebugOpt,
    FormatOpt,
    MasterOpt,
    MetadataSchemaOpt,
    OptionalCatalogArg,
    RemoteOpt,
    SnapshotOpt,
    shift_catalog,
    time_travel,
)
from ducklake_cli.cli.render import MAX_TABLE_ROWS, OutputFormat, message, render, render_stream
from ducklake_cli.cli.runner import SparkFlags, lake_command


def query(
    catalog: OptionalCatalogArg = None,
    sql: Annotated[str | None, typer.Argument(
        help="Spark SQL over the lake's tables: `schema.table` (unqualified names are in schema main), "
             "`t VERSION AS OF 3`, `t TIMESTAMP AS OF '…'`. With one argument, CATALOG is $DUCKLAKE_CATALOG.",
        show_default=False)] = None,
    snapshot: SnapshotOpt = None,
    as_of: AsOfOpt = None,
    output: Annotated[str | None, typer.Option("--output", "-o", help="Write all rows to one .parquet, .csv or "
                                                                      ".json file instead of printing them.",
                                               show_default=False)] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=0, help="At most this many rows.",
                                              show_default=False)] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show the files each table scan keeps and prunes, and "
                                                            "Spark's plan, instead of running the query.")] = False,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Run Spark SQL over a lake's tables, at the latest or any earlier snapshot.

    Examples:

      ducklake query lake.sqlite "SELECT city, count(*) FROM trips GROUP BY city"

      ducklake query lake.sqlite "SELECT * FROM main.trips VERSION AS OF 3 LIMIT 5"

      ducklake query prod "SELECT * FROM events WHERE day = DATE '2026-01-31'" --output day.parquet
    """
    catalog, sql = shift_catalog(catalog, sql, "SQL")
    at = time_travel(snapshot, as_of)
    from ducklake_cli.ops.query import run_query

    machine = fmt is not OutputFormat.table
    with lake_command(catalog, data_path=data_path, metadata_schema=metadata_schema,
                      spark=SparkFlags(master, remote, conf, debug)) as lake:
        result = run_query(lake, sql, at=at, limit=limit, output=output, explain=explain,
                           stream=machine and output is None and not explain,
                           display=None if machine else MAX_TABLE_ROWS)
        if result.stream is not None:  # rows are fetched while they are written, so inside the open lake
            render_stream(result.stream, fmt)
        else:
            render(result, fmt)
        if result.truncated and not machine:
            message(f"showing first {len(result.rows):,} of {result.row_count:,} rows; "
                    "use --format csv|json or --output FILE for all")
