"""A Spark SQL statement over a lake's tables, resolved from metadata alone (no Spark): the scan behind each table it
reads, the plans of the lake views it reads, and its rewritten SQL (`engine/run_query.py` runs it)."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import SchemaInfo, Snapshot, TableInfo
from ducklake_cli.catalog.names import pick_entry
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.catalog.snapshots import timestamp_or_none
from ducklake_cli.engine.planning.counts import table_counts
from ducklake_cli.engine.planning.feed_plan import FeedPlan
from ducklake_cli.engine.planning.plan_cache import PlanCache
from ducklake_cli.engine.planning.scan_plan import ScanPlan, plan_scan
from ducklake_cli.errors import NotFoundError, QueryError

if TYPE_CHECKING:
    from ducklake_cli.engine.planning.feed_sql import FeedRef
    from ducklake_cli.engine.planning.sql_rewrite import ParsedQuery, TableRef

_view_ids = itertools.count()
MAX_VIEW_DEPTH = 16


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
    # Temp views of the change-feed table functions it reads: (view name, feed plan, feed kind).
    feeds: list[tuple[str, FeedPlan, str]] = field(default_factory=list)


def _ref_snapshot(reader: MetadataReader, ref: TableRef, default: Snapshot) -> int:
    if ref.version is not None:
        return reader.snapshot(ref.version).snapshot_id
    if ref.timestamp is not None:
        when = timestamp_or_none(ref.timestamp)
        if when is None:
            raise QueryError(f"TIMESTAMP AS OF {ref.timestamp!r} is not a timestamp")
        return reader.snapshot_at(when).snapshot_id
    return default.snapshot_id


def plan_sql(reader: MetadataReader, query: str, *, snapshot: Snapshot, data_path: str,
             storage_options: Mapping[str, Any], bound: frozenset[str] = frozenset(),
             cache: PlanCache | None = None) -> SqlPlan:
    """Resolve every table and view a statement reads, at `snapshot` unless a table says `VERSION`/`TIMESTAMP AS
    OF`; a plain `count(*)` of one table is answered from metadata. `bound`: temp views the caller registers;
    `cache`: the lake's plans of committed snapshots, used and filled."""
    from ducklake_cli.engine.planning.sql_rewrite import parse_query

    parsed = parse_query(query, bound=bound)
    if not bound and (count_ref := parsed.plain_count()) is not None:
        sid = _ref_snapshot(reader, count_ref, snapshot)
        table = reader.find_table(sid, count_ref.dotted)
        counts = table_counts(reader, snapshot_id=sid, data_path=data_path, tables=[table],
                              schemas=reader.schemas(sid), storage_options=storage_options)
        return SqlPlan(spark_sql="", count_only=(parsed.plain_count_alias(), counts[table.table_id].live_rows))
    return _plan_refs(reader, parsed, snapshot=snapshot, data_path=data_path, storage_options=storage_options,
                      depth=0, cache=cache if cache is not None else PlanCache(0))


def _view_name() -> str:
    """A temp view name no other statement of this process uses."""
    return f"__ducklake_{next(_view_ids)}"


def _catalog_at(reader: MetadataReader, sid: int) -> tuple[dict[str, TableInfo], list[SchemaInfo]]:
    """The tables at a snapshot by lower-case qualified name (Spark and DuckDB resolve identifiers
    case-insensitively), and its schemas."""
    return {t.qualified_name.lower(): t for t in reader.tables(sid)}, reader.schemas(sid)


def _plan_refs(reader: MetadataReader, parsed: ParsedQuery, *, snapshot: Snapshot, data_path: str,
               storage_options: Mapping[str, Any], depth: int, cache: PlanCache) -> SqlPlan:
    from ducklake_cli.engine.planning.sql_rewrite import parse_query, suggest, transpile_view, view_column_aliases

    if depth > MAX_VIEW_DEPTH:
        raise QueryError("views nest too deeply (a view that refers to itself?)")
    views: dict[TableRef, str] = {}
    out = SqlPlan(spark_sql="")
    catalog_at: dict[int, tuple[dict[str, TableInfo], list[SchemaInfo]]] = {}  # one catalog read per snapshot
    for ref in parsed.table_refs():
        if ref in views:
            continue
        sid = _ref_snapshot(reader, ref, snapshot)
        if sid not in catalog_at:
            catalog_at[sid] = cache.get(("catalog", sid), partial(_catalog_at, reader, sid))
        tables, schemas = catalog_at[sid]
        nested = reader.v11
        found = pick_entry(list(tables.values()), ref.path, nested=nested)
        if found is not None:
            key = (sid, found.table_id, tuple(parsed.predicates_for(ref)))
            plan = cache.get(("scan", *key), partial(
                plan_scan, reader, table=found, snapshot_id=sid, data_path=data_path, schemas=schemas,
                predicates=key[2], storage_options=storage_options))
            out.scans.append(plan)
            # A table's own column named rowid shadows the virtual one, as in DuckDB.
            with_rowid = parsed.uses_rowid() and all(c.name.lower() != "rowid" for c in plan.columns)
            # A cached scan keeps its view name: the session's view of that name already holds its rows.
            views[ref] = cache.get(("view", *key, with_rowid), _view_name)
            out.views.append((views[ref], plan, with_rowid))
            continue
        views[ref] = view_name = _view_name()
        lake_views = reader.views(sid)
        view = pick_entry(lake_views, ref.path, nested=nested)
        if view is None:
            known = [t.qualified_name for t in tables.values()]
            known += [f"{v.schema_name}.{v.name}" for v in lake_views]
            wanted = ref.dotted if nested else ref.qualified
            close = suggest(wanted, known)
            hint = f"did you mean {', '.join(close)}?" if close else "list tables with `ducklake inspect CATALOG`"
            raise NotFoundError(f"table {wanted} does not exist at snapshot {sid}", hint=hint)
        qualified = f"{view.schema_name}.{view.name}"
        text = transpile_view(view.sql or "", schema=view.schema_path, view=qualified, nested=nested)
        inner = _plan_refs(reader, parse_query(text), snapshot=reader.snapshot(sid), data_path=data_path,
                           storage_options=storage_options, depth=depth + 1, cache=cache)
        inner.view, inner.column_aliases = qualified, view_column_aliases(view.column_aliases)
        out.scans.extend(inner.scans)
        out.views.append((view_name, inner, False))
    feed_views = {ref: _plan_feed(reader, ref, out, data_path, storage_options) for ref in parsed.feed_refs()}
    rowid_views = frozenset(name for name, source, with_rowid in out.views if with_rowid)
    out.spark_sql = parsed.rewrite(views, rowid_views, feed_views)
    return out


def _plan_feed(reader: MetadataReader, ref: FeedRef, out: SqlPlan, data_path: str,
               storage_options: Mapping[str, Any]) -> str:
    """Plan one change-feed table function as a temp view of `out`; its name."""
    from ducklake_cli.engine.planning.feed_plan import plan_feed, resolve_range

    def bound(value: int | str) -> int | dt.datetime:
        if isinstance(value, int):
            return value
        when = timestamp_or_none(value)
        if when is None:
            raise QueryError(f"{ref.kind} of {ref.table}: {value!r} is neither a snapshot id nor a time")
        return when

    start, end = resolve_range(reader, bound(ref.start), bound(ref.end))
    table = reader.find_table(end, ref.table)
    plan = plan_feed(reader, table=table, ranges=[(start, end)], data_path=data_path, schemas=reader.schemas(end),
                     storage_options=storage_options)
    name = _view_name()
    out.feeds.append((name, plan, ref.kind))
    return name
