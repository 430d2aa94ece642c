"""Data-file pruning for query planning: which files can hold a row matching a conjunction of predicates.

Pure Python. A file is dropped only when some predicate provably matches none of its rows, judged from its
`ducklake_file_column_stats` (spec §3.8, §8.2) and its `ducklake_file_partition_value` rows (§6). Soundness over
strength: whenever a value cannot be decoded, a literal cannot be coerced unambiguously, or engines could compare
differently (float vs double, date vs timestamp, sub-microsecond literals), every plausible reading is tried and the
file is kept if any of them could match.

Facts checked against DuckDB 1.5.5 (tests/engine/test_prune.py):
* varchar min/max are cut to 256 bytes (max with its last byte incremented; no stats at all when the cut lands in
  non-ASCII text); a max that is a plain prefix of the true max is still tolerated here.
* year/month/day/hour of a TIMESTAMPTZ are computed in the writer's session time zone, so they are not used here;
  and of an infinite date/timestamp they are NULL, so only identity/bucket NULL keys mean "all NULL".
* bucket hashes: signed ints, bool, date (days), timestamps (in their own unit), decimal(P<=18) (unscaled) as
  int64 LE; unsigned ints and decimal(P>18) as their text; floats as double bits (-0.0 as 0.0); strings as UTF-8.
  Promotions keep old files' keys (uint→int changes the encoding; timestamp→timestamptz the value), and
  TIMESTAMP_NS buckets are not used (a reader at microsecond precision may match rows of other buckets).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ducklake_cli.catalog.models import ColumnInfo, PartitionField
from ducklake_cli.engine.planning.predicates import Predicate


@dataclass(frozen=True)
class FileStats:
    """One file's statistics for one leaf column, as stored in `ducklake_file_column_stats`."""

    column_id: int
    min_value: str | None
    max_value: str | None
    null_count: int | None
    value_count: int | None
    contains_nan: bool | None


@dataclass(frozen=True)
class Candidate:
    """A data file to prune: its stats by column id (missing = unknown) and partition key values.

    `partition_values` maps partition_key_index → stored text (None = NULL key); `partition_fields` is the spec
    of the file's own `partition_id` (the one in force when it was written). Optional `written_types`: column_id →
    the column's type when the file was written (the `ducklake_column` version live at its begin_snapshot); it
    only sharpens bucket pruning after type promotions — without it every allowed promotion is assumed possible.
    """

    data_file_id: int
    stats: Mapping[int, FileStats]
    partition_values: Mapping[int, str | None]
    partition_fields: tuple[PartitionField, ...]
    written_types: Mapping[int, str] = field(default_factory=dict)


_SIGNED = frozenset({"int8", "int16", "int32", "int64"})
_UNSIGNED = frozenset({"uint8", "uint16", "uint32", "uint64"})
_NS = 1_000_000_000
_DAY = 86_400 * _NS
_HOUR = 3_600 * _NS
# Nanoseconds per stored unit of each temporal type (all temporal values are compared as ns since the epoch).
_UNIT = {"date": _DAY, "timestamp": 1000, "timestamp_us": 1000, "timestamptz": 1000, "timestamp_ms": 1_000_000,
         "timestamp_s": _NS, "timestamp_ns": 1}
_CALENDAR = ("year", "month", "day", "hour")
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
_BUCKET = re.compile(r"bucket\((\d+)\)")
_INT = re.compile(r"[+-]?\d+")
_TS = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
                 r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?")
_EPOCH = dt.date(1970, 1, 1).toordinal()
_COMPARE = frozenset({"=", "<", "<=", ">", ">=", "between", "in"})

# A literal in the column's domain; True = the engine compares after rounding both sides to double (rounding is
# monotone, so a value in [lo, hi] rounds into [float(lo), float(hi)]).
Alt = tuple[Any, bool]


def keep_file(candidate: Candidate, predicates: Sequence[Predicate], columns: Mapping[str, ColumnInfo]) -> bool:
    """False only when some predicate provably matches no row of the file."""
    for pred in predicates:
        col = columns.get(pred.column.lower())
        if col is None or col.children or _kind(col.type) is None:
            continue
        try:
            if not _may_match(candidate, pred, col):
                return False
        except (ArithmeticError, ValueError, TypeError):  # undecodable input: keep
            continue
    return True


