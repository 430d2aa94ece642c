"""Decode inlined-data rows (spec §4) into typed Arrow columns, with DuckDB's own casts as the parser.

Each backend stores inlined values differently (SQLite text, PostgreSQL text/bytea, DuckDB native); all of them
are brought to DuckDB's text rendering, which an in-process DuckDB casts back exactly, nested types included.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import ColumnInfo
from ducklake_cli.catalog.types import DUCKDB_TYPES, decimal_parts

if TYPE_CHECKING:
    import pyarrow as pa
    from sqlalchemy import Connection

    from ducklake_cli.catalog.backends import Backend
    from ducklake_cli.catalog.transaction import Transaction

# What the stored type becomes for Spark (engine/spark_types.py `spark_type` is the other half of this contract).
_SPARK_COMPATIBLE: dict[str, str] = {
    "uint8": "SMALLINT", "uint16": "INTEGER", "uint32": "BIGINT", "uint64": "DECIMAL(20,0)",
    "int128": "VARCHAR", "uint128": "VARCHAR", "time": "VARCHAR", "time_ns": "VARCHAR",
    "timetz": "VARCHAR", "timestamp_s": "TIMESTAMP", "timestamp_ms": "TIMESTAMP", "timestamp_ns": "TIMESTAMP",
    "interval": "VARCHAR", "uuid": "VARCHAR",
}


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _duckdb_type(col: ColumnInfo, overrides: dict[str, str]) -> str:
    if col.type == "struct":
        return "STRUCT(" + ", ".join(f"{_ident(c.name)} {_duckdb_type(c, overrides)}" for c in col.children) + ")"
    if col.type == "list":
        return f"{_duckdb_type(col.children[0], overrides)}[]"
    if col.type == "map":
        return f"MAP({_duckdb_type(col.children[0], overrides)}, {_duckdb_type(col.children[1], overrides)})"
    if col.type in overrides:
        return overrides[col.type]
    dec = decimal_parts(col.type)
    return f"DECIMAL({dec[0]},{dec[1]})" if dec else DUCKDB_TYPES.get(col.type, "VARCHAR")


def stored_type(col: ColumnInfo) -> str:
    """The column's DuckDB type, e.g. `STRUCT("a" INTEGER, "b" VARCHAR[])`."""
    return _duckdb_type(col, {})


def spark_compatible_type(col: ColumnInfo) -> str:
    """The DuckDB type whose Arrow form Spark accepts as `spark_type(col)`."""
    return _duckdb_type(col, _SPARK_COMPATIBLE)


def to_duckdb_text(value: Any, ducklake_type: str) -> str | None:
    """A stored inlined value as text DuckDB casts to the column type."""
    if value is None:
        return None
    if isinstance(value, memoryview | bytes | bytearray):
        raw = bytes(value)
        if ducklake_type in ("blob", "geometry"):
            return "".join(f"\\x{b:02X}" for b in raw)
        return raw.decode("utf-8")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    return str(value)


def decode_inlined(rows: Sequence[tuple[Any, ...]], columns: Sequence[ColumnInfo], *,
                   exact: bool = False) -> pa.Table:
    """`(row_id, values…)` rows → an Arrow table `row_id, c<column_id>…` in Spark-compatible types (`exact`: in
    the columns' own DuckDB types, for writing them to Parquet)."""
    import duckdb
    import pyarrow as pa

    texts: dict[str, list[Any]] = {"row_id": [int(r[0]) for r in rows]}
    for i, col in enumerate(columns, start=1):
        texts[f"v{i}"] = [to_duckdb_text(r[i], col.type) for r in rows]
    source = pa.table({k: pa.array(v, type=pa.int64() if k == "row_id" else pa.string()) for k, v in texts.items()})
    selects = ["row_id"] + [
        f"CAST(CAST(v{i} AS {stored_type(c)}) AS {stored_type(c) if exact else spark_compatible_type(c)}) "
        f"AS c{c.column_id}"
        for i, c in enumerate(columns, start=1)
    ]
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("source", source)
        return con.execute(f"SELECT {', '.join(selects)} FROM source").to_arrow_table()
    finally:
        con.close()


def encode_inlined(table: pa.Table, columns: Sequence[ColumnInfo]) -> list[list[tuple[str | None, Any]]]:
    """Rows to inline: per value, DuckDB's text rendering (what every backend stores or casts from) and the raw
    Python value (integers and blobs are stored natively). `table` holds the columns in order, DuckLake-typed."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        source = table.rename_columns([f"c{i}" for i in range(table.num_columns)])
        con.register("source", source)
        selects = ", ".join(f"CAST(CAST(c{i} AS {stored_type(c)}) AS VARCHAR)" for i, c in enumerate(columns))
        texts = con.execute(f"SELECT {selects} FROM source").fetchall() if columns else [()] * table.num_rows
    finally:
        con.close()
    raws = table.to_pylist()
    names = table.column_names
    return [[(txt, raw[names[i]]) for i, txt in enumerate(row)] for row, raw in zip(texts, raws, strict=True)]


def set_flushed_row_id_start(tx: Transaction, table_id: int, data_file_id: int, row_id_start: int) -> None:
    """A file of flushed inlined rows records their smallest row id as `row_id_start`, as DuckDB's flush does (the
    rows' own ids are embedded: readers take those)."""
    from sqlalchemy import and_, update

    from ducklake_cli.catalog import schema as s

    df = s.data_file_t
    tx.execute(update(df).where(and_(df.c.table_id == table_id, df.c.data_file_id == data_file_id))
               .values(row_id_start=row_id_start))


def drop_empty_superseded(conn: Connection, backend: Backend) -> list[str]:
    """Drop every empty inlined-data table superseded by a later schema version of its table, and its
    registration, as DuckDB does after a commit that flushed inlined data (no snapshot: nothing reads them).
    Returns the tables dropped."""
    from sqlalchemy import and_, delete, func, select

    from ducklake_cli.catalog import schema as s

    t = s.inlined_tables_t
    newest = {int(tid): int(v) for tid, v in conn.execute(
        select(t.c.table_id, func.max(t.c.schema_version)).group_by(t.c.table_id))}
    existing = backend.list_tables(conn)
    dropped = []
    for tid, name, version in conn.execute(select(t.c.table_id, t.c.table_name, t.c.schema_version)).all():
        if int(version) >= newest[int(tid)]:
            continue
        q = backend.qualify(name)
        if name not in existing or conn.exec_driver_sql(f"SELECT count(*) FROM {q}").scalar_one():
            continue  # a missing one is left for `verify` to name
        conn.execute(delete(t).where(and_(t.c.table_id == tid, t.c.schema_version == version)))
        conn.exec_driver_sql(f"DROP TABLE IF EXISTS {q}")
        dropped.append(str(name))
    return dropped
