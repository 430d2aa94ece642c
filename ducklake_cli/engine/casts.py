"""DuckDB's casts of values stored under an older column type to the type the column was promoted to (`ALTER COLUMN
… TYPE`, `catalog.columns.promotion_allowed`), in Arrow, for the rows of files Spark's Parquet reader cannot read
as the new type (`engine.fallback`). Each reproduces DuckDB 1.5.5's own cast, rounding included (established by
experiment; tests/ops/test_type_promotions.py compares every promotion with DuckDB).

Runs on the executors, shipped by value with `engine.fallback`: standard library, pyarrow and numpy only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation, localcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

_EXACT_INT = {32: 1 << 24, 64: 1 << 53}  # integers a float / double holds exactly
_U64 = 1 << 64
_WIDE = Context(prec=400)  # exact decimal arithmetic for 38 digits and a double's 309


def to_floating(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """Integers, floats and decimals as FLOAT or DOUBLE: a C conversion (nearest) for integers and floats; for
    decimals DuckDB's `TryCastDecimalToFloatingPoint` (unscaled value / 10^scale in the target type, or whole and
    fractional parts converted apart when the unscaled value is too large to convert exactly)."""
    import pyarrow as pa

    if not pa.types.is_decimal(arr.type):
        return arr.cast(target, safe=False)
    single = pa.types.is_float32(target)
    scale, wide = arr.type.scale, arr.type.precision > 18
    values = [None if d is None else _decimal_to_floating(_unscaled(d, scale), scale, single=single, wide=wide)
              for d in arr.to_pylist()]
    return pa.array(values, pa.float64()).cast(target)  # each value is already exactly a float when `single`


def _unscaled(value: Decimal, scale: int) -> int:
    return int(value.scaleb(scale, context=_WIDE))


def _decimal_to_floating(unscaled: int, scale: int, *, single: bool, wide: bool) -> float:
    """One decimal as DuckDB casts it to FLOAT (`single`) or DOUBLE; `wide`: stored as a 128-bit integer."""
    import numpy as np

    kind = np.float32 if single else np.float64

    def conv(value: int) -> Any:
        if wide:  # DuckDB's HUGEINT → DOUBLE (two 64-bit halves), then → FLOAT
            return kind(_hugeint_to_double(value))
        return np.array([value], np.int64).astype(kind)[0]

    power = kind(float(10**scale))
    if scale == 0 or abs(unscaled) <= _EXACT_INT[32 if single else 64]:
        return float(conv(unscaled) / power)
    whole = abs(unscaled) // 10**scale * (1 if unscaled >= 0 else -1)  # C division: toward zero
    return float(conv(whole) + conv(unscaled - whole * 10**scale) / power)


def _hugeint_to_double(value: int) -> float:
    """DuckDB's HUGEINT → DOUBLE: lower + upper * 2^64 from the two's-complement halves (upper -1 apart)."""
    upper, lower = divmod(value, _U64)
    if upper == -1:
        return -float(_U64 - 1 - lower) - 1.0
    return float(lower) + float(upper) * float(_U64)


def to_decimal(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """Booleans, integers, decimals and doubles as a DECIMAL(p,s), as DuckDB casts them: exact, a finer scale
    rounded half away from zero, a DOUBLE multiplied by 10^s as a double first; a value with more digits than
    the precision is an error, as in DuckDB."""
    import pyarrow as pa

    if pa.types.is_boolean(arr.type):
        arr = arr.cast(pa.int8())
    if pa.types.is_integer(arr.type):
        return arr.cast(target)
    if pa.types.is_decimal(arr.type) and arr.type.scale <= target.scale:
        return arr.cast(target)  # exact, or an error when the digits do not fit
    step = Decimal(1).scaleb(-target.scale)
    limit = Decimal(10) ** (target.precision - target.scale)

    def one(value: Any) -> Decimal | None:
        if value is None:
            return None
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"cannot cast {value} to decimal({target.precision},{target.scale})")
            scaled = Decimal(value * float(10**target.scale)).quantize(Decimal(1), ROUND_HALF_UP)
            out = scaled.scaleb(-target.scale)
        else:
            out = value.quantize(step, ROUND_HALF_UP)
        if abs(out) >= limit:
            raise ValueError(f"{value} does not fit decimal({target.precision},{target.scale})")
        return out

    try:
        with localcontext(_WIDE):
            return pa.array([one(v) for v in arr.to_pylist()], target)
    except InvalidOperation as exc:
        raise ValueError(f"cannot cast to decimal({target.precision},{target.scale}): {exc}") from exc


# ----- JSON ------------------------------------------------------------------------------------------------------


def quoted(text: pa.Array) -> pa.Array:
    """Text as JSON strings (`"…"`, escaped); NULL stays NULL."""
    import pyarrow as pa

    return pa.array([None if v is None else json.dumps(v, ensure_ascii=False) for v in text.to_pylist()],
                    pa.string())


def json_text(arr: pa.Array, source: str | None = None) -> pa.Array:
    """DuckDB's `CAST(x AS JSON)` of a file column read by pyarrow: text passes as it is (DuckDB checks that it is
    JSON and refuses to read it otherwise), numbers and booleans bare (a decimal of up to 9 digits and a FLOAT as
    the DOUBLE they convert to), blobs, dates and timestamps as their DuckDB text in a JSON string. `source` names
    the column's Parquet type where Arrow does not tell it (`geometry`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return arr.cast(pa.string())
    if pa.types.is_boolean(t):
        return pc.if_else(arr, "true", "false")
    if pa.types.is_integer(t):
        return arr.cast(pa.string())
    render: Callable[[Any], str]
    if pa.types.is_floating(t):
        render = json_double
    elif pa.types.is_decimal(t):
        render = (lambda d: json_double(float(d))) if t.precision <= 9 else (lambda d: format(d, "f"))
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        if source == "geometry":
            raise ValueError("geometry values written before the column became json cannot be read as json yet")
        render = _blob_json
    elif pa.types.is_date(t):
        render = _date_json
    elif pa.types.is_timestamp(t):
        return _timestamps_json(arr)
    else:
        raise ValueError(f"cannot read {t} as json")
    return pa.array([None if v is None else render(v) for v in arr.to_pylist()], pa.string())


