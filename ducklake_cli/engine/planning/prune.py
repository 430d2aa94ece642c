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
* epoch_year/month/day/hour (DuckLake 1.1) are floor counts since 1970 on the UTC instant, monotonic in the column:
  each key is a range of the column (TIMESTAMPTZ only when the file was written as TIMESTAMPTZ, not promoted).
* bucket hashes: signed ints, bool, date (days), timestamps (in their own unit), decimal(P<=18) (unscaled) as
  int64 LE; unsigned ints and decimal(P>18) as their text; floats as double bits (-0.0 as 0.0); strings as UTF-8.
  Promotions keep old files' keys (uint→int changes the encoding; timestamp→timestamptz the value), and
  TIMESTAMP_NS buckets are not used (a reader at microsecond precision may match rows of other buckets).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ducklake_cli.catalog.models import ColumnInfo, PartitionField
from ducklake_cli.catalog.partitions import (
    BUCKET,
    CALENDAR,
    DAY_NS,
    EPOCH,
    EPOCH_ORDINAL,
    NS,
    UNIT_NS,
    bucket_index,
    calendar_part,
    epoch_span,
    exact_int,
    float32,
    hash_bytes,
)
from ducklake_cli.catalog.types import DECIMAL_TYPE, FLOAT_TYPES, INT_TYPES, SIGNED_INT_TYPES, UNSIGNED_INT_TYPES
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


_INT = re.compile(r"[+-]?\d+")
_TS = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
                 r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?")
_COMPARE = frozenset({"=", "<", "<=", ">", ">=", "between", "in"})

# A literal in the column's domain; True = the engine compares after rounding both sides to double (rounding is
# monotone, so a value in [lo, hi] rounds into [float(lo), float(hi)]).
Alt = tuple[Any, bool]


def judged(col: ColumnInfo) -> bool:
    """Whether predicates on the column can rule files out (else they are ignored here)."""
    return not col.children and _kind(col.type) is not None


def keep_file(candidate: Candidate, predicates: Sequence[Predicate], columns: Mapping[str, ColumnInfo]) -> bool:
    """False only when some predicate provably matches no row of the file."""
    for pred in predicates:
        col = columns.get(pred.column.lower())
        if col is None or not judged(col):
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


# ----- bucket --------------------------------------------------------------------------------------------------

def _hash_inputs(value: Any, col_type: str, written: str | None) -> list[bytes] | None:
    """DuckDB's murmur3 inputs a row equal to `value` may have been hashed from, or None when unknown.

    `written` is the type the file was written with (None = unknown). Promotions keep old files' keys: uint→signed
    int changes the encoding (text → int64); timestamp→timestamptz hashed the old wall-clock value (unknowable).
    """
    if written is None and col_type in SIGNED_INT_TYPES:  # maybe written as uint: either encoding
        i = exact_int(value)
        signed, text = hash_bytes(value, "int64"), hash_bytes(value, "uint64")
        return None if i is None else [d for d in (signed, text) if d is not None]
    if written is not None and written != col_type:
        if written in UNSIGNED_INT_TYPES or written in SIGNED_INT_TYPES and col_type in SIGNED_INT_TYPES \
                or written == "float32":
            col_type = written if written in UNSIGNED_INT_TYPES else col_type
        else:
            return None
    data = hash_bytes(value, col_type)
    return None if data is None else [data]


# ----- decoding ------------------------------------------------------------------------------------------------

def _kind(col_type: str) -> str | None:
    if col_type == "boolean":
        return "bool"
    if col_type in INT_TYPES:
        return "int"
    if col_type in FLOAT_TYPES:
        return "float"
    if DECIMAL_TYPE.fullmatch(col_type):
        return "dec"
    if col_type in UNIT_NS:
        return "ts"
    if col_type == "varchar":
        return "str"
    return None  # int128/uint128 (lossy in Parquet), time*, interval, uuid, blob, json, geometry, variant…


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
    days = dt.date(int(y), int(mo), int(d)).toordinal() - EPOCH_ORDINAL  # ValueError → keep
    wall = (days * 86_400 + hh * 3_600 + mm * 60 + ss) * NS + int((frac or "0").ljust(9, "0"))
    offset = 0
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = (int(digits[:2]) * 3_600 + int(digits[2:4] or 0) * 60) * NS * (-1 if zone[0] == "-" else 1)
    return wall - offset, wall, zone is not None, len(frac or "")


