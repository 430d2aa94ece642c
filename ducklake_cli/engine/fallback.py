"""Fallback reader for DuckLake data files Spark's Parquet reader rejects (UUID, INTERVAL, TIMETZ, TIMESTAMP_NS, …).

`read_files` returns one DataFrame over a list of Parquet files, read by a PySpark Python data source with pyarrow:
one input partition per file, so executors read files in parallel. Its shape matches the native scan:

    c<column_id> …                   one per table column, typed `spark_type(col)`, matched by Parquet FIELD ID at
                                     every nesting level (struct fields, list element, map key/value); an id the
                                     file lacks reads as NULL
    _ducklake_internal_row_id        BIGINT (field id 2147483540), NULL when the file has none  } include_internal
    _ducklake_internal_snapshot_id   BIGINT (field id 2147483539), NULL when the file has none  }
    __file                           STRING, the key given for the file
    __pos                            BIGINT, 0-based row position in the file (what delete files' `pos` counts)

Value conversions (DuckLake type → value; see COMPATIBILITY.md):

* uuid → canonical lower-case `8-4-4-4-12` string.
* interval → DuckDB's VARCHAR rendering (`1 year 2 months 3 days 04:05:06.789`, `00:00:00`). Parquet stores
  months/days/milliseconds, so DuckDB-written files never carry sub-millisecond parts (DuckDB drops them on write
  and refuses negative intervals).
* time / time_ns → `HH:MM:SS[.fraction]`, trailing zeros trimmed, `24:00:00` kept (DuckDB allows it; Spark's
  native TIME type cannot hold it).
* timetz → Parquet keeps only the UTC-normalised time, not the offset (spec §8.1); DuckDB reads its own files back
  as UTC, so the value renders as DuckDB does then: `HH:MM:SS[.ffffff]+00`.
* timestamp / _s / _ms / _ns → TimestampNTZ in microseconds; nanoseconds are truncated toward zero, exactly like
  DuckDB's `CAST(ts_ns AS TIMESTAMP)` (so `1969-12-31 23:59:59.999999999` becomes `1970-01-01 00:00:00`).
* timestamptz → Timestamp (UTC instants).
* uint64 → Decimal(20,0).
* int128 / uint128 → exact decimal text (Decimal(38,0) cannot hold 128-bit values such as `md5_number`); DuckDB
  writes them to Parquet as DOUBLE, and the text is that double's exact integral value, as DuckDB returns it.
* variant → JSON text (compact, like DuckDB's `CAST(v AS JSON)`), rebuilt from the Parquet variant encoding
  including shredded `typed_value` columns; a top-level variant null is SQL NULL (as DuckDB's CAST to VARCHAR).
  Best effort: binary values render as text when valid UTF-8, else as base64.
* geometry → the WKB bytes (BinaryType).
* Everything else is cast with pyarrow to the Arrow form of its Spark type (older narrower types widen).
* Values written before a type change (`ALTER COLUMN … TYPE`) read as DuckDB casts them to the new type
  (`engine.casts`): FLOAT/DOUBLE and DECIMAL with DuckDB's rounding, json as DuckDB's JSON text of the old value.

Spark's Python data sources get no column pruning: every table column of a file is decoded, whatever the query
selects. The data-source classes below are pickled BY VALUE (see `_register`), and the executor-side code uses only the
standard library, pyarrow, numpy, fsspec and pyspark, so executors need no `ducklake_cli` installed. That is why it
is one module (with `engine.casts`, shipped by value too): the driver half and the executor half it ships by value must
sit in the same module, and the constants it takes from `catalog.types` travel as plain values inside the pickled
functions.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
import sys
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

# Plain ints and strings: pickled by value with the functions that use them (see `_register`).
from ducklake_cli.catalog.types import ROW_ID_COLUMN, ROW_ID_FIELD_ID, SNAPSHOT_ID_COLUMN, SNAPSHOT_ID_FIELD_ID

# Shipped by value with this module (see `_register`).
from ducklake_cli.engine import casts

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from ducklake_cli.catalog.models import ColumnInfo
    from ducklake_cli.engine.planning.scan_plan import MappedField

SOURCE_NAME = "ducklake_fallback"
FILE_COLUMN = "__file"
POS_COLUMN = "__pos"
_BATCH_ROWS = 65536


# --------------------------------------------------------------------------------------------------
# Driver side.


def column_name(col: ColumnInfo) -> str:
    """Output name of a table column: `c<column_id>`."""
    return f"c{col.column_id}"


def column_spec(col: ColumnInfo, mapped: MappedField | None | bool = False) -> dict[str, Any]:
    """The JSON-able description of a column the executors work from (id, DuckLake type, children).

    `mapped` is the column's name-mapping entry for files without field ids (None: the file lacks it), which
    adds the file's field `name` at every level; False (the default) matches by field id."""
    if mapped is False:
        return {"id": col.column_id, "type": col.type, "children": [column_spec(c) for c in col.children]}
    node = None if isinstance(mapped, bool) else mapped
    kids = node.children if node is not None else {}
    return {"id": col.column_id, "type": col.type, "name": node.name if node is not None else None,
            "children": [column_spec(c, kids.get(c.column_id)) for c in col.children]}