def prune(candidates: Sequence[Candidate], predicates: Sequence[Predicate],
          columns: Mapping[str, ColumnInfo]) -> tuple[list[int], list[int]]:
    """(kept data_file_ids, pruned data_file_ids), each in input order."""
    kept: list[int] = []
    pruned: list[int] = []
    for c in candidates:
        (kept if keep_file(c, predicates, columns) else pruned).append(c.data_file_id)
    return kept, pruned


# ----- murmur3 / bucket ----------------------------------------------------------------------------------------

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


def _exact_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, Decimal | float) and math.isfinite(v) and v == int(v):
        return int(v)
    return None


def _hash_inputs(value: Any, col_type: str, written: str | None) -> list[bytes] | None:
    """DuckDB's murmur3 inputs a row equal to `value` may have been hashed from, or None when unknown.

    `written` is the type the file was written with (None = unknown). Promotions keep old files' keys: uint→signed
    int changes the encoding (text → int64); timestamp→timestamptz hashed the old wall-clock value (unknowable).
    """
    if written is None and col_type in _SIGNED:  # maybe written as uint: either encoding
        i = _exact_int(value)
        signed, text = _hash_bytes(value, "int64"), _hash_bytes(value, "uint64")
        return None if i is None else [d for d in (signed, text) if d is not None]
    if written is not None and written != col_type:
        if written in _UNSIGNED or written in _SIGNED and col_type in _SIGNED or written == "float32":
            col_type = written if written in _UNSIGNED else col_type
        else:
            return None
    data = _hash_bytes(value, col_type)
    return None if data is None else [data]


