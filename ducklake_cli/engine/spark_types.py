"""DuckLake column types and their Spark, DuckDB and Arrow counterparts (spec §8.1; COMPATIBILITY.md)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import ColumnInfo

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import DataType, StructField

    from ducklake_cli.engine.planning.scan_plan import MappedField

FIELD_ID_KEY = "parquet.field.id"
ROW_ID_FIELD_ID = 2147483540
SNAPSHOT_ID_FIELD_ID = 2147483539
ROW_ID_COLUMN = "_ducklake_internal_row_id"
SNAPSHOT_ID_COLUMN = "_ducklake_internal_snapshot_id"
DELETE_FILE_PATH_ID = 2147483646  # delete files' `file_path` and `pos` (spec §3.7)
DELETE_POS_ID = 2147483645

DECIMAL_TYPE = re.compile(r"decimal\((\d+),\s*(\d+)\)")  # `decimal(p,s)`: precision, scale

# Types Spark's Parquet reader cannot read as DuckDB wrote them; files holding them go through the fallback
# reader (engine/fallback.py), which returns the Spark type given by `spark_type`.
FALLBACK_TYPES = frozenset({"uuid", "interval", "timetz", "timestamp_ns", "time", "time_ns", "int128", "uint128",
                            "variant"})


def needs_fallback(col: ColumnInfo) -> bool:
    """Whether a column (or any nested child) has a type Spark's Parquet reader rejects."""
    return col.type in FALLBACK_TYPES or any(needs_fallback(c) for c in col.children)


def spark_type(col: ColumnInfo) -> DataType:
    """The Spark type a DuckLake column is read as (documented in COMPATIBILITY.md)."""
    from pyspark.sql import types as T

    t = col.type
    if t == "struct":
        return T.StructType([spark_field(c) for c in col.children])
    if t == "list":
        return T.ArrayType(spark_type(col.children[0]), True)
    if t == "map":
        return T.MapType(spark_type(col.children[0]), spark_type(col.children[1]), True)
    m = DECIMAL_TYPE.fullmatch(t)
    if m:
        return T.DecimalType(int(m.group(1)), int(m.group(2)))
    simple: dict[str, Any] = {
        "boolean": T.BooleanType, "int8": T.ByteType, "int16": T.ShortType, "int32": T.IntegerType,
        "int64": T.LongType, "uint8": T.ShortType, "uint16": T.IntegerType, "uint32": T.LongType,
        "float32": T.FloatType, "float64": T.DoubleType, "date": T.DateType, "timestamp": T.TimestampNTZType,
        "timestamp_us": T.TimestampNTZType, "timestamp_s": T.TimestampNTZType, "timestamp_ms": T.TimestampNTZType,
        "timestamp_ns": T.TimestampNTZType, "timestamptz": T.TimestampType, "varchar": T.StringType,
        "json": T.StringType, "blob": T.BinaryType, "uuid": T.StringType, "interval": T.StringType,
        "time": T.StringType, "time_ns": T.StringType, "timetz": T.StringType, "variant": T.StringType,
        "geometry": T.BinaryType, "unknown": T.StringType,
    }
    if t == "uint64":
        return T.DecimalType(20, 0)
    return simple.get(t, T.StringType)()  # int128/uint128: exact decimal text (no 128-bit Spark type)


def spark_field(col: ColumnInfo) -> StructField:
    """A StructField named like the column, carrying its field id for Spark's field-id Parquet reads."""
    from pyspark.sql import types as T

    return T.StructField(col.name, spark_type(col), True, {FIELD_ID_KEY: col.column_id})


# Parquet types (as pyarrow reads them) Spark's reader reads as each flat DuckLake type; anything else goes through
# the fallback reader. Checked only for files registered by name, whose types DuckDB lets differ from the column's.
_NATIVE_ARROW: dict[str, tuple[str, ...]] = {
    "boolean": ("bool",), "int8": ("int8",), "int16": ("int16",), "int32": ("int32",), "int64": ("int64",),
    "uint8": ("uint8",), "uint16": ("uint16",), "uint32": ("uint32",), "uint64": ("uint64",),
    "float32": ("float",), "float64": ("double",), "date": ("date32[day]",),
    "timestamp": ("timestamp[us]",), "timestamp_us": ("timestamp[us]",), "timestamp_ms": ("timestamp[ms]",),
    "varchar": ("string", "large_string"), "json": ("string", "large_string"),
    "blob": ("binary", "large_binary"), "geometry": ("binary", "large_binary"),
}


def native_arrow_match(file_type: pa.DataType, col: ColumnInfo, node: MappedField) -> bool:
    """Whether Spark's Parquet reader reads a file field of this (pyarrow) type, mapped by `node`, as `col`."""
    import pyarrow as pa

    if col.type == "struct":
        if not pa.types.is_struct(file_type):
            return False
        fields = {file_type.field(i).name: file_type.field(i).type for i in range(file_type.num_fields)}
        for child in col.children:
            sub = node.children.get(child.column_id)
            if sub is not None and sub.name in fields and not native_arrow_match(fields[sub.name], child, sub):
                return False
        return True
    if col.type == "list":
        if not (pa.types.is_list(file_type) or pa.types.is_large_list(file_type)):
            return False
        sub = node.children.get(col.children[0].column_id)
        return sub is None or native_arrow_match(file_type.value_type, col.children[0], sub)
    if col.type == "map":
        if not pa.types.is_map(file_type):
            return False
        pairs = zip((file_type.key_type, file_type.item_type), col.children, strict=True)
        return all((sub := node.children.get(c.column_id)) is None or native_arrow_match(t, c, sub) for t, c in pairs)
    if col.type == "timestamptz":
        return pa.types.is_timestamp(file_type) and file_type.tz is not None and file_type.unit in ("ms", "us")
    m = DECIMAL_TYPE.fullmatch(col.type)
    if m:
        return pa.types.is_decimal(file_type) and (file_type.precision, file_type.scale) == (
            int(m.group(1)), int(m.group(2)))
    return str(file_type) in _NATIVE_ARROW.get(col.type, ())
