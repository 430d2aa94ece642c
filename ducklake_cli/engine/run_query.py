"""Running a planned statement on Spark: its temp views (table scans and lake views), its DataFrame, and its rows
fetched, streamed or explained (`engine/planning/sql_plan.py` plans it from metadata)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ducklake_cli.engine.output import Encoder, RowStream
from ducklake_cli.engine.planning.plan_cache import PlanCache
from ducklake_cli.engine.planning.scan_plan import ScanPlan
from ducklake_cli.engine.planning.sql_plan import SqlPlan
from ducklake_cli.engine.session import spark_errors
from ducklake_cli.errors import QueryError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def register_views(spark: SparkSession, plan: SqlPlan, cache: PlanCache | None = None) -> None:
    """Create the plan's temp views on Spark: table scans, and lake views built on their own views. With the
    lake's `cache`, a scan plan already built for this session reuses its DataFrame."""
    from ducklake_cli.engine.feed import feed_frame

    for name, feed, kind in plan.feeds:
        feed_frame(spark, feed, kind).createOrReplaceTempView(name)
    for name, source, with_rowid in plan.views:
        if isinstance(source, ScanPlan):
            _register_scan(spark, name, source, with_rowid, cache)
        else:
            register_views(spark, source, cache)
            _view_frame(spark, source).createOrReplaceTempView(name)


def _register_scan(spark: SparkSession, name: str, source: ScanPlan, with_rowid: bool,
                   cache: PlanCache | None) -> None:
    """The scan as temp view `name`. A plan the lake's cache holds is built into a DataFrame once per session and
    registered once under its (cached) name; entries are kept by identity and checked on every hit, as an id may
    be reused once its object is gone."""
    from ducklake_cli.engine.scan import scan

    def build() -> tuple[ScanPlan, SparkSession, DataFrame, set[str]]:
        return source, spark, scan(spark, source, with_rowid=with_rowid), set()

    kept = build() if cache is None else cache.get(
        ("frame", id(spark), id(source), with_rowid), build, lambda kept: kept[0] is source and kept[1] is spark)
    if name not in kept[3]:
        kept[2].createOrReplaceTempView(name)
        kept[3].add(name)


def _view_frame(spark: SparkSession, plan: SqlPlan) -> DataFrame:
    """A lake view's body on Spark, renamed by its column aliases; a failure names the view."""
    try:
        df = spark.sql(plan.spark_sql)
    except Exception as exc:
        from ducklake_cli.engine.session import is_spark_error, translate_spark_error

        if not is_spark_error(exc):
            raise

        text = str(translate_spark_error(exc))
        if routine := re.search(r"Cannot resolve routine `([^`]+)`", text):  # a DuckDB function Spark lacks
            text = f"function {routine[1].lower()} does not exist in Spark"
        raise QueryError(f"view {plan.view} cannot run on Spark: {text}") from exc
    if plan.column_aliases:
        names = list(df.columns)
        if len(plan.column_aliases) > len(names):
            raise QueryError(f"view {plan.view} names {len(plan.column_aliases)} columns but has {len(names)}")
        df = df.toDF(*plan.column_aliases, *names[len(plan.column_aliases):])
    return df


def frame(spark: SparkSession, plan: SqlPlan, *, limit: int | None = None) -> DataFrame:
    """The statement's DataFrame once its views are registered (a metadata count as its one row)."""
    if plan.count_only is not None:
        column, count = plan.count_only
        df = spark.createDataFrame([(count,)], f"`{column}` bigint")
    else:
        df = spark.sql(plan.spark_sql)
    return df if limit is None else df.limit(limit)


def spark_plan(df: DataFrame) -> str:
    """Spark's plan of a DataFrame as text (`query --explain`); long literal arrays (driver-built delete masks)
    shortened to their length."""
    try:
        text = str(df._jdf.queryExecution().toString())  # classic Spark
    except Exception:  # Spark Connect has no _jdf; its explain prints instead of returning
        return "(Spark plan not available over Spark Connect; run with --master instead)"
    return _LONG_ARRAY.sub(lambda m: f"[array of {m[0].count(',') + 1}{'' if m[0].endswith(']') else '+'} values]",
                           text)


# 16 numbers or more in brackets, whole or cut by Spark with "..." (in a scan's DataFilters).
_LONG_ARRAY = re.compile(r"\[-?\d+(?:, ?-?\d+){15,}(?:\]|, ?-?\d*\.\.\.|-?\d*\.\.\.)")


def stream_rows(df: DataFrame) -> RowStream:
    """Every row, fetched while it is read; fetching raises our one-line errors (it happens after the command's
    Spark work returned)."""
    from ducklake_cli.engine.output import row_stream

    rows = row_stream(df)
    return RowStream(rows.columns, rows.encoders, _guarded(rows.rows))


def _guarded(rows: Iterable[Any]) -> Iterator[Any]:
    with spark_errors():
        yield from rows


@dataclass(frozen=True)
class Fetched:
    """The first rows of a result, and how many there are in all."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool
    row_count: int
    encoders: tuple[Encoder, ...]


def fetch(df: DataFrame, display: int | None) -> Fetched:
    """At most `display` rows (all when None); counting all rows only when there are more."""
    from ducklake_cli.engine.output import encoder

    fetched = df.collect() if display is None else df.limit(display + 1).collect()
    schema = df.schema
    truncated = display is not None and len(fetched) > display
    return Fetched(columns=tuple(schema.names), rows=tuple(tuple(r) for r in fetched[:display]), truncated=truncated,
                   row_count=int(df.count()) if truncated else len(fetched),
                   encoders=tuple(encoder(f.dataType) for f in schema.fields))
