"""Catalog rows of `restore` (one snapshot in which a table reads as it read at an earlier snapshot N): what the
table held at a snapshot, and the rows that bring N's state back — file rows ended or re-registered, delete files
ended, inlined rows ended or re-inserted, and N's columns, partition and sort specs. Nothing earlier is changed,
so every older snapshot still reads as before. Every function stages rows on a `Transaction`; nothing commits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, select, update

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.columns import table_altered
from ducklake_cli.catalog.ddl import COMMENT_KEY, comment_column, comment_table, set_partition, set_sort
from ducklake_cli.catalog.deletes import inlined_file_deletions
from ducklake_cli.catalog.models import ColumnInfo, DataFile, DeleteFile, TableInfo
from ducklake_cli.catalog.transaction import Transaction
from ducklake_cli.catalog.writes import column_rows

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ducklake_cli.catalog.backends import Backend
    from ducklake_cli.catalog.reader import MetadataReader


@dataclass(frozen=True)
class FileState:
    """A data file visible at a snapshot and the delete file row visible for it then (if any)."""

    data: DataFile
    delete: DeleteFile | None


def file_states(reader: MetadataReader, table_id: int, snapshot_id: int) -> dict[int, FileState]:
    """Data files visible at the snapshot with their delete files (a delete row whose data file is no longer
    visible is ignored: DuckDB leaves it live when a DELETE ends the whole file)."""
    files = {f.data_file_id: f for f in reader.data_files(snapshot_id, [table_id])}
    deletes: dict[int, DeleteFile] = {}
    for d in reader.delete_files(snapshot_id, [table_id]):
        if d.data_file_id in files:
            old = deletes.get(d.data_file_id)
            if old is None or d.begin_snapshot > old.begin_snapshot:
                deletes[d.data_file_id] = d
    return {fid: FileState(f, deletes.get(fid)) for fid, f in files.items()}


def inlined_file_deletes(reader: MetadataReader, table_id: int) -> list[tuple[int, int, int]]:
    """Every inlined file deletion of the table: `(data file id, position, begin snapshot)`."""
    return inlined_file_deletions(reader, table_id)


@dataclass(frozen=True)
class InlinedChange:
    """Inlined rows of one inlined-data table to end (inserted after N, live now) and to insert again (live at
    N, deleted since)."""

    table_name: str
    to_end: int
    to_readd: int


def inlined_changes(reader: MetadataReader, table: TableInfo, target: int) -> list[InlinedChange]:
    """Per inlined-data table of `table`, how many rows restoring to `target` ends and inserts again."""
    out = []
    for inl in table.inlined_tables:
        q = reader.backend.qualify(inl.table_name)
        n = int(target)
        _, begin, end = reader.inlined_system(inl.table_name)
        to_end, to_readd = reader.conn.exec_driver_sql(
            f"SELECT count(CASE WHEN {end} IS NULL AND {begin} > {n} THEN 1 END), "
            f"count(CASE WHEN {begin} <= {n} AND {end} > {n} THEN 1 END) FROM {q}").one()
        if to_end or to_readd:
            out.append(InlinedChange(inl.table_name, int(to_end or 0), int(to_readd or 0)))
    return out


def restore_inlined(tx: Transaction, table_id: int, change: InlinedChange, target: int) -> None:
    """End the rows inserted after `target` that are live, then insert again (same row ids and values, in the
    same inlined-data table, beginning now) the rows live at `target` and deleted since."""
    b = tx.backend
    q = b.qualify(change.table_name)
    params = {"n": target, "s": tx.snapshot_id}
    row_id, begin, end = tx.reader.inlined_system(change.table_name)
    if change.to_end:
        tx.execute_text(f"UPDATE {q} SET {end} = :s WHERE {end} IS NULL AND {begin} > :n "
                        f"AND {begin} <> :s", params)
        tx.change("inlined_delete", table_id)
    if change.to_readd:
        keys = tx.execute_text(f"SELECT * FROM {q} WHERE 1 = 0").keys()
        values = ", ".join(b.quote(str(k)) for k in list(keys)[3:])
        tail = ", " + values if values else ""
        tx.execute_text(f"INSERT INTO {q} ({row_id}, {begin}, {end}{tail}) SELECT {row_id}, :s, NULL{tail} "
                        f"FROM {q} WHERE {begin} <= :n AND {end} > :n AND {end} <> :s", params)
        tx.change("inlined_insert", table_id)


def end_delete_files(tx: Transaction, table_id: int, delete_file_ids: Sequence[int]) -> None:
    """End live delete file rows at this snapshot (their data files stay)."""
    if not delete_file_ids:
        return
    dl = s.delete_file_t
    tx.execute(update(dl).where(and_(dl.c.table_id == table_id, dl.c.delete_file_id.in_(list(delete_file_ids)),
                                     dl.c.end_snapshot.is_(None))).values(end_snapshot=tx.snapshot_id))
    tx.change("deleted_from_table", table_id)


def copy_data_file(tx: Transaction, f: DataFile, *, path: str, path_is_relative: bool) -> int:
    """Register a byte copy of `f` (at `path`) beginning now: same rows, row ids, stats, partition values and name
    mapping as `f`, a new id. Returns the new data file id."""
    fid = tx.file_id()
    v11 = tx.v11
    row = {
        "data_file_id": fid, "table_id": f.table_id, "begin_snapshot": tx.snapshot_id, "end_snapshot": None,
        "file_order": None, "path": path, "path_is_relative": path_is_relative, "file_format": f.file_format,
        "record_count": f.record_count, "file_size_bytes": f.file_size_bytes, "footer_size": f.footer_size,
        "row_id_start": f.row_id_start, "partition_id": f.partition_id, "encryption_key": f.encryption_key,
        "mapping_id": f.mapping_id, "partial_max": f.partial_max}
    if v11:  # a byte copy has the same row groups (spec versions §3.1)
        df = s.table("ducklake_data_file", True)
        row["row_group_count"] = tx.execute(select(df.c.row_group_count).where(
            and_(df.c.table_id == f.table_id, df.c.data_file_id == f.data_file_id))).scalar()
    tx.insert(s.table("ducklake_data_file", v11), [row])
    # 1.1's stats rows carry their exactness flags along.
    per_file = [s.table("ducklake_file_column_stats", v11), s.file_partition_value_t]
    if "ducklake_file_variant_stats" in tx.reader.table_names():
        per_file.append(s.T["ducklake_file_variant_stats"])
    for t in per_file:
        rows = tx.execute(select(t).where(and_(t.c.table_id == f.table_id, t.c.data_file_id == f.data_file_id)))
        tx.insert(t, [{**r._mapping, "data_file_id": fid} for r in rows])
    tx.change("inserted_into_table", f.table_id)
    return fid


def add_table_stats(tx: Transaction, table_id: int, *, records: int, file_bytes: int) -> None:
    """`ducklake_table_stats`: count the rows and bytes registered again (as an insert would; row ids unchanged)."""
    if not records and not file_bytes:
        return
    ts = s.table_stats_t
    tx.execute(update(ts).where(ts.c.table_id == table_id).values(
        record_count=ts.c.record_count + records, file_size_bytes=ts.c.file_size_bytes + file_bytes))


# ----- the table definition ---------------------------------------------------------------------------------


def flat_columns(cols: Sequence[ColumnInfo]) -> dict[int, ColumnInfo]:
    """Every column (nested too) by id, without children."""
    out: dict[int, ColumnInfo] = {}
    for c in cols:
        out[c.column_id] = replace(c, children=())
        out.update(flat_columns(c.children))
    return out


def _definition(c: ColumnInfo) -> tuple[Any, ...]:
    return (c.name, c.type, c.nulls_allowed, c.initial_default, c.default_value or "NULL",
            c.default_value_type or "", c.parent_column, c.column_order)


def column_differences(now: TableInfo, then: TableInfo) -> list[str]:
    """What restoring `then`'s columns changes, for people (`re-add c`, `drop d`, `b: int64 → int32`)."""
    a, b = flat_columns(now.columns), flat_columns(then.columns)
    out = []
    for cid in sorted(a.keys() | b.keys()):
        old, new = a.get(cid), b.get(cid)
        if old is None and new is not None:
            out.append(f"re-add column {new.name} ({new.type})")
        elif new is None and old is not None:
            out.append(f"drop column {old.name}")
        elif old is not None and new is not None and _definition(old) != _definition(new):
            what = []
            if old.name != new.name:
                what.append(f"rename to {new.name}")
            if old.type != new.type:
                what.append(f"type {old.type} → {new.type}")
            if old.nulls_allowed != new.nulls_allowed:
                what.append("drop NOT NULL" if new.nulls_allowed else "set NOT NULL")
            if (old.default_value, old.initial_default) != (new.default_value, new.initial_default):
                what.append(f"default {old.default_value} → {new.default_value}")
            out.append(f"column {old.name}: {', '.join(what) or 'definition as at the snapshot'}")
    return out


