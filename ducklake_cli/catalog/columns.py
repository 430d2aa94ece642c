"""Column changes of one snapshot (spec §5.4): add, drop, rename, retype, nullability, defaults; nested too.

Each function stages rows on the open `Transaction` and returns the table as it is after the change, so several
changes chain inside one snapshot (`write --evolve`). The rows are what DuckDB 1.5.5 writes for the same ALTER,
quirks included (established by experiment): a re-versioned top-level column gets `default_value_type 'literal'`
unless its default is an expression; a renamed or retyped nested field gets `''` and `nulls_allowed false`; fields
added inside a struct get `nulls_allowed false`; DEFAULT and NOT NULL changes make no new inlined-data table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import and_, delete, select, update

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.models import ColumnInfo, TableInfo
from ducklake_cli.catalog.transaction import Transaction
from ducklake_cli.catalog.types import (
    FLOAT_TYPES,
    INT_DECIMAL_DIGITS,
    MAX_DECIMAL_PRECISION,
    SIGNED_WIDENING,
    UNSIGNED_WIDENING,
    decimal_parts,
)
from ducklake_cli.catalog.writes import column_rows, create_inlined_table
from ducklake_cli.errors import QueryError

# Timestamp types each older temporal type widens to (DuckDB's implicit casts; `timestamp_us` is `timestamp`).
_TIMESTAMPS = ("timestamp_s", "timestamp_ms", "timestamp", "timestamp_us", "timestamp_ns")
_TEMPORAL: dict[str, frozenset[str]] = {
    "date": frozenset({*_TIMESTAMPS, "timestamptz"}),
    "timestamp_s": frozenset(_TIMESTAMPS[1:]),
    "timestamp_ms": frozenset(_TIMESTAMPS[2:]),
    "timestamp": frozenset({"timestamp_ns", "timestamptz"}),
    "timestamp_us": frozenset({"timestamp_ns", "timestamptz"}),
}
_NESTED = frozenset({"struct", "list", "map"})
_LITERAL, _EXPRESSION = "literal", "expression"


@dataclass(frozen=True)
class Default:
    """A column default as DuckDB records it: what old rows read (`initial_default`), the default's text, its kind
    (`literal` or `expression`)."""

    initial: str | None
    value: str
    kind: str = _LITERAL


NO_DEFAULT = Default(None, "NULL")


def promotion_allowed(old_type: str, new_type: str) -> bool:
    """Whether DuckLake lets a leaf column of `old_type` become `new_type`: DuckDB 1.5.5's rule (the new type is
    what DuckDB makes of the two when it must hold values of both, `TypePromotionIsAllowed`), established by trying
    every pair: integers widen to wider integers (unsigned to signed only with more bits), floats and decimals with
    as many integer digits (a 38-digit decimal takes any integer); booleans to integers; decimals to floats and to
    the decimal DuckDB makes of both (`_decimal_union`); date and coarser timestamps to finer ones;
    timestamp (µs) to timestamptz; anything to json, and anything but json to variant."""
    if old_type == new_type:
        return True
    if old_type in _NESTED or new_type in _NESTED:
        return False
    if new_type == "json" or (new_type == "variant" and old_type != "json"):
        return True
    if new_type in _TEMPORAL.get(old_type, ()):
        return True
    if old_type == "float32":
        return new_type == "float64"
    if old_type == "boolean":
        return new_type in INT_DECIMAL_DIGITS
    old_dec, new_dec = decimal_parts(old_type), decimal_parts(new_type)
    if old_dec is not None:
        return _decimal_union(old_dec, new_dec) == new_dec if new_dec is not None else new_type in FLOAT_TYPES
    if old_type not in INT_DECIMAL_DIGITS:
        return False
    if new_type in FLOAT_TYPES:
        return True
    if new_dec is not None:
        return INT_DECIMAL_DIGITS[old_type] <= new_dec[0] - new_dec[1] or new_dec[0] == MAX_DECIMAL_PRECISION
    return _wider_integer(old_type, new_type)


def _decimal_union(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The decimal DuckDB makes of two: the most integer and the most fractional digits; past 38 digits the
    fraction gives way (so `decimal(38,0)` takes any decimal)."""
    whole, scale = max(a[0] - a[1], b[0] - b[1]), max(a[1], b[1])
    if whole + scale > MAX_DECIMAL_PRECISION:
        return MAX_DECIMAL_PRECISION, MAX_DECIMAL_PRECISION - whole
    return whole + scale, scale


