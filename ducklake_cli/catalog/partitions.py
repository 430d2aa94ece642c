"""The DuckLake partition vocabulary (spec §6): transform names, `--partition-by` items, hive directory names and
key text, the calendar parts year/month/day/hour, DuckLake 1.1's epoch counts epoch_year/month/day/hour (spec
versions §3.7) and `bucket(N)` with DuckDB's murmur3 inputs. The writer, the
pruner and maintenance all take these from here; Spark and Arrow forms of the same transforms live in the engine."""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.stats import render_value
from ducklake_cli.catalog.types import DECIMAL_TYPE, FLOAT_TYPES, SIGNED_INT_TYPES, UNSIGNED_INT_TYPES
from ducklake_cli.errors import UsageError

if TYPE_CHECKING:
    from ducklake_cli.catalog.models import ColumnInfo

CALENDAR = ("year", "month", "day", "hour")
CALENDAR_TYPES = frozenset({"date", "timestamp", "timestamptz"})  # what `--partition-by year(col)` accepts
# DuckLake 1.1 only: floor counts of units since 1970-01-01 00:00 UTC (Iceberg's transforms), negative before.
EPOCH = ("epoch_year", "epoch_month", "epoch_day", "epoch_hour")
EPOCH_TYPES = frozenset({"date", "timestamp", "timestamptz", "timestamp_s", "timestamp_ms", "timestamp_us",
                         "timestamp_ns"})  # what `--partition-by epoch_day(col)` accepts (epoch_hour on DATE too)
BUCKET = re.compile(r"bucket\((\d+)\)")
MAX_BUCKETS = 2**31 - 1  # DuckDB's limit on bucket(N)
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"  # a NULL key's hive directory value

NS = 1_000_000_000
DAY_NS = 86_400 * NS
HOUR_NS = 3_600 * NS
EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
# Nanoseconds per stored unit of each temporal type (temporal values are handled as ns since the epoch).
UNIT_NS = {"date": DAY_NS, "timestamp": 1000, "timestamp_us": 1000, "timestamptz": 1000, "timestamp_ms": 1_000_000,
           "timestamp_s": NS, "timestamp_ns": 1}
_EPOCH_DT = dt.datetime(1970, 1, 1)

_ITEM = re.compile(r"^\s*((?:epoch_)?(?:year|month|day|hour))\s*\(\s*([^()]+?)\s*\)\s*$"
                   r"|^\s*bucket\s*\(\s*(\d+)\s*,\s*([^()]+?)\s*\)\s*$", re.IGNORECASE)


# ----- transform names -------------------------------------------------------------------------------------------

def transform_name(transform: str) -> str:
    """`bucket(8)` → `bucket`; `year` → `year`; `identity` → `identity`."""
    return transform.split("(")[0]


def bucket_count(transform: str) -> int | None:
    """N of a `bucket(N)` transform, None for any other transform."""
    m = BUCKET.fullmatch(transform)
    return int(m.group(1)) if m else None


def transform_text(transform: str, column: str) -> str:
    """How a key reads in SQL: `id`, `year(ts)`, `bucket(16, id)`."""
    if transform == "identity":
        return column
    if transform.endswith(")") and "(" in transform:
        head, args = transform[:-1].split("(", 1)
        return f"{head}({args}, {column})"
    return f"{transform}({column})"


@dataclass(frozen=True)
class PartitionRequest:
    """One `--partition-by` item: a column and a transform (`identity`, `year`…, `epoch_day`…, `bucket(N)`)."""

    column: str
    transform: str
    buckets: int | None = None


