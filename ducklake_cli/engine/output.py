"""Query results for machines: one lossless text encoding per Spark type, streamed as JSON, JSON lines or CSV.

Encoding (the same on stdout and in `--output` files; README "Output formats"):
integers are JSON numbers with every digit; decimals are strings with their scale (`"1.50"`); floats are
shortest round-trip numbers, NaN and infinities the strings `"NaN"`, `"Infinity"`, `"-Infinity"`; timestamps are
ISO 8601 with six fraction digits, `timestamptz` with its UTC offset (`+00:00`); binary is lower-case hex;
structs are objects, lists arrays, maps objects keyed by the key's text; NULL is JSON `null` and, in CSV, an
empty unquoted field (an empty string is `""`). Types the reader turns into text (hugeint, time, interval, uuid)
stay that text.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import IO, TYPE_CHECKING, Any

from ducklake_cli.errors import QueryError, UsageError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType

FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "jsonl", ".jsonl": "jsonl"}

Encoder = Callable[[Any], Any]


def output_format(path: str) -> str:
    """The format an output path asks for (an error for anything else)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise UsageError(f"--output {path!r}: use a .parquet, .csv or .json file name")
    return FORMATS[ext]


# -- one value ------------------------------------------------------------------------------------------------


def _float(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _float32(value: float) -> float | str:
    """The shortest decimal that reads back as the same float32 (Python would print the float64 widening)."""
    if not math.isfinite(value):
        return _float(value)
    packed = struct.pack("f", value)
    for digits in range(6, 10):
        short = float(f"{value:.{digits}g}")
        if struct.pack("f", short) == packed:
            return short
    return value


def _timestamp_tz(value: dt.datetime) -> str:
    # Classic PySpark hands instants over as naive local time; astimezone() reads that (fold included) exactly.
    return value.astimezone(dt.UTC).isoformat(timespec="microseconds")


def _timestamp_ntz(value: dt.datetime) -> str:
    return value.replace(tzinfo=None).isoformat(timespec="microseconds")


def _time(value: Any) -> str:
    return value.isoformat(timespec="microseconds") if isinstance(value, dt.time) else str(value)


def _nullable(fn: Encoder) -> Encoder:
    return lambda v: None if v is None else fn(v)


def encoder(dtype: DataType) -> Encoder:
    """A function turning one value of `dtype` (as PySpark returns it) into its JSON-ready form."""
    from pyspark.sql import types as T

    fn: Encoder
    if isinstance(dtype, T.BooleanType):
        fn = bool
    elif isinstance(dtype, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        fn = int
    elif isinstance(dtype, T.FloatType):
        fn = _float32
    elif isinstance(dtype, T.DoubleType):
        fn = _float
    elif isinstance(dtype, T.DecimalType):
        fn = lambda v: format(v, "f")  # noqa: E731  # plain digits with the scale: never `0E-10`
    elif isinstance(dtype, T.BinaryType):
        fn = lambda v: bytes(v).hex()  # noqa: E731
    elif isinstance(dtype, T.TimestampNTZType):
        fn = _timestamp_ntz
    elif isinstance(dtype, T.TimestampType):
        fn = _timestamp_tz
    elif isinstance(dtype, T.DateType):
        fn = lambda v: v.isoformat()  # noqa: E731
    elif type(dtype).__name__ == "TimeType":
        fn = _time
    elif isinstance(dtype, T.ArrayType):
        inner = encoder(dtype.elementType)
        fn = lambda v: [inner(x) for x in v]  # noqa: E731
    elif isinstance(dtype, T.MapType):
        key, val = encoder(dtype.keyType), encoder(dtype.valueType)
        fn = lambda v: {cell_text(key(k)): val(x) for k, x in v.items()}  # noqa: E731
    elif isinstance(dtype, T.StructType):
        fields = [(f.name, encoder(f.dataType)) for f in dtype.fields]
        fn = lambda v: {name: enc(v[i]) for i, (name, enc) in enumerate(fields)}  # noqa: E731
    elif isinstance(dtype, T.StringType | T.CharType | T.VarcharType):
        fn = str
    else:
        fn = _fallback
    return _nullable(fn)


def _fallback(value: Any) -> Any:
    """Values of types without a rule above (variant, intervals): their text."""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    return value if isinstance(value, bool | int | str) else str(value)


def cell_text(value: Any) -> str:
    """A JSON-ready value as one CSV field or table cell: scalars as their JSON text unquoted, nested as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return json.dumps(value, allow_nan=False)


def csv_field(value: Any) -> str:
    """One CSV field (RFC 4180): NULL empty, the empty string `""`, quotes where a value needs them."""
    if value is None:
        return ""
    text = cell_text(value)
    if text == "" or any(c in text for c in ',"\r\n') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


# -- rows -----------------------------------------------------------------------------------------------------


@dataclass
class RowStream:
    """A result's column names, one encoder per column and its rows, fetched as they are read."""

    columns: tuple[str, ...]
    encoders: tuple[Encoder, ...]
    rows: Iterable[Any]

    def encoded(self) -> Iterator[list[Any]]:
        """Each row as a list of JSON-ready values."""
        pairs = list(enumerate(self.encoders))
        for row in self.rows:
            yield [enc(row[i]) for i, enc in pairs]


def row_stream(df: DataFrame, rows: Iterable[Any] | None = None) -> RowStream:
    """A DataFrame's rows streamed to the driver a partition at a time (never all collected at once)."""
    schema = df.schema
    return RowStream(columns=tuple(schema.names), encoders=tuple(encoder(f.dataType) for f in schema.fields),
                     rows=df.toLocalIterator() if rows is None else rows)


def write_json(stream: RowStream, out: IO[str], *, lines: bool) -> int:
    """Rows as a JSON array of objects (or JSON lines); the number of rows written."""
    names = _unique(stream.columns, "JSON")
    dump = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
    count = 0
    if not lines:
        out.write("[")
    for row in stream.encoded():
        text = dump(dict(zip(names, row, strict=True)))
        out.write((text + "\n") if lines else (("," if count else "") + "\n" + text))
        count += 1
    if not lines:
        out.write("\n]\n" if count else "]\n")
    return count


def write_csv(stream: RowStream, out: IO[str]) -> int:
    """Rows as CSV with a header line; the number of rows written."""
    out.write(",".join(csv_field(c) for c in stream.columns) + "\n")
    count = 0
    for row in stream.encoded():
        out.write(",".join(csv_field(v) for v in row) + "\n")
        count += 1
    return count


def _unique(columns: tuple[str, ...], what: str) -> tuple[str, ...]:
    seen: set[str] = set()
    for c in columns:
        if c in seen:
            raise QueryError(f"column name {c!r} appears twice; {what} rows are objects, so alias the columns")
        seen.add(c)
    return columns


def write_output(df: DataFrame, path: str) -> int:
    """Write `df` as exactly one file at `path`: Parquet by Spark, CSV and JSON lines streamed by the driver."""
    fmt = output_format(path)
    target = os.path.abspath(path)
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        raise UsageError(f"--output: directory {parent} does not exist")
    if fmt != "parquet":
        handle, staging_file = tempfile.mkstemp(prefix=".ducklake-out-", dir=parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                stream = row_stream(df)
                count = write_csv(stream, out) if fmt == "csv" else write_json(stream, out, lines=True)
            os.replace(staging_file, target)
        finally:
            if os.path.exists(staging_file):
                os.unlink(staging_file)
        return count
    staging = tempfile.mkdtemp(prefix=".ducklake-out-", dir=parent)
    try:
        df.coalesce(1).write.mode("overwrite").format("parquet").save(os.path.join(staging, "out"))
        parts = [p for p in os.listdir(os.path.join(staging, "out")) if p.startswith("part-")]
        if len(parts) != 1:
            raise UsageError(f"--output: expected one part file, Spark wrote {len(parts)}")
        os.replace(os.path.join(staging, "out", parts[0]), target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return int(df.count())
