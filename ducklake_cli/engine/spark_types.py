"""The Spark type each DuckLake column is read as, with its field id (spec §8.1; COMPATIBILITY.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import ColumnInfo
from ducklake_cli.catalog.types import decimal_parts

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructField

FIELD_ID_KEY = "parquet.field.id"


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
    dec = decimal_parts(t)
    if dec:
        return T.DecimalType(*dec)
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