def json_double(value: float) -> str:
    """A double as DuckDB's JSON renders it: shortest digits, fixed notation for 1e-6 <= |x| < 1e21 (with `.0`
    when whole), `NaN`, `Infinity`, and -0.0 as `0.0`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0.0"
    sign = "-" if value < 0 else ""
    tup = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, tup.digits))
    point = len(digits) + int(tup.exponent)  # value = 0.<digits> * 10^point
    exp10 = point - 1
    if -6 <= exp10 < 21:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{exp10}"


def _blob_json(value: bytes) -> str:
    """DuckDB's text of a BLOB (printable ASCII but `"`, `'` and `\\` as it is, other bytes `\\xHH`), as JSON."""
    text = "".join(chr(b) if 32 <= b <= 126 and b not in (34, 39, 92) else f"\\x{b:02X}" for b in value)
    return json.dumps(text)


def _date_text(d: Any) -> str:
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def _date_json(d: Any) -> str:
    return json.dumps(_date_text(d))


def _timestamps_json(arr: pa.Array) -> pa.Array:
    """Timestamps as DuckDB's text (`YYYY-MM-DD HH:MM:SS[.fraction]`, trailing zeros trimmed; `+00` with a zone,
    in UTC) in JSON strings; nanoseconds kept."""
    import datetime as dt

    import pyarrow as pa

    per_second = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[arr.type.unit]
    width = len(str(per_second)) - 1
    zone = "+00" if arr.type.tz is not None else ""
    epoch = dt.datetime(1970, 1, 1)
    out: list[str | None] = []
    for raw in arr.cast(pa.int64()).to_pylist():
        if raw is None:
            out.append(None)
            continue
        seconds, fraction = divmod(raw, per_second)
        stamp = epoch + dt.timedelta(seconds=seconds)
        text = f"{_date_text(stamp)} {stamp.hour:02d}:{stamp.minute:02d}:{stamp.second:02d}"
        if fraction:
            text += "." + f"{fraction:0{width}d}".rstrip("0")
        out.append(json.dumps(text + zone))
    return pa.array(out, pa.string())
