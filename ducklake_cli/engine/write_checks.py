"""Executor-side checks of the rows a write job gets (NOT NULL, the Arrow casts into the files' types), refusing
with one line that names the table, the column, the value and its row; the driver shows it as raised
(`errors.from_executor`). Pure Python over pyarrow: runs in Spark's Python workers."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.types import DUCKDB_TYPES, ROW_ID_COLUMN
from ducklake_cli.errors import BadValueError, ConstraintError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pyarrow as pa


def _name(text: str) -> str:
    return text if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text) else '"' + text.replace('"', '""') + '"'


def column_where(table: str, column: str) -> str:
    """A column of the table being written, for messages: `main.t.c` (`column c` when the table is not named)."""
    return f"{table}.{_name(column)}" if table else f"column {_name(column)}"


def show_value(value: Any, limit: int = 40) -> str:
    """A value for a message, as SQL spells it (NULL, 'text', {'a': 1}, [1, NULL]), cut at `limit` characters."""
    text = _literal(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str | bytes):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list) and all(isinstance(e, tuple) and len(e) == 2 for e in value) and value:  # a map
        return "MAP {" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return str(value)


def row_text(table: pa.Table, index: int, limit: int = 240) -> str:
    """Row `index` of a batch for a message: `the row with rowid 7 (id=NULL, v='x')` when the batch carries row ids
    (updated or rewritten rows), else `the new row (…)`."""
    row = {name: table.column(name)[index].as_py() for name in table.column_names}
    rowid = row.pop(ROW_ID_COLUMN, None)
    values = ", ".join(f"{_name(k)}={show_value(v)}" for k, v in row.items() if not k.startswith("_ducklake_internal_"))
    values = values if len(values) <= limit else values[:limit - 1] + "…"
    return f"the row with rowid {rowid} ({values})" if rowid is not None else f"the new row ({values})"


def check_not_null(table: pa.Table, columns: Sequence[int], table_name: str) -> None:
    """Refuse a batch with NULL in one of `columns` (positions of the columns writes keep NULL out of), naming the
    first such row."""
    import pyarrow.compute as pc

    for i in columns:
        column = table.column(i)
        if column.null_count:
            first = pc.index(pc.is_null(column), True).as_py()
            where = column_where(table_name, table.column_names[i])
            raise ConstraintError(f"NOT NULL constraint failed: {where} is NULL in {row_text(table, first)}")


def cast_batch(table: pa.Table, schema: pa.Schema, kinds: Mapping[int, str], table_name: str) -> pa.Table:
    """A batch in the files' Arrow types; a value its column's type cannot hold (an unsigned column's range) is a
    `BadValueError` naming the column (`kinds`: DuckLake types by position), the value and its row."""
    import pyarrow as pa

    try:
        return table.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        for i, target in enumerate(schema):
            column = table.column(i).combine_chunks()
            if _casts(column, target.type):
                continue
            bad = next((j for j in range(len(column)) if not _casts(column.slice(j, 1), target.type)), 0)
            kind = kinds.get(i, str(target.type))
            raise BadValueError(f"{column_where(table_name, target.name)} is {DUCKDB_TYPES.get(kind, kind.upper())}, "
                                f"which cannot hold {show_value(column[bad].as_py())}, in {row_text(table, bad)}"
                                ) from None
        raise


def _casts(array: pa.Array, to: pa.DataType) -> bool:
    import pyarrow as pa

    try:
        array.cast(to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True
