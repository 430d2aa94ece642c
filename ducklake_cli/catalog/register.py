"""Catalog rows for Parquet files registered in place, as DuckDB's `ducklake_add_data_files` writes them (spec §1.2
column/name mappings, §3.6, §11): absolute paths, one `map_by_name` mapping per distinct file layout (an equal
mapping of the table is reused), footer statistics, row ids continuing the table's, and the table stats merged."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from sqlalchemy import and_, select, update

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.models import TableInfo
from ducklake_cli.catalog.stats import bound_is_exact, exact_flag, merge_bound
from ducklake_cli.catalog.transaction import Transaction
from ducklake_cli.catalog.types import FLOAT_TYPES, INT_TYPES, decimal_parts

MAP_BY_NAME = "map_by_name"


@dataclass(frozen=True)
class MappingRow:
    """A `ducklake_name_mapping` row: mapping-local id, the file's field name, the table column it feeds."""

    column_id: int
    source_name: str
    target_field_id: int
    parent_column: int | None
    is_partition: bool = False


@dataclass(frozen=True)
class FileStat:
    """A `ducklake_file_column_stats` row from the footer (None: the footer does not say)."""

    column_id: int
    column_size_bytes: int
    value_count: int | None
    null_count: int | None
    min_value: str | None
    max_value: str | None
    exact: bool = False  # string bounds are real values (a hive value), not a footer's, which may be cut


@dataclass(frozen=True)
class RegisteredFile:
    """An existing Parquet file to register: absolute path, sizes, its mapping, stats and partition values."""

    path: str
    record_count: int
    file_size_bytes: int
    footer_size: int
    mapping: tuple[MappingRow, ...]
    stats: tuple[FileStat, ...]
    partition_values: tuple[str | None, ...] = ()
    row_group_count: int | None = None  # the footer's num_row_groups (1.1's `row_group_count`)


def _canonical(rows: Sequence[MappingRow]) -> frozenset[tuple[str, int, int | None, bool]]:
    """A mapping compared as DuckDB compares them: field order does not matter, names and targets do."""
    target = {r.column_id: r.target_field_id for r in rows}
    return frozenset((r.source_name, r.target_field_id, target.get(r.parent_column) if r.parent_column is not None
                      else None, r.is_partition) for r in rows)


def _existing_mappings(tx: Transaction, table_id: int) -> dict[frozenset[tuple[str, int, int | None, bool]], int]:
    cm, nm = s.column_mapping_t, s.name_mapping_t
    ids = [r.mapping_id for r in tx.execute(select(cm.c.mapping_id).where(
        and_(cm.c.table_id == table_id, cm.c.type == MAP_BY_NAME)).order_by(cm.c.mapping_id))]
    if not ids:
        return {}
    rows: dict[int, list[MappingRow]] = {i: [] for i in ids}
    for r in tx.execute(select(nm).where(nm.c.mapping_id.in_(ids))):
        rows[r.mapping_id].append(MappingRow(r.column_id, r.source_name, r.target_field_id, r.parent_column,
                                             bool(r.is_partition)))
    out: dict[frozenset[tuple[str, int, int | None, bool]], int] = {}
    for mid in ids:
        out.setdefault(_canonical(rows[mid]), mid)
    return out


def register_files(tx: Transaction, table: TableInfo, files: Sequence[RegisteredFile]) -> list[tuple[int, int]]:
    """Stage the rows of registered files: mappings (new ids first, from next_file_id), data files with row ids
    continuing the table's, their stats and partition values, and the merged table stats. Returns (data file id,
    mapping id) per file."""
    known = _existing_mappings(tx, table.table_id)
    mapping_of: list[int] = []
    for f in files:
        key = _canonical(f.mapping)
        if key not in known:
            mid = tx.file_id()
            known[key] = mid
            tx.insert(s.column_mapping_t, [{"mapping_id": mid, "table_id": table.table_id, "type": MAP_BY_NAME}])
            tx.insert(s.name_mapping_t, [{
                "mapping_id": mid, "column_id": r.column_id, "source_name": r.source_name,
                "target_field_id": r.target_field_id, "parent_column": r.parent_column,
                "is_partition": r.is_partition} for r in f.mapping])
        mapping_of.append(known[key])
    ts = s.table_stats_t
    stats_row = tx.execute(select(ts).where(ts.c.table_id == table.table_id)).first()
    next_row = int(stats_row.next_row_id or 0) if stats_row is not None else 0
    pid = table.partition.partition_id if table.partition else None
    v11 = tx.v11
    types = {leaf.column_id: leaf.type for c in table.columns for leaf in c.leaves()}
    ids = []
    for f, mid in zip(files, mapping_of, strict=True):
        fid = tx.file_id()
        ids.append((fid, mid))
        row = {
            "data_file_id": fid, "table_id": table.table_id, "begin_snapshot": tx.snapshot_id, "end_snapshot": None,
            "file_order": None, "path": f.path, "path_is_relative": False, "file_format": "parquet",
            "record_count": f.record_count, "file_size_bytes": f.file_size_bytes, "footer_size": f.footer_size,
            "row_id_start": next_row, "partition_id": pid, "encryption_key": None, "mapping_id": mid,
            "partial_max": None}
        if v11:  # 1.1 only (spec versions §3.1)
            row["row_group_count"] = f.row_group_count
        tx.insert(s.table("ducklake_data_file", v11), [row])
        tx.insert(s.table("ducklake_file_column_stats", v11), [{
            "data_file_id": fid, "table_id": table.table_id, "column_id": st.column_id,
            "column_size_bytes": st.column_size_bytes, "value_count": st.value_count, "null_count": st.null_count,
            "min_value": st.min_value, "max_value": st.max_value, "contains_nan": None, "extra_stats": None,
            **(_flags(st, types.get(st.column_id, "varchar")) if v11 else {})}
            for st in f.stats])
        if pid is not None:
            tx.insert(s.file_partition_value_t, [{
                "data_file_id": fid, "table_id": table.table_id, "partition_key_index": i, "partition_value": v}
                for i, v in enumerate(f.partition_values)])
        next_row += f.record_count
    _table_stats(tx, table, stats_row, files, next_row)
    if files:
        tx.change("inserted_into_table", table.table_id)
    return ids