def parse_partition_by(items: Sequence[str]) -> list[PartitionRequest]:
    """`region`, `day(ts)`, `bucket(8, id)` (repeatable, or comma-separated outside parentheses)."""
    out = []
    for item in items:
        for part in re.split(r",(?![^()]*\))", item):
            if not part.strip():
                continue
            m = _ITEM.match(part)
            if m and m.group(1):
                out.append(PartitionRequest(m.group(2).strip('`"'), m.group(1).lower()))
            elif m:
                n = int(m.group(3))
                if n <= 0:
                    raise UsageError(f"--partition-by {part.strip()!r}: the bucket count must be positive")
                if n > MAX_BUCKETS:
                    raise UsageError(f"--partition-by {part.strip()!r}: the bucket count cannot exceed {MAX_BUCKETS}")
                out.append(PartitionRequest(m.group(4).strip('`"'), f"bucket({n})", n))
            elif re.fullmatch(r"\s*[`\"]?[^()`\",]+[`\"]?\s*", part):
                out.append(PartitionRequest(part.strip().strip('`"'), "identity"))
            else:
                raise UsageError(f"--partition-by {part.strip()!r} is not a column, year|month|day|hour(col), "
                                 "epoch_year|epoch_month|epoch_day|epoch_hour(col) or bucket(N, col)")
    return out


def epoch_requests(requests: Sequence[PartitionRequest]) -> list[str]:
    """The epoch transforms (DuckLake 1.1 only) among the requests, in order."""
    return [r.transform for r in requests if r.transform in EPOCH]


def refuse_epoch(transforms: Sequence[str], *, v11: bool, where: str) -> None:
    """Refuse an epoch transform for a 1.0 catalog, in DuckDB's terms (nothing written)."""
    from ducklake_cli.catalog.versions import v11_only

    epoch = [tr for tr in transforms if tr in EPOCH]
    if epoch and not v11:
        raise v11_only(f"the {epoch[0]} partition transform", where=where)


def resolve_partition(columns: Sequence[ColumnInfo], requests: Sequence[PartitionRequest]) -> list[tuple[int, str]]:
    """`(column_id, transform)` of each requested key, checked against the table's columns."""
    by_name = {c.name.lower(): c for c in columns}
    out = []
    for req in requests:
        col = by_name.get(req.column.lower())
        if col is None:
            known = ", ".join(c.name for c in columns)
            raise UsageError(f"--partition-by: no column {req.column!r} (columns: {known})")
        if req.transform in CALENDAR and col.type not in CALENDAR_TYPES or req.transform == "hour" \
                and col.type == "date":
            raise UsageError(f"--partition-by {req.transform}({col.name}): needs a date or timestamp column, "
                             f"not {col.type}")
        if req.transform in EPOCH and col.type not in EPOCH_TYPES:
            raise UsageError(f"--partition-by {req.transform}({col.name}): needs a date or timestamp column, "
                             f"not {col.type}")
        if col.children:
            raise UsageError(f"--partition-by {col.name}: nested columns cannot be partition keys")
        out.append((col.column_id, req.transform))
    return out


# ----- hive directories ------------------------------------------------------------------------------------------

def hive_key_names(column_names: Mapping[int, str], fields: Sequence[tuple[int, str]], *,
                   identity_claims: bool = True) -> list[str]:
    """The `key=` of each partition key's hive directory, as DuckDB names them: the columns when every key is
    identity; else, in key order, the column for identity and the transform (`year`, `bucket`) for the others, or
    `<that>_<column>` when an earlier key took the name (case-insensitive), then `_2`, `_3` … while that is taken
    too, so `year(ts), year(d)` gives `year`, `year_d`, `year(ts), year` gives `year`, `year_year` and
    `epoch_day(ts), day(ts), epoch_day(ts)` gives `epoch_day`, `day`, `epoch_day_ts` (epoch transforms as calendar
    ones). `identity_claims=False` is `ducklake_add_data_files`' reading of a path, where identity keys take no
    name."""
    if all(transform_name(t) == "identity" for _, t in fields):
        return [column_names.get(cid, "") for cid, _ in fields]
    used: set[str] = set()
    out = []
    for cid, transform in fields:
        column, short = column_names.get(cid, ""), transform_name(transform)
        prefix = column if short == "identity" else short
        name = f"{prefix}_{column}" if prefix.lower() in used else prefix
        base, n = name, 1
        while name.lower() in used and name != prefix:
            n += 1
            name = f"{base}_{n}"
        if identity_claims or short != "identity":
            used.add(name.lower())
        out.append(name)
    return out


