"""Typed queries over one catalog connection for what lives in files at a snapshot: data and delete files, their
column stats and partition values, name mappings, and the rows of inlined-data tables. `MetadataReader` adds the
metadata, snapshots and catalog objects on top."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, case, false, func, literal, literal_column, not_, null, or_, select, true

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import Backend, byte_order
from ducklake_cli.catalog.models import (
    ColumnInfo,
    ColumnStats,
    DataFile,
    DeleteFile,
    InlinedTable,
    NameMapping,
    PartitionField,
)
from ducklake_cli.catalog.types import FLOAT_TYPES, INT_TYPES

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection, Row, Table

CHUNK = 5000  # ids per IN list: every backend stays under its bind-parameter limit


def visible(table: Table, snapshot_id: int) -> ColumnElement[bool]:
    """The spec §1.1 predicate: begin <= S and (end is NULL or S < end)."""
    return and_(
        table.c.begin_snapshot <= snapshot_id,
        or_(table.c.end_snapshot.is_(None), table.c.end_snapshot > snapshot_id),
    )


def batches(conn: Connection, statement: Any, size: int) -> Iterator[Sequence[Any]]:
    """Rows of a statement, `size` at a time, streamed where the driver can (server-side cursors): memory stays flat
    over the millions of rows a big lake has."""
    result = conn.execute(statement, execution_options={"yield_per": size})
    try:
        yield from result.partitions(size)
    finally:
        result.close()


def as_bool(value: Any) -> bool | None:
    """A catalog BOOLEAN as stored by any backend (SQLite keeps integers or text)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "t")
    return bool(value)


def data_file(r: Any) -> DataFile:
    """A `ducklake_data_file` row as a `DataFile`."""
    return DataFile(
        data_file_id=r.data_file_id, table_id=r.table_id, begin_snapshot=r.begin_snapshot,
        end_snapshot=r.end_snapshot, path=r.path, path_is_relative=bool(as_bool(r.path_is_relative)),
        file_format=r.file_format, record_count=r.record_count or 0, file_size_bytes=r.file_size_bytes or 0,
        footer_size=r.footer_size, row_id_start=r.row_id_start, partition_id=r.partition_id,
        encryption_key=r.encryption_key, mapping_id=r.mapping_id, partial_max=r.partial_max,
    )


