"""Read DuckLake metadata at a snapshot: the typed queries every command builds on."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, case, func, literal, not_, or_, select, true

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import Backend
from ducklake_cli.catalog.models import (
    ColumnInfo,
    ColumnStats,
    DataFile,
    DeleteFile,
    InlinedTable,
    LakeMetadata,
    NameMapping,
    OptionValue,
    PartitionField,
    PartitionSpec,
    SchemaInfo,
    Snapshot,
    SortKey,
    TableColumnStats,
    TableInfo,
    TableStats,
    ViewInfo,
)
from ducklake_cli.errors import NotADuckLakeError, NotFoundError, UnsupportedVersionError

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection, Table

SUPPORTED_VERSIONS = {"1.0"}


def visible(table: Table, snapshot_id: int) -> ColumnElement[bool]:
    """The spec §1.1 predicate: begin <= S and (end is NULL or S < end)."""
    return and_(
        table.c.begin_snapshot <= snapshot_id,
        or_(table.c.end_snapshot.is_(None), table.c.end_snapshot > snapshot_id),
    )


@dataclass
class FileTotals:
    """Aggregates of one table's files at a snapshot (see `MetadataReader.file_totals`)."""

    data_files: int = 0
    records: int = 0
    data_bytes: int = 0
    delete_files: int = 0
    deleted: int = 0
    delete_bytes: int = 0
    partial_data: list[tuple[str, bool]] = field(default_factory=list)
    partial_deletes: list[tuple[str, bool]] = field(default_factory=list)


@dataclass
class ColumnStatsSummary:
    """A leaf column's file stats merged over the live files (see `MetadataReader.column_stats_at`)."""

    null_count: int | None
    value_count: int | None
    contains_nan: bool | None
    mins: list[str] = field(default_factory=list)
    maxs: list[str] = field(default_factory=list)


def split_qualified(name: str) -> list[str]:
    """`a."b.c"."d""e"` → `[a, b.c, d"e]`: dots split parts except inside double quotes (`""` is a quote)."""
    parts: list[str] = []
    current: list[str] = []
    i, quoted = 0, False
    while i < len(name):
        ch = name[i]
        if ch == '"':
            if quoted and name[i + 1:i + 2] == '"':
                current.append('"')
                i += 1
            else:
                quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def _bool(value: Any) -> bool | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "t")
    return bool(value)


