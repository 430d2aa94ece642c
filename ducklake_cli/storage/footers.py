"""Parquet footers summarised for health checks: row count, field ids and each leaf column's min/max over its
row groups, read in parallel (only the tail of each file) and kept small so thousands of files fit in memory."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ducklake_cli.errors import StorageError
from ducklake_cli.storage.parquet import read_footer

WORKERS = 16  # footer reads are round trips on S3; local reads are cheap either way


@dataclass(frozen=True)
class LeafBounds:
    """A leaf column's min and max over the row groups whose statistics carry them (None: none did)."""

    path: str  # dotted Parquet path, e.g. `s.a` or `l.list.element`
    physical_type: str
    min: Any = None
    max: Any = None


@dataclass(frozen=True)
class FooterSummary:
    """What a health check needs from a footer."""

    num_rows: int
    top_names: tuple[str, ...]
    top_field_ids: tuple[int | None, ...]  # per top-level field, its field id (None: the writer wrote none)
    nested_field_ids: frozenset[int]  # field ids below the top level (struct fields, list/map elements)
    by_field_id: Mapping[int, LeafBounds] = field(default_factory=dict)  # leaf columns with a field id
    by_path: Mapping[str, LeafBounds] = field(default_factory=dict)  # every leaf column by dotted path


def _field_id(f: Any) -> int | None:
    raw = (f.metadata or {}).get(b"PARQUET:field_id")
    return int(raw) if raw is not None else None


def _leaves(f: Any, prefix: str, out: list[tuple[str, int | None]], nested: set[int], top: bool) -> None:
    """Arrow fields in Parquet leaf order: (dotted path, leaf field id); ids below the top go to `nested`."""
    import pyarrow as pa

    fid = _field_id(f)
    if fid is not None and not top:
        nested.add(fid)
    t = f.type
    path = f"{prefix}{f.name}"
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            _leaves(t.field(i), path + ".", out, nested, False)
    elif pa.types.is_map(t):
        _leaves(t.key_field, path + ".key_value.", out, nested, False)
        _leaves(t.item_field, path + ".key_value.", out, nested, False)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        _leaves(t.value_field, path + ".list.", out, nested, False)
    else:
        out.append((path, fid))


def _widen(old: Any, new: Any, *, upper: bool) -> Any:
    if new is None or (isinstance(new, float) and math.isnan(new)):
        return old
    if old is None:
        return new
    try:
        return (new if new > old else old) if upper else (new if new < old else old)
    except TypeError:
        return old


def summarize(metadata: Any, schema: Any) -> FooterSummary:
    """A footer's summary from pyarrow's `FileMetaData` and Arrow schema."""
    leaves: list[tuple[str, int | None]] = []
    nested: set[int] = set()
    for f in schema:
        _leaves(f, "", leaves, nested, True)
    bounds: dict[str, LeafBounds] = {}
    by_id: dict[int, LeafBounds] = {}
    ncols = metadata.num_columns
    for i, (path, fid) in enumerate(leaves):
        if i >= ncols:
            break
        lo = hi = None
        physical = ""
        for rg in range(metadata.num_row_groups):
            col = metadata.row_group(rg).column(i)
            physical = col.physical_type
            try:
                st = col.statistics
                if st is None or not st.has_min_max:
                    continue
                lo, hi = _widen(lo, st.min, upper=False), _widen(hi, st.max, upper=True)
            except (ValueError, TypeError, OverflowError, NotImplementedError):
                continue  # a statistic pyarrow cannot convert: that bound cannot be checked
        b = LeafBounds(path, physical, lo, hi)
        bounds[path] = b
        if fid is not None:
            by_id[fid] = b
    return FooterSummary(int(metadata.num_rows), tuple(f.name for f in schema), tuple(_field_id(f) for f in schema),
                         frozenset(nested), by_id, bounds)


def read_summary(path: str, storage_options: Mapping[str, Any] | None = None, *,
                 size: int | None = None) -> FooterSummary:
    """The summary of one file's footer (raises StorageError when the footer cannot be read); with `size`, of
    the Parquet file its first `size` bytes make."""
    footer = read_footer(path, storage_options, size=size)
    try:
        return summarize(footer.metadata, footer.schema)
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read the Parquet footer of {path}: {exc}") from exc


def read_summaries(paths: Sequence[str], storage_options: Mapping[str, Any] | None = None, *,
                   workers: int = WORKERS, sizes: Mapping[str, int] | None = None) -> dict[str, FooterSummary | str]:
    """Each file's footer summary, or the reason it could not be read (in parallel); a path in `sizes` is read
    as the Parquet file its first `sizes[path]` bytes make."""
    limits = sizes or {}

    def one(p: str) -> FooterSummary | str:
        try:
            return read_summary(p, storage_options, size=limits.get(p))
        except StorageError as exc:
            return exc.message
        except Exception as exc:  # a damaged file may fail pyarrow in ways of its own
            return f"cannot read the Parquet footer of {p}: {type(exc).__name__}: {exc}"

    if len(paths) <= 1:
        return {p: one(p) for p in paths}
    with ThreadPoolExecutor(max_workers=min(workers, len(paths))) as pool:
        return dict(zip(paths, pool.map(one, paths), strict=True))
