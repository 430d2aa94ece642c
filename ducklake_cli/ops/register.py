"""`register`: add existing Parquet files to a table in place, as DuckDB's `ducklake_add_data_files` does (nothing
is copied; metadata only): each file's columns are matched to the table's by name, checked for types the table
can read, and recorded with a name mapping, footer statistics and hive partition values."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import ColumnInfo, TableInfo
from ducklake_cli.catalog.partitions import HIVE_NULL
from ducklake_cli.catalog.register import FileStat, MappingRow, RegisteredFile
from ducklake_cli.catalog.stats import render_value
from ducklake_cli.catalog.types import SIGNED_INT_TYPES, UNSIGNED_INT_TYPES, decimal_parts
from ducklake_cli.errors import InputError, NotFoundError, UsageError
from ducklake_cli.ops.results import Section, jsonable

if TYPE_CHECKING:
    import pyarrow as pa

    from ducklake_cli.lake import Lake
    from ducklake_cli.storage.parquet import Footer

_WIDTH = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8}
# Which file timestamp types each table timestamp type reads (DuckDB 1.5.5, by experiment).
_TIMESTAMPS = {"timestamp": {"timestamp", "timestamp_ms", "timestamp_ns", "timestamp_s"},
               "timestamp_ns": {"timestamp", "timestamp_ms", "timestamp_ns", "timestamp_s"},
               "timestamp_ms": {"timestamp", "timestamp_ms"}}


@dataclass(frozen=True)
class RegisteredRow:
    """One file registered."""

    path: str
    data_file_id: int
    record_count: int
    file_size_bytes: int
    mapping_id: int


@dataclass(frozen=True)
class RegisterResult:
    """`register`: the snapshot committed and the files it added."""

    table: str
    snapshot_id: int | None
    files: tuple[RegisteredRow, ...]
    skipped: tuple[str, ...] = ()  # files without rows: DuckDB registers none of them either

    @property
    def rows(self) -> int:
        """Rows the files hold."""
        return sum(f.record_count for f in self.files)

    def to_json(self) -> Any:
        """`{"table", "snapshot_id", "rows", "files": [{path, data_file_id, record_count, file_size_bytes,
        mapping_id}], "skipped": [path of each empty file]}`."""
        return {"table": self.table, "snapshot_id": self.snapshot_id, "rows": self.rows,
                "files": jsonable(self.files), "skipped": list(self.skipped)}

    def sections(self) -> list[Section]:
        """One row per file."""
        return [Section(f"Registered into {self.table} (snapshot {self.snapshot_id})",
                        ("path", "data_file_id", "rows", "bytes", "mapping_id"),
                        tuple((f.path, f.data_file_id, f.record_count, f.file_size_bytes, f.mapping_id)
                              for f in self.files))]


def arrow_ducklake_type(t: pa.DataType) -> str:
    """The DuckLake type DuckDB reads a Parquet column as (nested types by kind: struct, list, map)."""
    import pyarrow as pa

    simple = {pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32", pa.int64(): "int64",
              pa.uint8(): "uint8", pa.uint16(): "uint16", pa.uint32(): "uint32", pa.uint64(): "uint64",
              pa.float32(): "float32", pa.float64(): "float64", pa.bool_(): "boolean", pa.date32(): "date",
              pa.string(): "varchar", pa.large_string(): "varchar", pa.binary(): "blob", pa.large_binary(): "blob"}
    if t in simple:
        return simple[t]
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            return "timestamptz"
        return {"ms": "timestamp_ms", "ns": "timestamp_ns", "s": "timestamp_s"}.get(t.unit, "timestamp")
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_time(t):
        return "time"
    if pa.types.is_fixed_size_binary(t):
        return "blob"
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_map(t):
        return "map"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "list"
    return str(t)


_CONVERTED = {"INT_8": "int8", "INT_16": "int16", "INT_32": "int32", "INT_64": "int64", "UINT_8": "uint8",
              "UINT_16": "uint16", "UINT_32": "uint32", "UINT_64": "uint64", "DATE": "date",
              "TIMESTAMP_MICROS": "timestamp", "TIMESTAMP_MILLIS": "timestamp", "UTF8": "varchar", "ENUM": "varchar",
              "TIME_MILLIS": "time", "TIME_MICROS": "time", "INTERVAL": "interval", "JSON": "json"}
_PHYSICAL = {"BOOLEAN": "boolean", "INT32": "int32", "INT64": "int64", "INT96": "timestamp", "FLOAT": "float32",
             "DOUBLE": "float64", "BYTE_ARRAY": "blob", "FIXED_LEN_BYTE_ARRAY": "blob"}
_UNITS = {"milliseconds": "timestamp_ms", "microseconds": "timestamp", "nanoseconds": "timestamp_ns"}


def parquet_leaf_type(column: Any) -> str:
    """The DuckLake type DuckDB reads a Parquet leaf column as (its logical type first, then the converted type,
    then the physical type), from a `pyarrow.parquet.ColumnSchema`."""
    import json

    logical = json.loads(column.logical_type.to_json())
    kind = logical.get("Type")
    if kind == "Timestamp":
        return "timestamptz" if logical.get("isAdjustedToUTC") else _UNITS.get(logical.get("timeUnit"), "timestamp")
    if kind == "Time" and not logical.get("isAdjustedToUTC") and logical.get("timeUnit") == "microseconds":
        return "time"
    if kind == "UUID":
        return "uuid"
    converted = column.converted_type
    if converted == "DECIMAL":
        return f"decimal({column.precision},{column.scale})"
    if converted in _CONVERTED:
        return _CONVERTED[converted]
    return _PHYSICAL.get(column.physical_type, str(column.physical_type).lower())


def fits(file_type: str, table_type: str) -> bool:
    """Whether a table column of `table_type` reads file values of `file_type` (DuckDB 1.5.5's rule, found by
    experiment: the same type or a lossless widening)."""
    if file_type == table_type:
        return True
    if file_type in _WIDTH and table_type in _WIDTH:
        if table_type in SIGNED_INT_TYPES:
            return _WIDTH[table_type] > _WIDTH[file_type]
        return file_type in UNSIGNED_INT_TYPES and _WIDTH[table_type] >= _WIDTH[file_type]
    if (file_type, table_type) == ("float32", "float64"):
        return True
    if table_type in _TIMESTAMPS:
        return file_type in _TIMESTAMPS[table_type]
    a, b = decimal_parts(file_type), decimal_parts(table_type)
    return a is not None and b is not None and b[0] >= a[0] and b[1] >= a[1]


def _children(t: pa.DataType) -> list[tuple[str, pa.Field]]:
    """Nested fields under the names the mapping records (lists: `list`, maps: `key` and `value`)."""
    import pyarrow as pa

    if pa.types.is_struct(t):
        return [(t.field(i).name, t.field(i)) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [("key", t.key_field), ("value", t.item_field)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [("list", t.value_field)]
    return []


def _match(name: str, cols: Sequence[ColumnInfo]) -> ColumnInfo | None:
    exact = [c for c in cols if c.name == name]
    folded = [c for c in cols if c.name.lower() == name.lower()]  # DuckDB matches names ignoring case
    found = exact or folded
    return found[0] if found else None


@dataclass
class _Walk:
    """One file matched against the table: mapping rows in file order, the Parquet leaf index of each mapped
    table leaf and its file type, and the table columns whose values come from hive directories."""

    path: str
    allow_missing: bool
    ignore_extra: bool
    hive: dict[str, str | None]  # key=value segments of the path (values URL-decoded, NULL for the default)
    leaf_schema: Any  # the Parquet leaf columns (`pyarrow.parquet.ParquetSchema`), in the Arrow leaves' order
    rows: list[MappingRow] = field(default_factory=list)
    leaves: dict[int, tuple[int, str]] = field(default_factory=dict)  # table leaf id → (Parquet column, type)
    hive_hits: dict[int, str | None] = field(default_factory=dict)  # table column id → value as DuckDB renders it
    leaf_index: int = 0

    def skip(self, t: pa.DataType) -> None:
        kids = _children(t)
        if not kids:
            self.leaf_index += 1
        for _, f in kids:
            self.skip(f.type)

    def hive_row(self, col: ColumnInfo) -> None:
        """A column whose value comes from the path (DuckDB names the row after the table's column)."""
        value = self.hive[col.name]
        self.hive_hits[col.column_id] = None if value is None else _hive_text(value, col, self.path)
        self.rows.append(MappingRow(len(self.rows), col.name, col.column_id, None, True))

    def top(self, fields: Sequence[tuple[str, pa.Field]], cols: Sequence[ColumnInfo]) -> None:
        """The file's top-level columns, then the table's columns found only in the path, then what is missing."""
        seen = self.fields(fields, cols, None, "", nested=False)
        for col in cols:
            if col.column_id not in seen and col.name in self.hive:
                seen.add(col.column_id)
                self.hive_row(col)
        self.missing(cols, seen, "")

    def fields(self, fields: Sequence[tuple[str, pa.Field]], cols: Sequence[ColumnInfo], parent: int | None,
               prefix: str, nested: bool) -> set[int]:
        seen: set[int] = set()
        for name, f in fields:
            free = [c for c in cols if c.column_id not in seen]  # DuckDB: a column matched once is taken
            col = free[0] if nested and name == "list" and free else (
                next((c for c in free if c.name == name), None) if nested and name in ("key", "value")
                else _match(name, free))
            if col is None:
                if not self.ignore_extra:
                    raise InputError(f'column "{prefix}{f.name}" of {self.path} is not in the table',
                                     hint="pass --ignore-extra-columns to register the file without it")
                self.skip(f.type)
                continue
            seen.add(col.column_id)
            if parent is None and f.name in self.hive:  # the path's value wins over the file's column
                self.skip(f.type)
                self.hive_row(col)
                continue
            local = len(self.rows)
            self.rows.append(MappingRow(local, name, col.column_id, parent))
            self.column(f, col, local, prefix)
        return seen

    def column(self, f: pa.Field, col: ColumnInfo, local: int, prefix: str) -> None:
        kids = _children(f.type)
        kind = arrow_ducklake_type(f.type) if kids else parquet_leaf_type(self.leaf_schema.column(self.leaf_index))
        if not kids:
            if col.children or not fits(kind, col.type):
                raise InputError(f'column "{prefix}{col.name}" of {self.path} holds {kind}, which the table\'s '
                                 f"{col.type_text()} column cannot read")
            self.leaves[col.column_id] = (self.leaf_index, kind)
            self.leaf_index += 1
            return
        if kind != col.type:
            raise InputError(f'column "{prefix}{col.name}" of {self.path} holds a {kind}, which the table\'s '
                             f"{col.type_text()} column cannot read")
        seen = self.fields(kids, col.children, local, f"{prefix}{col.name}.", nested=kind in ("list", "map"))
        self.missing(col.children, seen, f"{prefix}{col.name}.")

    def missing(self, cols: Sequence[ColumnInfo], seen: set[int], prefix: str) -> None:
        gone = [c for c in cols if c.column_id not in seen]
        if gone and not self.allow_missing:
            raise InputError(f'column "{prefix}{gone[0].name}" of the table is not in {self.path}',
                             hint="pass --allow-missing to register it (missing columns read as their default)")


def hive_values(path: str) -> list[tuple[str, str | None]]:
    """`key=value` directory segments of a path, in order (`__HIVE_DEFAULT_PARTITION__` is NULL)."""
    from urllib.parse import unquote

    out = []
    for seg in path.split("://", 1)[-1].split("/")[:-1]:
        key, sep, value = seg.partition("=")
        if sep and key:
            out.append((unquote(key), None if value == HIVE_NULL else unquote(value)))
    return out


def _hive_text(text: str, col: ColumnInfo, path: str) -> str:
    """A hive value as DuckDB records it for the column's type (refused when it is not one)."""
    try:
        if col.type in _WIDTH:
            return str(int(text))
        if col.type in ("float32", "float64"):
            return render_value(float(text), col.type)
        if col.type == "boolean":
            return {"true": "true", "false": "false"}[text.lower()]
        if col.type == "date":
            return dt.date.fromisoformat(text).isoformat()
        if col.type == "varchar":
            return text
    except (ValueError, KeyError):
        pass
    raise InputError(f"the hive value {col.name}={text} of {path} is not a {col.type}")


def _stat_text(value: Any, file_type: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and file_type in ("timestamp_ns", "timestamp", "timestamp_ms", "timestamptz"):
        return None  # a raw integer (e.g. INT96-less nanoseconds): no trustworthy bound
    return render_value(value, file_type)


def _leaf_stats(footer: Footer, index: int, file_type: str, column_id: int) -> FileStat:
    """A leaf's stats over the row groups: sizes summed, counts and bounds known only when every row group has
    them."""
    meta = footer.metadata
    size, values, nulls, lo, hi = 0, 0, 0, None, None
    known = bounds = True
    for rg in range(meta.num_row_groups):
        chunk = meta.row_group(rg).column(index)
        size += chunk.total_compressed_size
        values += chunk.num_values
        st = chunk.statistics
        if st is None or not st.has_null_count:
            known = False
            continue
        nulls += st.null_count
        if st.has_min_max:
            lo = st.min if lo is None or st.min < lo else lo
            hi = st.max if hi is None or st.max > hi else hi
        else:  # DuckDB: a row group without bounds (all NULL too) leaves the file without bounds
            bounds = False
    if not known:
        return FileStat(column_id, size, None, None, None, None)
    return FileStat(column_id, size, values - nulls, nulls, _stat_text(lo, file_type) if bounds else None,
                    _stat_text(hi, file_type) if bounds else None)


def describe_file(footer: Footer, table: TableInfo, *, hive: bool, allow_missing: bool,
                  ignore_extra: bool) -> RegisteredFile:
    """A file's mapping, stats and partition values, or an error naming what does not fit."""
    walk = _Walk(footer.path, allow_missing, ignore_extra, dict(hive_values(footer.path)) if hive else {},
                 footer.metadata.schema)
    walk.top([(f.name, f) for f in footer.schema], table.columns)
    records = int(footer.metadata.num_rows)
    stats = [_leaf_stats(footer, idx, kind, cid) for cid, (idx, kind) in walk.leaves.items()]
    stats += [FileStat(cid, 0, records if text is not None else 0, 0 if text is not None else records, text, text,
                       exact=True) for cid, text in walk.hive_hits.items()]
    partition = _partition_values(footer.path, table, walk, stats, records) if table.partition else []
    return RegisteredFile(footer.path, records, footer.file_size, footer.footer_size, tuple(walk.rows),
                          tuple(stats), tuple(partition), row_group_count=int(footer.metadata.num_row_groups))


def _partition_values(path: str, table: TableInfo, walk: _Walk, stats: list[FileStat],
                      records: int) -> list[str | None]:
    """The file's value of each partition key, from its hive path as DuckDB takes them: identity keys by column
    name, transformed keys by their directory name (`year=2024`); the path must hold exactly the partition keys."""
    from ducklake_cli.catalog.partitions import hive_key_names, transform_name

    assert table.partition is not None
    fields = table.partition.fields
    names = {c.column_id: c.name for c in table.columns}
    values: dict[int, str | None] = {}
    hits: list[int] = []  # the column of each hive value, as DuckDB counts them
    key_names = hive_key_names(names, [(f.column_id, f.transform) for f in fields], identity_claims=False)
    for f, key in zip(fields, key_names, strict=True):
        if f.transform == "identity" or key not in walk.hive:
            continue
        raw = walk.hive[key]
        try:
            text = None if raw is None else str(int(raw))
        except ValueError:
            raise InputError(f"the hive value {key}={raw} of {path} is not a whole number") from None
        hits.append(f.column_id)
        values[f.key_index] = text
        if transform_name(f.transform) != "bucket" and all(s.column_id != f.column_id for s in stats):
            stats.append(FileStat(f.column_id, 0, records if text is not None else 0,
                                  0 if text is not None else records, text, text, exact=True))
    hits += list(walk.hive_hits)
    keys = {f.column_id for f in fields}
    if len(hits) != len(fields) or any(h not in keys for h in hits):
        raise InputError(f"{path} has no hive values for exactly the table's partition keys",
                         hint="partitioned tables take files in key=value directories of their partition keys "
                              "(not with --no-hive-partitioning)")
    for f in fields:
        if f.transform == "identity":
            values[f.key_index] = walk.hive_hits.get(f.column_id)
    return [values.get(f.key_index) for f in fields]


def register(lake: Lake, table: str, pattern: str, *, hive_partitioning: bool = True, allow_missing: bool = False,
             ignore_extra_columns: bool = False, author: str | None = None,
             message: str | None = None) -> RegisterResult:
    """Register the Parquet files `pattern` names into `table` as one snapshot (metadata only); `key=value`
    directories are read unless `hive_partitioning` is False (DuckDB's default reads them too)."""
    from ducklake_cli.storage.parquet import glob_files, read_footer

    if not pattern.strip():
        raise UsageError("no PATH or GLOB given")
    with lake.reader() as r:
        meta = r.metadata()
        target = r.find_table(r.latest_snapshot().snapshot_id, table)
    if meta.encrypted:
        raise UsageError("this lake is encrypted; `ducklake register` cannot add unencrypted files to it")
    from ducklake_cli.catalog import options

    options.require_message(meta, message)
    paths = glob_files(pattern, lake.storage_options)
    if not paths:
        raise NotFoundError(f"no files match {pattern}")
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(16, len(paths))) as pool:  # object stores answer slowly, in parallel
        footers = list(pool.map(lambda p: read_footer(p, lake.storage_options), paths))
    described = [describe_file(f, target, hive=hive_partitioning, allow_missing=allow_missing,
                               ignore_extra=ignore_extra_columns) for f in footers]
    skipped = tuple(f.path for f in described if not f.record_count)
    described = [f for f in described if f.record_count]
    if not described:
        return RegisterResult(target.qualified_name, None, (), skipped)
    added: list[tuple[int, int]] = []

    def build(tx: Any) -> None:
        from ducklake_cli.catalog.register import register_files

        def quoted(name: str) -> str:
            return '"' + name.replace('"', '""') + '"'

        now = tx.reader.find_table(tx.latest.snapshot_id, f"{quoted(target.schema_name)}.{quoted(target.name)}")
        if _shape(now) != _shape(target):  # columns or partitioning changed since the footers were matched
            raise InputError(f"table {target.qualified_name} changed while the files were read; run again")
        added[:] = register_files(tx, now, described)

    snapshot = lake.commit(build, author=author, message=message)
    return RegisterResult(target.qualified_name, snapshot, tuple(
        RegisteredRow(f.path, fid, f.record_count, f.file_size_bytes, mid)
        for f, (fid, mid) in zip(described, added, strict=True)), skipped)


def _flat(cols: Sequence[ColumnInfo]) -> list[ColumnInfo]:
    return [x for c in cols for x in (c, *_flat(c.children))]


def _shape(t: TableInfo) -> tuple[Any, ...]:
    return (t.table_id, [(c.column_id, c.name, c.type) for c in _flat(t.columns)], t.partition)
