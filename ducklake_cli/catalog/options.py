"""DuckLake's catalog options (spec §2): the keys, where each may be set, how a value is stored (as DuckDB's
`ducklake_set_option` stores it), the defaults readers fall back on, the lookup order, and the rows that hold them."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import and_, delete, insert, select, update

from ducklake_cli.catalog import schema as s
from ducklake_cli.errors import DuckLakeError, NotFoundError, UsageError

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection

GLOBAL, SCHEMA, TABLE = None, "schema", "table"  # the `scope` column's values
FIXED_KEYS = ("version", "created_by", "data_path", "encrypted")  # written at creation, never by set_option


@dataclass(frozen=True)
class OptionSpec:
    """One option key: what it means, how values are stored, whether it may be scoped, and its default."""

    key: str
    description: str
    kind: str  # bool, uint, positive_uint, size, positive_size, codec, parquet_version, fraction, interval
    global_only: bool = False
    default: str | None = None


OPTIONS: dict[str, OptionSpec] = {o.key: o for o in (
    OptionSpec("data_inlining_row_limit", "Inserts of at most this many rows are kept in the catalog instead of a "
               "Parquet file (0: never).", "uint", default="10"),
    OptionSpec("target_file_size", "Size in bytes data files are cut at by inserts and compaction.", "size",
               default=str(1 << 29)),
    OptionSpec("parquet_compression", "Parquet compression codec: uncompressed, snappy, gzip, zstd, brotli, lz4 or "
               "lz4_raw.", "codec", default="snappy"),
    OptionSpec("parquet_compression_level", "Compression level of the Parquet codec.", "uint"),
    OptionSpec("parquet_version", "Parquet format version written (V1 or V2; set as 1 or 2).", "parquet_version",
               default="V1"),
    OptionSpec("parquet_row_group_size", "Rows per Parquet row group.", "positive_uint", default="122880"),
    OptionSpec("parquet_row_group_size_bytes", "Bytes per Parquet row group.", "positive_size"),
    OptionSpec("hive_file_pattern", "Partitioned files go into key=value directories.", "bool", default="true"),
    OptionSpec("require_commit_message", "Every commit must carry a message.", "bool", global_only=True,
               default="false"),
    OptionSpec("rewrite_delete_threshold", "Share of deleted rows (0 to 1) from which compaction rewrites a file.",
               "fraction", default="0.950000"),
    OptionSpec("delete_older_than", "Age from which cleanup removes unreferenced files.", "interval",
               global_only=True, default="2 days"),
    OptionSpec("expire_older_than", "Age from which snapshots are expired when no age is given.", "interval",
               global_only=True),
    OptionSpec("auto_compact", "Maintenance without a table name includes this table.", "bool", default="true"),
    OptionSpec("per_thread_output", "Parallel inserts write one file per thread.", "bool", default="false"),
    OptionSpec("write_deletion_vectors", "Deletes are written as deletion vectors (puffin; experimental).", "bool",
               default="false"),
    OptionSpec("sort_on_insert", "Inserts sort rows by the table's sort keys.", "bool", default="true"),
)}

_TRUE = frozenset({"true", "t", "1", "yes", "y"})  # DuckDB's text→BOOLEAN cast (case-insensitive)
_FALSE = frozenset({"false", "f", "0", "no", "n"})
CODECS = ("uncompressed", "snappy", "gzip", "zstd", "brotli", "lz4", "lz4_raw")
_UINT = re.compile(r"^\s*\+?(\d+)\s*$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
_SIZE_UNITS: dict[str, int] = {"": 1}
for _names, _factor in (
    (("b", "byte", "bytes"), 1),
    (("k", "kb", "kilobyte", "kilobytes"), 1000), (("m", "mb", "megabyte", "megabytes"), 1000 ** 2),
    (("g", "gb", "gigabyte", "gigabytes"), 1000 ** 3), (("t", "tb", "terabyte", "terabytes"), 1000 ** 4),
    (("kib",), 1024), (("mib",), 1024 ** 2), (("gib",), 1024 ** 3), (("tib",), 1024 ** 4),
):
    for _n in _names:
        _SIZE_UNITS[_n] = _factor
_UINT64_MAX = (1 << 64) - 1


def spec(key: str) -> OptionSpec:
    """The option `key` (case-insensitive, as DuckDB lower-cases it); unknown keys are refused."""
    found = OPTIONS.get(key.strip().lower())
    if found is None:
        if key.strip().lower() in FIXED_KEYS:
            raise NotFoundError(f"option {key.strip()!r} is fixed when the lake is created and cannot be set")
        from difflib import get_close_matches

        close = get_close_matches(key.strip().lower(), list(OPTIONS), n=2)
        hint = f"did you mean {' or '.join(close)}?" if close else f"options: {', '.join(sorted(OPTIONS))}"
        raise NotFoundError(f"unknown option {key.strip()!r}", hint=hint)
    return found


def _bad(key: str, value: str, why: str) -> DuckLakeError:
    return DuckLakeError(f"option {key}: {value!r} {why}")


def parse_size(text: str) -> int:
    """DuckDB's memory syntax (`10MB` = 10**7, `512MiB` = 2**29, `1 gigabyte`); a bare number is bytes."""
    m = _SIZE.match(text)
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(text)
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])


