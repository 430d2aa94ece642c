"""Statistic strings (spec §8.2): encode values written to Parquet, parse them back, merge table-level stats."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.types import DECIMAL_TYPE, FLOAT_TYPES, INT_TYPES

if TYPE_CHECKING:
    from ducklake_cli.catalog.models import LeafStats

# Types DuckDB keeps no min/max for (spec §8.2).
NO_BOUNDS = frozenset({"int128", "uint128", "timetz", "interval", "geometry", "variant"})
# Types whose bounds a Parquet writer may truncate: only theirs can be inexact (spec versions §3.5).
STRING_BOUNDS = frozenset({"varchar", "json", "blob"})
DUCKDB_STRING_STAT_BYTES = 256  # DuckDB's Parquet writer cuts string bounds to this many bytes


def exact_flag(bound: str | None, exact: bool, ducklake_type: str) -> bool | None:
    """1.1's `min_is_exact`/`max_is_exact` for a stored bound: NULL without a bound, true for every type compared
    by value, and the writer's flag for strings and blobs (spec versions §3.5)."""
    if bound is None:
        return None
    return exact if ducklake_type in STRING_BOUNDS else True


def bound_is_exact(flag: Any, ducklake_type: str) -> bool:
    """Whether a stored bound may answer MIN/MAX: numeric, temporal and boolean bounds always, a string's only when
    flagged exact (NULL, as on 1.0 catalogs and after migration, is not; spec versions §3.5)."""
    if ducklake_type not in STRING_BOUNDS:
        return True
    return flag is not None and str(flag).strip().lower() in ("1", "true", "t")


def duckdb_string_exact(bound: str | None, ducklake_type: str) -> bool:
    """Whether a string bound from DuckDB's written-file stats is whole: DuckDB cuts longer ones to 256 bytes (a
    blob's text is hex, two characters a byte), so a bound of that length may be cut."""
    if bound is None or ducklake_type not in STRING_BOUNDS:
        return True
    size = len(bound) // 2 if ducklake_type == "blob" else len(bound.encode("utf-8"))
    return size < DUCKDB_STRING_STAT_BYTES


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


def merge_bound(old: str | None, new: str | None, ducklake_type: str, *, upper: bool,
                key: Callable[[str, str], Any] = stat_key) -> str | None:
    """The wider of two bounds, ordered by `key`; unknown (None) on either side stays unknown."""
    if old is None or new is None:
        return None
    a, b = key(old, ducklake_type), key(new, ducklake_type)
    if a is None or b is None:
        return None
    return (new if b > a else old) if upper else (new if b < a else old)



# ----- table-level stats as DuckDB 1.5.5 keeps them (`DuckLakeColumnStats`) ----------------------------------------

def _bound_key(text: str, ducklake_type: str) -> Any:
    """How DuckDB orders two stat strings when merging: as values for numbers, times and booleans (NaN above every
    other float), else as strings; None when unparseable."""
    if ducklake_type in FLOAT_TYPES:
        try:
            value = float(text)
        except ValueError:
            return None
        return (1, 0.0) if math.isnan(value) else (0, value)
    return stat_key(text, ducklake_type)


