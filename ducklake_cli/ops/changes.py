"""Row-level changes built from options rather than SQL text — the `delete` command, `write --mode merge` and the
Python API's `delete`/`update`/`merge` — run through `ops/dml.py` as one snapshot each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ducklake_cli.engine.planning.dml_plan import quote_name
from ducklake_cli.errors import NotFoundError, UsageError
from ducklake_cli.ops.dml import ChangeResult, run_change
from ducklake_cli.ops.tables import split_table_name

if TYPE_CHECKING:
    from ducklake_cli.catalog.snapshots import SnapshotSelector
    from ducklake_cli.engine.session import DataFrame
    from ducklake_cli.lake import Lake

SOURCE_VIEW = "__ducklake_source"  # the input's name in a generated MERGE
WHEN_MATCHED = ("update", "delete", None)
WHEN_NOT_MATCHED = ("insert", None)


def quote_table(table: str) -> str:
    """`TABLE` or `SCHEMA.TABLE` as a quoted `schema`.`table` (schema main when left out)."""
    schema_name, name = split_table_name(table)
    return f"{quote_name(schema_name)}.{quote_name(name)}"


def delete_sql(table: str, where: str | None) -> str:
    """`DELETE FROM table [WHERE …]` (every row without `where`)."""
    return f"DELETE FROM {quote_table(table)}" + (f" WHERE {where}" if where is not None else "")


def update_sql(table: str, assignments: Mapping[str, str], where: str | None) -> str:
    """`UPDATE table SET col = expr, … [WHERE …]`; the values are Spark SQL expressions."""
    if not assignments:
        raise UsageError("an update needs at least one column to set")
    sets = ", ".join(f"{quote_name(c)} = {v}" for c, v in assignments.items())
    return f"UPDATE {quote_table(table)} SET {sets}" + (f" WHERE {where}" if where is not None else "")


def run_update(lake: Lake, table: str, assignments: Mapping[str, str], where: str | None, *,
               message: str | None = None, author: str | None = None) -> ChangeResult:
    """UPDATE `table` SET `assignments` (column → Spark SQL expression) [WHERE `where`], as one snapshot."""
    return run_change(lake, [update_sql(table, assignments, where)], message=message, author=author)


def _check_actions(when_matched: str | None, when_not_matched: str | None) -> None:
    if when_matched not in WHEN_MATCHED:
        raise UsageError(f"when_matched must be 'update', 'delete' or None, not {when_matched!r}")
    if when_not_matched not in WHEN_NOT_MATCHED:
        raise UsageError(f"when_not_matched must be 'insert' or None, not {when_not_matched!r}")
    if when_matched is None and when_not_matched is None:
        raise UsageError("a merge needs when_matched or when_not_matched")


def merge_sql(table: str, keys: Sequence[str], *, when_matched: str | None = "update",
              when_not_matched: str | None = "insert") -> str:
    """A MERGE of `SOURCE_VIEW` into `table` on equal `keys`: matched rows updated (every column) or deleted,
    unmatched source rows inserted."""
    _check_actions(when_matched, when_not_matched)
    t, s = quote_name("__ducklake_t"), quote_name("__ducklake_s")
    on = " AND ".join(f"{t}.{quote_name(k)} = {s}.{quote_name(k)}" for k in keys)
    whens = {"update": ["WHEN MATCHED THEN UPDATE SET *"], "delete": ["WHEN MATCHED THEN DELETE"], None: []}
    clauses = whens[when_matched] + (["WHEN NOT MATCHED THEN INSERT *"] if when_not_matched == "insert" else [])
    return f"MERGE INTO {quote_table(table)} AS {t} USING {SOURCE_VIEW} AS {s} ON {on} {' '.join(clauses)}"


def split_keys(on: Sequence[str]) -> list[str]:
    """`--on a,b --on c` as ["a", "b", "c"]."""
    return [k.strip() for item in on for k in item.split(",") if k.strip()]


def run_upsert(
    lake: Lake,
    table: str,
    *,
    on: Sequence[str],
    source: Sequence[str] = (),
    query: str | None = None,
    input_format: str | None = None,
    options: Mapping[str, str] | None = None,
    partition_by: Sequence[str] = (),
    message: str | None = None,
    author: str | None = None,
    ignore_extra_columns: bool = False,
    at: SnapshotSelector | None = None,
    schema: str | None = None,
    frame: DataFrame | None = None,
) -> ChangeResult:
    """`write --mode merge`: replace the table's rows whose `on` keys the input has (every column) and insert the
    others, as one snapshot; a missing table is created with the input's rows. Duplicate or NULL keys in the
    input are an `InputError` (found by the executors)."""
    lake.refuse_writes()  # an older catalog: refused before any work
    from ducklake_cli.catalog.snapshots import LATEST
    from ducklake_cli.engine.ingest_duckdb import ingest_errors
    from ducklake_cli.engine.session import spark_errors
    from ducklake_cli.ops.write import UpsertInput, stage_upsert

    with spark_errors(), ingest_errors():
        staged = stage_upsert(lake, table, on=on, source=source, query=query, input_format=input_format,
                              options=options, partition_by=partition_by, message=message, author=author,
                              ignore_extra_columns=ignore_extra_columns, at=at or LATEST, schema=schema,
                              frame=frame)
        if isinstance(staged, UpsertInput):
            return _merge(lake, staged.table, staged.frame, staged.keys, "update", "insert", message=message,
                          author=author)
    return ChangeResult(1, (staged.table,), staged.snapshot_id, 0, 0, staged.rows, staged.files, 0)


def run_merge(lake: Lake, table: str, frame: DataFrame, *, on: Sequence[str], when_matched: str | None = "update",
              when_not_matched: str | None = "insert", message: str | None = None,
              author: str | None = None) -> ChangeResult:
    """MERGE `frame` (the table's columns, by name) into the existing `table` on equal `on` keys, as one snapshot.
    Duplicate or NULL keys in `frame` are an `InputError`."""
    lake.refuse_writes()  # an older catalog: refused before any work
    from ducklake_cli.engine.ingest import conform
    from ducklake_cli.engine.session import spark_errors
    from ducklake_cli.ops.write import merge_keys, refuse_bad_keys

    _check_actions(when_matched, when_not_matched)
    schema_name, name = split_table_name(table)
    qualified = f"{schema_name}.{name}"
    with lake.reader() as r:
        try:
            columns = r.find_table(r.latest_snapshot().snapshot_id, qualified).columns
        except NotFoundError:
            raise NotFoundError(f"table {qualified} does not exist",
                                hint="create it first, e.g. with write(df, table, mode=\"merge\", on=…)") from None
    keys = merge_keys(on, columns, qualified)
    with spark_errors():
        df = conform(frame, columns, ignore_extra=False).toDF(*[c.name for c in columns])
        refuse_bad_keys(df, keys)
        return _merge(lake, qualified, df, keys, when_matched, when_not_matched, message=message, author=author)


def _merge(lake: Lake, table: str, df: DataFrame, keys: Sequence[str], when_matched: str | None,
           when_not_matched: str | None, *, message: str | None, author: str | None) -> ChangeResult:
    sql = merge_sql(table, keys, when_matched=when_matched, when_not_matched=when_not_matched)
    return run_change(lake, [sql], message=message, author=author, sources={SOURCE_VIEW: df})