def parse_bool(text: str) -> bool | None:
    """DuckDB's text→BOOLEAN cast: true/t/1/yes/y or false/f/0/no/n (any case); None for anything else."""
    low = text.strip().lower()
    return True if low in _TRUE else False if low in _FALSE else None


def _uint(key: str, text: str, *, positive: bool = False) -> str:
    m = _UINT.match(text)
    if not m or int(m.group(1)) > _UINT64_MAX:
        raise _bad(key, text, "is not a whole number of 0 or more")
    if positive and int(m.group(1)) == 0:
        raise _bad(key, text, "must be greater than 0")
    return str(int(m.group(1)))


def _size(key: str, text: str, *, positive: bool = False) -> str:
    try:
        size = parse_size(text)
    except ValueError:
        raise _bad(key, text, "is not a size (e.g. 512MB, 1GiB, 1000000)") from None
    if size > _UINT64_MAX:
        raise _bad(key, text, "is too large")
    if positive and size == 0:
        raise _bad(key, text, "must be greater than 0")
    return str(size)


def _fraction(key: str, text: str) -> str:
    try:
        number = float(text)
    except ValueError:
        raise _bad(key, text, "is not a number") from None
    if math.isnan(number) or not 0 <= number <= 1:
        raise _bad(key, text, "must be between 0 and 1")
    return f"{number:.6f}"  # C's to_string(double), as DuckDB stores it


def _interval(key: str, text: str) -> str:
    if not text.strip():
        raise DuckLakeError(f"option {key}: the value is empty", hint=f"use --unset {key} to remove it")
    return text  # stored as given; the op checks that our maintenance verbs can read it


_NORMALISE: dict[str, Callable[[str, str], str]] = {
    "uint": _uint,
    "positive_uint": lambda k, v: _uint(k, v, positive=True),
    "size": _size,
    "positive_size": lambda k, v: _size(k, v, positive=True),
    "fraction": _fraction,
    "interval": _interval,
}


def normalise(key: str, text: str) -> tuple[OptionSpec, str]:
    """The option and `text` as DuckDB stores it (`10MB` → `10000000`, `2` → `V2`, `0.5` → `0.500000`, `yes` →
    `true`); an unknown key or a value DuckDB would refuse raises."""
    opt = spec(key)
    if opt.kind == "bool":
        flag = parse_bool(text)
        if flag is None:
            raise _bad(opt.key, text, "is not a boolean (true or false)")
        return opt, "true" if flag else "false"
    if opt.kind == "codec":
        if text.lower() not in CODECS:
            raise _bad(opt.key, text, f"is not a Parquet codec ({', '.join(CODECS)})")
        return opt, text.lower()
    if opt.kind == "parquet_version":
        m = _UINT.match(text)
        if not m or int(m.group(1)) not in (1, 2):
            raise _bad(opt.key, text, "is not a Parquet version (1 or 2)")
        return opt, f"V{int(m.group(1))}"
    return opt, _NORMALISE[opt.kind](opt.key, text)


