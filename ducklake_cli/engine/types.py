"""DuckLake column types and their Spark, DuckDB and Arrow counterparts (spec §8.1; COMPATIBILITY.md)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import ColumnInfo

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructField

FIELD_ID_KEY = "parquet.field.id"
ROW_ID_FIELD_ID = 2147483540
SNAPSHOT_ID_FIELD_ID = 2147483539
ROW_ID_COLUMN = "_ducklake_internal_row_id"
SNAPSHOT_ID_COLUMN = "_ducklake_internal_snapshot_id"
DELETE_FILE_PATH_ID = 2147483646  # delete files' `file_path` and `pos` (spec §3.7)
DELETE_POS_ID = 2147483645

_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")

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
    m = _DECIMAL.fullmatch(t)
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