def delete_file(r: Any) -> DeleteFile:
    """A `ducklake_delete_file` row as a `DeleteFile`."""
    return DeleteFile(
        delete_file_id=r.delete_file_id, table_id=r.table_id, begin_snapshot=r.begin_snapshot,
        end_snapshot=r.end_snapshot, data_file_id=r.data_file_id, path=r.path,
        path_is_relative=bool(as_bool(r.path_is_relative)), format=r.format, delete_count=r.delete_count or 0,
        file_size_bytes=r.file_size_bytes or 0, footer_size=r.footer_size, encryption_key=r.encryption_key,
        partial_max=r.partial_max,
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


class FileQueries:
    """Queries about files and inlined rows over one open catalog connection."""

    def __init__(self, conn: Connection, backend: Backend) -> None:
        self.conn = conn
        self.backend = backend
        self._tables: set[str] | None = None
        self._inlined_names: dict[str, list[str]] = {}
        self._inlined_system: dict[str, tuple[str, str, str]] = {}

    # ----- catalog-wide ---------------------------------------------------------------------------------
    def format_version(self) -> str | None:
        """The catalog's format version when known here (None: each inlined-data table's names are probed)."""
        return None

    def inlined_system(self, table_name: str) -> tuple[str, str, str]:
        """The (row id, begin snapshot, end snapshot) column names of one inlined-data table (spec versions §3.3)."""
        if table_name not in self._inlined_system:
            from ducklake_cli.catalog.versions import system_columns

            self._inlined_system[table_name] = system_columns(self.conn, self.backend, self.format_version(),
                                                              table_name)
        return self._inlined_system[table_name]

    def table_names(self) -> set[str]:
        """All table names in the metadata schema (cached for this reader)."""
        if self._tables is None:
            self._tables = self.backend.list_tables(self.conn)
        return self._tables

    def _visible(self, t: Table, snapshot_id: int, table_ids: Iterable[int], order: Any) -> Sequence[Row[Any]]:
        return self.conn.execute(
            select(t).where(visible(t, snapshot_id), t.c.table_id.in_(list(table_ids))).order_by(order)).all()

    def _per_file(self, t: Table, table_id: int, data_file_ids: Sequence[int]) -> Iterable[Row[Any]]:
        """Rows of a per-file table for the files: one IN list for a few, else one pass over the table's rows (the
        DuckLake tables have no index: an IN list per chunk of a million files would scan them a thousand times)."""
        ids = list(data_file_ids)
        if len(ids) <= CHUNK:
            if ids:
                yield from self.conn.execute(select(t).where(t.c.table_id == table_id, t.c.data_file_id.in_(ids))).all()
            return
        wanted = set(ids)
        rows = [r for part in batches(self.conn, select(t).where(t.c.table_id == table_id), CHUNK * 4)
                for r in part if r.data_file_id in wanted]
        yield from rows

    # ----- files at S -------------------------------------------------------------------------------------
    def data_files(self, snapshot_id: int, table_ids: Iterable[int]) -> list[DataFile]:
        """Data files visible at S for the tables."""
        t = s.data_file_t
        rows = self._visible(t, snapshot_id, table_ids, t.c.data_file_id)
        return [data_file(r) for r in rows]

    def delete_files(self, snapshot_id: int, table_ids: Iterable[int]) -> list[DeleteFile]:
        """Delete files visible at S for the tables."""
        t = s.delete_file_t
        rows = self._visible(t, snapshot_id, table_ids, t.c.delete_file_id)
        return [delete_file(r) for r in rows]

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
        _, begin, end = self.inlined_system(inlined.table_name)
        return int(
            self.conn.exec_driver_sql(
                f"SELECT count(*) FROM {q} WHERE {begin} <= {sid} "
                f"AND ({end} IS NULL OR {end} > {sid})"
            ).scalar_one()
        )

    def file_column_stats(self, table_id: int, data_file_ids: Sequence[int]) -> dict[int, list[ColumnStats]]:
        """Per-file column stats, keyed by data file id (files are immutable, so stats need no snapshot)."""
        t = s.file_column_stats_t
        out: dict[int, list[ColumnStats]] = defaultdict(list)
        for r in self._per_file(t, table_id, data_file_ids):
            out[r.data_file_id].append(ColumnStats(r.column_id, r.value_count, r.null_count, r.min_value,
                                                   r.max_value, as_bool(r.contains_nan), r.column_size_bytes))
        return out

    def column_stats_at(self, snapshot_id: int, table_id: int,
                        types: Mapping[int, str] | None = None) -> dict[int, ColumnStatsSummary]:
        """Per leaf column, file stats merged over the data files live at S: counts summed in SQL; min/max as a few
        candidates for the caller's typed comparison. With `types` (column id → DuckLake type) the candidates are
        narrowed in SQL: text-compared types to their byte-order MIN/MAX (in the counting query); integers and
        decimals in canonical form to the MIN/MAX text of each (length, sign) group, their other texts
        read in full; floats and untyped columns come back distinct."""
        f, d = s.file_column_stats_t, s.data_file_t
        live = f.join(d, and_(d.c.data_file_id == f.c.data_file_id, visible(d, snapshot_id)))
        kinds = {cid: _bound_kind(t) for cid, t in (types or {}).items()}
        out: dict[int, ColumnStatsSummary] = {}
        nan_int = case((f.c.contains_nan.is_(True), literal(1)), else_=literal(0))
        for r in self.conn.execute(
            select(f.c.column_id, func.count(), func.count(f.c.null_count), func.sum(f.c.null_count),
                   func.count(f.c.value_count), func.sum(f.c.value_count), func.count(f.c.contains_nan),
                   func.sum(nan_int), func.min(byte_order(f.c.min_value)), func.max(byte_order(f.c.max_value)))
            .select_from(live).where(f.c.table_id == table_id).group_by(f.c.column_id)
        ):
            n, text = int(r[1]), kinds.get(r[0]) == "text"
            out[r[0]] = ColumnStatsSummary(
                null_count=int(r[3] or 0) if r[2] == n else None,
                value_count=int(r[5] or 0) if r[4] == n else None,
                contains_nan=True if (r[7] or 0) > 0 else (False if r[6] == n else None),
                mins=[_text(r[8])] if text and r[8] is not None else [],
                maxs=[_text(r[9])] if text and r[9] is not None else [],
            )
        rest = sorted(cid for cid in out if kinds.get(cid) != "text")
        if not rest:
            return out
        by_scale: dict[int, list[int]] = defaultdict(list)  # integers (scale 0) and decimals by their scale
        for cid in rest:
            scale = kinds.get(cid)
            if isinstance(scale, int):
                by_scale[scale].append(cid)
        fixed = sorted(cid for ids in by_scale.values() for cid in ids)
        # Fixed-point columns grouped by (length, sign): canonical texts of one group compare as their
        # numbers do, so its MIN and MAX text are the candidates; a group holding any other text is read in full.
        # Other columns are grouped by each distinct text. Min and max groups are crossed: one pass over the rows.
        is_fixed = f.c.column_id.in_(fixed) if fixed else false()
        keys: list[ColumnElement[Any]] = []
        aggs: list[ColumnElement[Any]] = []
        for col in (f.c.min_value, f.c.max_value):
            canonical = or_(false(), *(and_(f.c.column_id.in_(ids), _canonical_number(self.backend, col, scale))
                                       for scale, ids in by_scale.items()))
            keys += [case((is_fixed, func.length(col)), else_=null()),
                     case((is_fixed, case((func.substr(col, 1, 1) == "-", -1), else_=1)), else_=null()),
                     case((is_fixed, null()), else_=byte_order(col))]
            aggs += [func.min(byte_order(col)), func.max(byte_order(col)),
                     func.min(case((or_(col.is_(None), canonical), 1), else_=0))]
        odd: set[tuple[int, str]] = set()
        for r in self.conn.execute(
            select(f.c.column_id, *aggs).select_from(live)
            .where(f.c.table_id == table_id, f.c.column_id.in_(rest)).group_by(f.c.column_id, *keys)
        ):
            st = out[r[0]]
            for found, attr, (lo, hi, ok) in ((st.mins, "min_value", r[1:4]), (st.maxs, "max_value", r[4:7])):
                found.extend(_text(v) for v in ((lo, hi) if lo != hi else (lo,)) if v is not None)
                if r[0] in fixed and not ok:
                    odd.add((r[0], attr))
        for cid, attr in sorted(odd):  # not all canonical (DuckDB writes them so): every distinct text
            col = f.c[attr]
            getattr(out[cid], attr[:3] + "s").extend(_text(v) for v in self.conn.execute(
                select(col).distinct().select_from(live)
                .where(f.c.table_id == table_id, f.c.column_id == cid, col.is_not(None))).scalars())
        for cid in rest:  # a value can bound several groups
            out[cid].mins, out[cid].maxs = list(dict.fromkeys(out[cid].mins)), list(dict.fromkeys(out[cid].maxs))
        return out

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
            out[r.table_id].partial_data.append((r.path, bool(as_bool(r.path_is_relative))))
        for r in self.conn.execute(
            select(x.c.table_id, x.c.path, x.c.path_is_relative)
            .select_from(x.join(d, live_data))
            .where(visible(x, snapshot_id), x.c.table_id.in_(ids), not_(x_whole))
        ):
            out[r.table_id].partial_deletes.append((r.path, bool(as_bool(r.path_is_relative))))
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
        for r in self._per_file(t, table_id, data_file_ids):
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
                                                 bool(as_bool(r.is_partition))))
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

    def inlined_column_names(self, table_name: str, columns: Sequence[ColumnInfo]) -> list[str]:
        """The physical name of each column in an inlined-data table. DuckDB's postgres scanner quotes a name only
        when DuckDB needs it, so PostgreSQL folds `"Id"` to `id`: match exactly, then ignoring case, then by place."""
        if table_name not in self._inlined_names:
            self._inlined_names[table_name] = [str(k) for k in self.backend.column_names(self.conn, table_name)][3:]
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
        row_id, begin, end = self.inlined_system(inlined.table_name)
        sql = (f"SELECT {row_id}, {begin}, {end}{', ' + exprs if exprs else ''} "
               f"FROM {q(inlined.table_name)} WHERE {begin} <= {int(snapshot_id)} ORDER BY {row_id}")
        return [tuple(r) for r in self.conn.exec_driver_sql(sql)]

    def inlined_row_counts(self, inlined: InlinedTable, upto_snapshot: int) -> tuple[int, int]:
        """(rows inserted at or before S, how many of them are deleted) in one inlined-data table."""
        q = self.backend.qualify(inlined.table_name)
        _, begin, end = self.inlined_system(inlined.table_name)
        n, gone = self.conn.exec_driver_sql(
            f"SELECT count(*), count({end}) FROM {q} WHERE {begin} <= {int(upto_snapshot)}").one()
        return int(n), int(gone)

    def inlined_rows(
        self, snapshot_id: int, inlined: InlinedTable, columns: Sequence[ColumnInfo]
    ) -> list[tuple[Any, ...]]:
        """Rows of one inlined-data table live at S: `(row_id, value per column)`, values in the backend's raw
        storage form (text, number, bytes); `decode_inlined` turns them into typed values."""
        q = self.backend.qualify
        exprs = self._inlined_selects(inlined, columns)
        sid = int(snapshot_id)
        row_id, begin, end = self.inlined_system(inlined.table_name)
        sql = (f"SELECT {row_id}{', ' + exprs if exprs else ''} FROM {q(inlined.table_name)} "
               f"WHERE {begin} <= {sid} AND ({end} IS NULL OR {end} > {sid}) ORDER BY {row_id}")
        return [tuple(r) for r in self.conn.exec_driver_sql(sql)]

    # ----- listings and aggregates for `inspect` ----------------------------------------------------------
    def size_histogram(self, snapshot_id: int, table_id: int, limits: Sequence[int]) -> list[int]:
        """How many data files live at S fall below each of the ascending `limits` (and not below the one
        before), then how many reach the last: counted in SQL (a missing size counts as 0)."""
        d = s.data_file_t
        size = func.coalesce(d.c.file_size_bytes, literal_column("0"))

        def const(n: int) -> ColumnElement[Any]:  # inline: PostgreSQL matches GROUP BY to SELECT by text
            return literal_column(str(int(n)))

        bucket = case(*((size < const(limit), const(i)) for i, limit in enumerate(limits)), else_=const(len(limits)))
        out = [0] * (len(limits) + 1)
        for i, n in self.conn.execute(
            select(bucket, func.count()).where(visible(d, snapshot_id), d.c.table_id == table_id).group_by(bucket)
        ):
            out[int(i)] += int(n)
        return out

    def live_delete_files(self, snapshot_id: int, table_id: int) -> list[DeleteFile]:
        """Delete files visible at S of data files visible at S, by id."""
        x, d = s.delete_file_t, s.data_file_t
        live = and_(d.c.data_file_id == x.c.data_file_id, visible(d, snapshot_id))
        rows = self.conn.execute(select(x).select_from(x.join(d, live))
                                 .where(visible(x, snapshot_id), x.c.table_id == table_id)
                                 .order_by(x.c.delete_file_id))
        return [delete_file(r) for r in rows]

    def file_listing(self, snapshot_id: int, table_ids: Sequence[int], *, batch: int = 10_000
                     ) -> Iterator[tuple[Any, ...]]:
        """Data files visible at S for the tables, by id, streamed from the cursor, each with its delete file
        visible at S (NULLs without one): `(table_id, data_file_id, path, path_is_relative, record_count,
        file_size_bytes, begin_snapshot, delete_file_id, delete path, delete path_is_relative, delete_count)`."""
        d, x = s.data_file_t, s.delete_file_t
        ids = list(table_ids)
        on = and_(x.c.data_file_id == d.c.data_file_id, visible(x, snapshot_id), x.c.table_id.in_(ids))
        query = (select(d.c.table_id, d.c.data_file_id, d.c.path, d.c.path_is_relative, d.c.record_count,
                        d.c.file_size_bytes, d.c.begin_snapshot, x.c.delete_file_id, x.c.path, x.c.path_is_relative,
                        x.c.delete_count)
                 .select_from(d.outerjoin(x, on))
                 .where(visible(d, snapshot_id), d.c.table_id.in_(ids)).order_by(d.c.data_file_id))
        for part in batches(self.conn, query, batch):
            yield from (tuple(r) for r in part)

    def snapshot_listing(self, *, batch: int = 10_000) -> Iterator[tuple[Any, ...]]:
        """Every snapshot, oldest first, streamed from the cursor: `(snapshot_id, snapshot_time (aware UTC),
        schema_version, changes_made, author, commit_message, commit_extra_info)`."""
        sn, ch = s.snapshot_t, s.snapshot_changes_t
        query = (select(sn.c.snapshot_id, sn.c.snapshot_time, sn.c.schema_version, ch.c.changes_made, ch.c.author,
                        ch.c.commit_message, ch.c.commit_extra_info)
                 .select_from(sn.outerjoin(ch, ch.c.snapshot_id == sn.c.snapshot_id)).order_by(sn.c.snapshot_id))
        decode, epoch = self.backend.decode_timestamp, dt.datetime.fromtimestamp(0, dt.UTC)
        for part in batches(self.conn, query, batch):
            for r in part:
                yield (r[0], decode(r[1]) or epoch, *r[2:])