def restore_definition(tx: Transaction, now: TableInfo, then: TableInfo, *, inline: bool) -> None:
    """Bring back `then`'s columns (same ids, so every file's data maps as it did), partition and sort specs;
    the table keeps its current name. Moves the schema version once, as the equivalent ALTERs would."""
    a, b = flat_columns(now.columns), flat_columns(then.columns)
    changed = sorted(cid for cid in a.keys() | b.keys()
                     if cid not in a or cid not in b or _definition(a[cid]) != _definition(b[cid]))
    table = replace(then, name=now.name, inlined_tables=now.inlined_tables, partition=now.partition,
                    sort_keys=now.sort_keys)
    if changed:
        c = s.column_t
        gone = [cid for cid in changed if cid in a]
        if gone:
            tx.execute(update(c).where(and_(c.c.table_id == now.table_id, c.c.column_id.in_(gone),
                                            c.c.end_snapshot.is_(None))).values(end_snapshot=tx.snapshot_id))
        tx.insert(s.column_t, column_rows(tx, now.table_id, [b[cid] for cid in changed if cid in b]))
        table_altered(tx, table, new_inlined=inline)
    fields_now = [(f.column_id, f.transform) for f in now.partition.fields] if now.partition else []
    fields_then = [(f.column_id, f.transform) for f in then.partition.fields] if then.partition else []
    if fields_now != fields_then:
        table = set_partition(tx, table, fields_then, inline=inline and not changed)
    keys = [(k.expression, k.direction, k.null_order) for k in now.sort_keys]
    if keys != [(k.expression, k.direction, k.null_order) for k in then.sort_keys]:
        table = set_sort(tx, table, then.sort_keys)
    if now.comment() != then.comment():
        comment_table(tx, table, then.comment())
    before, after = _column_comments(now), _column_comments(then)
    for cid in sorted(after.keys() | before.keys()):
        if cid in b and before.get(cid) != after.get(cid):
            comment_column(tx, table, cid, after.get(cid))