def _hash_bytes(value: Any, col_type: str) -> bytes | None:
    """DuckDB's murmur3 input for a value of a column of this type, or None if unsupported / no value can equal it."""
    if col_type in _SIGNED or col_type == "boolean":
        i = _exact_int(value)
        return struct.pack("<q", i) if i is not None and -(1 << 63) <= i < 1 << 63 else None
    if col_type in _UNSIGNED:
        i = _exact_int(value)
        return str(i).encode() if i is not None and i >= 0 else None
    m = _DECIMAL.fullmatch(col_type)
    if m:
        precision, scale = int(m.group(1)), int(m.group(2))
        scaled = _exact_int(Decimal(value) * (Decimal(10) ** scale)) if isinstance(value, int | Decimal) else None
        if scaled is None:
            return None
        if precision <= 18:
            return struct.pack("<q", scaled)
        digits = str(abs(scaled)).rjust(scale + 1, "0")
        text = digits[:len(digits) - scale] + ("." + digits[len(digits) - scale:] if scale else "")
        return (("-" if scaled < 0 else "") + text).encode()
    if col_type in ("float32", "float64"):
        x = float(value)
        if math.isnan(x) or x != value or (col_type == "float32" and _f32(x) != x):
            return None
        return struct.pack("<d", 0.0 if x == 0 else x)
    if col_type in _UNIT and col_type != "timestamp_ns" and isinstance(value, int):  # ns: engines may cut to µs
        unit = _UNIT[col_type]
        return struct.pack("<q", value // unit) if value % unit == 0 else None
    if col_type == "varchar" and isinstance(value, str):
        return value.encode("utf-8")
    return None


# ----- decoding ------------------------------------------------------------------------------------------------

def _kind(col_type: str) -> str | None:
    if col_type == "boolean":
        return "bool"
    if col_type in _SIGNED or col_type in _UNSIGNED:
        return "int"
    if col_type in ("float32", "float64"):
        return "float"
    if _DECIMAL.fullmatch(col_type):
        return "dec"
    if col_type in _UNIT:
        return "ts"
    if col_type == "varchar":
        return "str"
    return None  # int128/uint128 (lossy in Parquet), time*, interval, uuid, blob, json, geometry, variant…


def _f32(x: float) -> float:
    try:
        return float(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def _to_float(v: Any) -> float:
    try:
        return float(v)
    except OverflowError:
        return math.copysign(math.inf, v)


def _parse_ts(text: str) -> tuple[int, int, bool, int] | None:
    """(UTC ns, wall-clock ns, has zone, fraction digits) of `YYYY-MM-DD[ HH:MM[:SS[.f]]][zone]`."""
    m = _TS.fullmatch(text.strip())
    if not m:
        return None
    y, mo, d, h, mi, s, frac, zone = m.groups()
    hh, mm, ss = int(h or 0), int(mi or 0), int(s or 0)
    if hh > 23 or mm > 59 or ss > 59:
        return None
    days = dt.date(int(y), int(mo), int(d)).toordinal() - _EPOCH  # ValueError → keep
    wall = (days * 86_400 + hh * 3_600 + mm * 60 + ss) * _NS + int((frac or "0").ljust(9, "0"))
    offset = 0
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = (int(digits[:2]) * 3_600 + int(digits[2:4] or 0) * 60) * _NS * (-1 if zone[0] == "-" else 1)
    return wall - offset, wall, zone is not None, len(frac or "")


def _dt_ns(v: dt.datetime) -> int:
    return ((v.toordinal() - _EPOCH) * 86_400 + v.hour * 3_600 + v.minute * 60 + v.second) * _NS \
        + v.microsecond * 1000


def _bound(text: str | None, col_type: str, kind: str, upper: bool) -> Any:
    """A stored min/max/partition text as a lower (upper=False) or upper bound in the column domain, or None."""
    if text is None:
        return None
    t = text.strip()
    if kind == "bool":
        return {"1": True, "true": True, "t": True, "0": False, "false": False, "f": False}.get(t.lower())
    if kind == "int":
        return int(t) if _INT.fullmatch(t) else None
    if kind == "dec":
        d = Decimal(t)
        return d if d.is_finite() else None
    if kind == "float":
        x = float(t)
        if math.isnan(x):
            return None
        # A float32 file under a float64 column (promotion) renders shortest-float32 text: widen to cover both.
        return max(x, _f32(x)) if upper else min(x, _f32(x))
    if kind == "ts":
        parsed = _parse_ts(t)
        if parsed is None or parsed[2] != (col_type == "timestamptz"):
            return None
        ns = parsed[0]
        if col_type == "timestamp_ns":  # readers may see it at microsecond precision
            ns = -(-ns // 1000) * 1000 if upper else ns // 1000 * 1000
        return ns
    return text  # varchar: raw


def _alternatives(v: Any, col_type: str, kind: str) -> list[Alt] | None:
    """Every plausible reading of literal `v` in the column's domain, or None when it cannot be coerced."""
    if isinstance(v, bool) or kind == "bool":
        return [(v, False)] if isinstance(v, bool) and kind == "bool" else None
    if kind in ("int", "dec", "float"):
        from_str = isinstance(v, str)
        if from_str:
            if kind != "int" or not _INT.fullmatch(v.strip()):
                return None
            v = int(v.strip())
        if isinstance(v, Decimal) and not v.is_finite():
            v = float(v)
        if not isinstance(v, int | float | Decimal):
            return None
        alts: list[Alt] = [(v, False)]
        # Engines compare in double when either side is floating (or a decimal too wide for DECIMAL(38)): add
        # that reading whenever the cast to double is lossy for the column values or for the literal.
        wide = isinstance(v, Decimal) and len(v.as_tuple().digits) > 38
        if kind == "float" and _to_float(v) != v or kind != "float" and (from_str or wide or isinstance(v, float)):
            alts.append((v, True))
        if col_type == "float32":
            alts.append((_f32(_to_float(v)), False))
        return alts
    if kind == "str":
        return [(v, False)] if isinstance(v, str) else None
    tz = col_type == "timestamptz"
    out: list[int] = []
    if isinstance(v, dt.datetime):
        off = v.utcoffset()
        wall = _dt_ns(v.replace(tzinfo=None))
        out.append(wall - (off // dt.timedelta(microseconds=1)) * 1000 if off is not None else wall)
        if off is not None and not tz:
            out.append(wall)
    elif isinstance(v, dt.date):
        out.append((v.toordinal() - _EPOCH) * _DAY)
    elif isinstance(v, str):
        parsed = _parse_ts(v)
        if parsed is None:
            return None
        utc, wall, has_zone, digits = parsed
        out.append(utc)
        if has_zone and not tz:
            out.append(wall)
        if digits > 6:  # an engine may cut the literal to microseconds
            out += [x // 1000 * 1000 for x in list(out)] + [-(-x // 1000) * 1000 for x in list(out)]
    else:
        return None
    if col_type == "date":  # the literal may instead be cast to DATE
        out += [x // _DAY * _DAY for x in out]
    return [(x, False) for x in dict.fromkeys(out)]


# ----- per-file bounds -----------------------------------------------------------------------------------------

def _le(a: Any, b: Any, relaxed: bool) -> bool:
    return _to_float(a) <= _to_float(b) if relaxed else bool(a <= b)


def _lt(a: Any, b: Any, relaxed: bool) -> bool:
    return _to_float(a) < _to_float(b) if relaxed else bool(a < b)


@dataclass(frozen=True)
class _Span:
    """Inclusive [lo, hi] holding every non-NULL value of the column in the file (None = unbounded)."""

    lo: Any
    hi: Any
    prefix: bool = False  # varchar max that may be a truncated prefix of the true max

    def _above_hi(self, v: Any, strict: bool, relaxed: bool) -> bool:
        """Whether some value <= hi can be >= v (> v when strict)."""
        if self.hi is None or self.prefix and isinstance(v, str) and v.startswith(self.hi):
            return True
        return _lt(v, self.hi, relaxed) if strict else _le(v, self.hi, relaxed)

    def allows(self, op: str, v: Any, relaxed: bool) -> bool:
        if op in ("<", "<=", "="):
            low_ok = self.lo is None or (_lt if op == "<" else _le)(self.lo, v, relaxed)
            return low_ok and (op != "=" or self._above_hi(v, False, relaxed))
        return self._above_hi(v, op == ">", relaxed)


def _calendar_span(parts: dict[str, int], col_type: str) -> _Span | None:
    """The time range implied by year[/month[/day[/hour]]] keys of a naive temporal column."""
    if "year" not in parts:
        return None
    y, mo, d, h = parts["year"], parts.get("month"), parts.get("day"), parts.get("hour")
    try:
        if mo is None:
            lo, hi = dt.datetime(y, 1, 1), dt.datetime(y + 1, 1, 1)
        elif d is None:
            lo = dt.datetime(y, mo, 1)
            hi = (lo + dt.timedelta(days=32)).replace(day=1)
        elif h is None or col_type == "date":
            lo = dt.datetime(y, mo, d)
            hi = lo + dt.timedelta(days=1)
        else:
            lo = dt.datetime(y, mo, d, h)
            hi = lo + dt.timedelta(hours=1)
    except (ValueError, OverflowError):
        return None
    return _Span(_dt_ns(lo), _dt_ns(hi) - 1)


def _calendar_part(ns: int, transform: str) -> int:
    days, rem = divmod(ns, _DAY)
    day = dt.date.fromordinal(days + _EPOCH)
    return {"year": day.year, "month": day.month, "day": day.day, "hour": rem // _HOUR}[transform]


def _key_allows(pf: PartitionField, stored: str, col_type: str, value: Any, written: str | None) -> bool:
    """Whether a row equal to `value` could carry partition key text `stored` (True when unsure)."""
    t = pf.transform
    if t in _CALENDAR and col_type in _UNIT and col_type != "timestamptz" and _INT.fullmatch(stored.strip()):
        if t == "hour" and col_type == "date" or not isinstance(value, int):
            return True
        return _calendar_part(value, t) == int(stored)
    m = _BUCKET.fullmatch(t)
    if m and int(m.group(1)) > 0 and _INT.fullmatch(stored.strip()):
        inputs = _hash_inputs(value, col_type, written)
        n = int(m.group(1))
        return inputs is None or any((murmur3_32(d) & 0x7FFFFFFF) % n == int(stored) for d in inputs)
    return True


def _spans(stats: FileStats | None, keys: list[tuple[PartitionField, str | None]], col_type: str,
           kind: str) -> list[_Span]:
    out: list[_Span] = []
    if stats is not None:
        lo = _bound(stats.min_value, col_type, kind, False)
        hi = _bound(stats.max_value, col_type, kind, True)
        if lo is not None or hi is not None:
            out.append(_Span(lo, hi, prefix=kind == "str"))
    calendar: dict[str, int] = {}
    for pf, stored in keys:
        if stored is None:
            continue
        if pf.transform == "identity":
            lo, hi = _bound(stored, col_type, kind, False), _bound(stored, col_type, kind, True)
            if lo is not None or hi is not None:
                out.append(_Span(lo, hi))
        elif pf.transform in _CALENDAR and kind == "ts" and col_type != "timestamptz" \
                and _INT.fullmatch(stored.strip()):
            calendar[pf.transform] = int(stored)
    span = _calendar_span(calendar, col_type)
    return out + ([span] if span else [])


def _is_nan(v: Any) -> bool:
    return isinstance(v, float | Decimal) and not isinstance(v, bool) and v != v


# ----- one predicate -------------------------------------------------------------------------------------------

def _may_match(c: Candidate, pred: Predicate, col: ColumnInfo) -> bool:
    col_type = col.type
    kind = _kind(col_type)
    assert kind is not None
    stats = c.stats.get(col.column_id)
    keys = [(f, c.partition_values[f.key_index]) for f in c.partition_fields
            if f.column_id == col.column_id and f.key_index in c.partition_values]
    # Every transform maps NULL to NULL, so a non-NULL key means no NULL rows; but calendar parts of ±infinity are
    # NULL too, so only identity and bucket NULL keys mean that every row is NULL.
    no_nulls = stats is not None and stats.null_count == 0 or any(v is not None for _, v in keys)
    all_null = stats is not None and stats.value_count == 0 or any(
        v is None and (f.transform == "identity" or _BUCKET.fullmatch(f.transform)) for f, v in keys)
    op = pred.op
    if op == "is_null":
        return not no_nulls
    if op == "is_not_null":
        return not all_null
    values = pred.values
    arity_ok = len(values) >= 1 if op == "in" else len(values) == (2 if op == "between" else 1)
    if op not in _COMPARE or not arity_ok:
        return True
    if op == "in":
        values = tuple(v for v in values if v is not None)
        if not values:
            return False  # x IN (NULL, …) is never true
    elif any(v is None for v in values):
        return False  # a comparison with NULL is never true
    if all_null:
        return False
    nan_possible = kind == "float" and (stats is None or stats.contains_nan is not False)
    if any(_is_nan(v) for v in values):  # NaN sorts above every number and equals itself (Spark, DuckDB)
        if kind != "float":
            return True
        if op in ("=", ">=", ">"):
            return nan_possible
        if op != "in" or nan_possible:
            return True
        values = tuple(v for v in values if not _is_nan(v))
        if not values:
            return False
    elif op in (">", ">=") and nan_possible:
        return True
    alts = [_alternatives(v, col_type, kind) for v in values]
    if any(a is None for a in alts):
        return True
    readings = [a for a in alts if a is not None]
    spans = _spans(stats, keys, col_type, kind)
    written = c.written_types.get(col.column_id)
    if written is None and col_type == "timestamptz" and stats is not None and any(
            _bound(t, col_type, kind, False) is not None for t in (stats.min_value, stats.max_value)):
        written = col_type  # stats with a zone: written as TIMESTAMPTZ, not promoted from TIMESTAMP
    if written is None and col_type == "timestamptz":
        written = "timestamp"  # maybe promoted: its bucket keys hashed a wall-clock value
    if op in ("=", "in"):
        return any(
            all(s.allows("=", v, relaxed) for s in spans)
            and (relaxed or all(_key_allows(f, k, col_type, v, written) for f, k in keys if k is not None))
            for reading in readings for v, relaxed in reading
        )
    if op == "between":
        return all(
            any(s.allows(">=", v, r) for v, r in readings[0]) and any(s.allows("<=", v, r) for v, r in readings[1])
            for s in spans
        )
    return all(any(s.allows(op, v, r) for v, r in readings[0]) for s in spans)


_EPOCH_DT = dt.datetime(1970, 1, 1)


def bucket_of(value: Any, col_type: str, buckets: int) -> int | None:
    """`bucket(N)` of a Python value as DuckDB computes it when writing (spec §6); None for NULL."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        naive = value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value
        delta = naive - _EPOCH_DT
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        value, col_type = micros * 1000, "timestamp"  # nanoseconds, as _UNIT expects
    elif isinstance(value, dt.date):
        value, col_type = (value - _EPOCH_DT.date()).days * _DAY, "date"
    data = bytes(value) if col_type == "blob" else _hash_bytes(value, col_type)
    if data is None:
        raise ValueError(f"bucket() is not supported for columns of type {col_type}")
    return (murmur3_32(data) & 0x7FFFFFFF) % buckets