def _text(value: Any) -> str:
    """Stats text as read back (MySQL returns the bytes of a binary cast)."""
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


def _bound_kind(type_name: str) -> str | int:
    """How `inspect` compares a type's stats text: "text"; the scale of canonical texts that compare as fixed-point
    numbers (0: integers, s: `decimal(p,s)`); or "number" (floats, and what else needs Python)."""
    if type_name in INT_TYPES:
        return 0
    if type_name in FLOAT_TYPES:
        return "number"
    if type_name.startswith("decimal"):
        _, _, scale = type_name.rstrip(")").partition(",")
        return int(scale) if scale.strip().isdigit() else "number"
    return "text"


def _canonical_number(backend: Backend, text: ColumnElement[Any], scale: int) -> ColumnElement[bool]:
    """Stats text that is a number in canonical form: optional '-', ASCII digits without a leading zero, then (with
    a scale) '.' and exactly `scale` digits. Such texts compare as numbers by (sign, length, text)."""
    digits = case((func.substr(text, 1, 1) == "-", func.substr(text, 2)), else_=text)
    if scale == 0:
        whole: ColumnElement[Any] = digits
        checks: list[ColumnElement[bool]] = []
    else:
        n = func.length(digits) - literal_column(str(scale))
        whole = func.substr(digits, 1, n - literal_column("1"))
        checks = [func.length(digits) > literal_column(str(scale + 1)), func.substr(digits, n, 1) == ".",
                  backend.text_form(func.substr(digits, n + literal_column("1")), "digits")]
    return and_(*checks, func.length(digits) < 100, backend.text_form(whole, "digits"),
                or_(func.substr(whole, 1, 1) != "0", func.length(whole) == 1))