def output_schema(columns: Sequence[ColumnInfo], *, include_internal: bool = True) -> StructType:
    """The schema `read_files` returns for these table columns."""
    from pyspark.sql import types as T

    from ducklake_cli.engine.spark_types import spark_type

    fields = [T.StructField(column_name(c), spark_type(c), True) for c in columns]
    if include_internal:
        fields += [T.StructField(ROW_ID_COLUMN, T.LongType(), True),
                   T.StructField(SNAPSHOT_ID_COLUMN, T.LongType(), True)]
    fields += [T.StructField(FILE_COLUMN, T.StringType(), True), T.StructField(POS_COLUMN, T.LongType(), True)]
    return T.StructType(fields)


def read_files(
    spark: SparkSession,
    files: Sequence[tuple[str, str]],
    columns: Sequence[ColumnInfo],
    *,
    include_internal: bool = True,
    storage_options: Mapping[str, Any] | None = None,
    mapping: Mapping[int, MappedField] | None = None,
) -> DataFrame:
    """Read Parquet data files with pyarrow on the executors (one partition per file).

    With `mapping` (files registered by name, without field ids: target column id → file field), columns are
    matched by the mapped names at every level instead of by field id; unmapped columns read as NULL.

    `files` holds (path to read — a local path or an fsspec URI such as `s3://b/k` —, key emitted in `__file`).
    `storage_options` go to fsspec for non-local paths (they travel in the plan's options: pass no secrets
    here when plans are logged; s3fs also reads the usual AWS_* environment variables on the executors).
    """
    schema = output_schema(columns, include_internal=include_internal)
    if not files:
        return spark.createDataFrame([], schema)
    _register(spark)
    options = {
        "files": json.dumps([[str(p), str(k)] for p, k in files]),
        "columns": json.dumps([column_spec(c) if mapping is None else column_spec(c, mapping.get(c.column_id))
                               for c in columns]),
        "include_internal": "true" if include_internal else "false",
        "storage_options": json.dumps(dict(storage_options or {})),
    }
    return spark.read.format(SOURCE_NAME).schema(schema).options(**options).load()


def _register(spark: SparkSession) -> None:
    # By value: executors (a cluster's workers) can then run the reader without ducklake_cli installed.
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cloudpickle.register_pickle_by_value(casts)
    spark.dataSource.register(FallbackDataSource)


# --------------------------------------------------------------------------------------------------
# Executor side: only stdlib, pyarrow, numpy, fsspec and pyspark below this line.


class FallbackDataSource(DataSource):
    """`spark.read.format("ducklake_fallback")`: DuckLake Parquet files decoded with pyarrow."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        raise ValueError(f"the {SOURCE_NAME} data source needs an explicit schema (use read_files)")

    def reader(self, schema: StructType) -> DataSourceReader:
        return FallbackReader(dict(self.options), schema)


class FallbackReader(DataSourceReader):
    """One input partition per file; `read` streams a file's row batches, converted to the output schema."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.files: list[list[str]] = json.loads(options["files"])
        self.columns: list[dict[str, Any]] = json.loads(options["columns"])
        self.include_internal = options.get("include_internal", "true") == "true"
        self.storage_options: dict[str, Any] = json.loads(options.get("storage_options") or "{}")
        self.output = schema

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition((path, key)) for path, key in self.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        path, key = partition.value
        target = to_arrow_schema(self.output, timezone="UTC")
        yield from read_file_batches(path, key, self.columns, target, include_internal=self.include_internal,
                                     storage_options=self.storage_options)