def _flags(st: FileStat, ducklake_type: str) -> dict[str, bool | None]:
    """1.1's exactness of a registered file's bounds: a footer's string bounds may be cut, so not exact."""
    return {"min_is_exact": exact_flag(st.min_value, st.exact, ducklake_type),
            "max_is_exact": exact_flag(st.max_value, st.exact, ducklake_type)}


_TEMPORAL_TYPES = frozenset({"date", "timestamp", "timestamptz", "timestamp_s", "timestamp_ms", "timestamp_ns"})
_TEMPORAL = re.compile(r"-?\d{4,}-\d\d-\d\d( \d\d:\d\d:\d\d(\.\d+)?)?(\+00)?( \(BC\))?|-?infinity")


def _typed(text: str | None, typ: str) -> str | None:
    """A file bound, or None when it is no value of the column's type (DuckDB drops such a table bound: a
    transformed hive key such as `year=2025` gives a timestamp column the file bound `2025`)."""
    if text is None:
        return None
    try:
        if typ in INT_TYPES:
            int(text)
        elif typ in FLOAT_TYPES:
            float(text)
        elif decimal_parts(typ):
            Decimal(text)
        elif typ in _TEMPORAL_TYPES and not _TEMPORAL.fullmatch(text):
            return None
    except (ValueError, InvalidOperation):
        return None
    return text


def _table_stats(tx: Transaction, table: TableInfo, old: object, files: Sequence[RegisteredFile],
                 next_row: int) -> None:
    """`ducklake_table_stats` grown and `ducklake_table_column_stats` merged from the footer stats as DuckDB merges
    them: an unknown null count makes contains_null unknown for good; a file with values but no bounds makes the
    bounds unknown until a later file brings some, which then become the bounds. Once the table has stats, a column
    without a row (absent from the files seen then) never gets one."""
    ts = s.table_stats_t
    records = sum(f.record_count for f in files)
    size = sum(f.file_size_bytes for f in files)
    if old is None:
        tx.insert(ts, [{"table_id": table.table_id, "record_count": records, "next_row_id": next_row,
                        "file_size_bytes": size}])
    else:
        tx.execute(update(ts).where(ts.c.table_id == table.table_id).values(
            record_count=int(getattr(old, "record_count", 0) or 0) + records, next_row_id=next_row,
            file_size_bytes=int(getattr(old, "file_size_bytes", 0) or 0) + size))
    types = {leaf.column_id: leaf.type for c in table.columns for leaf in c.leaves()}
    v11 = tx.v11
    tcs = s.table("ducklake_table_column_stats", v11)
    current: dict[int, dict[str, object]] = {
        r.column_id: {"contains_null": None if r.contains_null is None else bool(r.contains_null),
                      "contains_nan": r.contains_nan, "min_value": r.min_value, "max_value": r.max_value,
                      **({"min_is_exact": r.min_is_exact, "max_is_exact": r.max_is_exact} if v11 else {})}
        for r in tx.execute(select(tcs).where(tcs.c.table_id == table.table_id))}
    touched: dict[int, bool] = {}  # column id → whether it had a row before
    for f in files:
        for st in f.stats:
            typ = types.get(st.column_id, "varchar")
            has_null = None if st.null_count is None else st.null_count > 0
            row = current.get(st.column_id)
            lo, hi = (_typed(st.min_value, typ), _typed(st.max_value, typ))
            if row is None:
                if old is not None:  # DuckDB updates the existing rows only: a column without one gets none
                    continue
                touched.setdefault(st.column_id, False)
                current[st.column_id] = {"contains_null": has_null, "contains_nan": None, "min_value": lo,
                                         "max_value": hi}
                if v11:
                    current[st.column_id].update(_flags(FileStat(st.column_id, 0, None, None, lo, hi, st.exact),
                                                        typ))
                continue
            touched.setdefault(st.column_id, True)
            old_null = row["contains_null"]
            row["contains_null"] = None if old_null is None or has_null is None else bool(old_null) or has_null
            row["contains_nan"] = None if typ in FLOAT_TYPES else row["contains_nan"]
            if st.value_count == 0:  # only NULLs: nothing to widen the bounds with
                continue
            for key, upper in (("min_value", False), ("max_value", True)):
                new = lo if not upper else hi
                mine = row[key]
                # A file with values but no bound makes the bound unknown until a later file brings one.
                row[key] = None if new is None else new if mine is None else merge_bound(str(mine), new, typ,
                                                                                         upper=upper)
                if v11:  # the exactness of whichever side supplied the bound (spec versions §3.5)
                    flag = key.replace("_value", "_is_exact")
                    mine_exact = mine is not None and bound_is_exact(row[flag], typ)
                    won = row[key]
                    exact = (mine_exact or st.exact) if won == mine == new else (
                        mine_exact if won == mine else st.exact)
                    row[flag] = exact_flag(None if won is None else str(won), exact, typ)
    for cid, existed in touched.items():
        values = current[cid]
        if existed:
            tx.execute(update(tcs).where(and_(tcs.c.table_id == table.table_id, tcs.c.column_id == cid))
                       .values(**values))
        else:
            tx.insert(tcs, [{"table_id": table.table_id, "column_id": cid, "extra_stats": None, **values}])