def check_scope(opt: OptionSpec, scope: str | None) -> None:
    """Refuse a lake-wide option at schema or table scope (DuckDB never reads it there)."""
    if scope is not None and opt.global_only:
        raise DuckLakeError(f"option {opt.key} can only be set for the whole lake, not for a {scope}",
                            hint="leave out --schema/--table")


# ----- reading --------------------------------------------------------------------------------------------


class StoredRow(Protocol):
    """A `ducklake_metadata` row (models.OptionValue; a protocol, since models delegates its lookup here)."""

    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def scope(self) -> str | None: ...
    @property
    def scope_id(self) -> int | None: ...


class HasOptions(Protocol):
    """What option lookups need of models.LakeMetadata."""

    @property
    def options(self) -> Sequence[StoredRow]: ...
    @property
    def encrypted(self) -> bool: ...


@dataclass(frozen=True)
class Effective:
    """An option's value for one place, and where it came from (table, schema, global or default)."""

    key: str
    value: str | None
    source: str  # "table", "schema", "global" or "default"


def _lookup(meta: HasOptions, key: str, table_id: int | None, schema_id: int | None) -> Effective | None:
    by_scope = {(o.scope, o.scope_id): o.value for o in meta.options if o.key == key}
    if key in OPTIONS and OPTIONS[key].global_only:
        table_id = schema_id = None  # DuckDB reads these lake-wide, ignoring rows 1.5.5 let set_option scope
    for scope, sid in ((TABLE, table_id), (SCHEMA, schema_id)):
        if sid is not None and (scope, sid) in by_scope:
            return Effective(key, by_scope[(scope, sid)], scope or "global")
    if (GLOBAL, None) in by_scope:
        return Effective(key, by_scope[(GLOBAL, None)], "global")
    return None


def stored(meta: HasOptions, key: str, *, table_id: int | None = None, schema_id: int | None = None) -> str | None:
    """The stored value of `key` in DuckDB's lookup order (table, schema, global; lake-wide options only global),
    None when no row holds it."""
    found = _lookup(meta, key, table_id, schema_id)
    return found.value if found else None


def effective(meta: HasOptions, key: str, *, table_id: int | None = None,
              schema_id: int | None = None) -> Effective:
    """The option in DuckDB's lookup order: table scope, schema scope, global, then the built-in default."""
    found = _lookup(meta, key, table_id, schema_id)
    if found is not None:
        return found
    opt = OPTIONS.get(key)
    default = opt.default if opt else None
    if key == "hive_file_pattern" and meta.encrypted:
        default = "false"  # DuckDB writes flat file names into encrypted lakes
    return Effective(key, default, "default")


def value(meta: HasOptions, key: str, *, table_id: int | None = None, schema_id: int | None = None) -> str | None:
    """The effective value of `key` (default included), or None when it has none."""
    return effective(meta, key, table_id=table_id, schema_id=schema_id).value


def is_true(key: str, text: str | None) -> bool:
    """A boolean option's stored text (None: not set, so its default) as DuckDB reads it: only `true` is true
    (DuckDB compares the text; `set_option` stores `true`/`false`, so `TRUE` or `1` written by hand read false)."""
    return (text if text is not None else OPTIONS[key].default) == "true"


def flag(meta: HasOptions, key: str, *, table_id: int | None = None, schema_id: int | None = None) -> bool:
    """A boolean option's effective value, as DuckDB reads it (see `is_true`)."""
    return is_true(key, value(meta, key, table_id=table_id, schema_id=schema_id))