def read_file_batches(
    path: str,
    key: str,
    columns: Sequence[Mapping[str, Any]],
    target: pa.Schema,
    *,
    include_internal: bool = True,
    storage_options: Mapping[str, Any] | None = None,
    batch_rows: int = _BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """The batches of one file in the output layout (`target` = the Arrow form of `output_schema`)."""
    import pyarrow.parquet as pq

    with _open(path, storage_options) as source:
        pf = pq.ParquetFile(source)
        top = {fid: f for f in pf.schema_arrow if (fid := _field_id(f)) is not None}
        by_name = {f.name: f for f in pf.schema_arrow}
        wanted: list[Mapping[str, Any]] = list(columns)
        if include_internal:
            wanted += [{"id": ROW_ID_FIELD_ID, "type": "int64", "children": []},
                       {"id": SNAPSHOT_ID_FIELD_ID, "type": "int64", "children": []}]
        found = [by_name.get(s["name"]) if "name" in s else top.get(s["id"]) for s in wanted]
        wanted = [_with_source(s, f, pf) for s, f in zip(wanted, found, strict=True)]
        names = list(dict.fromkeys(f.name for f in found if f is not None))
        pos = 0
        for raw in _batches(pf, names, batch_rows):
            n = raw.num_rows
            if n == 0:
                continue
            arrays = []
            for i, spec in enumerate(wanted):
                field = found[i]
                out_type = target.field(i).type
                if field is None:
                    arrays.append(_nulls(n, out_type))
                    continue
                try:
                    arrays.append(convert(raw.column(field.name), spec, out_type))
                except Exception as exc:
                    raise ValueError(f"{path}: column {field.name!r} (field id {spec['id']}, "
                                     f"{spec['type']}): {exc}") from exc
            arrays.append(_constant_string(n, key))
            arrays.append(_positions(pos, n))
            pos += n
            yield _record_batch(arrays, target)


def _with_source(spec: Mapping[str, Any], field: pa.Field | None, pf: Any) -> Mapping[str, Any]:
    """A json column's spec with what its file field was when Arrow cannot tell (`source`: a TIME adjusted to UTC
    is a `timetz`, a GeoParquet column a `geometry`): values written before the column became json read as
    DuckDB renders those types."""
    if spec["type"] != "json" or field is None:
        return spec
    if field.name in json.loads((pf.schema_arrow.metadata or {}).get(b"geo", b"{}")).get("columns", {}):
        return {**spec, "source": "geometry"}
    for i in range(len(pf.schema)):
        column = pf.schema.column(i)
        if column.path == field.name and '"isAdjustedToUTC":true' in column.logical_type.to_json().replace(" ", ""):
            return {**spec, "source": "timetz"} if column.logical_type.type == "TIME" else spec
    return spec


def _open(path: str, storage_options: Mapping[str, Any] | None) -> Any:
    import contextlib

    if path.startswith("file:"):  # file:/p (Spark's form) and file:///p
        path = "/" + path[len("file:"):].lstrip("/")
    if "://" not in path:
        return contextlib.nullcontext(path)
    import fsspec

    proto, rest = path.split("://", 1)
    proto = "s3" if proto.lower() == "s3a" else proto.lower()
    fs = fsspec.filesystem(proto, **dict(storage_options or {}))
    return fs.open(f"{proto}://{rest}", "rb")


def _batches(pf: Any, names: list[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    if names:
        yield from pf.iter_batches(batch_size=batch_rows, columns=names, use_threads=False)
        return
    # No wanted column in the file: only the row count matters.
    remaining = pf.metadata.num_rows
    while remaining > 0:
        n = min(batch_rows, remaining)
        remaining -= n
        yield pa.RecordBatch.from_pydict({"_": pa.nulls(n, pa.int8())})


def _record_batch(arrays: list[pa.Array], target: pa.Schema) -> pa.RecordBatch:
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _field_id(field: pa.Field) -> int | None:
    meta = field.metadata
    if not meta or b"PARQUET:field_id" not in meta:
        return None
    return int(meta[b"PARQUET:field_id"])


def _nulls(n: int, typ: pa.DataType) -> pa.Array:
    import pyarrow as pa

    return pa.nulls(n, typ)


def _constant_string(n: int, value: str) -> pa.Array:
    import pyarrow as pa

    return pa.nulls(n, pa.string()).fill_null(value)


def _positions(start: int, n: int) -> pa.Array:
    import numpy as np
    import pyarrow as pa

    return pa.array(np.arange(start, start + n, dtype=np.int64))


def _null_mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _storage(arr: pa.Array) -> pa.Array:
    import pyarrow as pa

    while isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    return arr


# --------------------------------------------------------------------------------------------------
# Conversion of one Arrow column (as pyarrow read it) to the Arrow form of its Spark type.


def convert(arr: pa.Array, spec: Mapping[str, Any], target: pa.DataType) -> pa.Array:
    """Convert `arr` (a file column) to `target`, following the DuckLake type in `spec`."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = _storage(arr)
    kind = spec["type"]
    if kind == "struct":
        return _convert_struct(arr, spec, target)
    if kind == "list":
        return _convert_list(arr, spec, target)
    if kind == "map":
        return _convert_map(arr, spec, target)
    if kind == "variant":
        return _convert_variant(arr, target)
    if pa.types.is_null(arr.type):
        return _nulls(len(arr), target)
    if kind == "json":
        return _json(arr, spec.get("source"))
    numeric = pa.types.is_decimal(arr.type) or pa.types.is_integer(arr.type)
    if pa.types.is_floating(target) and numeric:
        return casts.to_floating(arr, target)
    if pa.types.is_decimal(target) and (numeric or pa.types.is_boolean(arr.type) or pa.types.is_floating(arr.type)):
        return casts.to_decimal(arr, target)
    if kind in _COARSE and pa.types.is_timestamp(arr.type) and arr.type.unit != "s":
        arr = _round_timestamps(arr, _COARSE[kind])
    special = _SPECIAL.get(kind)
    if special is not None:
        return special(arr, target)
    return _cast(arr, target)


def _cast(arr: pa.Array, target: pa.DataType) -> pa.Array:
    import pyarrow as pa

    if arr.type == target:
        return arr
    if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target):
        # Unit change (s/ms → us is exact, ns → us truncates toward zero like DuckDB's cast); zone: UTC instants.
        if arr.type.unit == "ns":
            arr = arr.cast(pa.timestamp("ns", tz=arr.type.tz)).cast(pa.timestamp("us", tz=arr.type.tz), safe=False)
        return arr.cast(target)
    if pa.types.is_floating(arr.type) and pa.types.is_floating(target):
        return arr.cast(target, safe=False)  # DOUBLE → FLOAT rounds to nearest, as DuckDB's cast
    return arr.cast(target)


def _json(arr: pa.Array, source: str | None) -> pa.Array:
    """A json column's values, from whatever type they were written as: DuckDB's `CAST(x AS JSON)` (`casts`),
    variants as their JSON, the types only DuckDB has as their DuckDB text in a JSON string."""
    import pyarrow as pa

    if pa.types.is_struct(arr.type):
        return _convert_variant(arr, pa.string())
    if pa.types.is_fixed_size_binary(arr.type) and arr.type.byte_width in (12, 16):
        return casts.quoted((_uuid if arr.type.byte_width == 16 else _interval)(arr, pa.string()))
    if pa.types.is_time(arr.type):
        return casts.quoted((_timetz if source == "timetz" else _time)(arr, pa.string()))
    return casts.json_text(arr, source)


def _convert_struct(arr: pa.Array, spec: Mapping[str, Any], target: pa.DataType) -> pa.Array:
    import pyarrow as pa

    n = len(arr)
    if not pa.types.is_struct(arr.type):
        return _nulls(n, target)
    by_id = {fid: i for i in range(arr.type.num_fields) if (fid := _field_id(arr.type.field(i))) is not None}
    by_name = {arr.type.field(i).name: i for i in range(arr.type.num_fields)}
    children = []
    for j, child in enumerate(spec["children"]):
        out_type = target.field(j).type
        i = by_name.get(child["name"]) if "name" in child else by_id.get(child["id"])
        children.append(_nulls(n, out_type) if i is None else convert(arr.field(i), child, out_type))
    fields = [target.field(j) for j in range(target.num_fields)]
    return pa.StructArray.from_arrays(children, fields=fields, mask=_null_mask(arr))


def _child_matches(field: pa.Field, spec: Mapping[str, Any]) -> bool:
    # A list element / map key / map value is matched by field id; a child without any id (files written by
    # tools that set ids on struct fields only) is the only candidate, so it is taken structurally.
    if "name" in spec:  # name-mapped files: a list element / map key / value is mapped or absent
        return spec["name"] is not None
    fid = _field_id(field)
    return fid is None or fid == spec["id"]


def _list_parts(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(offsets starting at 0 as int32, the values they index) of a (large) list or map array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    offsets = arr.offsets
    start = offsets[0].as_py() if len(offsets) else 0
    end = offsets[-1].as_py() if len(offsets) else 0
    values = arr.values.slice(start, end - start)
    if start:
        offsets = pc.subtract(offsets, pa.scalar(start, offsets.type))
    return offsets.cast(pa.int32()), values


def _convert_list(arr: pa.Array, spec: Mapping[str, Any], target: pa.DataType) -> pa.Array:
    import pyarrow as pa

    n = len(arr)
    if pa.types.is_fixed_size_list(arr.type):
        arr = arr.cast(pa.list_(arr.type.value_field))
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        return _nulls(n, target)
    offsets, values = _list_parts(arr)
    child = spec["children"][0]
    out_type = target.value_type
    if _child_matches(arr.type.value_field, child):
        new_values = convert(values, child, out_type)
    else:
        new_values = _nulls(len(values), out_type)
    return pa.ListArray.from_arrays(offsets, new_values, type=target, mask=_null_mask(arr))


def _convert_map(arr: pa.Array, spec: Mapping[str, Any], target: pa.DataType) -> pa.Array:
    import pyarrow as pa

    n = len(arr)
    if not pa.types.is_map(arr.type):
        return _nulls(n, target)
    key_spec, value_spec = spec["children"]
    if not _child_matches(arr.type.key_field, key_spec):
        return _nulls(n, target)  # keys cannot be NULL: without its keys the map is unknown
    offsets, entries = _list_parts(arr)
    keys = convert(entries.field(0), key_spec, target.key_type)
    if _child_matches(arr.type.item_field, value_spec):
        items = convert(entries.field(1), value_spec, target.item_type)
    else:
        items = _nulls(len(entries), target.item_type)
    return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=_null_mask(arr))


# --------------------------------------------------------------------------------------------------
# Types Spark cannot read as DuckDB writes them.


def _from_strings(values: list[str | None], target: pa.DataType) -> pa.Array:
    import pyarrow as pa

    return pa.array(values, type=pa.string()).cast(target)


def _uuid(arr: pa.Array, target: pa.DataType) -> pa.Array:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (pa.types.is_fixed_size_binary(arr.type) and arr.type.byte_width == 16):
        return _cast(arr, target)
    n = len(arr)
    if n == 0:
        return _nulls(0, target)
    data = arr.buffers()[1]
    raw = np.frombuffer(data, dtype=np.uint8, count=(arr.offset + n) * 16)[arr.offset * 16:].reshape(n, 16)
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    hexed = np.empty((n, 32), dtype=np.uint8)
    hexed[:, 0::2] = digits[raw >> 4]
    hexed[:, 1::2] = digits[raw & 15]
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    for dst, src in (((0, 8), (0, 8)), ((9, 13), (8, 12)), ((14, 18), (12, 16)), ((19, 23), (16, 20)),
                     ((24, 36), (20, 32))):
        text[:, dst[0]:dst[1]] = hexed[:, src[0]:src[1]]
    offsets = np.arange(0, 36 * (n + 1), 36, dtype=np.int32)
    strings = pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(text.tobytes()))
    if arr.null_count:
        strings = pc.if_else(arr.is_null(), pa.scalar(None, pa.string()), strings)
    return strings.cast(target)


def format_interval(months: int, days: int, micros: int) -> str:
    """DuckDB's `CAST(interval AS VARCHAR)` (IntervalToStringCast::Format)."""
    parts: list[str] = []
    if months:
        years = int(months / 12)  # C++ division truncates toward zero
        rest = months - years * 12
        if years:
            parts.append(f"{years} year" + ("" if years in (1, -1) else "s"))
        if rest:
            parts.append(f"{rest} month" + ("" if rest in (1, -1) else "s"))
    if days:
        parts.append(f"{days} day" + ("" if days in (1, -1) else "s"))
    if micros:
        sign = "-" if micros < 0 else ""
        parts.append(sign + _clock(abs(micros), 6))
    elif not parts:
        return "00:00:00"
    return " ".join(parts)


def _clock(value: int, digits: int) -> str:
    """`HH:MM:SS[.fraction]` of a non-negative count of 10^-digits seconds; hours may exceed 24."""
    unit = 10**digits
    seconds, frac = divmod(value, unit)
    minutes, sec = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    text = f"{hours:02d}:{minute:02d}:{sec:02d}"
    if frac:
        text += "." + f"{frac:0{digits}d}".rstrip("0")
    return text


def _interval(arr: pa.Array, target: pa.DataType) -> pa.Array:
    import pyarrow as pa

    out: list[str | None] = []
    if pa.types.is_fixed_size_binary(arr.type) and arr.type.byte_width == 12:
        # Parquet INTERVAL: little-endian months, days, milliseconds (DuckDB reads months/days as signed).
        for v in arr.to_pylist():
            if v is None:
                out.append(None)
            else:
                months, days, millis = struct.unpack("<iiI", v)
                out.append(format_interval(months, days, millis * 1000))
    elif pa.types.is_interval(arr.type):  # month_day_nano
        for v in arr.to_pylist():
            out.append(None if v is None else format_interval(v.months, v.days, int(v.nanoseconds / 1000)))
    elif pa.types.is_duration(arr.type):
        for v in arr.cast(pa.duration("us")).cast(pa.int64()).to_pylist():
            out.append(None if v is None else format_interval(0, 0, v))
    else:
        return _cast(arr, target)
    return _from_strings(out, target)


def _clock_array(arr: pa.Array) -> pa.Array:
    """Vectorised `_clock` over a time column: `HH:MM:SS[.fraction]` strings (NULLs kept)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_time64(arr.type) and arr.type.unit == "ns":
        values, unit, width = arr.cast(pa.int64()), 10**9, 9
    elif pa.types.is_time(arr.type):
        values, unit, width = arr.cast(pa.time64("us")).cast(pa.int64()), 10**6, 6
    elif pa.types.is_integer(arr.type):  # raw INT64 micros
        values, unit, width = arr.cast(pa.int64()), 10**6, 6
    else:
        raise TypeError(f"cannot read {arr.type} as a time")

    def div(x: pa.Array, k: int) -> pa.Array:
        return pc.divide(x, pa.scalar(k, pa.int64()))

    def mod(x: pa.Array, k: int) -> pa.Array:
        return pc.subtract(x, pc.multiply(div(x, k), pa.scalar(k, pa.int64())))

    def pad(x: pa.Array, n: int) -> pa.Array:
        return pc.utf8_lpad(x.cast(pa.string()), n, "0")

    seconds, frac = div(values, unit), mod(values, unit)
    clock = pc.binary_join_element_wise(pad(div(seconds, 3600), 2), pad(mod(div(seconds, 60), 60), 2),
                                        pad(mod(seconds, 60), 2), ":")
    fraction = pc.binary_join_element_wise(".", pc.utf8_rtrim(pad(frac, width), "0"), "")
    fraction = pc.if_else(pc.equal(frac, pa.scalar(0, pa.int64())), "", fraction)
    return pc.binary_join_element_wise(clock, fraction, "")


def _time(arr: pa.Array, target: pa.DataType) -> pa.Array:
    if _is_text(arr):
        return _cast(arr, target)
    return _cast(_clock_array(arr), target)


def _timetz(arr: pa.Array, target: pa.DataType) -> pa.Array:
    import pyarrow.compute as pc

    if _is_text(arr):
        return _cast(arr, target)
    return _cast(pc.binary_join_element_wise(_clock_array(arr), "+00", ""), target)


def _is_text(arr: pa.Array) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
                or pa.types.is_string_view(arr.type))


def _hugeint(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """HUGEINT/UHUGEINT as exact decimal text (no Spark type holds 128-bit integers); DuckDB stores them in
    Parquet as DOUBLE, and reads back the double's integral value."""
    import pyarrow as pa

    if pa.types.is_floating(arr.type):
        values = [None if v is None else str(int(v)) for v in arr.cast(pa.float64()).to_pylist()]
    else:
        values = [None if v is None else str(int(v)) for v in arr.to_pylist()]
    return pa.array(values, type=pa.string())


def _binary(arr: pa.Array, target: pa.DataType) -> pa.Array:
    import pyarrow as pa

    if pa.types.is_fixed_size_binary(arr.type):
        arr = arr.cast(pa.binary())
    return _cast(arr, target)


_COARSE = {"timestamp_s": 1_000_000, "timestamp_ms": 1000}  # microseconds per unit


def _round_timestamps(arr: pa.Array, step: int) -> pa.Array:
    """A finer file in a coarser column (files registered by name): rounded to the column's unit, halves away
    from zero, as DuckDB reads them (`…00.5` → `…01`, `1969-12-31 23:59:59.5` → `23:59:59`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if arr.type.unit == "ns":  # ns → µs truncates toward zero first, like DuckDB
        arr = arr.cast(pa.timestamp("us", tz=arr.type.tz), safe=False)
    micros = arr.cast(pa.timestamp("us", tz=arr.type.tz)).cast(pa.int64())
    k = pa.scalar(step, pa.int64())
    quotient = pc.divide(micros, k)  # integer division truncates toward zero
    rest = pc.subtract(micros, pc.multiply(quotient, k))
    away = pc.greater_equal(pc.multiply(pc.abs(rest), pa.scalar(2, pa.int64())), k)
    rounded = pc.if_else(away, pc.add(quotient, pc.sign(micros).cast(pa.int64())), quotient)
    return pc.multiply(rounded, k).cast(pa.timestamp("us", tz=arr.type.tz))

_SPECIAL: dict[str, Any] = {
    "uuid": _uuid,
    "interval": _interval,
    "time": _time,
    "time_ns": _time,
    "timetz": _timetz,
    "int128": _hugeint,
    "uint128": _hugeint,
    "geometry": _binary,
    "blob": _binary,
}


# --------------------------------------------------------------------------------------------------
# VARIANT (Parquet variant encoding, optionally shredded) → JSON text.

_MISSING: Any = Ellipsis  # "no value" marker; a builtin singleton keeps its identity through by-value pickling


def _convert_variant(arr: pa.Array, target: pa.DataType) -> pa.Array:
    import pyarrow as pa

    if not pa.types.is_struct(arr.type):
        return _cast(arr, target)
    names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
    if "metadata" not in names:
        return _cast(arr, target)
    out: list[str | None] = []
    for row in arr.to_pylist():
        if row is None:
            out.append(None)
            continue
        dictionary = _variant_dictionary(row["metadata"])
        value = _unshred(dictionary, row.get("value"), row.get("typed_value"))
        out.append(None if value is None or value is _MISSING else _to_json(value))
    return _from_strings(out, target)


def _unshred(dictionary: list[str], value: bytes | None, typed: Any) -> Any:
    """A Python value from a (value, typed_value) pair; `_MISSING` when both are absent."""
    if typed is not None:
        if isinstance(typed, dict):  # shredded object: field → {value, typed_value}
            obj: dict[str, Any] = {}
            if value is not None:  # partially shredded: the other fields live in `value`
                rest = _decode_value(dictionary, value, 0)
                if isinstance(rest, dict):
                    obj.update(rest)
            for name, group in typed.items():
                got = _MISSING if group is None else _unshred(dictionary, group.get("value"), group.get("typed_value"))
                if got is not _MISSING:
                    obj[name] = got
            return dict(sorted(obj.items()))
        if isinstance(typed, list):  # shredded array: element → {value, typed_value}
            items = []
            for group in typed:
                got = None if group is None else _unshred(dictionary, group.get("value"), group.get("typed_value"))
                items.append(None if got is _MISSING else got)
            return items
        return typed
    if value is not None:
        return _decode_value(dictionary, value, 0)
    return _MISSING


def _variant_dictionary(metadata: bytes) -> list[str]:
    header = metadata[0]
    size = ((header >> 6) & 3) + 1
    count = int.from_bytes(metadata[1:1 + size], "little")
    offsets = [int.from_bytes(metadata[1 + size * (i + 1):1 + size * (i + 2)], "little") for i in range(count + 1)]
    base = 1 + size * (count + 2)
    return [metadata[base + offsets[i]:base + offsets[i + 1]].decode("utf-8") for i in range(count)]


def _decode_value(dictionary: list[str], buf: bytes, pos: int) -> Any:
    header = buf[pos]
    basic, info = header & 3, header >> 2
    if basic == 1:  # short string
        return buf[pos + 1:pos + 1 + info].decode("utf-8")
    if basic == 2:  # object
        offset_size, id_size, large = (info & 3) + 1, ((info >> 2) & 3) + 1, (info >> 4) & 1
        count_size = 4 if large else 1
        count = int.from_bytes(buf[pos + 1:pos + 1 + count_size], "little")
        ids_at = pos + 1 + count_size
        offsets_at = ids_at + count * id_size
        data_at = offsets_at + (count + 1) * offset_size
        obj = {}
        for i in range(count):
            fid = int.from_bytes(buf[ids_at + i * id_size:ids_at + (i + 1) * id_size], "little")
            off = int.from_bytes(buf[offsets_at + i * offset_size:offsets_at + (i + 1) * offset_size], "little")
            obj[dictionary[fid]] = _decode_value(dictionary, buf, data_at + off)
        return dict(sorted(obj.items()))
    if basic == 3:  # array
        offset_size, large = (info & 3) + 1, (info >> 2) & 1
        count_size = 4 if large else 1
        count = int.from_bytes(buf[pos + 1:pos + 1 + count_size], "little")
        offsets_at = pos + 1 + count_size
        data_at = offsets_at + (count + 1) * offset_size
        return [_decode_value(dictionary, buf, data_at + int.from_bytes(
            buf[offsets_at + i * offset_size:offsets_at + (i + 1) * offset_size], "little")) for i in range(count)]
    return _decode_primitive(buf, pos + 1, info)


def _decode_primitive(buf: bytes, at: int, kind: int) -> Any:
    def signed(width: int) -> int:
        return int.from_bytes(buf[at:at + width], "little", signed=True)

    epoch = dt.datetime(1970, 1, 1)
    if kind == 0:
        return None
    if kind in (1, 2):
        return kind == 1
    if kind in (3, 4, 5, 6):
        return signed({3: 1, 4: 2, 5: 4, 6: 8}[kind])
    if kind == 7:
        return struct.unpack_from("<d", buf, at)[0]
    if kind == 14:
        return struct.unpack_from("<f", buf, at)[0]
    if kind in (8, 9, 10):
        scale = buf[at]
        width = {8: 4, 9: 8, 10: 16}[kind]
        unscaled = int.from_bytes(buf[at + 1:at + 1 + width], "little", signed=True)
        return Decimal(unscaled).scaleb(-scale)
    if kind == 11:
        return dt.date(1970, 1, 1) + dt.timedelta(days=signed(4))
    if kind in (12, 13):
        stamp = epoch + dt.timedelta(microseconds=signed(8))
        return stamp.replace(tzinfo=dt.UTC) if kind == 12 else stamp
    if kind in (18, 19):
        stamp = epoch + dt.timedelta(microseconds=int(signed(8) / 1000))
        return stamp.replace(tzinfo=dt.UTC) if kind == 18 else stamp
    if kind == 17:
        return _clock(signed(8), 6)
    if kind in (15, 16):
        length = int.from_bytes(buf[at:at + 4], "little")
        raw = buf[at + 4:at + 4 + length]
        return raw.decode("utf-8") if kind == 16 else bytes(raw)
    if kind == 20:
        import uuid

        return uuid.UUID(bytes=bytes(buf[at:at + 16]))
    raise ValueError(f"unknown variant primitive type {kind}")


def _to_json(value: Any) -> str:
    """Compact JSON like DuckDB's `CAST(variant AS JSON)`; decimals keep all their digits."""
    import math
    import uuid

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_json_str(k)}:{_to_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_to_json(v) for v in value) + "]"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return casts.json_double(value) if math.isfinite(value) else _json_str(str(value))
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, str):
        return _json_str(value)
    if isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        if value.microsecond:
            text += "." + f"{value.microsecond:06d}".rstrip("0")
        return _json_str(text + ("+00" if value.tzinfo is not None else ""))
    if isinstance(value, dt.date):
        return _json_str(value.isoformat())
    if isinstance(value, uuid.UUID):
        return _json_str(str(value))
    if isinstance(value, bytes | bytearray):
        try:
            return _json_str(bytes(value).decode("utf-8"))
        except UnicodeDecodeError:
            return _json_str(base64.b64encode(bytes(value)).decode("ascii"))
    return _json_str(str(value))


_json_double = casts.json_double  # the name it had here


def _json_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
