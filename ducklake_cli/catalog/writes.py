"""Catalog rows of a write (spec §4, §5.4): schemas, tables, data files, inlined rows, overwrite, table stats.

Every function stages rows on a `Transaction`; nothing here commits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import and_, select, update

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.changes import quote_name
from ducklake_cli.catalog.inlined import stored_type
from ducklake_cli.catalog.models import ColumnInfo, LeafStats, NewDataFile, SchemaInfo, TableInfo
from ducklake_cli.catalog.paths import uuid7
from ducklake_cli.catalog.stats import ColumnStats, bound_is_exact, exact_flag
from ducklake_cli.catalog.transaction import Transaction
from ducklake_cli.catalog.types import ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]+")
# Inlining is off when a column has one of these names (DuckDB's rule, spec §4); 1.0 only (spec versions §3.3).
RESERVED_INLINE_NAMES = frozenset({"row_id", "begin_snapshot", "end_snapshot", SNAPSHOT_ID_COLUMN, ROW_ID_COLUMN})


def blocks_inlining(name: str, *, v11: bool) -> bool:
    """Whether a top-level column so named keeps a table's rows out of the catalog: 1.0's reserved names, or on 1.1
    only a `_ducklake_` name (1.1's inlined-data tables prefix their own columns; spec versions §3.3)."""
    low = name.lower()
    return low.startswith(s.RESERVED_PREFIX_V11) if v11 else low in RESERVED_INLINE_NAMES


def exact_flags(st: LeafStats, ducklake_type: str) -> dict[str, bool | None]:
    """1.1's `min_is_exact`/`max_is_exact` of one file's leaf stats (spec versions §3.5)."""
    return {"min_is_exact": exact_flag(st.min_value, st.min_exact, ducklake_type),
            "max_is_exact": exact_flag(st.max_value, st.max_exact, ducklake_type)}


def dir_name(name: str) -> str:
    """Directory of a new schema or table: its name, or a UUID when the name has other characters."""
    return f"{name}/" if _PLAIN_NAME.fullmatch(name) else f"{uuid7()}/"


def ensure_schema(tx: Transaction, name: str, *, path: str | None = None) -> SchemaInfo:
    """The live schema `name`, created in this snapshot (directory `path`, default `dir_name`) when missing."""
    for sch in tx.reader.schemas(tx.latest.snapshot_id):
        if sch.name == name and sch.parent_schema_id is None:  # a 1.1 nested schema of that name is another
            return sch
    sid = tx.catalog_id()
    schema = SchemaInfo(schema_id=sid, schema_uuid=uuid7(), name=name, path=path or dir_name(name),
                        path_is_relative=True,
                        begin_snapshot=tx.snapshot_id)
    tx.insert(s.schema_t, [{"schema_id": sid, "schema_uuid": schema.schema_uuid, "begin_snapshot": tx.snapshot_id,
                            "end_snapshot": None, "schema_name": name, "path": schema.path,
                            "path_is_relative": True}])
    tx.change("created_schema", quote_name(name))
    tx.schema_changed = True
    return schema


def column_rows(tx: Transaction, table_id: int, cols: Sequence[ColumnInfo]) -> list[dict[str, Any]]:
    """`ducklake_column` rows of columns (and their children, pre-order) beginning at this snapshot, as given."""
    rows = []
    for c in cols:
        rows.append({"column_id": c.column_id, "begin_snapshot": tx.snapshot_id, "end_snapshot": None,
                     "table_id": table_id, "column_order": c.column_order, "column_name": c.name,
                     "column_type": c.type, "initial_default": c.initial_default,
                     "default_value": "NULL" if c.default_value is None else c.default_value,
                     "nulls_allowed": c.nulls_allowed,
                     "parent_column": c.parent_column, "default_value_type": c.default_value_type or "",
                     "default_value_dialect": "duckdb"})
        rows.extend(column_rows(tx, table_id, c.children))
    return rows


def _created(col: ColumnInfo, begin: int) -> ColumnInfo:
    """A column of CREATE TABLE as DuckDB records it: order = id, parents of nested types with kind `''`."""
    kids = tuple(_created(k, begin) for k in col.children)
    kind = "" if kids else (col.default_value_type or "literal")
    return replace(col, column_order=col.column_id, default_value_type=kind, begin_snapshot=begin, children=kids)


def create_table(tx: Transaction, schema: SchemaInfo, name: str, columns: Sequence[ColumnInfo],
                 partition: Sequence[tuple[int, str]], *, inline: bool,
                 path: tuple[str, bool] | None = None) -> TableInfo:
    """A new table (ids of `columns` already assigned), its partition spec and, with inlining, its inlined table.

    `path` is `(directory, is_relative)`; default: `dir_name(name)` relative to the schema."""
    from ducklake_cli.catalog.models import PartitionField, PartitionSpec

    tid = tx.catalog_id()
    tpath, relative = path or (dir_name(name), True)
    cols = tuple(_created(c, tx.snapshot_id) for c in columns)
    table = TableInfo(table_id=tid, table_uuid=uuid7(), schema_id=schema.schema_id, schema_name=schema.shown,
                      schema_parts=schema.qualified_parts, name=name, path=tpath, path_is_relative=relative,
                      begin_snapshot=tx.snapshot_id, columns=cols)
    tx.schema_changed = True
    tx.insert(s.table_t, [{"table_id": tid, "table_uuid": table.table_uuid, "begin_snapshot": tx.snapshot_id,
                           "end_snapshot": None, "schema_id": schema.schema_id, "table_name": name,
                           "path": tpath, "path_is_relative": relative}])
    tx.insert(s.column_t, column_rows(tx, tid, cols))
    tx.insert(s.schema_versions_t, [{"begin_snapshot": tx.snapshot_id, "schema_version": tx.schema_version,
                                     "table_id": tid}])
    tx.versioned_tables.add(tid)
    if partition:
        pid = tx.catalog_id()
        tx.insert(s.partition_info_t, [{"partition_id": pid, "table_id": tid, "begin_snapshot": tx.snapshot_id,
                                        "end_snapshot": None}])
        tx.insert(s.partition_column_t, [{"partition_id": pid, "table_id": tid, "partition_key_index": i,
                                          "column_id": cid, "transform": transform}
                                         for i, (cid, transform) in enumerate(partition)])
        table = replace(table, partition=PartitionSpec(pid, tuple(
            PartitionField(i, cid, transform) for i, (cid, transform) in enumerate(partition))))
    if inline:
        table = replace(table, inlined_tables=(create_inlined_table(tx, table),))
        tx.inlined_made[tid] = table.inlined_tables[0].table_name
    tx.change("created_table", quote_name(*schema.qualified_parts, name))
    return table


def create_inlined_table(tx: Transaction, table: TableInfo) -> Any:
    """`ducklake_inlined_data_<table_id>_<schema_version>` with the table's current top-level columns."""
    from ducklake_cli.catalog.models import InlinedTable

    name = f"ducklake_inlined_data_{table.table_id}_{tx.schema_version}"
    b = tx.backend
    cols = ", ".join(f"{b.quote(c.name)} {b.inlined_column_type(c.type, stored_type(c))}" for c in table.columns)
    row_id, begin, end = s.inlined_system_columns(tx.v11)
    tx.execute_text(f"CREATE TABLE IF NOT EXISTS {b.qualify(name)}({row_id} BIGINT, {begin} BIGINT, "
                    f"{end} BIGINT{', ' + cols if cols else ''})")
    tx.insert(s.inlined_tables_t, [{"table_id": table.table_id, "table_name": name,
                                    "schema_version": tx.schema_version}])
    return InlinedTable(name, tx.schema_version)


@dataclass
class TableWrite:
    """Rows one snapshot adds to (or ends in) one table, with the table-level stats kept true."""

    tx: Transaction
    table: TableInfo
    _stats_row: Any = None
    _read: bool = False
    records: int = 0  # added to ducklake_table_stats.record_count
    new_row_ids: int = 0  # added to next_row_id (files written by an UPDATE advance it too, as DuckDB's do)
    file_bytes: int = 0
    leaf_stats: list[LeafStats] | None = None  # of the files added
    wrote_file: bool = False
    inlined_stats: list[LeafStats] = field(default_factory=list)  # of the rows inlined

    @classmethod
    def with_stats(cls, tx: Transaction, table: TableInfo, stats_row: Any, **counters: Any) -> TableWrite:
        """A write whose `ducklake_table_stats` row the caller already holds (read or staged), so it is not read."""
        counters.setdefault("leaf_stats", [])
        return cls(tx, table, _stats_row=stats_row, _read=True, **counters)

    def _load(self) -> None:
        if not self._read:
            ts = s.table_stats_t
            self._stats_row = self.tx.execute(select(ts).where(ts.c.table_id == self.table.table_id)).first()
            self._read = True
            self.leaf_stats = []

    @property
    def next_row_id(self) -> int:
        """The first row id not yet used by the table (this snapshot's additions included)."""
        self._load()
        base = int(self._stats_row.next_row_id or 0) if self._stats_row is not None else 0
        return base + self.new_row_ids

    def add_files(self, files: Sequence[NewDataFile], *, lineage: tuple[int, int | None] | None = None,
                  partition_id: int | None = None, change: str = "inserted_into_table",
                  row_id_start: int | None = None) -> list[int]:
        """Register Parquet files: data_file, file_column_stats and file_partition_value rows (spec §5.4).

        `lineage=(begin_snapshot, partial_max)` registers rewritten files that embed their rows' ids and
        snapshots (flush, compaction, rewrite): no new row ids, no table-stats change; `row_id_start` then gives the
        first row id of a file that embeds none (a merge of files whose row ids follow on). Returns the new ids."""
        tx, t = self.tx, self.table
        pid = partition_id if partition_id is not None else (t.partition.partition_id if t.partition else None)
        v11 = tx.v11
        types = {leaf.column_id: leaf.type for c in t.columns for leaf in c.leaves()} if v11 else {}
        ids = []
        for f in files:
            fid = tx.file_id()
            ids.append(fid)
            begin, partial_max = lineage if lineage else (tx.snapshot_id, None)
            row = {
                "data_file_id": fid, "table_id": t.table_id, "begin_snapshot": begin, "end_snapshot": None,
                "file_order": None, "path": f.path, "path_is_relative": True, "file_format": "parquet",
                "record_count": f.record_count, "file_size_bytes": f.file_size_bytes, "footer_size": f.footer_size,
                "row_id_start": row_id_start if lineage else self.next_row_id, "partition_id": pid,
                "encryption_key": None, "mapping_id": None, "partial_max": partial_max}
            if v11:  # 1.1 only: a 1.0 catalog has no such column (spec versions §3.1)
                row["row_group_count"] = f.row_group_count
            tx.insert(s.table("ducklake_data_file", v11), [row])
            tx.insert(s.table("ducklake_file_column_stats", v11), [{
                "data_file_id": fid, "table_id": t.table_id, "column_id": st.column_id,
                "column_size_bytes": st.column_size_bytes, "value_count": st.value_count,
                "null_count": st.null_count, "min_value": st.min_value, "max_value": st.max_value,
                "contains_nan": st.contains_nan, "extra_stats": None,
                **(exact_flags(st, types.get(st.column_id, "")) if v11 else {})} for st in f.stats])
            if pid is not None:
                tx.insert(s.file_partition_value_t, [{
                    "data_file_id": fid, "table_id": t.table_id, "partition_key_index": i, "partition_value": v}
                    for i, v in enumerate(f.partition_values)])
            if lineage is None:
                self.records += f.record_count
                self.new_row_ids += f.record_count
                self.file_bytes += f.file_size_bytes
                assert self.leaf_stats is not None
                self.leaf_stats.extend(f.stats)
            self.wrote_file = True
        if files:
            tx.change(change, t.table_id)
        return ids

    def add_inlined(self, values: Sequence[Sequence[tuple[str | None, Any]]], stats: Sequence[LeafStats],
                    row_ids: Sequence[int] | None = None) -> None:
        """Insert rows into the table's newest inlined-data table, creating one if needed (spec §4).

        `values[row][column]` is `(DuckDB text, raw value)` for each top-level column. New rows get new row ids;
        updated rows keep theirs (`row_ids`).
        """
        tx, t, b = self.tx, self.table, self.tx.backend
        inlined = self._current_inlined_table()
        names = [b.quote(n) for n in tx.reader.inlined_column_names(inlined.table_name, t.columns)]
        ids = list(row_ids) if row_ids is not None else [self.next_row_id + i for i in range(len(values))]
        for i, row in enumerate(values):
            exprs, params = [], {"r": ids[i], "b": tx.snapshot_id}
            for j, (c, (txt, raw)) in enumerate(zip(t.columns, row, strict=True)):
                expr, value = b.inlined_value(c.type, txt, raw)
                exprs.append(expr.replace(":v", f":v{j}"))
                params[f"v{j}"] = value
            cols = ", ".join([*tx.reader.inlined_system(inlined.table_name), *names])
            tx.execute_text(f"INSERT INTO {b.qualify(inlined.table_name)} ({cols}) VALUES "
                            f"(:r, :b, NULL{''.join(', ' + e for e in exprs)})", params)
        self._load()
        self.records += len(values)
        if row_ids is None:
            self.new_row_ids += len(values)
        self.inlined_stats.extend(stats)
        if values:
            tx.change("inlined_insert", t.table_id)

    def _current_inlined_table(self) -> Any:
        t = self.table
        names = [c.name for c in t.columns]
        if t.inlined_tables:
            newest = max(t.inlined_tables, key=lambda x: x.schema_version)
            if newest.table_name in self.tx.reader.table_names() or newest.schema_version == self.tx.schema_version:
                q = self.tx.backend.qualify(newest.table_name)
                # Names compare ignoring case: PostgreSQL folds the names DuckDB leaves unquoted (`Id` → `id`).
                keys = self.tx.execute_text(f"SELECT * FROM {q} WHERE 1 = 0").keys()
                physical = [str(k).lower() for k in keys]
                if physical[3:] == [n.lower() for n in names]:
                    return newest
        self.tx.schema_changed = True
        created = create_inlined_table(self.tx, t)
        self.table = replace(t, inlined_tables=(*t.inlined_tables, created))
        return created

    def end_live_data(self) -> None:
        """Overwrite: end every live data file and inlined row of the table in this snapshot."""
        tx, t = self.tx, self.table
        df = s.data_file_t
        ended = tx.execute(update(df).where(and_(df.c.table_id == t.table_id, df.c.end_snapshot.is_(None)))
                           .values(end_snapshot=tx.snapshot_id)).rowcount
        if ended:
            tx.change("deleted_from_table", t.table_id)
        q = tx.backend.qualify
        for inl in t.inlined_tables:
            end = tx.reader.inlined_system(inl.table_name)[2]
            n = tx.execute_text(f"UPDATE {q(inl.table_name)} SET {end} = :s WHERE {end} IS NULL",
                                {"s": tx.snapshot_id}).rowcount
            if n:
                tx.change("inlined_delete", t.table_id)

    def finish(self) -> None:
        """Table stats: record count, next row id and bytes added; column stats merged (spec §5.4)."""
        if not self._read or not self.records:
            return
        tx, t = self.tx, self.table
        if not self.wrote_file and self.records:
            tx.file_id()  # DuckDB advances next_file_id for inline-only commits (spec §4)
        ts = s.table_stats_t
        old = self._stats_row
        if old is None:
            tx.insert(ts, [{"table_id": t.table_id, "record_count": self.records, "next_row_id": self.next_row_id,
                            "file_size_bytes": self.file_bytes}])
        else:
            tx.execute(update(ts).where(ts.c.table_id == t.table_id).values(
                record_count=int(old.record_count or 0) + self.records, next_row_id=self.next_row_id,
                file_size_bytes=int(old.file_size_bytes or 0) + self.file_bytes))
        self._merge_column_stats()

    def _merge_column_stats(self) -> None:
        """DuckDB's rule: the stored rows merged with the files' stats, then the inlined rows'; a table whose stats
        row existed before this commit only has its existing column rows updated (a column added since gets none)."""
        tx, t = self.tx, self.table
        types = {leaf.column_id: leaf.type for c in t.columns for leaf in c.leaves()}
        v11 = tx.v11
        tcs = s.table("ducklake_table_column_stats", v11)
        existing = {r.column_id: r for r in tx.execute(select(tcs).where(tcs.c.table_id == t.table_id))}
        initialized = self._stats_row is not None
        merged: dict[int, ColumnStats] = {}
        if initialized:
            merged = {cid: ColumnStats.of_row(types.get(cid, ""), r.contains_null, r.contains_nan, r.min_value,
                                              r.max_value, r.extra_stats, **_row_flags(r, v11))
                      for cid, r in existing.items()}
        assert self.leaf_stats is not None
        news = [(st.column_id, ColumnStats.of_file(st, types[st.column_id])) for st in self.leaf_stats
                if st.column_id in types]
        news += [(st.column_id, ColumnStats.of_inlined(st, types[st.column_id])) for st in self.inlined_stats
                 if st.column_id in types]
        for cid, new in news:
            merged[cid] = merged[cid].merge(new) if cid in merged else new
        for cid in dict.fromkeys(cid for cid, _ in news):
            stats = merged[cid]
            if initialized and cid not in existing:
                continue
            if cid in existing:
                tx.execute(update(tcs).where(and_(tcs.c.table_id == t.table_id, tcs.c.column_id == cid))
                           .values(**stats.row(v11=v11)))
            else:
                tx.insert(tcs, [{"table_id": t.table_id, "column_id": cid, **stats.row(v11=v11),
                                 "extra_stats": None}])


def _row_flags(r: Any, v11: bool) -> dict[str, Any]:
    """The stored exactness of a stats row's bounds (1.1), as `ColumnStats.of_row` takes them."""
    return {"min_exact": r.min_is_exact, "max_exact": r.max_is_exact} if v11 else {}


def recompute_after_rewrite(tx: Transaction, table: TableInfo) -> None:
    """After a rewrite of files with deletes (staged): when no deleted or inlined row is left in the table, its
    table stats are recomputed from its live files' stats, as DuckDB 1.5.5 does (record count, bytes and each
    existing column row; next_row_id kept). With inlined rows left they stay as they were (DuckDB folds those in
    from the inlined tables; see COMPATIBILITY)."""
    ts, tcs, df, dl = s.table_stats_t, s.table_column_stats_t, s.data_file_t, s.delete_file_t
    tid = table.table_id
    if tx.execute(select(ts.c.table_id).where(ts.c.table_id == tid)).first() is None:
        return
    live = tx.execute(select(df.c.data_file_id, df.c.record_count, df.c.file_size_bytes).where(
        and_(df.c.table_id == tid, df.c.end_snapshot.is_(None))).order_by(df.c.data_file_id)).all()
    ids = [int(r.data_file_id) for r in live]
    gross = sum(int(r.record_count) for r in live)
    deleted = sum(int(n or 0) for (n,) in tx.execute(select(dl.c.delete_count).where(and_(
        dl.c.table_id == tid, dl.c.end_snapshot.is_(None), dl.c.data_file_id.in_(ids)))).all()) if ids else 0
    inline_deleted = tx.reader.inlined_deletes(tx.snapshot_id, tid)
    deleted += sum(n for fid, n in inline_deleted.items() if fid in set(ids))
    q = tx.backend.qualify
    inlined = sum(int(tx.execute_text(f"SELECT count(*) FROM {q(i.table_name)} "
                                      f"WHERE {tx.reader.inlined_system(i.table_name)[2]} IS NULL").scalar() or 0)
                  for i in table.inlined_tables if i.table_name in tx.reader.table_names())
    if deleted or inlined:
        return
    types = {leaf.column_id: leaf.type for c in table.columns for leaf in c.leaves()}
    v11 = tx.v11
    fcs = s.table("ducklake_file_column_stats", v11)
    merged: dict[int, ColumnStats] = {}
    if ids:
        for r in tx.execute(select(fcs).where(and_(fcs.c.table_id == tid, fcs.c.data_file_id.in_(ids)))
                            .order_by(fcs.c.data_file_id)).all():
            typ = types.get(int(r.column_id))
            if typ is None:
                continue
            known = r.value_count is not None and r.null_count is not None
            flags = _row_flags(r, v11)
            new = ColumnStats(typ, int(r.null_count or 0), int(r.value_count or 0) + int(r.null_count or 0),
                              bool(r.contains_nan), r.min_value, r.max_value, known, known, r.contains_nan is not None,
                              min_exact=bound_is_exact(flags.get("min_exact", True), typ) if v11 else True,
                              max_exact=bound_is_exact(flags.get("max_exact", True), typ) if v11 else True)
            merged[int(r.column_id)] = merged[int(r.column_id)].merge(new) if int(r.column_id) in merged else new
    tx.execute(update(ts).where(ts.c.table_id == tid).values(
        record_count=gross, file_size_bytes=sum(int(r.file_size_bytes) for r in live)))
    tcs = s.table("ducklake_table_column_stats", v11)
    for (cid,) in tx.execute(select(tcs.c.column_id).where(tcs.c.table_id == tid)).all():
        stats = merged.get(int(cid), ColumnStats(types.get(int(cid), ""), has_null_count=False, any_valid=False))
        tx.execute(update(tcs).where(and_(tcs.c.table_id == tid, tcs.c.column_id == cid))
                   .values(**stats.row(v11=v11)))


def schedule_for_deletion(tx: Transaction, files: Sequence[tuple[int, str, bool]]) -> None:
    """`(file id, path relative to the data path or absolute, is_relative)` rows for a later cleanup."""
    tx.insert(s.scheduled_t, [{"data_file_id": fid, "path": path, "path_is_relative": rel,
                               "schedule_start": tx.backend.encode_timestamp(tx.now)} for fid, path, rel in files])


def remove_data_files(tx: Transaction, table_id: int, data_file_ids: Sequence[int]) -> int:
    """Physically delete files' rows (compaction replaces them; time travel goes through the new file)."""
    from sqlalchemy import delete

    if not data_file_ids:
        return 0
    ids = list(data_file_ids)
    for t in (s.file_column_stats_t, s.file_partition_value_t, s.delete_file_t):
        tx.execute(delete(t).where(and_(t.c.table_id == table_id, t.c.data_file_id.in_(ids))))
    if "ducklake_file_variant_stats" in tx.reader.table_names():
        v = s.T["ducklake_file_variant_stats"]
        tx.execute(delete(v).where(and_(v.c.table_id == table_id, v.c.data_file_id.in_(ids))))
    df = s.data_file_t
    return int(tx.execute(delete(df).where(and_(df.c.table_id == table_id, df.c.data_file_id.in_(ids)),
                                           df.c.end_snapshot.is_(None))).rowcount)


def end_data_files(tx: Transaction, table_id: int, data_file_ids: Sequence[int]) -> int:
    """End live data files and their live delete files at this snapshot (rewrite keeps them for time travel)."""
    if not data_file_ids:
        return 0
    ids = list(data_file_ids)
    dl = s.delete_file_t
    tx.execute(update(dl).where(and_(dl.c.table_id == table_id, dl.c.data_file_id.in_(ids),
                                     dl.c.end_snapshot.is_(None))).values(end_snapshot=tx.snapshot_id))
    df = s.data_file_t
    return int(tx.execute(update(df).where(and_(df.c.table_id == table_id, df.c.data_file_id.in_(ids),
                                                df.c.end_snapshot.is_(None))).values(end_snapshot=tx.snapshot_id))
               .rowcount)


def add_table_file_bytes(tx: Transaction, table_id: int, added: int) -> None:
    """`ducklake_table_stats.file_size_bytes += added` (flush moves rows into files without new rows)."""
    ts = s.table_stats_t
    tx.execute(update(ts).where(ts.c.table_id == table_id).values(file_size_bytes=ts.c.file_size_bytes + added))


def delete_inlined_rows(tx: Transaction, table_name: str, upto_snapshot: int) -> int:
    """Remove flushed rows from an inlined-data table."""
    begin = tx.reader.inlined_system(table_name)[1]
    return int(tx.execute_text(f"DELETE FROM {tx.backend.qualify(table_name)} WHERE {begin} <= :s",
                               {"s": upto_snapshot}).rowcount)
