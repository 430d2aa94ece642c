"""`ducklake query`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

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
    shift_catalog,
    time_travel,
)
from ducklake_cli.cli.render import MAX_TABLE_ROWS, OutputFormat, render, render_stream
from ducklake_cli.cli.render import message as notice
from ducklake_cli.cli.runner import SparkFlags, lake_command
from ducklake_cli.errors import InputError, QueryError, ScriptStoppedError, UsageError

if TYPE_CHECKING:
    from ducklake_cli.ops.ddl import DdlResult


def query(
    catalog: OptionalCatalogArg = None,
    sql: Annotated[str | None, typer.Argument(
        help="Spark SQL over the lake's tables, quoted as in DuckDB (\"my col\" is a name, 'it''s' one string): "
             "`schema.table` (unqualified names are in schema main), `t VERSION AS OF 3`, `t TIMESTAMP AS OF '…'`. "
             "With one argument, CATALOG is $DUCKLAKE_CATALOG.",
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
    file: Annotated[Path | None, typer.Option("--file", help="Run the change statements of a SQL script, in order, "
                                                             "as one transaction: one snapshot, or nothing (a DDL "
                                                             "script, without BEGIN/COMMIT: one snapshot per "
                                                             "statement, stopping at the first that fails).",
                                              show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="For changes: count the rows they would delete, update "
                                                            "and insert, and commit nothing.")] = False,
    message: MessageOpt = None,
    author: AuthorOpt = None,
    master: MasterOpt = None,
    remote: RemoteOpt = None,
    conf: ConfOpt = None,
    data_path: DataPathOpt = None,
    metadata_schema: MetadataSchemaOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Run Spark SQL over a lake's tables, at the latest or any earlier snapshot; or change them with DELETE,
    UPDATE, MERGE INTO, INSERT [OVERWRITE] or CREATE TABLE … AS, committed as one snapshot; or change the lake's
    shape with DDL (CREATE/DROP SCHEMA, TABLE and VIEW, ALTER TABLE/VIEW, COMMENT ON), one snapshot per
    statement and without Spark.

    Examples:

      ducklake query lake.sqlite "SELECT city, count(*) FROM trips GROUP BY city"

      ducklake query lake.sqlite "SELECT * FROM main.trips VERSION AS OF 3 LIMIT 5"

      ducklake query prod "SELECT * FROM events WHERE day = DATE '2026-01-31'" --output day.parquet

      ducklake query lake.sqlite "DELETE FROM trips WHERE city = 'Gent'" --dry-run

      ducklake query lake.sqlite "MERGE INTO dim t USING updates u ON t.id = u.id
      WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"

      ducklake query lake.sqlite --file nightly-fixes.sql -m "nightly fixes"

      ducklake query lake.sqlite "ALTER TABLE trips SET PARTITIONED BY (year(pickup), city)"
    """
    if file is not None:
        if sql is not None and catalog is not None:
            raise UsageError("give the SQL as an argument or with --file, not both")
        catalog = catalog if catalog is not None else sql
        sql = None
    else:
        catalog, sql = shift_catalog(catalog, sql, "SQL")
    from ducklake_cli.engine.planning.ddl_plan import is_ddl
    from ducklake_cli.engine.planning.dialect import split_statements
    from ducklake_cli.engine.planning.dml_plan import change_statements, is_change

    if file is not None:
        try:
            sql = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"--file {file}: {exc.strerror or exc}") from None
    assert sql is not None
    parts = split_statements(sql)  # the argument too: `DELETE …; -- done` is one statement, as in DuckDB
    if any(is_ddl(part) for part in parts):
        if any(_is_transaction_control(part) for part in parts):
            raise UsageError("BEGIN … COMMIT around DDL is not supported: each DDL statement commits its own "
                             "snapshot", hint="remove BEGIN/COMMIT to run them one after another, stopping at "
                             "the first that fails")
        if not all(is_ddl(part) for part in parts):
            raise UsageError("a script holds either DDL or data changes, not both; run them as two scripts")
        _ddl(catalog, parts, snapshot=snapshot, as_of=as_of, output=output, limit=limit, explain=explain,
             dry_run=dry_run, message=message, author=author, data_path=data_path, metadata_schema=metadata_schema,
             fmt=fmt)
        return
    if file is not None or any(is_change(part) for part in parts):
        _change(catalog, change_statements(parts), snapshot=snapshot, as_of=as_of, output=output, limit=limit,
                explain=explain, dry_run=dry_run, message=message, author=author,
                flags=SparkFlags(master, remote, conf, debug), data_path=data_path, metadata_schema=metadata_schema,
                fmt=fmt)
        return
    if dry_run or message or author:
        raise UsageError("--dry-run, --message and --author apply to change statements (DELETE, UPDATE, MERGE, "
                         "INSERT, CREATE TABLE AS)")
    if len(parts) != 1:
        raise QueryError(f"expected one SQL statement, got {len(parts)}" if parts else "no SQL statement given")
    sql = parts[0]
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
            notice(f"showing first {len(result.rows):,} of {result.row_count:,} rows; "
                    "use --format csv|json or --output FILE for all")


def _is_transaction_control(sql: str) -> bool:
    """BEGIN, START TRANSACTION, COMMIT, END, ROLLBACK or ABORT."""
    words = sql.split(None, 1)
    return bool(words) and words[0].upper() in ("BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT")


def _ddl(catalog: str | None, statements: list[str], *, snapshot: int | None, as_of: str | None,
         output: str | None, limit: int | None, explain: bool, dry_run: bool, message: str | None,
         author: str | None, data_path: str | None, metadata_schema: str | None, fmt: OutputFormat) -> None:
    """DDL: metadata only, one snapshot per statement, and no Spark."""
    if snapshot is not None or as_of is not None or output is not None or limit is not None or explain or dry_run:
        raise UsageError("--snapshot, --as-of, --output, --limit, --explain and --dry-run do not apply to DDL")
    from ducklake_cli.ops.ddl import run_ddl

    with lake_command(catalog, data_path=data_path, metadata_schema=metadata_schema, read_only=False) as lake:
        try:
            render(run_ddl(lake, statements, message=message, author=author), fmt)
        except ScriptStoppedError as stopped:  # what ran, then the one error line (the exit code is the cause's)
            render(cast("DdlResult", stopped.done), fmt)
            raise


def _change(catalog: str | None, statements: list[str], *, snapshot: int | None, as_of: str | None,
            output: str | None, limit: int | None, explain: bool, dry_run: bool, message: str | None,
            author: str | None, flags: SparkFlags, data_path: str | None, metadata_schema: str | None,
            fmt: OutputFormat) -> None:
    if snapshot is not None or as_of is not None:
        raise UsageError("--snapshot and --as-of apply to queries; a change reads its sources at the latest "
                         "snapshot unless they say VERSION AS OF / TIMESTAMP AS OF")
    if output is not None or limit is not None or explain:
        raise UsageError("--output, --limit and --explain apply to queries, not to change statements")
    from ducklake_cli.engine.progress import spark_progress
    from ducklake_cli.ops.dml import run_change

    with lake_command(catalog, data_path=data_path, metadata_schema=metadata_schema, read_only=False,
                      spark=flags) as lake:
        with spark_progress():
            result = run_change(lake, statements, dry_run=dry_run, message=message, author=author)
        render(result, fmt)
