"""The DuckLake type vocabulary (spec §8.1): type names and families, decimals, and the reserved field ids and
internal column names of rewritten and delete files. Every layer takes these from here."""

from __future__ import annotations

import re

SIGNED_INT_TYPES = frozenset({"int8", "int16", "int32", "int64"})
UNSIGNED_INT_TYPES = frozenset({"uint8", "uint16", "uint32", "uint64"})
INT_TYPES = SIGNED_INT_TYPES | UNSIGNED_INT_TYPES
FLOAT_TYPES = frozenset({"float32", "float64"})
# Integer types from narrowest to widest, 128-bit included (signed, then unsigned).
SIGNED_WIDENING = ("int8", "int16", "int32", "int64", "int128")
UNSIGNED_WIDENING = ("uint8", "uint16", "uint32", "uint64", "uint128")
# The decimal digits DuckDB gives an integer type where it meets a decimal (128-bit: the most a decimal has, 38).
INT_DECIMAL_DIGITS: dict[str, int] = {
    "int8": 3, "int16": 5, "int32": 10, "int64": 19, "int128": 38,
    "uint8": 3, "uint16": 5, "uint32": 10, "uint64": 20, "uint128": 38,
}
MAX_DECIMAL_PRECISION = 38

DECIMAL_TYPE = re.compile(r"decimal\((\d+),\s*(\d+)\)")  # `decimal(p,s)`: precision, scale


def decimal_parts(type_name: str) -> tuple[int, int] | None:
    """(precision, scale) of a `decimal(p,s)` type name, or None for any other type."""
    m = DECIMAL_TYPE.fullmatch(type_name)
    return (int(m.group(1)), int(m.group(2))) if m else None


# Field ids and names of the columns DuckDB embeds in rewritten data files and in delete files (spec §3.7).
ROW_ID_FIELD_ID = 2147483540
SNAPSHOT_ID_FIELD_ID = 2147483539
ROW_ID_COLUMN = "_ducklake_internal_row_id"
SNAPSHOT_ID_COLUMN = "_ducklake_internal_snapshot_id"
DELETE_FILE_PATH_ID = 2147483646  # delete files' `file_path` and `pos`
DELETE_POS_ID = 2147483645

# DuckDB's name of each DuckLake type (json, geometry and variant are stored as DuckDB renders them).
DUCKDB_TYPES: dict[str, str] = {
    "boolean": "BOOLEAN", "int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
    "uint8": "UTINYINT", "uint16": "USMALLINT", "uint32": "UINTEGER", "uint64": "UBIGINT", "int128": "HUGEINT",
    "uint128": "UHUGEINT", "float32": "FLOAT", "float64": "DOUBLE", "date": "DATE", "time": "TIME",
    "time_ns": "TIME_NS", "timetz": "TIMETZ", "timestamp": "TIMESTAMP", "timestamp_us": "TIMESTAMP",
    "timestamptz": "TIMESTAMPTZ", "timestamp_s": "TIMESTAMP_S", "timestamp_ms": "TIMESTAMP_MS",
    "timestamp_ns": "TIMESTAMP_NS", "interval": "INTERVAL", "varchar": "VARCHAR", "json": "VARCHAR", "blob": "BLOB",
    "uuid": "UUID", "geometry": "BLOB", "variant": "VARCHAR", "unknown": "VARCHAR",
}