def _column_comments(table: TableInfo) -> dict[int, str | None]:
    return {cid: value for cid, key, value in table.column_tags if key == COMMENT_KEY}


def definition_differences(now: TableInfo, then: TableInfo) -> list[str]:
    """Column, partition and sort differences restoring `then` undoes, for people."""
    out = column_differences(now, then)
    names = {c.column_id: c.name for c in flat_columns(then.columns).values()} | {
        c.column_id: c.name for c in flat_columns(now.columns).values()}

    def spec(t: TableInfo) -> str:
        if not t.partition:
            return "none"
        return ", ".join(f"{f.transform}({names.get(f.column_id, f.column_id)})" if f.transform != "identity"
                         else str(names.get(f.column_id, f.column_id)) for f in t.partition.fields)

    if spec(now) != spec(then):
        out.append(f"partitioning: {spec(now)} → {spec(then)}")
    sort_now = ", ".join(f"{k.expression} {k.direction}" for k in now.sort_keys) or "none"
    sort_then = ", ".join(f"{k.expression} {k.direction}" for k in then.sort_keys) or "none"
    if sort_now != sort_then:
        out.append(f"sort order: {sort_now} → {sort_then}")
    if now.comment() != then.comment():
        out.append(f"table comment: {now.comment()!r} → {then.comment()!r}")
    before, after = _column_comments(now), _column_comments(then)
    out += [f"comment on column {names.get(cid, cid)}: {before.get(cid)!r} → {after.get(cid)!r}"
            for cid in sorted(after.keys() | before.keys())
            if cid in flat_columns(then.columns) and before.get(cid) != after.get(cid)]
    return out


def inlines(backend: Backend, table: TableInfo) -> bool:
    """Whether a new definition of the table gets an inlined-data table (DuckDB makes one when it inlines)."""
    return bool(table.inlined_tables) and backend.transactional_ddl


def changes_to_table(conn: Connection, table: TableInfo, since: int) -> list[str]:
    """The change kinds later snapshots recorded for the table (by id, or by name for a table created again)."""
    from ducklake_cli.catalog.changes import parse_changes

    sc = s.snapshot_changes_t
    out: list[str] = []
    for text in conn.execute(select(sc.c.changes_made).where(sc.c.snapshot_id > since)).scalars():
        for kind, values in parse_changes(text).items():
            if (str(table.table_id) in values or table.qualified_name in values) and kind not in out:
                out.append(kind)
    return out

