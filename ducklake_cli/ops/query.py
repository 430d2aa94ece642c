"""`query`: DuckLake tables as Spark DataFrames, Spark SQL over them, results rendered or written to a file."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import SchemaInfo, Snapshot, TableInfo
from ducklake_cli.engine.output import Encoder, RowStream
from ducklake_cli.engine.planning.predicates import Predicate
from ducklake_cli.engine.planning.scan_plan import ScanPlan, plan_scan
from ducklake_cli.engine.session import spark_errors
from ducklake_cli.errors import NotFoundError, QueryError, UsageError
from ducklake_cli.lake import Lake, LakeReader
from ducklake_cli.ops.results import Section, jsonable

if TYPE_CHECKING:
    from ducklake_cli.engine.planning.sql_rewrite import ParsedQuery, TableRef
    from ducklake_cli.engine.session import DataFrame, SparkSession

_view_ids = itertools.count()
MAX_VIEW_DEPTH = 16


def pick_snapshot(reader: LakeReader, snapshot: int | None, as_of: dt.datetime | None) -> Snapshot:
    """The snapshot a read uses: an id, the newest at a time, or the latest."""
    if snapshot is not None and as_of is not None:
        raise UsageError("give either a snapshot id or a time, not both")
    if snapshot is not None:
        return reader.snapshot(snapshot)
    if as_of is not None:
        return reader.snapshot_at(as_of)
    return reader.latest_snapshot()


def plan_table(
    lake: Lake, reader: LakeReader, name: str, snapshot_id: int, predicates: Sequence[Predicate] = ()
) -> ScanPlan:
    """The scan plan of one table at a snapshot."""
    table = reader.find_table(snapshot_id, name)
    return plan_scan(reader, table=table, snapshot_id=snapshot_id, data_path=reader.data_path,
                     schemas=reader.schemas(snapshot_id), predicates=predicates,
                     storage_options=lake.storage_options)


def table_dataframe(
    lake: Lake, name: str, *, snapshot: int | None = None, as_of: dt.datetime | None = None,
    spark: SparkSession | None = None, with_rowid: bool = False, predicates: Sequence[Predicate] = (),
) -> DataFrame:
    """One table at a snapshot as a DataFrame."""
    from ducklake_cli.engine.scan import scan

    with lake.reader() as r:
        snap = pick_snapshot(r, snapshot, as_of)
        plan = plan_table(lake, r, name, snap.snapshot_id, predicates)
    return scan(spark or lake.spark(), plan, with_rowid=with_rowid)


@dataclass
class SqlPlan:
    """A statement resolved against the lake: its Spark SQL and the scans behind each temp view."""

    spark_sql: str
    scans: list[ScanPlan] = field(default_factory=list)
    count_only: tuple[str, int] | None = None  # (column name, count) when answered from metadata
    # Temp views to register before running `spark_sql`: a table scan (with rowid?) or a lake view's own plan.
    views: list[tuple[str, ScanPlan | SqlPlan, bool]] = field(default_factory=list)
    view: str | None = None  # the lake view (`schema.name`) this plan is the body of
    column_aliases: list[str] = field(default_factory=list)  # `CREATE VIEW v(a, b)`: names of its first columns


def _ref_snapshot(reader: LakeReader, ref: TableRef, default: Snapshot) -> int:
    if ref.version is not None:
        return reader.snapshot(ref.version).snapshot_id
    if ref.timestamp is not None:
        try:
            when = dt.datetime.fromisoformat(ref.timestamp.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise QueryError(f"TIMESTAMP AS OF {ref.timestamp!r} is not a timestamp") from exc
        return reader.snapshot_at(when if when.tzinfo else when.replace(tzinfo=dt.UTC)).snapshot_id
    return default.snapshot_id


def plan_sql(lake: Lake, reader: LakeReader, query: str, *, snapshot: Snapshot) -> SqlPlan:
    """Resolve every table and view a statement reads, from metadata alone (`register_views` runs it on Spark)."""
    from ducklake_cli.engine.planning.sql_rewrite import parse_query

    parsed = parse_query(query)
    if (count_ref := parsed.plain_count()) is not None:
        sid = _ref_snapshot(reader, count_ref, snapshot)
        table = reader.find_table(sid, count_ref.qualified)
        from ducklake_cli.ops.counts import table_counts

        counts = table_counts(reader, snapshot_id=sid, data_path=reader.data_path, tables=[table],
                              schemas=reader.schemas(sid), storage_options=lake.storage_options)
        return SqlPlan(spark_sql="", count_only=(parsed.plain_count_alias(), counts[table.table_id].live_rows))
    return _plan_refs(lake, reader, parsed, snapshot=snapshot, depth=0)


def _plan_refs(lake: Lake, reader: LakeReader, parsed: ParsedQuery, *, snapshot: Snapshot, depth: int) -> SqlPlan:
    from ducklake_cli.engine.planning.sql_rewrite import parse_query, suggest, transpile_view, view_column_aliases

    if depth > MAX_VIEW_DEPTH:
        raise QueryError("views nest too deeply (a view that refers to itself?)")
    views: dict[TableRef, str] = {}
    out = SqlPlan(spark_sql="")
    catalog_at: dict[int, tuple[dict[str, TableInfo], list[SchemaInfo]]] = {}  # one catalog read per snapshot
    data_path = reader.data_path
    for ref in parsed.table_refs():
        if ref in views:
            continue
        sid = _ref_snapshot(reader, ref, snapshot)
        if sid not in catalog_at:
            # Spark and DuckDB resolve identifiers case-insensitively.
            catalog_at[sid] = ({t.qualified_name.lower(): t for t in reader.tables(sid)}, reader.schemas(sid))
        tables, schemas = catalog_at[sid]
        view_name = f"__ducklake_{next(_view_ids)}"
        views[ref] = view_name
        wanted = ref.qualified.lower()
        if wanted in tables:
            plan = plan_scan(reader, table=tables[wanted], snapshot_id=sid, data_path=data_path,
                             schemas=schemas, predicates=parsed.predicates_for(ref),
                             storage_options=lake.storage_options)
            out.scans.append(plan)
            out.views.append((view_name, plan, parsed.uses_rowid()))
            continue
        lake_views = {f"{v.schema_name}.{v.name}".lower(): v for v in reader.views(sid)}
        view = lake_views.get(wanted)
        if view is None:
            known = [t.qualified_name for t in tables.values()]
            known += [f"{v.schema_name}.{v.name}" for v in lake_views.values()]
            close = suggest(ref.qualified, known)
            hint = f"did you mean {', '.join(close)}?" if close else "list tables with `ducklake inspect CATALOG`"
            raise NotFoundError(f"table {ref.qualified} does not exist at snapshot {sid}", hint=hint)
        qualified = f"{view.schema_name}.{view.name}"
        text = transpile_view(view.sql or "", schema=view.schema_name, view=qualified)
        inner = _plan_refs(lake, reader, parse_query(text), snapshot=reader.snapshot(sid), depth=depth + 1)
        inner.view, inner.column_aliases = qualified, view_column_aliases(view.column_aliases)
        out.scans.extend(inner.scans)
        out.views.append((view_name, inner, False))
    out.spark_sql = parsed.rewrite(views)
    return out


def register_views(spark: SparkSession, plan: SqlPlan) -> None:
    """Create the plan's temp views on Spark: table scans, and lake views built on their own views."""
    from ducklake_cli.engine.scan import scan

    for name, source, with_rowid in plan.views:
        if isinstance(source, ScanPlan):
            scan(spark, source, with_rowid=with_rowid).createOrReplaceTempView(name)
        else:
            register_views(spark, source)
            _view_frame(spark, source).createOrReplaceTempView(name)


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