def _dt_ns(v: dt.datetime) -> int:
    return ((v.toordinal() - EPOCH_ORDINAL) * 86_400 + v.hour * 3_600 + v.minute * 60 + v.second) * NS \
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
        return max(x, float32(x)) if upper else min(x, float32(x))
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
            alts.append((float32(_to_float(v)), False))
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
        out.append((v.toordinal() - EPOCH_ORDINAL) * DAY_NS)
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
        out += [x // DAY_NS * DAY_NS for x in out]
    return [(x, False) for x in dict.fromkeys(out)]


def time_readings(v: Any, col_type: str) -> list[int] | None:
    """Every plausible reading of a literal compared with a DATE/TIMESTAMP column, in ns since the epoch (None when
    it cannot be coerced): the readings the rules below try."""
    alts = _alternatives(v, col_type, "ts")
    return None if alts is None else [x for x, _ in alts]


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


def _key_allows(pf: PartitionField, stored: str, col_type: str, value: Any, written: str | None) -> bool:
    """Whether a row equal to `value` could carry partition key text `stored` (True when unsure)."""
    t = pf.transform
    if t in CALENDAR and col_type in UNIT_NS and col_type != "timestamptz" and _INT.fullmatch(stored.strip()):
        if t == "hour" and col_type == "date" or not isinstance(value, int):
            return True
        return calendar_part(value, t) == int(stored)
    m = BUCKET.fullmatch(t)
    if m and int(m.group(1)) > 0 and _INT.fullmatch(stored.strip()):
        inputs = _hash_inputs(value, col_type, written)
        n = int(m.group(1))
        return inputs is None or any(bucket_index(d, n) == int(stored) for d in inputs)
    return True


def _epoch_span(transform: str, stored: str, col_type: str) -> _Span | None:
    """The column range whose epoch transform is the stored key (widened to microseconds for TIMESTAMP_NS, which
    readers may see at microsecond precision)."""
    if not _INT.fullmatch(stored.strip()):
        return None
    try:
        lo, hi = epoch_span(int(stored), transform)
    except (ValueError, OverflowError):
        return None
    if col_type == "timestamp_ns":
        lo, hi = lo // 1000 * 1000, -(-hi // 1000) * 1000
    else:  # the last value of the range in the column's own unit (a day for DATE, a microsecond, …)
        hi = max(lo, hi + 1 - UNIT_NS.get(col_type, 1))  # (epoch_hour of a DATE: its midnight alone)
    return _Span(lo, hi)


def _spans(stats: FileStats | None, keys: list[tuple[PartitionField, str | None]], col_type: str,
           kind: str, *, epoch_ok: bool = True) -> list[_Span]:
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
        elif pf.transform in CALENDAR and kind == "ts" and col_type != "timestamptz" \
                and _INT.fullmatch(stored.strip()):
            calendar[pf.transform] = int(stored)
        elif pf.transform in EPOCH and kind == "ts" and epoch_ok:
            epoch = _epoch_span(pf.transform, stored, col_type)
            if epoch is not None:
                out.append(epoch)
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
        v is None and (f.transform == "identity" or BUCKET.fullmatch(f.transform)) for f, v in keys)
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
    written = c.written_types.get(col.column_id)
    if written is None and col_type == "timestamptz" and stats is not None and any(
            _bound(t, col_type, kind, False) is not None for t in (stats.min_value, stats.max_value)):
        written = col_type  # stats with a zone: written as TIMESTAMPTZ, not promoted from TIMESTAMP
    # An epoch key of a file written before a promotion to TIMESTAMPTZ counted a wall-clock value: not a range.
    spans = _spans(stats, keys, col_type, kind, epoch_ok=col_type != "timestamptz" or written == col_type)
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
