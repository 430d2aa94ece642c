"""Read DuckLake metadata at a snapshot: the typed queries every command builds on (metadata, snapshots, schemas,
tables and views here; files, stats and inlined rows in catalog/queries.py)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, select

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import Backend
from ducklake_cli.catalog.models import (
    ColumnInfo,
    InlinedTable,
    LakeMetadata,
    OptionValue,
    PartitionField,
    PartitionSpec,
    SchemaInfo,
    Snapshot,
    SortKey,
    TableInfo,
    ViewInfo,
)
from ducklake_cli.catalog.names import pick_entry, readings, shown_path, split_qualified
from ducklake_cli.catalog.queries import FileQueries, as_bool, visible
from ducklake_cli.catalog.versions import IN_PLACE, is_v11, refusal
from ducklake_cli.errors import NotADuckLakeError, NotFoundError, UnsupportedVersionError

if TYPE_CHECKING:
    from sqlalchemy import Connection, Row, Table


def pick_schema(schemas: Sequence[SchemaInfo], parts: Sequence[str]) -> SchemaInfo | None:
    """The schema whose full name is `parts`: exact, else the one case-insensitive match."""
    wanted = tuple(parts)
    for sc in schemas:
        if sc.qualified_parts == wanted:
            return sc
    low = tuple(p.lower() for p in wanted)
    folded = [sc for sc in schemas if tuple(p.lower() for p in sc.qualified_parts) == low]
    return folded[0] if len(folded) == 1 else None

class MetadataReader(FileQueries):
    """Typed queries over one open catalog connection."""

    def __init__(self, conn: Connection, backend: Backend) -> None:
        super().__init__(conn, backend)
        self._metadata: LakeMetadata | None = None

    # ----- catalog-wide ---------------------------------------------------------------------------------

    def metadata(self) -> LakeMetadata:
        """Global keys and scoped options; checks the format version (read once per reader)."""
        if self._metadata is None:
            self._metadata = self._read_metadata()
        return self._metadata

    @property
    def v11(self) -> bool:
        """Whether the catalog has DuckLake 1.1's tables and rules (1.1 or 1.1-dev1)."""
        return is_v11(self.metadata().version)

    def format_version(self) -> str | None:
        """The catalog's format version (its inlined-data tables' names follow it; spec versions §3.3)."""
        return self.metadata().version

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
        if version not in IN_PLACE:  # Lake.open reads an older catalog through a copy migrated to 1.0
            where = self.backend.target.display()
            raise refusal(version, where=where, writing=True) or UnsupportedVersionError(
                f"{where} is a DuckLake {version} catalog: it is read through a copy migrated to 1.0")
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
        """Schemas visible at S, by id: on 1.1, a nested schema only while every schema above it is visible too
        (spec versions §3.4), each with its full name."""
        v11 = self.v11
        t = s.table("ducklake_schema", v11)  # 1.0 catalogs have no parent_schema_id
        rows = self.conn.execute(select(t).where(visible(t, snapshot_id)).order_by(t.c.schema_id)).all()
        by_id = {r.schema_id: r for r in rows}
        parts: dict[int, tuple[str, ...] | None] = {}

        def chain(sid: int) -> tuple[str, ...] | None:
            seen: list[int] = []
            cur: int | None = sid
            while cur is not None and cur not in parts:
                if cur in seen:
                    raise NotADuckLakeError(
                        f"{self.backend.target.display()}: the parent chain of schema {sid} loops "
                        f"({' -> '.join(map(str, [*seen, cur]))}): not a usable DuckLake catalog")
                if cur not in by_id:  # an ancestor invisible at S hides the schemas below it
                    break
                seen.append(cur)
                cur = by_id[cur].parent_schema_id if v11 else None
            above = parts.get(cur) if cur is not None else ()
            for one in reversed(seen):
                above = None if above is None else (*above, by_id[one].schema_name)
                parts[one] = above
            return parts[sid]

        out = []
        for r in rows:
            full = chain(r.schema_id)
            if full is None:
                continue
            out.append(SchemaInfo(
                r.schema_id, str(r.schema_uuid), r.schema_name, r.path, bool(as_bool(r.path_is_relative)),
                r.begin_snapshot, parent_schema_id=r.parent_schema_id if v11 else None, parts=full,
                full_name=shown_path(full, quote=v11)))
        return out

    def find_schema(self, snapshot_id: int, name: str) -> SchemaInfo | None:
        """A schema by its dotted name (`sales.europe` nests on 1.1, `"sales.europe"` is one name); exact, else
        the one case-insensitive match."""
        return pick_schema(self.schemas(snapshot_id), split_qualified(name))

    def tables(self, snapshot_id: int, *, table_ids: Sequence[int] | None = None) -> list[TableInfo]:
        """Tables visible at S with columns, inlined tables, partition and sort specs and tags."""
        schemas = {sc.schema_id: sc for sc in self.schemas(snapshot_id)}
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
                schema_name=schemas[r.schema_id].shown, schema_parts=schemas[r.schema_id].qualified_parts,
                name=r.table_name, path=r.path,
                path_is_relative=bool(as_bool(r.path_is_relative)), begin_snapshot=r.begin_snapshot,
                columns=tuple(columns.get(r.table_id, ())), inlined_tables=tuple(inlined.get(r.table_id, ())),
                partition=partitions.get(r.table_id), sort_keys=tuple(sorts.get(r.table_id, ())),
                tags=tuple(tags.get(r.table_id, ())), column_tags=tuple(column_tags.get(r.table_id, ())),
            )
            for r in table_rows
        ]

    def find_table(self, snapshot_id: int, name: str) -> TableInfo:
        """A table by `name` (schema main), `schema.name` or, on 1.1, `a.b.name` in nested schemas (on 1.0 a leading
        catalog part is ignored; on 1.1 it is when the whole path names no table)."""
        parts = split_qualified(name)
        tables = self.tables(snapshot_id)
        found = pick_entry(tables, parts, nested=self.v11)
        if found is not None:
            return found
        (path, table_name), *_ = readings(parts, nested=self.v11)
        wanted = f"{shown_path(path, quote=self.v11)}.{table_name}"
        known = sorted(tbl.qualified_name for tbl in tables)
        from difflib import get_close_matches

        close = get_close_matches(wanted, known, n=3)
        hint = f"did you mean {', '.join(close)}?" if close else (
            f"tables at snapshot {snapshot_id}: {', '.join(known[:10])}" if known else "the lake has no tables"
        )
        raise NotFoundError(f"table {wanted} does not exist at snapshot {snapshot_id}", hint=hint)

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
                    nulls_allowed=as_bool(r.nulls_allowed) is not False, initial_default=r.initial_default,
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

    def _spec_rows(self, info: Table, keys: Table, id_name: str, key_name: str, snapshot_id: int,
                   table_ids: list[int], *columns: Any) -> Sequence[Row[Any]]:
        """`(table_id, key index, *columns)` of the spec (`info` row visible at S) of each table, in key order."""
        on = and_(keys.c[id_name] == info.c[id_name], keys.c.table_id == info.c.table_id)
        return self.conn.execute(
            select(info.c.table_id, keys.c[key_name], *columns).select_from(info.join(keys, on))
            .where(visible(info, snapshot_id), info.c.table_id.in_(table_ids))
            .order_by(info.c.table_id, keys.c[key_name])).all()

    def _partitions(self, snapshot_id: int, table_ids: list[int]) -> dict[int, PartitionSpec]:
        pi, pc = s.partition_info_t, s.partition_column_t
        rows = self._spec_rows(pi, pc, "partition_id", "partition_key_index", snapshot_id, table_ids,
                               pi.c.partition_id, pc.c.column_id, pc.c.transform)
        fields: dict[int, list[PartitionField]] = defaultdict(list)
        pid: dict[int, int] = {}
        for r in rows:
            pid[r.table_id] = r.partition_id
            fields[r.table_id].append(PartitionField(r.partition_key_index, r.column_id, r.transform))
        return {tid: PartitionSpec(pid[tid], tuple(f)) for tid, f in fields.items()}

    def _sort_keys(self, snapshot_id: int, table_ids: list[int]) -> dict[int, list[SortKey]]:
        si, se = s.sort_info_t, s.sort_expression_t
        rows = self._spec_rows(si, se, "sort_id", "sort_key_index", snapshot_id, table_ids,
                               se.c.expression, se.c.sort_direction, se.c.null_order)
        out: dict[int, list[SortKey]] = defaultdict(list)
        for r in rows:
            out[r.table_id].append(SortKey(r.sort_key_index, r.expression, r.sort_direction, r.null_order))
        return out

    def object_tags(self, snapshot_id: int, object_id: int) -> list[tuple[str, str | None]]:
        """`(key, value)` of the tags of one table or view visible at S (a view's comment: key `comment`)."""
        return self._tags(snapshot_id, [object_id]).get(object_id, [])

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
        """Views visible at S (with their column comments on 1.1)."""
        schemas = {sc.schema_id: sc for sc in self.schemas(snapshot_id)}
        t = s.view_t
        rows = [r for r in self.conn.execute(select(t).where(visible(t, snapshot_id)).order_by(t.c.view_id)).all()
                if r.schema_id in schemas]
        tags = self._view_column_tags(snapshot_id, [r.view_id for r in rows]) if self.v11 and rows else {}
        return [
            ViewInfo(r.view_id, str(r.view_uuid), r.schema_id, schemas[r.schema_id].shown, r.view_name, r.dialect,
                     r.sql, r.column_aliases, schema_parts=schemas[r.schema_id].qualified_parts,
                     column_tags=tuple(tags.get(r.view_id, ())))
            for r in rows
        ]

    def _view_column_tags(self, snapshot_id: int, view_ids: list[int]) -> dict[int, list[tuple[str, str, str | None]]]:
        t = s.view_column_tag_t
        rows = self.conn.execute(
            select(t.c.view_id, t.c.column_name, t.c.key, t.c.value)
            .where(visible(t, snapshot_id), t.c.view_id.in_(view_ids)).order_by(t.c.view_id, t.c.begin_snapshot)
        ).all()
        out: dict[int, list[tuple[str, str, str | None]]] = defaultdict(list)
        for r in rows:
            out[r.view_id].append((r.column_name, r.key, r.value))
        return out

    def table_schema_versions(self, table_id: int) -> list[tuple[int, int]]:
        """`(begin_snapshot, schema_version)` of every version of one table's definition, oldest first."""
        t = s.schema_versions_t
        rows = self.conn.execute(select(t.c.begin_snapshot, t.c.schema_version).where(t.c.table_id == table_id)
                                 .order_by(t.c.begin_snapshot)).all()
        return [(int(r.begin_snapshot), int(r.schema_version)) for r in rows]

    def type_changes(self, table_id: int, snapshot_id: int) -> dict[int, int]:
        """Per column id (nested fields too), the snapshot its type last changed at, up to `snapshot_id`; columns
        never retyped are absent (a rename or a default also starts a column version)."""
        c = s.column_t
        rows = self.conn.execute(
            select(c.c.column_id, c.c.begin_snapshot, c.c.column_type)
            .where(c.c.table_id == table_id, c.c.begin_snapshot <= snapshot_id)
            .order_by(c.c.column_id, c.c.begin_snapshot)).all()
        out: dict[int, int] = {}
        before: dict[int, str] = {}
        for r in rows:
            if before.get(r.column_id, r.column_type) != r.column_type:
                out[int(r.column_id)] = int(r.begin_snapshot)
            before[r.column_id] = r.column_type
        return out

    def next_column_id(self, table_id: int) -> int:
        """The first column id the table never used (over all versions, dropped columns included; spec §5.2)."""
        c = s.column_t
        top = self.conn.execute(select(func.max(c.c.column_id)).where(c.c.table_id == table_id)).scalar()
        return int(top or 0) + 1

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