@dataclass(frozen=True)
class ColumnStats:
    """One column's stats as DuckDB merges them into `ducklake_table_column_stats`: each part is known or not
    (`has_*`), a row read back knows whether it held NULLs but not how many, and inlined rows know no NaN."""

    type: str
    null_count: int = 0
    num_values: int = 0  # NULLs included, as Parquet counts them
    contains_nan: bool = False
    min: str | None = None
    max: str | None = None
    has_null_count: bool = False
    has_num_values: bool = False
    has_contains_nan: bool = False
    any_valid: bool = True
    min_exact: bool = True  # the bound is a real value (1.1's `min_is_exact`; strings only can be inexact)
    max_exact: bool = True

    @classmethod
    def of_file(cls, st: LeafStats, ducklake_type: str) -> ColumnStats:
        """A data file's leaf stats (every count known; NaN known for floats only)."""
        return cls(ducklake_type, st.null_count, st.value_count + st.null_count, bool(st.contains_nan), st.min_value,
                   st.max_value, True, True, st.contains_nan is not None, min_exact=st.min_exact,
                   max_exact=st.max_exact)

    @classmethod
    def of_inlined(cls, st: LeafStats, ducklake_type: str) -> ColumnStats:
        """Inlined rows' stats: NULLs counted, values seen or not, NaN never recorded."""
        return cls(ducklake_type, st.null_count, 0, False, st.min_value, st.max_value, True, False, False,
                   st.value_count > 0)

    @classmethod
    def of_row(cls, ducklake_type: str, contains_null: bool | None, contains_nan: bool | None, lo: str | None,
               hi: str | None, extra: str | None = None, *, min_exact: Any = None,
               max_exact: Any = None) -> ColumnStats:
        """A stored `ducklake_table_column_stats` row (DuckDB's `FromGlobalStats`); the 1.1 flags as stored (NULL:
        a string bound is not known to be exact)."""
        return cls(ducklake_type, 1 if contains_null else 0, 0, bool(contains_nan), lo, hi, contains_null is not None,
                   False, contains_nan is not None, lo is not None or hi is not None or extra is not None,
                   bound_is_exact(min_exact, ducklake_type), bound_is_exact(max_exact, ducklake_type))

    def valid(self) -> bool:
        """Whether any value is not NULL (DuckDB's `AnyValid`)."""
        if self.has_num_values and self.has_null_count:
            return self.num_values > self.null_count
        return self.any_valid

    def merge(self, new: ColumnStats) -> ColumnStats:
        """These stats widened by `new` (DuckDB's `MergeStats`): an unknown part stays unknown, and bounds unknown
        here (read back as NULL) are taken from `new` when there are none to compare with."""
        out = replace(self, has_null_count=self.has_null_count and new.has_null_count,
                      null_count=self.null_count + new.null_count,
                      has_num_values=self.has_num_values and new.has_num_values,
                      num_values=self.num_values + new.num_values,
                      has_contains_nan=self.has_contains_nan and new.has_contains_nan,
                      contains_nan=self.contains_nan or new.contains_nan)
        if not new.valid():
            return out
        if not self.valid():
            return replace(out, min=new.min, max=new.max, any_valid=True, min_exact=new.min_exact,
                           max_exact=new.max_exact)
        lo = merge_bound(self.min, new.min, self.type, upper=False, key=_bound_key)
        hi = merge_bound(self.max, new.max, self.type, upper=True, key=_bound_key)
        return replace(out, min=lo, max=hi, min_exact=_winner_exact(lo, self.min, self.min_exact, new.min,
                                                                    new.min_exact),
                       max_exact=_winner_exact(hi, self.max, self.max_exact, new.max, new.max_exact))

    def row(self, *, v11: bool = False) -> dict[str, Any]:
        """The `ducklake_table_column_stats` values (contains_null, contains_nan, min_value, max_value; on a 1.1
        catalog also min_is_exact, max_is_exact)."""
        out = {"contains_null": self.null_count > 0 if self.has_null_count else None,
               "contains_nan": self.contains_nan if self.has_contains_nan else None,
               "min_value": self.min, "max_value": self.max}
        if v11:
            out["min_is_exact"] = exact_flag(self.min, self.min_exact, self.type)
            out["max_is_exact"] = exact_flag(self.max, self.max_exact, self.type)
        return out


def _winner_exact(won: str | None, old: str | None, old_exact: bool, new: str | None, new_exact: bool) -> bool:
    """The exactness of the bound that won a merge: the side it came from (equal bounds: exact if either is)."""
    if won is None:
        return True
    if won == old and won == new:
        return old_exact or new_exact
    return old_exact if won == old else new_exact


def joined_file_stats(parts: Sequence[LeafStats], ducklake_type: str) -> LeafStats:
    """One leaf's stats over a file joined from files with `parts` stats (`engine/parquet_stitch.py`): counts and
    sizes added, bounds the widest of the parts that have one (a part of NaN or NULL only has none), NaN OR-ed."""
    from ducklake_cli.catalog.models import LeafStats

    def pick(values: list[tuple[str, bool]], upper: bool) -> tuple[str | None, bool]:
        keyed = [(k, v, exact) for v, exact in values if (k := _bound_key(v, ducklake_type)) is not None]
        if len(keyed) != len(values) or not keyed:
            return None, True
        best = (max if upper else min)(keyed, key=lambda kv: kv[0])
        # The part that supplied the winning bound decides its exactness (any exact part with the same bound).
        return best[1], any(exact for k, v, exact in keyed if k == best[0] and v == best[1])

    nans = [p.contains_nan for p in parts if p.contains_nan is not None]
    sizes = [p.column_size_bytes for p in parts]
    lo, lo_exact = pick([(p.min_value, p.min_exact) for p in parts if p.min_value is not None], False)
    hi, hi_exact = pick([(p.max_value, p.max_exact) for p in parts if p.max_value is not None], True)
    return LeafStats(parts[0].column_id, sum(p.value_count for p in parts), sum(p.null_count for p in parts),
                     lo, hi, any(nans) if nans else None,
                     None if any(x is None for x in sizes) else sum(x or 0 for x in sizes), lo_exact, hi_exact)