class MetadataReader:
    """Typed queries over one open catalog connection."""

    def __init__(self, conn: Connection, backend: Backend) -> None:
        self.conn = conn
        self.backend = backend
        self._tables: set[str] | None = None
        self._inlined_names: dict[str, list[str]] = {}
        self._metadata: LakeMetadata | None = None

    # ----- catalog-wide ---------------------------------------------------------------------------------
    def table_names(self) -> set[str]:
        """All table names in the metadata schema (cached for this reader)."""
        if self._tables is None:
            self._tables = self.backend.list_tables(self.conn)
        return self._tables

    def metadata(self) -> LakeMetadata:
        """Global keys and scoped options; checks the format version (read once per reader)."""
        if self._metadata is None:
            self._metadata = self._read_metadata()
        return self._metadata

    def _read_metadata(self) -> LakeMetadata:
        if "ducklake_metadata" not in self.table_names() or "ducklake_snapshot" not in self.table_names():
            raise NotADuckLakeError(
                f"{self.backend.target.display()} holds no DuckLake catalog (no ducklake_metadata table)",
                hint="create one with `ducklake create-catalog`, or check --metadata-schema",
            )
        t = s.metadata_t
        rows = self.conn.execute(select(t.c.key, t.c.value, t.c.scope, t.c.scope_id)).all()
        globals_ = {r.key: r.value for r in rows if r.scope is None}
        version = globals_.get("version")
        if version not in SUPPORTED_VERSIONS:
            raise UnsupportedVersionError(
                f"DuckLake catalog format version {version!r} is not supported (this tool reads and writes 1.0)",
                hint="older catalogs can be migrated by attaching them once with DuckDB's ducklake extension "
                "(AUTOMATIC_MIGRATION true)",
            )
        data_path = globals_.get("data_path") or ""
        options = tuple(
            OptionValue(r.key, r.value, r.scope, r.scope_id)
            for r in rows
            if r.key not in ("version", "created_by", "data_path", "encrypted") or r.scope is not None
        )
        return LakeMetadata(
            version=version or "", data_path=data_path, created_by=globals_.get("created_by"),
            encrypted=(globals_.get("encrypted") == "true"), options=options,
        )

    def _snapshot_query(self) -> Any:
        sn, ch = s.snapshot_t, s.snapshot_changes_t
        return select(
            sn.c.snapshot_id, sn.c.snapshot_time, sn.c.schema_version, sn.c.next_catalog_id, sn.c.next_file_id,
            ch.c.changes_made, ch.c.author, ch.c.commit_message, ch.c.commit_extra_info,
        ).select_from(sn.outerjoin(ch, ch.c.snapshot_id == sn.c.snapshot_id))

    def _snapshot(self, r: Any) -> Snapshot:
        when = self.backend.decode_timestamp(r.snapshot_time) or dt.datetime.fromtimestamp(0, dt.UTC)
        return Snapshot(
            snapshot_id=r.snapshot_id, snapshot_time=when, schema_version=r.schema_version,
            next_catalog_id=r.next_catalog_id, next_file_id=r.next_file_id, changes_made=r.changes_made,
            author=r.author, commit_message=r.commit_message, commit_extra_info=r.commit_extra_info,
        )

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot, oldest first."""
        rows = self.conn.execute(self._snapshot_query().order_by(s.snapshot_t.c.snapshot_id)).all()
        return [self._snapshot(r) for r in rows]

    def snapshot_count(self) -> int:
        """How many snapshots the catalog holds."""
        return int(self.conn.execute(select(func.count()).select_from(s.snapshot_t)).scalar_one())

    def latest_snapshot(self) -> Snapshot:
        """The newest snapshot."""
        sn = s.snapshot_t
        latest = select(func.max(sn.c.snapshot_id)).scalar_subquery()
        row = self.conn.execute(self._snapshot_query().where(sn.c.snapshot_id == latest)).first()
        if row is None:
            raise NotADuckLakeError(f"{self.backend.target.display()} has no snapshots: not a usable DuckLake")
        return self._snapshot(row)

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """One snapshot by id (expired ids are gone: an error, as in DuckDB)."""
        row = self.conn.execute(self._snapshot_query().where(s.snapshot_t.c.snapshot_id == snapshot_id)).first()
        if row is None:
            bounds = self.conn.execute(
                select(func.min(s.snapshot_t.c.snapshot_id), func.max(s.snapshot_t.c.snapshot_id))
            ).one()
            raise NotFoundError(
                f"snapshot {snapshot_id} does not exist (it may have been expired)",
                hint=f"snapshots range from {bounds[0]} to {bounds[1]}; list them with `inspect --snapshots`",
            )
        return self._snapshot(row)

    def snapshot_at(self, when: dt.datetime) -> Snapshot:
        """The newest snapshot committed at or before a time (DuckDB's `AT (TIMESTAMP => …)`)."""
        # Compared in Python: SQLite stores the time as text, so SQL comparison would be lexical per backend.
        when_utc = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
        sn = s.snapshot_t
        best: tuple[dt.datetime, int] | None = None
        for sid, raw in self.conn.execute(select(sn.c.snapshot_id, sn.c.snapshot_time)):
            t = self.backend.decode_timestamp(raw)
            if t is not None and t <= when_utc and (best is None or (t, sid) > best):
                best = (t, sid)
        if best is None:
            raise NotFoundError(
                f"no snapshot at or before {when_utc.isoformat()}: the lake's history starts later",
                hint="list snapshots and their times with `inspect --snapshots`",
            )
        return self.snapshot(best[1])

    # ----- catalog objects at S ---------------------------------------------------------------------------
    def schemas(self, snapshot_id: int) -> list[SchemaInfo]:
        """Schemas visible at S, by id."""
        t = s.schema_t
        rows = self.conn.execute(select(t).where(visible(t, snapshot_id)).order_by(t.c.schema_id)).all()
        return [
            SchemaInfo(r.schema_id, str(r.schema_uuid), r.schema_name, r.path, bool(_bool(r.path_is_relative)),
                       r.begin_snapshot)
            for r in rows
        ]

    def tables(self, snapshot_id: int, *, table_ids: Sequence[int] | None = None) -> list[TableInfo]:
        """Tables visible at S with columns, inlined tables, partition and sort specs and tags."""
        schemas = {sc.schema_id: sc.name for sc in self.schemas(snapshot_id)}
        t = s.table_t
        q = select(t).where(visible(t, snapshot_id)).order_by(t.c.table_id)
        if table_ids is not None:
            q = q.where(t.c.table_id.in_(list(table_ids)))
        table_rows = [r for r in self.conn.execute(q).all() if r.schema_id in schemas]
        if not table_rows:
            return []
        ids = [r.table_id for r in table_rows]
        columns = self._columns(snapshot_id, ids)
        inlined = self._inlined_tables(ids)
        partitions = self._partitions(snapshot_id, ids)
        sorts = self._sort_keys(snapshot_id, ids)
        tags = self._tags(snapshot_id, ids)
        column_tags = self._column_tags(snapshot_id, ids)
        return [
            TableInfo(
                table_id=r.table_id, table_uuid=str(r.table_uuid), schema_id=r.schema_id,
                schema_name=schemas[r.schema_id], name=r.table_name, path=r.path,
                path_is_relative=bool(_bool(r.path_is_relative)), begin_snapshot=r.begin_snapshot,
                columns=tuple(columns.get(r.table_id, ())), inlined_tables=tuple(inlined.get(r.table_id, ())),
                partition=partitions.get(r.table_id), sort_keys=tuple(sorts.get(r.table_id, ())),
                tags=tuple(tags.get(r.table_id, ())), column_tags=tuple(column_tags.get(r.table_id, ())),
            )
            for r in table_rows
        ]

    def find_table(self, snapshot_id: int, name: str) -> TableInfo:
        """A table by `name` (schema main) or `schema.name` (a leading catalog part is ignored)."""
        parts = split_qualified(name)
        schema_name, table_name = ("main", parts[-1]) if len(parts) == 1 else (parts[-2], parts[-1])
        tables = self.tables(snapshot_id)
        for tbl in tables:
            if tbl.schema_name == schema_name and tbl.name == table_name:
                return tbl
        wanted = (schema_name.lower(), table_name.lower())
        folded = [t for t in tables if (t.schema_name.lower(), t.name.lower()) == wanted]
        if len(folded) == 1:  # identifiers are case-insensitive in DuckDB and Spark
            return folded[0]
        known = sorted(tbl.qualified_name for tbl in tables)
        from difflib import get_close_matches

        close = get_close_matches(f"{schema_name}.{table_name}", known, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else (
            f"tables at snapshot {snapshot_id}: {', '.join(known[:10])}" if known else "the lake has no tables"
        )
        raise NotFoundError(f"table {schema_name}.{table_name} does not exist at snapshot {snapshot_id}", hint=hint)

    def _columns(self, snapshot_id: int, table_ids: list[int]) -> dict[int, list[ColumnInfo]]:
        t = s.column_t
        rows = self.conn.execute(
            select(t).where(visible(t, snapshot_id), t.c.table_id.in_(table_ids)).order_by(
                t.c.table_id, t.c.column_order
            )
        ).all()
        by_table: dict[int, list[Any]] = defaultdict(list)
        for r in rows:
            by_table[r.table_id].append(r)
        out: dict[int, list[ColumnInfo]] = {}
        for tid, trows in by_table.items():
            children: dict[int | None, list[Any]] = defaultdict(list)
            for r in trows:
                children[r.parent_column].append(r)

            def build(r: Any, kids: dict[int | None, list[Any]] = children) -> ColumnInfo:
                return ColumnInfo(
                    column_id=r.column_id, name=r.column_name, type=r.column_type,
                    nulls_allowed=_bool(r.nulls_allowed) is not False, initial_default=r.initial_default,
                    default_value=r.default_value, default_value_type=r.default_value_type,
                    parent_column=r.parent_column, column_order=r.column_order, begin_snapshot=r.begin_snapshot,
                    children=tuple(build(c) for c in kids.get(r.column_id, [])),
                )

            out[tid] = [build(r) for r in children[None]]
        return out

    def _inlined_tables(self, table_ids: list[int]) -> dict[int, list[InlinedTable]]:
        t = s.inlined_tables_t
        rows = self.conn.execute(
            select(t).where(t.c.table_id.in_(table_ids)).order_by(t.c.table_id, t.c.schema_version)
        ).all()
        existing = self.table_names()
        out: dict[int, list[InlinedTable]] = defaultdict(list)
        for r in rows:
            if r.table_name in existing:
                out[r.table_id].append(InlinedTable(r.table_name, r.schema_version))
        return out

    def _partitions(self, snapshot_id: int, table_ids: list[int]) -> dict[int, PartitionSpec]:
        pi, pc = s.partition_info_t, s.partition_column_t
        rows = self.conn.execute(
            select(pi.c.table_id, pi.c.partition_id, pc.c.partition_key_index, pc.c.column_id, pc.c.transform)
            .select_from(pi.join(pc, and_(pc.c.partition_id == pi.c.partition_id, pc.c.table_id == pi.c.table_id)))
            .where(visible(pi, snapshot_id), pi.c.table_id.in_(table_ids))
            .order_by(pi.c.table_id, pc.c.partition_key_index)
        ).all()
        fields: dict[int, list[PartitionField]] = defaultdict(list)
        pid: dict[int, int] = {}
        for r in rows:
            pid[r.table_id] = r.partition_id
            fields[r.table_id].append(PartitionField(r.partition_key_index, r.column_id, r.transform))
        return {tid: PartitionSpec(pid[tid], tuple(f)) for tid, f in fields.items()}

    def _sort_keys(self, snapshot_id: int, table_ids: list[int]) -> dict[int, list[SortKey]]:
        si, se = s.sort_info_t, s.sort_expression_t
        rows = self.conn.execute(
            select(si.c.table_id, se.c.sort_key_index, se.c.expression, se.c.sort_direction, se.c.null_order)
            .select_from(si.join(se, and_(se.c.sort_id == si.c.sort_id, se.c.table_id == si.c.table_id)))
            .where(visible(si, snapshot_id), si.c.table_id.in_(table_ids))
            .order_by(si.c.table_id, se.c.sort_key_index)
        ).all()
        out: dict[int, list[SortKey]] = defaultdict(list)
        for r in rows:
            out[r.table_id].append(SortKey(r.sort_key_index, r.expression, r.sort_direction, r.null_order))
        return out

    def _tags(self, snapshot_id: int, object_ids: list[int]) -> dict[int, list[tuple[str, str | None]]]:
        t = s.tag_t
        rows = self.conn.execute(
            select(t.c.object_id, t.c.key, t.c.value).where(visible(t, snapshot_id), t.c.object_id.in_(object_ids))
        ).all()
        out: dict[int, list[tuple[str, str | None]]] = defaultdict(list)
        for r in rows:
            out[r.object_id].append((r.key, r.value))
        return out

    def _column_tags(self, snapshot_id: int, table_ids: list[int]) -> dict[int, list[tuple[int, str, str | None]]]:
        t = s.column_tag_t
        rows = self.conn.execute(
            select(t.c.table_id, t.c.column_id, t.c.key, t.c.value).where(
                visible(t, snapshot_id), t.c.table_id.in_(table_ids)
            )
        ).all()
        out: dict[int, list[tuple[int, str, str | None]]] = defaultdict(list)
        for r in rows:
            out[r.table_id].append((r.column_id, r.key, r.value))
        return out

    def views(self, snapshot_id: int) -> list[ViewInfo]:
        """Views visible at S."""
        schemas = {sc.schema_id: sc.name for sc in self.schemas(snapshot_id)}
        t = s.view_t
        rows = self.conn.execute(select(t).where(visible(t, snapshot_id)).order_by(t.c.view_id)).all()
        return [
            ViewInfo(r.view_id, str(r.view_uuid), r.schema_id, schemas[r.schema_id], r.view_name, r.dialect, r.sql,
                     r.column_aliases)
            for r in rows
            if r.schema_id in schemas
        ]

    # ----- files at S -------------------------------------------------------------------------------------
    def data_files(self, snapshot_id: int, table_ids: Iterable[int]) -> list[DataFile]:
        """Data files visible at S for the tables."""
        t = s.data_file_t
        rows = self.conn.execute(
            select(t).where(visible(t, snapshot_id), t.c.table_id.in_(list(table_ids))).order_by(t.c.data_file_id)
        ).all()
        return [
            DataFile(
                data_file_id=r.data_file_id, table_id=r.table_id, begin_snapshot=r.begin_snapshot,
                end_snapshot=r.end_snapshot, path=r.path, path_is_relative=bool(_bool(r.path_is_relative)),
                file_format=r.file_format, record_count=r.record_count or 0, file_size_bytes=r.file_size_bytes or 0,
                footer_size=r.footer_size, row_id_start=r.row_id_start, partition_id=r.partition_id,
                encryption_key=r.encryption_key, mapping_id=r.mapping_id, partial_max=r.partial_max,
            )
            for r in rows
        ]

    def delete_files(self, snapshot_id: int, table_ids: Iterable[int]) -> list[DeleteFile]:
        """Delete files visible at S for the tables."""
        t = s.delete_file_t
        rows = self.conn.execute(
            select(t).where(visible(t, snapshot_id), t.c.table_id.in_(list(table_ids))).order_by(t.c.delete_file_id)
        ).all()
        return [
            DeleteFile(
                delete_file_id=r.delete_file_id, table_id=r.table_id, begin_snapshot=r.begin_snapshot,
                end_snapshot=r.end_snapshot, data_file_id=r.data_file_id, path=r.path,
                path_is_relative=bool(_bool(r.path_is_relative)), format=r.format, delete_count=r.delete_count or 0,
                file_size_bytes=r.file_size_bytes or 0, footer_size=r.footer_size, encryption_key=r.encryption_key,
                partial_max=r.partial_max,
            )
            for r in rows
        ]

    def inlined_deletes(self, snapshot_id: int, table_id: int) -> dict[int, int]:
        """Inlined file deletions at S, counted per data file id (the table is created on demand, so probe)."""
        name = s.inlined_delete_table_name(table_id)
        if name not in self.table_names():
            return {}
        q = self.backend.qualify(name)
        rows = self.conn.exec_driver_sql(
            f"SELECT file_id, count(*) FROM {q} WHERE begin_snapshot <= {int(snapshot_id)} GROUP BY file_id"
        ).all()
        return {int(r[0]): int(r[1]) for r in rows}

    def inlined_row_count(self, snapshot_id: int, inlined: InlinedTable) -> int:
        """Rows of one inlined-data table live at S."""
        q = self.backend.qualify(inlined.table_name)
        sid = int(snapshot_id)
        return int(
            self.conn.exec_driver_sql(
                f"SELECT count(*) FROM {q} WHERE begin_snapshot <= {sid} "
                f"AND (end_snapshot IS NULL OR end_snapshot > {sid})"
            ).scalar_one()
        )

    def file_column_stats(self, table_id: int, data_file_ids: Sequence[int]) -> dict[int, list[ColumnStats]]:
        """Per-file column stats, keyed by data file id (files are immutable, so stats need no snapshot)."""
        t = s.file_column_stats_t
        out: dict[int, list[ColumnStats]] = defaultdict(list)
        if not data_file_ids:
            return out
        ids = list(data_file_ids)
        # Chunked IN lists keep every backend under its bind-parameter limit.
        for i in range(0, len(ids), 5000):
            rows = self.conn.execute(
                select(t).where(t.c.table_id == table_id, t.c.data_file_id.in_(ids[i:i + 5000]))
            ).all()
            for r in rows:
                out[r.data_file_id].append(
                    ColumnStats(r.column_id, r.value_count, r.null_count, r.min_value, r.max_value,
                                _bool(r.contains_nan), r.column_size_bytes)
                )
        return out

    def column_stats_at(self, snapshot_id: int, table_id: int) -> dict[int, ColumnStatsSummary]:
        """Per leaf column, file stats merged over the data files live at S (counts summed in SQL; min/max
        candidates returned distinct, for a typed comparison by the caller)."""
        f, d = s.file_column_stats_t, s.data_file_t
        live = f.join(d, and_(d.c.data_file_id == f.c.data_file_id, visible(d, snapshot_id)))
        where = (f.c.table_id == table_id,)
        out: dict[int, ColumnStatsSummary] = {}
        nan_int = case((f.c.contains_nan.is_(True), literal(1)), else_=literal(0))
        for r in self.conn.execute(
            select(f.c.column_id, func.count(), func.count(f.c.null_count), func.sum(f.c.null_count),
                   func.count(f.c.value_count), func.sum(f.c.value_count), func.count(f.c.contains_nan),
                   func.sum(nan_int))
            .select_from(live).where(*where).group_by(f.c.column_id)
        ):
            n = int(r[1])
            out[r[0]] = ColumnStatsSummary(
                null_count=int(r[3] or 0) if r[2] == n else None,
                value_count=int(r[5] or 0) if r[4] == n else None,
                contains_nan=True if (r[7] or 0) > 0 else (False if r[6] == n else None),
            )
        for col, attr in ((f.c.min_value, "mins"), (f.c.max_value, "maxs")):
            for cid, value in self.conn.execute(
                select(f.c.column_id, col).distinct().select_from(live).where(*where, col.is_not(None))
            ).tuples().all():
                if cid in out:
                    getattr(out[cid], attr).append(value)
        return out

    def table_stats(self, table_ids: Iterable[int]) -> dict[int, TableStats]:
        """`ducklake_table_stats` rows by table id."""
        t = s.table_stats_t
        rows = self.conn.execute(select(t).where(t.c.table_id.in_(list(table_ids)))).all()
        return {r.table_id: TableStats(r.table_id, r.record_count, r.next_row_id, r.file_size_bytes) for r in rows}

    def table_column_stats(self, table_id: int) -> list[TableColumnStats]:
        """`ducklake_table_column_stats` rows of a table."""
        t = s.table_column_stats_t
        rows = self.conn.execute(select(t).where(t.c.table_id == table_id).order_by(t.c.column_id)).all()
        return [
            TableColumnStats(r.column_id, _bool(r.contains_null), _bool(r.contains_nan), r.min_value, r.max_value)
            for r in rows
        ]

    def file_totals(self, snapshot_id: int, table_ids: Sequence[int]) -> dict[int, FileTotals]:
        """Per table at S, in two grouped queries: data files, their rows and bytes; live delete files, their
        deleted rows and bytes. Partial files newer than S are listed apart: only their own rows tell."""
        d, x = s.data_file_t, s.delete_file_t
        ids = list(table_ids)
        out = {tid: FileTotals() for tid in ids}
        # File ids come from one counter: a delete file with an id at or past S's next_file_id was written after S.
        next_file_id = self.conn.execute(
            select(s.snapshot_t.c.next_file_id).where(s.snapshot_t.c.snapshot_id == snapshot_id)).scalar()
        whole = or_(d.c.partial_max.is_(None), d.c.partial_max <= snapshot_id)
        for r in self.conn.execute(
            select(d.c.table_id, func.count(), func.sum(case((whole, d.c.record_count), else_=literal(0))),
                   func.sum(d.c.file_size_bytes))
            .where(visible(d, snapshot_id), d.c.table_id.in_(ids)).group_by(d.c.table_id)
        ):
            out[r[0]].data_files, out[r[0]].records, out[r[0]].data_bytes = int(r[1]), int(r[2] or 0), int(r[3] or 0)
        live_data = and_(d.c.data_file_id == x.c.data_file_id, visible(d, snapshot_id))
        # A flush's delete file tags each position with its own snapshot but leaves partial_max NULL (begin = the
        # smallest): written after S, its rows past S must not count, so it is read like a partial file.
        # (Deletion vectors carry no snapshots; every term is NOT NULL, so `not_(x_whole)` is its exact complement.)
        written_by_s = x.c.delete_file_id < next_file_id if next_file_id is not None else true()
        x_whole = or_(
            and_(x.c.partial_max.is_(None), or_(written_by_s, func.coalesce(x.c.format, "parquet") == "puffin")),
            and_(x.c.partial_max.is_not(None), x.c.partial_max <= snapshot_id))
        for r in self.conn.execute(
            select(x.c.table_id, func.count(), func.sum(case((x_whole, x.c.delete_count), else_=literal(0))),
                   func.sum(x.c.file_size_bytes))
            .select_from(x.join(d, live_data))
            .where(visible(x, snapshot_id), x.c.table_id.in_(ids)).group_by(x.c.table_id)
        ):
            out[r[0]].delete_files, out[r[0]].deleted, out[r[0]].delete_bytes = (
                int(r[1]), int(r[2] or 0), int(r[3] or 0))
        for r in self.conn.execute(
            select(d.c.table_id, d.c.data_file_id, d.c.path, d.c.path_is_relative)
            .where(visible(d, snapshot_id), d.c.table_id.in_(ids), not_(whole))
        ):
            out[r.table_id].partial_data.append((r.path, bool(_bool(r.path_is_relative))))
        for r in self.conn.execute(
            select(x.c.table_id, x.c.path, x.c.path_is_relative)
            .select_from(x.join(d, live_data))
            .where(visible(x, snapshot_id), x.c.table_id.in_(ids), not_(x_whole))
        ):
            out[r.table_id].partial_deletes.append((r.path, bool(_bool(r.path_is_relative))))
        for tid in ids:
            per_file = self.inlined_deletes(snapshot_id, tid)
            if per_file:
                live = {r[0] for r in self.conn.execute(select(d.c.data_file_id).where(
                    visible(d, snapshot_id), d.c.table_id == tid, d.c.data_file_id.in_(list(per_file))))}
                out[tid].deleted += sum(n for fid, n in per_file.items() if fid in live)
        return out

    # ----- what a table scan needs ------------------------------------------------------------------------
    def partition_specs(self, table_id: int) -> dict[int, tuple[PartitionField, ...]]:
        """Every partition spec the table ever had (old files keep the spec they were written with)."""
        pc = s.partition_column_t
        out: dict[int, list[PartitionField]] = defaultdict(list)
        for r in self.conn.execute(
            select(pc).where(pc.c.table_id == table_id).order_by(pc.c.partition_id, pc.c.partition_key_index)
        ):
            out[r.partition_id].append(PartitionField(r.partition_key_index, r.column_id, r.transform))
        return {pid: tuple(fields) for pid, fields in out.items()}

    def file_partition_values(self, table_id: int, data_file_ids: Sequence[int]) -> dict[int, dict[int, str | None]]:
        """Partition key values (text, NULL for NULL) per data file."""
        t = s.file_partition_value_t
        out: dict[int, dict[int, str | None]] = defaultdict(dict)
        ids = list(data_file_ids)
        for i in range(0, len(ids), 5000):
            for r in self.conn.execute(
                select(t).where(t.c.table_id == table_id, t.c.data_file_id.in_(ids[i:i + 5000]))
            ):
                out[r.data_file_id][r.partition_key_index] = r.partition_value
        return out

    def name_mappings(self, mapping_ids: Iterable[int]) -> dict[int, list[NameMapping]]:
        """`ducklake_name_mapping` rows per mapping id (column ids are mapping-local)."""
        t = s.name_mapping_t
        out: dict[int, list[NameMapping]] = defaultdict(list)
        ids = list(mapping_ids)
        if not ids:
            return out
        for r in self.conn.execute(select(t).where(t.c.mapping_id.in_(ids)).order_by(t.c.mapping_id, t.c.column_id)):
            out[r.mapping_id].append(NameMapping(r.column_id, r.source_name, r.target_field_id, r.parent_column,
                                                 bool(_bool(r.is_partition))))
        return out

    def inlined_delete_positions(self, snapshot_id: int, table_id: int) -> dict[int, list[int]]:
        """Inlined file deletions at S: row positions per data file id."""
        name = s.inlined_delete_table_name(table_id)
        if name not in self.table_names():
            return {}
        out: dict[int, list[int]] = defaultdict(list)
        rows = self.conn.exec_driver_sql(
            f"SELECT file_id, row_id FROM {self.backend.qualify(name)} WHERE begin_snapshot <= {int(snapshot_id)}"
        )
        for file_id, pos in rows:
            out[int(file_id)].append(int(pos))
        return out

    def table_schema_versions(self, table_id: int) -> list[tuple[int, int]]:
        """`(begin_snapshot, schema_version)` of every version of one table's definition, oldest first."""
        t = s.schema_versions_t
        rows = self.conn.execute(select(t.c.begin_snapshot, t.c.schema_version).where(t.c.table_id == table_id)
                                 .order_by(t.c.begin_snapshot)).all()
        return [(int(r.begin_snapshot), int(r.schema_version)) for r in rows]

    def schema_version_snapshot(self, table_id: int, schema_version: int, fallback: int) -> int:
        """A snapshot at which the table had this schema version (to read an inlined table's column names)."""
        sv = s.schema_versions_t
        found = self.conn.execute(
            select(func.max(sv.c.begin_snapshot))
            .where(sv.c.table_id == table_id, sv.c.schema_version == schema_version)
        ).scalar()
        if found is not None:
            return int(found)
        sn = s.snapshot_t
        found = self.conn.execute(
            select(func.min(sn.c.snapshot_id)).where(sn.c.schema_version == schema_version)
        ).scalar()
        return int(found) if found is not None else fallback

    def inlined_column_names(self, table_name: str, columns: Sequence[ColumnInfo]) -> list[str]:
        """The physical name of each column in an inlined-data table. DuckDB's postgres scanner quotes a name only
        when DuckDB needs it, so PostgreSQL folds `"Id"` to `id`: match exactly, then ignoring case, then by place."""
        if table_name not in self._inlined_names:
            keys = self.conn.exec_driver_sql(f"SELECT * FROM {self.backend.qualify(table_name)} WHERE 1 = 0").keys()
            self._inlined_names[table_name] = [str(k) for k in keys][3:]
        physical = self._inlined_names[table_name]
        exact = set(physical)
        folded: dict[str, list[str]] = defaultdict(list)
        for name in physical:
            folded[name.lower()].append(name)
        out = []
        for i, c in enumerate(columns):
            if c.name in exact:
                out.append(c.name)
            elif len(folded.get(c.name.lower(), ())) == 1:
                out.append(folded[c.name.lower()][0])
            else:
                out.append(physical[i] if i < len(physical) and len(physical) == len(columns) else c.name)
        return out

    def _inlined_selects(self, inlined: InlinedTable, columns: Sequence[ColumnInfo]) -> str:
        names = self.inlined_column_names(inlined.table_name, columns)
        return ", ".join(self.backend.inlined_value_sql(self.backend.quote(n), c) for n, c in zip(names, columns,
                                                                                                     strict=True))

    def inlined_rows_upto(
        self, snapshot_id: int, inlined: InlinedTable, columns: Sequence[ColumnInfo]
    ) -> list[tuple[Any, ...]]:
        """Every row of an inlined-data table inserted at or before S, deleted ones too (flush):
        `(row_id, begin_snapshot, end_snapshot, value per column)`, values in storage form."""
        q = self.backend.qualify
        exprs = self._inlined_selects(inlined, columns)
        sql = (f"SELECT row_id, begin_snapshot, end_snapshot{', ' + exprs if exprs else ''} "
               f"FROM {q(inlined.table_name)} WHERE begin_snapshot <= {int(snapshot_id)} ORDER BY row_id")
        return [tuple(r) for r in self.conn.exec_driver_sql(sql)]

    def inlined_row_counts(self, inlined: InlinedTable, upto_snapshot: int) -> tuple[int, int]:
        """(rows inserted at or before S, how many of them are deleted) in one inlined-data table."""
        q = self.backend.qualify(inlined.table_name)
        n, gone = self.conn.exec_driver_sql(
            f"SELECT count(*), count(end_snapshot) FROM {q} WHERE begin_snapshot <= {int(upto_snapshot)}").one()
        return int(n), int(gone)

    def inlined_rows(
        self, snapshot_id: int, inlined: InlinedTable, columns: Sequence[ColumnInfo]
    ) -> list[tuple[Any, ...]]:
        """Rows of one inlined-data table live at S: `(row_id, value per column)`, values in the backend's raw
        storage form (text, number, bytes); `decode_inlined` turns them into typed values."""
        q = self.backend.qualify
        exprs = self._inlined_selects(inlined, columns)
        sid = int(snapshot_id)
        sql = (f"SELECT row_id{', ' + exprs if exprs else ''} FROM {q(inlined.table_name)} "
               f"WHERE begin_snapshot <= {sid} AND (end_snapshot IS NULL OR end_snapshot > {sid}) ORDER BY row_id")
        return [tuple(r) for r in self.conn.exec_driver_sql(sql)]