def hive_key_aliases(column_names: Mapping[int, str], fields: Sequence[tuple[int, str]]) -> dict[str, int]:
    """Lower-cased names a key is addressed by (its hive directory name, and `transform_column` always) → index."""
    keys: dict[str, int] = {}
    for i, ((cid, transform), dir_key) in enumerate(zip(fields, hive_key_names(column_names, fields), strict=True)):
        keys[dir_key.lower()] = i
        keys[f"{transform_name(transform)}_{column_names.get(cid, '')}".lower()] = i
    return keys


def hive_value(text: str) -> str | None:
    """A hive directory value (or `--partition` filter value) as key text: the NULL marker is None."""
    return None if text == HIVE_NULL else text


def hive_dir(dir_names: Sequence[str], values: Sequence[str | None]) -> str:
    """`k1=v1/k2=v2/` of one partition key tuple (values escaped, NULL as `__HIVE_DEFAULT_PARTITION__`)."""
    return "".join(f"{k}={HIVE_NULL if v is None else urllib.parse.quote(v, safe='')}/"
                   for k, v in zip(dir_names, values, strict=True))


def key_text(value: Any, transform: str, column_type: str) -> str | None:
    """A partition key value as `ducklake_file_partition_value` stores it (DuckDB's rendering; NULL stays None)."""
    if value is None:
        return None
    return render_value(value, column_type) if transform == "identity" else str(value)


# ----- calendar parts --------------------------------------------------------------------------------------------

