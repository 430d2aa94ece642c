"""`query`: DuckLake tables as Spark DataFrames, Spark SQL over them, results rendered or written to a file.

Planning is `engine/planning/sql_plan.py` (metadata only), running it `engine/run_query.py` (Spark); this module
picks the snapshot and shapes the result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import Snapshot
from ducklake_cli.catalog.snapshots import LATEST, SnapshotSelector
from ducklake_cli.engine.output import Encoder, RowStream
from ducklake_cli.engine.planning.predicates import Predicate
from ducklake_cli.engine.planning.sql_plan import SqlPlan
from ducklake_cli.engine.session import spark_errors
from ducklake_cli.lake import Lake, LakeReader
from ducklake_cli.ops.results import Section, jsonable

if TYPE_CHECKING:
    from ducklake_cli.engine.session import DataFrame, SparkSession


def table_dataframe(
    lake: Lake, name: str, *, at: SnapshotSelector = LATEST, spark: SparkSession | None = None,
    with_rowid: bool = False, predicates: Sequence[Predicate] = (),
) -> DataFrame:
    """One table at a snapshot as a DataFrame."""
    from ducklake_cli.engine.planning.scan_plan import plan_scan
    from ducklake_cli.engine.scan import scan

    with lake.reader() as r:
        sid = at.resolve(r).snapshot_id
        plan = plan_scan(r, table=r.find_table(sid, name), snapshot_id=sid, data_path=r.data_path,
                         schemas=r.schemas(sid), predicates=predicates, storage_options=lake.storage_options)
    return scan(spark or lake.spark(), plan, with_rowid=with_rowid)


def plan_sql(lake: Lake, reader: LakeReader, query: str, *, snapshot: Snapshot,
             bound: frozenset[str] = frozenset()) -> SqlPlan:
    """Resolve every table and view a statement reads, from metadata alone (Spark runs it later); `bound` names
    temp views the caller registers itself."""
    from ducklake_cli.engine.planning import sql_plan

    return sql_plan.plan_sql(reader, query, snapshot=snapshot, data_path=reader.data_path,
                             storage_options=lake.storage_options, bound=bound,
                             cache=None if bound else lake.plan_cache)


def _plan(lake: Lake, query: str, at: SnapshotSelector) -> SqlPlan:
    with lake.reader() as r:
        return plan_sql(lake, r, query, snapshot=at.resolve(r))


def sql_dataframe(lake: Lake, query: str, *, at: SnapshotSelector = LATEST,
                  spark: SparkSession | None = None) -> DataFrame:
    """A Spark SQL statement over the lake's tables as a DataFrame."""
    from ducklake_cli.engine.run_query import frame, register_views

    session = spark or lake.spark()
    plan = _plan(lake, query, at)
    with spark_errors():  # Spark's analysis errors (an unknown column) as ours
        register_views(session, plan, lake.plan_cache)
        return frame(session, plan)


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
    lake: Lake, query: str, *, at: SnapshotSelector = LATEST, limit: int | None = None, output: str | None = None,
    explain: bool = False, stream: bool = False, display: int | None = None,
) -> QueryResult:
    """What `ducklake query` does: a count from metadata when possible, else Spark.

    `stream` returns every row as a `RowStream` (for machine formats); else at most `display` rows are fetched
    (all when None) and `truncated`/`row_count` tell how many there are in all.
    """
    # Planned once, from metadata: unknown tables and snapshots fail before a JVM starts.
    plan = _plan(lake, query, at)
    if plan.count_only is not None and not explain and output is None:
        column, count = plan.count_only
        return QueryResult(columns=(column,), rows=((count,),))
    from ducklake_cli.engine import run_query as run
    from ducklake_cli.engine.progress import spark_progress

    spark = lake.spark()
    with spark_errors():
        run.register_views(spark, plan, lake.plan_cache)
    with spark_errors(), spark_progress(spark):
        if explain:
            scans = tuple({"table": p.table.qualified_name, "snapshot_id": p.snapshot_id,
                           "files_kept": len(p.files), "files_pruned": p.pruned_files,
                           "inlined_rows": sum(i.rows.num_rows for i in p.inlined)} for p in plan.scans)
            return QueryResult(columns=(), rows=(), explain=ExplainInfo(scans, run.spark_plan(run.frame(spark, plan))))
        return deliver(run.frame(spark, plan, limit=limit), output=output, stream=stream, display=display)


def deliver(df: DataFrame, *, output: str | None, stream: bool, display: int | None) -> QueryResult:
    """A query's rows as the command wants them: written to `output`, streamed, or fetched (at most `display`)."""
    from ducklake_cli.engine import run_query as run

    if output is not None:
        from ducklake_cli.engine.output import write_output

        count = write_output(df, output)
        return QueryResult(columns=tuple(df.columns), rows=(), output=output, row_count=count)
    if stream:
        rows = run.stream_rows(df)
        return QueryResult(columns=rows.columns, rows=(), stream=rows)
    got = run.fetch(df, display)
    return QueryResult(columns=got.columns, rows=got.rows, truncated=got.truncated, row_count=got.row_count,
                       encoders=got.encoders)
