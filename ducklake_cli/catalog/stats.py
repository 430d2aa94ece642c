"""Statistic strings (spec §8.2): encode values written to Parquet, parse them back, merge table-level stats."""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from ducklake_cli.catalog.types import DECIMAL_TYPE, FLOAT_TYPES, INT_TYPES

# Types DuckDB keeps no min/max for (spec §8.2).
NO_BOUNDS = frozenset({"int128", "uint128", "timetz", "interval", "geometry", "variant"})


def _float_text(value: float, ducklake_type: str) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if ducklake_type == "float32":
        import numpy as np

        return str(np.float32(value))
    return repr(float(value))


def _time_text(value: dt.time) -> str:
    text = value.strftime("%H:%M:%S")
    return text + f".{value.microsecond:06d}".rstrip("0") if value.microsecond else text


def _timestamp_text(value: dt.datetime, *, utc: bool) -> str:
    if utc:
        value = value.astimezone(dt.UTC) if value.tzinfo else value
    text = value.strftime("%Y-%m-%d %H:%M:%S") if value.year >= 1000 else (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}:{value.second:02d}")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text + "+00" if utc else text


def encode_stat(value: Any, ducklake_type: str) -> str | None:
    """A min/max value in the catalog's text form (`1`, `0.1`, `23.75`, `2024-01-15 12:30:00+00`, `00FF`)."""
    if value is None or ducklake_type in NO_BOUNDS:
        return None
    if ducklake_type == "boolean":
        return "1" if value else "0"
    if ducklake_type in FLOAT_TYPES:
        return None if math.isnan(value) else _float_text(value, ducklake_type)
    if ducklake_type == "blob":
        return bytes(value).hex().upper()
    return render_value(value, ducklake_type)


def render_value(value: Any, ducklake_type: str) -> str:
    """DuckDB's text rendering of a value (partition values, hive directories, inlined statistics)."""
    m = DECIMAL_TYPE.fullmatch(ducklake_type)
    if m:
        return f"{Decimal(value):.{int(m.group(2))}f}"
    if ducklake_type == "boolean":
        return "true" if value else "false"
    if ducklake_type in FLOAT_TYPES:
        return "nan" if math.isnan(value) else _float_text(value, ducklake_type)
    if ducklake_type == "timestamptz":
        return _timestamp_text(value, utc=True)
    if isinstance(value, dt.datetime):
        return _timestamp_text(value, utc=False)
    if isinstance(value, dt.time):
        return _time_text(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in bytes(value))
    return str(value)


def _parse_blob(text: str) -> bytes:
    if "\\x" in text or not re.fullmatch(r"(?:[0-9A-Fa-f]{2})*", text):
        out = bytearray()
        i = 0
        while i < len(text):
            if text.startswith("\\x", i) and i + 4 <= len(text):
                out.append(int(text[i + 2:i + 4], 16))
                i += 4
            else:
                out.extend(text[i].encode())
                i += 1
        return bytes(out)
    return bytes.fromhex(text)


def stat_key(text: str | None, ducklake_type: str) -> Any:
    """A stored stat string as a value that orders like the column type (None when unparseable)."""
    if text is None:
        return None
    try:
        if ducklake_type == "boolean":
            return text.strip().lower() in ("1", "true", "t")
        if ducklake_type in INT_TYPES:
            return int(text)
        if ducklake_type in FLOAT_TYPES:
            return float(text)
        if DECIMAL_TYPE.fullmatch(ducklake_type):
            return Decimal(text)
        if ducklake_type == "blob":
            return _parse_blob(text)
        if ducklake_type in ("date", "timestamp", "timestamptz", "timestamp_s", "timestamp_ms", "timestamp_ns"):
            return _temporal_key(text)
    except (ValueError, InvalidOperation):
        return None
    return text.encode("utf-8")


def _temporal_key(text: str) -> tuple[int, str]:
    # Sign of the year first (BC/negative years sort below), then the text, which sorts within a sign.
    t = text.replace("+00", "").strip()
    if t in ("infinity", "-infinity"):
        return (2 if t == "infinity" else -2, "")
    return (-1 if t.startswith("-") or t.endswith("(BC)") else 0, t)


def merge_bound(old: str | None, new: str | None, ducklake_type: str, *, upper: bool) -> str | None:
    """The wider of two bounds; unknown (None) on either side stays unknown."""
    if old is None or new is None:
        return None
    a, b = stat_key(old, ducklake_type), stat_key(new, ducklake_type)
    if a is None or b is None:
        return None
    return (new if b > a else old) if upper else (new if b < a else old)


def merge_nan(old: bool | None, new: bool | None) -> bool | None:
    """contains_nan OR-ed; NULL (unknown) if either side is unknown."""
    if old is None or new is None:
        return None
    return old or new