def sql_dataframe(
    lake: Lake, query: str, *, snapshot: int | None = None, as_of: dt.datetime | None = None,
    spark: SparkSession | None = None,
) -> DataFrame:
    """A Spark SQL statement over the lake's tables as a DataFrame."""
    session = spark or lake.spark()
    with lake.reader() as r:
        plan = plan_sql(lake, r, query, snapshot=pick_snapshot(r, snapshot, as_of))
    register_views(session, plan)
    if plan.count_only is not None:
        column, count = plan.count_only
        return session.createDataFrame([(count,)], f"`{column}` bigint")
    return session.sql(plan.spark_sql)


@dataclass(frozen=True)
class ExplainInfo:
    """`--explain`: files kept and pruned per table scan, and Spark's plan."""

    scans: tuple[dict[str, Any], ...]
    spark_plan: str


@dataclass(frozen=True)
class QueryResult:
    """Rows of a query (possibly limited), where they were written, or a stream of all of them."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool = False
    output: str | None = None
    row_count: int | None = None  # rows written to `output`, or all rows when `truncated`
    explain: ExplainInfo | None = None
    stream: RowStream | None = None  # every row, for `--format json|csv` (read once, after the result returns)
    encoders: tuple[Encoder, ...] | None = None  # per column: value -> JSON-ready (None for metadata counts)

    def to_json(self) -> Any:
        """A list of row objects (or the explain/output summary)."""
        if self.explain is not None:
            return jsonable(self.explain)
        if self.output is not None:
            return {"output": self.output, "rows": self.row_count}
        encoders = self.encoders or tuple(jsonable for _ in self.columns)
        return [{c: enc(v) for c, enc, v in zip(self.columns, encoders, row, strict=True)} for row in self.rows]

    def sections(self) -> list[Section]:
        """The rows as one table."""
        if self.explain is not None:
            rows = tuple((s["table"], s["snapshot_id"], s["files_kept"], s["files_pruned"], s["inlined_rows"])
                         for s in self.explain.scans)
            return [Section("Scans", ("table", "snapshot", "files_kept", "files_pruned", "inlined_rows"), rows),
                    Section("Spark plan", ("plan",), ((self.explain.spark_plan,),), csv=False)]
        if self.output is not None:
            return [Section("Written", ("output", "rows"), ((self.output, self.row_count),))]
        if self.encoders is None:
            return [Section("Result", self.columns, self.rows, data=True)]
        from ducklake_cli.engine.output import cell_text

        text = tuple(tuple(None if v is None else cell_text(enc(v)) for enc, v in zip(self.encoders, row, strict=True))
                     for row in self.rows)
        return [Section("Result", self.columns, text, data=True)]


def run_query(
    lake: Lake, query: str, *, snapshot: int | None = None, as_of: dt.datetime | None = None,
    limit: int | None = None, output: str | None = None, explain: bool = False, stream: bool = False,
    display: int | None = None,
) -> QueryResult:
    """What `ducklake query` does: a count from metadata when possible, else Spark.

    `stream` returns every row as a `RowStream` (for machine formats); else at most `display` rows are fetched
    (all when None) and `truncated`/`row_count` tell how many there are in all.
    """
    # Planned once, from metadata: unknown tables and snapshots fail before a JVM starts.
    with lake.reader() as r:
        plan = plan_sql(lake, r, query, snapshot=pick_snapshot(r, snapshot, as_of))
    if plan.count_only is not None and not explain and output is None:
        column, count = plan.count_only
        return QueryResult(columns=(column,), rows=((count,),))
    spark = lake.spark()
    with spark_errors():
        register_views(spark, plan)
    from ducklake_cli.engine.progress import spark_progress

    with spark_errors(), spark_progress(spark):
        return _execute(spark, plan, limit=limit, output=output, explain=explain, stream=stream, display=display)


def _execute(
    spark: SparkSession, plan: SqlPlan, *, limit: int | None, output: str | None, explain: bool, stream: bool,
    display: int | None,
) -> QueryResult:
    if plan.count_only is not None:
        column, count = plan.count_only
        df = spark.createDataFrame([(count,)], f"`{column}` bigint")
    else:
        df = spark.sql(plan.spark_sql)
    if explain:
        scans = tuple({"table": p.table.qualified_name, "snapshot_id": p.snapshot_id, "files_kept": len(p.files),
                       "files_pruned": len(p.pruned_file_ids),
                       "inlined_rows": sum(i.rows.num_rows for i in p.inlined)} for p in plan.scans)
        return QueryResult(columns=(), rows=(), explain=ExplainInfo(scans, _spark_plan(df)))
    if limit is not None:
        df = df.limit(limit)
    if output is not None:
        from ducklake_cli.engine.output import write_output

        count = write_output(df, output)
        return QueryResult(columns=tuple(df.columns), rows=(), output=output, row_count=count)
    from ducklake_cli.engine.output import encoder, row_stream

    if stream:
        rows = row_stream(df)
        return QueryResult(columns=rows.columns, rows=(), stream=RowStream(rows.columns, rows.encoders,
                                                                           _guarded(rows.rows)))
    fetched = df.collect() if display is None else df.limit(display + 1).collect()
    schema = df.schema
    truncated = display is not None and len(fetched) > display
    return QueryResult(columns=tuple(schema.names), rows=tuple(tuple(r) for r in fetched[:display]),
                       truncated=truncated, row_count=int(df.count()) if truncated else len(fetched),
                       encoders=tuple(encoder(f.dataType) for f in schema.fields))


def _guarded(rows: Iterable[Any]) -> Iterator[Any]:
    """Rows whose fetching raises our one-line errors: the stream is read after `run_query` returns."""
    with spark_errors():
        yield from rows


def _spark_plan(df: DataFrame) -> str:
    try:
        return str(df._jdf.queryExecution().toString())  # classic Spark
    except Exception:  # Spark Connect has no _jdf; its explain prints instead of returning
        return "(Spark plan not available over Spark Connect; run with --master instead)"