def _wider_integer(old_type: str, new_type: str) -> bool:
    """A signed integer into a wider signed one; an unsigned one into a wider unsigned one or a signed one with more
    bits (never signed into unsigned)."""
    for family in (SIGNED_WIDENING, UNSIGNED_WIDENING):
        if old_type in family and new_type in family:
            return family.index(new_type) > family.index(old_type)
    if old_type in UNSIGNED_WIDENING and new_type in SIGNED_WIDENING:
        return SIGNED_WIDENING.index(new_type) > UNSIGNED_WIDENING.index(old_type)
    return False


def table_altered(tx: Transaction, table: TableInfo, *, versioned: bool = True, new_inlined: bool = True,
                  altered: bool = True) -> None:
    """Record that `table`'s definition changed in this snapshot: the schema version moves, `altered_table` (not
    for a rename, which DuckDB records as `created_table` only), and (once per table, however many changes) a
    `ducklake_schema_versions` row and an inlined-data table with the current columns (re-made when a later change
    in the same snapshot alters the columns again)."""
    tx.schema_changed = True
    if altered:
        tx.change("altered_table", table.table_id)
    if versioned and table.table_id not in tx.versioned_tables:
        tx.versioned_tables.add(table.table_id)
        tx.insert(s.schema_versions_t, [{"begin_snapshot": tx.snapshot_id, "schema_version": tx.schema_version,
                                         "table_id": table.table_id}])
    if new_inlined:
        made = tx.inlined_made.get(table.table_id)
        if made is not None:
            it = s.inlined_tables_t
            tx.execute(delete(it).where(it.c.table_name == made))
            tx.execute_text(f"DROP TABLE {tx.backend.qualify(made)}")
        tx.inlined_made[table.table_id] = create_inlined_table(tx, table).table_name


def _walk(cols: Sequence[ColumnInfo], column_id: int) -> ColumnInfo | None:
    for c in cols:
        if c.column_id == column_id:
            return c
        found = _walk(c.children, column_id)
        if found is not None:
            return found
    return None


def column(table: TableInfo, column_id: int) -> ColumnInfo:
    """The live column (nested too) with this id."""
    found = _walk(table.columns, column_id)
    if found is None:
        raise QueryError(f"table {table.qualified_name} has no column with id {column_id}")
    return found


def _map(cols: Sequence[ColumnInfo], column_id: int,
         change: Callable[[ColumnInfo], ColumnInfo | None]) -> tuple[ColumnInfo, ...]:
    """The column tree with the column `column_id` replaced by `change(col)` (None removes it)."""
    out: list[ColumnInfo] = []
    for c in cols:
        if c.column_id == column_id:
            new = change(c)
            if new is not None:
                out.append(new)
        else:
            out.append(replace(c, children=_map(c.children, column_id, change)) if c.children else c)
    return tuple(out)


def _end(tx: Transaction, table_id: int, column_ids: Sequence[int]) -> None:
    """End the live rows of these columns; a row begun in this very snapshot is removed instead."""
    c = s.column_t
    live = and_(c.c.table_id == table_id, c.c.column_id.in_(list(column_ids)), c.c.end_snapshot.is_(None))
    tx.execute(delete(c).where(live, c.c.begin_snapshot == tx.snapshot_id))
    tx.execute(update(c).where(live).values(end_snapshot=tx.snapshot_id))


def _new_version(tx: Transaction, table: TableInfo, old: ColumnInfo, **changes: Any) -> TableInfo:
    """End the column's live row and write a new version of it (same id and order), as DuckDB re-versions one."""
    nested = old.parent_column is not None
    kind = "" if nested else (old.default_value_type if old.default_value_type == _EXPRESSION else _LITERAL)
    fields = {"default_value_type": kind, "begin_snapshot": tx.snapshot_id}
    if nested:
        fields["nulls_allowed"] = False
    new = replace(old, **{**fields, **changes})
    _end(tx, table.table_id, [old.column_id])
    tx.insert(s.column_t, column_rows(tx, table.table_id, [replace(new, children=())]))
    return replace(table, columns=_map(table.columns, old.column_id, lambda _: new))


def _number(cols: Sequence[ColumnInfo], first: int, parent: int | None) -> tuple[list[ColumnInfo], int]:
    """Give new columns ids in pre-order from `first` (parent before children), as DuckDB numbers them."""
    out, nxt = [], first
    for c in cols:
        cid = nxt
        kids, nxt = _number(c.children, nxt + 1, cid)
        out.append(replace(c, column_id=cid, column_order=cid, parent_column=parent, children=tuple(kids)))
    return out, nxt