def require_message(meta: HasOptions, message: str | None) -> None:
    """Refuse a commit without a message when the lake sets `require_commit_message` (read lake-wide, as DuckDB)."""
    if flag(meta, "require_commit_message") and not message:
        raise UsageError("this lake requires a commit message", hint="pass -m/--message")


_CAST_DECIMAL = re.compile(r"^(?:\d+(?:_\d+)*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")


def parse_uint(text: str) -> int:
    """DuckDB's VARCHAR → UBIGINT cast, which is how it reads integer options: spaces and `+` allowed, `1_000`,
    `1e2`, `20.5` (→ 21, half away from zero), `0x10`, `0b11`; ValueError for anything else or out of range."""
    from decimal import ROUND_HALF_UP, Decimal

    body = text.strip()
    negative = body.startswith("-")
    body = body[1:] if body[:1] in "+-" else body
    if body[:2].lower() in ("0x", "0b") and len(body) > 2:
        number = int(body[2:], 16 if body[1] in "xX" else 2)
    elif _CAST_DECIMAL.match(body):
        number = int(Decimal(body.replace("_", "")).to_integral_value(ROUND_HALF_UP))
    else:
        raise ValueError(text)
    if (negative and number) or number > _UINT64_MAX:
        raise ValueError(text)
    return number


def uint(meta: HasOptions, key: str, *, table_id: int | None = None, schema_id: int | None = None) -> int | None:
    """An integer option's effective value (sizes are stored in bytes), read as DuckDB reads it; a stored text
    DuckDB cannot cast (`1GiB`, ``) is refused as DuckDB refuses it. None when it has no value."""
    found = effective(meta, key, table_id=table_id, schema_id=schema_id)
    if found.value is None:
        return None
    try:
        return parse_uint(found.value)
    except ValueError:
        raise DuckLakeError(
            f"catalog option {key} = {found.value!r} ({found.source} scope) is not a whole number, so DuckDB cannot "
            "read it either", hint=f"set it again with `ducklake options --set {key}=...` (sizes may be 512MB)",
        ) from None


def text(meta: HasOptions, key: str, *, table_id: int | None = None, schema_id: int | None = None) -> str:
    """The effective value of an option that has a default."""
    found = value(meta, key, table_id=table_id, schema_id=schema_id)
    if found is None:
        raise KeyError(f"option {key} has no default")
    return found


def count(meta: HasOptions, key: str, *, table_id: int | None = None, schema_id: int | None = None) -> int:
    """`uint` of an option that has a default."""
    found = uint(meta, key, table_id=table_id, schema_id=schema_id)
    if found is None:
        raise KeyError(f"option {key} has no default")
    return found


# ----- writing (no snapshot: DuckDB's set_option writes these rows outside snapshots) -----------------------


def _where(key: str, scope: str | None, scope_id: int | None) -> ColumnElement[bool]:
    t = s.metadata_t
    return and_(t.c.key == key, t.c.scope.is_(None) if scope is None else t.c.scope == scope,
                t.c.scope_id.is_(None) if scope_id is None else t.c.scope_id == scope_id)


def write_option(conn: Connection, key: str, stored: str, scope: str | None, scope_id: int | None) -> None:
    """UPDATE the row of (key, scope, scope_id) when there is one, else INSERT it."""
    t = s.metadata_t
    found = conn.execute(select(t.c.key).where(_where(key, scope, scope_id))).first()
    if found is None:
        conn.execute(insert(t), [{"key": key, "value": stored, "scope": scope, "scope_id": scope_id}])
    else:
        conn.execute(update(t).where(_where(key, scope, scope_id)).values(value=stored))


def delete_option(conn: Connection, key: str, scope: str | None, scope_id: int | None) -> None:
    """Remove the row of (key, scope, scope_id)."""
    conn.execute(delete(s.metadata_t).where(_where(key, scope, scope_id)))