def calendar_part(ns: int, transform: str) -> int:
    """year/month/day/hour of a naive time given as nanoseconds since the epoch."""
    days, rem = divmod(ns, DAY_NS)
    day = dt.date.fromordinal(days + EPOCH_ORDINAL)
    return {"year": day.year, "month": day.month, "day": day.day, "hour": rem // HOUR_NS}[transform]


# ----- epoch counts (DuckLake 1.1) -------------------------------------------------------------------------------

def epoch_part(ns: int, transform: str) -> int:
    """epoch_year/month/day/hour of a UTC time given as nanoseconds since the epoch: `date_diff(unit, 1970-01-01,
    v)`, a floor count (1969-12-31 23:30 is -1 of each); nanoseconds are floored to microseconds first."""
    ns = ns // 1000 * 1000
    if transform == "epoch_day":
        return ns // DAY_NS
    if transform == "epoch_hour":
        return ns // HOUR_NS
    day = dt.date.fromordinal(ns // DAY_NS + EPOCH_ORDINAL)
    if transform == "epoch_year":
        return day.year - 1970
    if transform == "epoch_month":
        return (day.year - 1970) * 12 + day.month - 1
    raise ValueError(f"not an epoch transform: {transform}")


def epoch_span(value: int, transform: str) -> tuple[int, int]:
    """The nanoseconds `[lo, hi]` (UTC since the epoch) whose epoch transform is `value`."""
    if transform == "epoch_day":
        return value * DAY_NS, (value + 1) * DAY_NS - 1
    if transform == "epoch_hour":
        return value * HOUR_NS, (value + 1) * HOUR_NS - 1
    if transform == "epoch_year":
        lo, hi = dt.date(1970 + value, 1, 1), dt.date(1971 + value, 1, 1)
    elif transform == "epoch_month":
        y, m = divmod(value, 12)
        lo = dt.date(1970 + y, m + 1, 1)
        hi = dt.date(1970 + y + (m == 11), 1 if m == 11 else m + 2, 1)
    else:
        raise ValueError(f"not an epoch transform: {transform}")
    return (lo.toordinal() - EPOCH_ORDINAL) * DAY_NS, (hi.toordinal() - EPOCH_ORDINAL) * DAY_NS - 1


def epoch_of(value: Any, transform: str) -> int | None:
    """An epoch transform of a Python date/datetime (aware: its UTC instant; naive: as UTC); None for NULL."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        naive = value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value
        delta = naive - _EPOCH_DT
        return epoch_part(((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds) * 1000, transform)
    if isinstance(value, dt.date):
        return epoch_part((value - _EPOCH_DT.date()).days * DAY_NS, transform)
    raise ValueError(f"{transform}() takes a date or timestamp, not {type(value).__name__}")


# ----- bucket(N): murmur3 ----------------------------------------------------------------------------------------

def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF


def _mix(k: int) -> int:
    return (_rotl((k * 0xCC9E2D51) & 0xFFFFFFFF, 15) * 0x1B873593) & 0xFFFFFFFF


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86_32 of `data` as a signed 32-bit int (DuckDB's `murmur3_32` for the same bytes)."""
    h = seed & 0xFFFFFFFF
    full = len(data) - len(data) % 4
    for i in range(0, full, 4):
        h = _rotl(h ^ _mix(int.from_bytes(data[i:i + 4], "little")), 13)
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    if full < len(data):
        h ^= _mix(int.from_bytes(data[full:], "little"))
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def bucket_index(data: bytes, buckets: int) -> int:
    """The bucket of a hash input: murmur3 with the sign bit cleared, modulo N."""
    return (murmur3_32(data) & 0x7FFFFFFF) % buckets


def exact_int(v: Any) -> int | None:
    """`v` as an int when it is integral (bool, int, or a finite whole float/Decimal), else None."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, Decimal | float) and math.isfinite(v) and v == int(v):
        return int(v)
    return None


def float32(x: float) -> float:
    """`x` rounded to the nearest float32 (±inf when out of range)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def hash_bytes(value: Any, col_type: str) -> bytes | None:
    """DuckDB's murmur3 input for a value of a column of this type (temporal values as ns since the epoch), or
    None if unsupported / no value can equal it. Signed ints, bool, date (days), timestamps (in their own unit) and
    decimal(P<=18) (unscaled) hash as int64 LE; unsigned ints and decimal(P>18) as their text; floats as double bits
    (-0.0 as 0.0); strings as UTF-8."""
    if col_type in SIGNED_INT_TYPES or col_type == "boolean":
        i = exact_int(value)
        return struct.pack("<q", i) if i is not None and -(1 << 63) <= i < 1 << 63 else None
    if col_type in UNSIGNED_INT_TYPES:
        i = exact_int(value)
        return str(i).encode() if i is not None and i >= 0 else None
    m = DECIMAL_TYPE.fullmatch(col_type)
    if m:
        precision, scale = int(m.group(1)), int(m.group(2))
        scaled = exact_int(Decimal(value) * (Decimal(10) ** scale)) if isinstance(value, int | Decimal) else None
        if scaled is None:
            return None
        if precision <= 18:
            return struct.pack("<q", scaled)
        digits = str(abs(scaled)).rjust(scale + 1, "0")
        text = digits[:len(digits) - scale] + ("." + digits[len(digits) - scale:] if scale else "")
        return (("-" if scaled < 0 else "") + text).encode()
    if col_type in FLOAT_TYPES:
        x = float(value)
        if math.isnan(x) or x != value or (col_type == "float32" and float32(x) != x):
            return None
        return struct.pack("<d", 0.0 if x == 0 else x)
    if col_type in UNIT_NS and col_type != "timestamp_ns" and isinstance(value, int):  # ns: engines may cut to µs
        unit = UNIT_NS[col_type]
        return struct.pack("<q", value // unit) if value % unit == 0 else None
    if col_type == "varchar" and isinstance(value, str):
        return value.encode("utf-8")
    return None


def bucket_of(value: Any, col_type: str, buckets: int) -> int | None:
    """`bucket(N)` of a Python value as DuckDB computes it when writing (spec §6); None for NULL."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        naive = value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value
        delta = naive - _EPOCH_DT
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        value, col_type = micros * 1000, "timestamp"  # nanoseconds, as UNIT_NS expects
    elif isinstance(value, dt.date):
        value, col_type = (value - _EPOCH_DT.date()).days * DAY_NS, "date"
    data = bytes(value) if col_type == "blob" else hash_bytes(value, col_type)
    if data is None:
        raise ValueError(f"bucket() is not supported for columns of type {col_type}")
    return bucket_index(data, buckets)