def _nested_added(col: ColumnInfo, begin: int) -> ColumnInfo:
    """A field added inside a struct: DuckDB records the whole added subtree as NOT NULL, kind `literal`."""
    return replace(col, nulls_allowed=False, default_value_type=_LITERAL, begin_snapshot=begin,
                   children=tuple(_nested_added(k, begin) for k in col.children))


def _fresh(col: ColumnInfo, default: Default, begin: int) -> ColumnInfo:
    """A new top-level column: parents of nested types have kind `''`, leaves `literal`."""
    def shape(c: ColumnInfo) -> ColumnInfo:
        return replace(c, default_value_type="" if c.children else _LITERAL, initial_default=None,
                       default_value="NULL", begin_snapshot=begin, children=tuple(shape(k) for k in c.children))
    top = shape(col)
    return replace(top, initial_default=default.initial, default_value=default.value,
                   default_value_type=top.default_value_type if top.children else default.kind)


def add_column(tx: Transaction, table: TableInfo, col: ColumnInfo, *, parent_id: int | None = None,
               default: Default = NO_DEFAULT, inline: bool = True) -> TableInfo:
    """Add `col` (its ids are assigned here) at the top level or as a field of the struct `parent_id`."""
    siblings = table.columns if parent_id is None else column(table, parent_id).children
    if any(c.name.lower() == col.name.lower() for c in siblings):
        raise QueryError(f"column {col.name!r} already exists in {table.qualified_name}")
    if parent_id is not None and column(table, parent_id).type != "struct":
        raise QueryError(f"fields can only be added to a struct; {column(table, parent_id).name!r} is "
                         f"{column(table, parent_id).type}")
    (numbered,), _ = _number([col], tx.reader.next_column_id(table.table_id), parent_id)
    if parent_id is None:
        new = _fresh(numbered, default, tx.snapshot_id)
    else:
        new = replace(_nested_added(numbered, tx.snapshot_id), initial_default=default.initial,
                      default_value=default.value)
    tx.insert(s.column_t, column_rows(tx, table.table_id, [new]))
    if parent_id is None:
        table = replace(table, columns=(*table.columns, new))
    else:
        table = replace(table, columns=_map(table.columns, parent_id,
                                            lambda p: replace(p, children=(*p.children, new))))
    table_altered(tx, table, new_inlined=inline)
    return table


def drop_column(tx: Transaction, table: TableInfo, column_id: int, *, inline: bool = True) -> TableInfo:
    """Drop a column (or struct field) and everything under it; the last top-level column cannot go."""
    col = column(table, column_id)
    _refuse_inside(table, col, "drop")
    if col.parent_column is None and len(table.columns) == 1:
        raise QueryError(f"cannot drop {col.name!r}: it is the only column of {table.qualified_name}")
    if col.parent_column is not None and len(column(table, col.parent_column).children) == 1:
        raise QueryError(f"cannot drop {col.name!r}: it is the only field of its struct")
    ids = [c.column_id for c in _subtree(col)]
    _end(tx, table.table_id, ids)
    table = replace(table, columns=_map(table.columns, column_id, lambda _: None))
    table_altered(tx, table, new_inlined=inline)
    return table


def _refuse_inside(table: TableInfo, col: ColumnInfo, verb: str) -> None:
    """Only top-level columns and struct fields can be renamed or dropped (a list's element or a map's key and
    value cannot: DuckDB refuses, and its readers would no longer find them)."""
    if col.parent_column is not None and column(table, col.parent_column).type != "struct":
        parent = column(table, col.parent_column)
        raise QueryError(f"cannot {verb} {col.name!r} of {parent.name!r}: it is part of a {parent.type}, "
                         "not a struct field")


def _subtree(col: ColumnInfo) -> list[ColumnInfo]:
    return [col, *(d for k in col.children for d in _subtree(k))]


def rename_column(tx: Transaction, table: TableInfo, column_id: int, new_name: str, *,
                  inline: bool = True) -> TableInfo:
    """Rename a column or struct field (its id, and so every file's data, stays)."""
    col = column(table, column_id)
    _refuse_inside(table, col, "rename")
    siblings = table.columns if col.parent_column is None else column(table, col.parent_column).children
    if any(c.name.lower() == new_name.lower() and c.column_id != column_id for c in siblings):
        raise QueryError(f"cannot rename {col.name!r} to {new_name!r}: a column with that name already exists")
    table = _new_version(tx, table, col, name=new_name)  # DuckDB re-versions a column renamed to itself too
    table_altered(tx, table, new_inlined=inline)
    return table


