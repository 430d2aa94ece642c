"""The change feed (`ducklake changes`, `Lake.table_changes`, the `table_changes` table functions of `query`):
the rows a table gained and lost between two snapshots, as DuckDB's `ducklake_table_changes` returns them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Union

from ducklake_cli.catalog.snapshots import timestamp_or_none
from ducklake_cli.errors import UsageError

if TYPE_CHECKING:
    from ducklake_cli.engine.planning.feed_plan import FeedPlan
    from ducklake_cli.engine.session import DataFrame, SparkSession
    from ducklake_cli.lake import Lake
    from ducklake_cli.ops.query import QueryResult

Bound = Union[int, dt.datetime]  # noqa: UP007 (a runtime alias)
FEEDS = ("changes", "insertions", "deletions")
# `changes --kind`: which change types each keeps.
KIND_TYPES = {
    "all": None,
    "insert": ("insert",),
    "delete": ("delete",),
    "update": ("update_preimage", "update_postimage"),
}


def parse_bound(text: str, what: str) -> Bound:
    """A snapshot id (an integer) or an ISO 8601 time, as `--from`/`--to` take them."""
    value = text.strip()
    if value.lstrip("-").isdigit():
        return int(value)
    when = timestamp_or_none(value)
    if when is None:
        raise UsageError(f"{what} {text!r} is neither a snapshot id nor an ISO 8601 time (e.g. 12 or "
                         "2026-01-31T12:00:00Z)")
    return when


def plan_table_feed(lake: Lake, table: str, ranges: Sequence[tuple[Bound, Bound | None]]) -> FeedPlan:
    """The feed plan of `table` for the ranges, its columns as of their (shared) end snapshot; refused when the
    ranges end at snapshots where the table's columns differ."""
    from ducklake_cli.engine.planning.feed_plan import plan_feed, resolve_range

    with lake.reader() as r:
        ids = [resolve_range(r, a, b) for a, b in ranges]
        ends = sorted({b for _, b in ids})
        if not ends:
            raise UsageError("no snapshot range given")
        info = r.find_table(ends[-1], table)
        for b in ends[:-1]:
            other = r.find_table(b, table)
            if other.table_id != info.table_id or other.columns != info.columns:
                raise UsageError(f"the ranges end at snapshots where table {table!r} has different columns; "
                                 "ask for them separately")
        return plan_feed(r, table=info, ranges=ids, data_path=r.data_path, schemas=r.schemas(ends[-1]),
                         storage_options=lake.storage_options)


def feed_dataframe(lake: Lake, table: str, start: Bound, end: Bound | None = None, *, feed: str = "changes",
                   spark: SparkSession | None = None) -> DataFrame:
    """One feed (`changes`, `insertions` or `deletions`) of `table` between two snapshots as a DataFrame."""
    from ducklake_cli.engine.feed import feed_frame

    if feed not in FEEDS:
        raise UsageError(f"unknown feed {feed!r}; expected one of {', '.join(FEEDS)}")
    plan = plan_table_feed(lake, table, [(start, end)])
    return feed_frame(spark or lake.spark(), plan, feed)


def many_feeds(lake: Lake, table: str, ranges: Sequence[tuple[Bound, Bound | None]], *, feed: str = "changes",
               spark: SparkSession | None = None) -> DataFrame:
    """One feed for several ranges at once (one Spark job reads each file once), a `range_id` column (the range's
    index) first; the ranges must end where the table has the same columns."""
    from ducklake_cli.engine.feed import feed_frame

    plan = plan_table_feed(lake, table, ranges)
    return feed_frame(spark or lake.spark(), plan, feed, with_range=True)


def run_changes(
    lake: Lake, table: str, start: Bound, end: Bound | None = None, *, kind: str = "all",
    output: str | None = None, stream: bool = False, display: int | None = None,
) -> QueryResult:
    """What `ducklake changes` does: the table's changes in the range (of one kind), fetched, streamed or
    written to a file."""
    from ducklake_cli.engine.progress import spark_progress
    from ducklake_cli.engine.session import spark_errors
    from ducklake_cli.ops.query import deliver

    if kind not in KIND_TYPES:
        raise UsageError(f"--kind {kind!r}: expected one of {', '.join(KIND_TYPES)}")
    plan = plan_table_feed(lake, table, [(start, end)])  # metadata first: bad names fail before Spark starts
    from ducklake_cli.engine.feed import feed_frame

    spark = lake.spark()
    with spark_errors(), spark_progress(spark):
        df = feed_frame(spark, plan, "changes")
        types = KIND_TYPES[kind]
        if types is not None:
            df = df.where(df["change_type"].isin(list(types)))
        return deliver(df.orderBy("snapshot_id", "rowid", "change_type"), output=output, stream=stream,
                       display=display)