def set_column_type(tx: Transaction, table: TableInfo, column_id: int, new_type: ColumnInfo, *,
                    inline: bool = True) -> TableInfo:
    """Change a column's type to `new_type` (a column tree): a widening promotion (`promotion_allowed`), for a
    struct fields added (new ids), dropped, or promoted by name, for a list or map its element, key or value
    promoted."""
    table = _retype(tx, table, column(table, column_id), new_type)
    table_altered(tx, table, new_inlined=inline)
    return table


def _retype(tx: Transaction, table: TableInfo, old: ColumnInfo, new: ColumnInfo) -> TableInfo:
    if old.type == "struct" and new.type == "struct":
        wanted = {c.name.lower(): c for c in new.children}
        for child in old.children:
            if child.name.lower() not in wanted:
                table = replace(table, columns=_map(table.columns, child.column_id, lambda _: None))
                _end(tx, table.table_id, [c.column_id for c in _subtree(child)])
        have = {c.name.lower(): c for c in old.children}
        for field in new.children:
            if field.name.lower() in have:
                table = _retype(tx, table, have[field.name.lower()], field)
            else:
                table = _add_field(tx, table, old.column_id, field)
        return table
    if old.type == new.type and old.type in ("list", "map") and len(old.children) == len(new.children):
        for was, becomes in zip(old.children, new.children, strict=True):  # element; key and value
            table = _retype(tx, table, was, becomes)
        return table
    if old.children or new.children:
        if old.type_text() == new.type_text():
            return table
        raise QueryError(f"cannot change {old.name!r} from {old.type_text()} to {new.type_text()}: only widening "
                         "promotions and struct field changes are allowed")
    if old.type == new.type:
        return table
    if not promotion_allowed(old.type, new.type):
        raise QueryError(f"cannot change the type of {old.name!r} from {old.type} to {new.type}: only widening "
                         "promotions are allowed (e.g. int32 → int64, int32 → decimal(12,2), decimal(12,2) → "
                         "decimal(14,2), float32 → float64, date → timestamp, any type → json)")
    return _new_version(tx, table, old, type=new.type)


def _add_field(tx: Transaction, table: TableInfo, parent_id: int, field: ColumnInfo) -> TableInfo:
    """A field a struct retype adds: DuckDB writes it like a new top-level column (nullable)."""
    (numbered,), _ = _number([field], tx.reader.next_column_id(table.table_id), parent_id)
    new = replace(_fresh(numbered, NO_DEFAULT, tx.snapshot_id), parent_column=parent_id)
    tx.insert(s.column_t, column_rows(tx, table.table_id, [new]))
    return replace(table, columns=_map(table.columns, parent_id, lambda p: replace(p, children=(*p.children, new))))


def set_nulls_allowed(tx: Transaction, table: TableInfo, column_id: int, allowed: bool) -> TableInfo:
    """SET / DROP NOT NULL. SET needs table stats proving the column holds no NULL (DuckDB's rule)."""
    col = column(table, column_id)
    if col.nulls_allowed == allowed:
        return table
    if not allowed:
        cs = s.table_column_stats_t
        has_null = tx.execute(select(cs.c.contains_null).where(
            and_(cs.c.table_id == table.table_id, cs.c.column_id == column_id))).first()
        if has_null is None:
            raise QueryError(f"cannot SET NOT NULL on {col.name!r}: the table has no statistics for it yet "
                             "(DuckDB's rule: the column must have data proving it holds no NULL)")
        if has_null[0] is None or bool(has_null[0]):
            raise QueryError(f"cannot SET NOT NULL on {col.name!r}: it holds NULL values")
    table = _new_version(tx, table, col, nulls_allowed=allowed)
    table_altered(tx, table, new_inlined=False)
    return table


def set_default(tx: Transaction, table: TableInfo, column_id: int, default: Default) -> TableInfo:
    """SET / DROP DEFAULT (`NO_DEFAULT`): only new rows see it; what old rows read (`initial_default`) stays."""
    col = column(table, column_id)
    table = _new_version(tx, table, col, default_value=default.value, default_value_type=default.kind
                         if col.parent_column is None else "")
    table_altered(tx, table, new_inlined=False)
    return table
