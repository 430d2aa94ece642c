"""Executor side of `write`: Arrow batches → DuckLake Parquet files with field ids, plus each file's stats.

Runs inside Spark's Python workers (`mapInArrow`), so it imports only pyarrow, fsspec and pure-Python modules of
this package; data never travels to the driver, only one small JSON description per written file does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import LeafStats, NewDataFile
from ducklake_cli.catalog.partitions import CALENDAR, EPOCH, bucket_of, hive_dir, key_text
from ducklake_cli.catalog.paths import new_data_file_name
from ducklake_cli.catalog.stats import NO_BOUNDS, duckdb_string_exact, encode_stat
from ducklake_cli.catalog.types import DUCKDB_TYPES, FLOAT_TYPES
from ducklake_cli.engine.write_checks import cast_batch, check_not_null, column_where, row_text, show_value
from ducklake_cli.errors import BadValueError
from ducklake_cli.storage.files import filesystem, split_protocol

if TYPE_CHECKING:
    import pyarrow as pa

# Types pyarrow cannot write as DuckDB does (UUID, INTERVAL and TIMETZ layouts, HUGEINT as DOUBLE, seconds and
# nanosecond timestamps, shredded VARIANT, GEOMETRY): files of tables holding any of them are written by DuckDB.
DUCKDB_WRITTEN = frozenset({"uuid", "interval", "time", "time_ns", "timetz", "timestamp_s", "timestamp_ms",
                            "timestamp_ns", "int128", "uint128", "variant", "geometry"})


@dataclass(frozen=True)
class Leaf:
    """A leaf column: its id, DuckLake type and the path of child positions from the top-level column; `not_null`:
    writes refuse NULL in it (`engine.writer.enforces_not_null`)."""

    column_id: int
    type: str
    path: tuple[int, ...]
    not_null: bool = False


@dataclass(frozen=True)
class PartitionKey:
    """One partition key: its index, source top-level column position, transform and hive directory name."""

    key_index: int
    column_index: int
    column_type: str
    transform: str
    buckets: int | None
    dir_name: str


@dataclass(frozen=True)
class FileSpec:
    """Everything an executor needs to write the files of one table (picklable; no catalog access)."""

    table_dir: str
    schema: pa.Schema
    leaves: tuple[Leaf, ...]
    keys: tuple[PartitionKey, ...] = ()
    compression: str = "snappy"
    compression_level: int | None = None
    row_group_size: int = 122_880
    target_file_size: int = 1 << 29
    hive: bool = True
    subdir: str = ""  # directory (relative to table_dir, ending in /) for files of unpartitioned specs
    table: str = ""  # the table's qualified name, for messages
    job: str = ""  # 8 hex digits every file name of one write job carries (`job_file`), "" for none
    ordinal: bool = False  # rows come with a trailing BIGINT giving their input order (not written; see `first`)
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def rotates(self) -> bool:
        """Whether files are cut at `target_file_size`: DuckDB cuts unpartitioned writes only."""
        return not self.keys

    @property
    def by_duckdb(self) -> bool:
        """Whether DuckDB writes this table's files (a leaf has a type in `DUCKDB_WRITTEN`)."""
        return any(leaf.type in DUCKDB_WRITTEN for leaf in self.leaves)


_JOB_FILE = re.compile(r"ducklake-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-([0-9a-f]{8})[0-9a-f]{4}\.parquet")


def data_file_name(job: str = "") -> str:
    """A fresh data file name (`catalog.paths.new_data_file_name`); with `job`, the UUID's last group starts with
    it (still a random UUIDv7: 42 random bits and the time), so that a failed job's files can be found."""
    name = new_data_file_name()
    at = len("ducklake-") + 24  # the last group of `8-4-4-4-12` hex digits
    return name[:at] + job + name[at + len(job):] if job else name


def job_file(name: str, job: str) -> bool:
    """Whether a file name (no directory) is one `data_file_name(job)` made."""
    m = _JOB_FILE.fullmatch(name)
    return bool(job) and m is not None and m.group(1) == job


def file_to_json(f: NewDataFile) -> str:
    """One-line JSON sent from an executor to the driver."""
    return json.dumps({"path": f.path, "records": f.record_count, "size": f.file_size_bytes, "footer": f.footer_size,
                       "keys": list(f.partition_values), "row_groups": f.row_group_count,
                       "stats": [[x.column_id, x.value_count, x.null_count, x.min_value, x.max_value, x.contains_nan,
                                  x.column_size_bytes, x.min_exact, x.max_exact] for x in f.stats]})


def file_from_json(text: str) -> NewDataFile:
    """The inverse of `file_to_json`."""
    d = json.loads(text)
    return NewDataFile(d["path"], d["records"], d["size"], d["footer"], tuple(d["keys"]),
                       tuple(LeafStats(*x) for x in d["stats"]), d.get("row_groups"))


# ----- leaf statistics from data ------------------------------------------------------------------------------

def leaf_array(column: pa.Array, path: Sequence[int]) -> pa.Array:
    """The values of a leaf inside a top-level column (parents' NULLs applied; list/map entries flattened)."""
    import pyarrow as pa

    arr = column
    for step in path:
        if pa.types.is_struct(arr.type):
            arr = arr.flatten()[step]
        elif pa.types.is_map(arr.type):
            arr = arr.keys if step == 0 else arr.items
        else:  # list
            arr = arr.flatten()
    return arr


class _Bounds:
    """Running min/max/NaN of one leaf over the batches of one file."""

    def __init__(self, leaf: Leaf) -> None:
        self.leaf = leaf
        self.lo: Any = None
        self.hi: Any = None
        self.nan = False
        self.nulls = 0
        self.values = 0

    def add(self, arr: pa.Array) -> bool:
        """Fold in one array of the leaf; whether it held a NaN."""
        import pyarrow.compute as pc

        self.nulls += arr.null_count
        self.values += len(arr) - arr.null_count
        had_nan = False
        if self.leaf.type in FLOAT_TYPES:
            nan = pc.is_nan(arr)
            if pc.any(nan).as_py():
                self.nan = had_nan = True
                arr = arr.filter(pc.invert(pc.fill_null(nan, False)))
        if self.leaf.type in NO_BOUNDS or len(arr) == arr.null_count:
            return had_nan
        mm = pc.min_max(arr)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is None:
            return had_nan
        if self.lo is None or lo < self.lo:
            self.lo = lo
        if self.hi is None or hi > self.hi:
            self.hi = hi
        return had_nan

    def stats(self, value_count: int | None = None, null_count: int | None = None,
              size: int | None = None) -> LeafStats:
        t = self.leaf.type
        return LeafStats(self.leaf.column_id, self.values if value_count is None else value_count,
                         self.nulls if null_count is None else null_count, encode_stat(self.lo, t),
                         encode_stat(self.hi, t), self.nan if t in FLOAT_TYPES else None, size)


def data_stats(table: pa.Table, leaves: Sequence[Leaf]) -> tuple[LeafStats, ...]:
    """Leaf stats of inlined rows (no Parquet footer), as DuckDB computes them: NaN is not recorded but orders above
    every other float (a float leaf holding one has max `nan`), and booleans are `false`/`true` (a file's are 0/1)."""
    out = []
    for leaf in leaves:
        b = _Bounds(leaf)
        for chunk in table.column(leaf.path[0]).chunks:
            b.add(leaf_array(chunk, leaf.path[1:]))
        st = b.stats()
        if leaf.type in FLOAT_TYPES:
            st = replace(st, contains_nan=None, max_value="nan" if b.nan else st.max_value,
                         min_value="nan" if b.nan and st.min_value is None else st.min_value)
        elif leaf.type == "boolean":
            words = {"0": "false", "1": "true"}
            st = replace(st, min_value=words.get(st.min_value or "", st.min_value),
                         max_value=words.get(st.max_value or "", st.max_value))
        out.append(st)
    return tuple(out)


# ----- one open Parquet file -----------------------------------------------------------------------------------

class CountingSink:
    """A write-only stream that counts bytes and keeps the last 8 (footer length + magic)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.size = 0
        self.tail = b""
        self.closed = False

    def write(self, data: Any) -> int:
        b = bytes(data)
        self.raw.write(b)
        self.size += len(b)
        self.tail = (self.tail + b)[-8:]
        return len(b)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self.raw.flush()

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
            self.closed = True


def parquet_paths(schema: pa.Schema, leaves: Sequence[Leaf]) -> list[str]:
    """Each leaf's Parquet column path (`s.a`, `l.list.element`, `m.key_value.key`), as pyarrow names them."""
    import pyarrow as pa

    out = []
    for leaf in leaves:
        f = schema.field(leaf.path[0])
        parts, dtype = [f.name], f.type
        for step in leaf.path[1:]:
            if pa.types.is_struct(dtype):
                child = dtype.field(step)
                parts.append(child.name)
                dtype = child.type
            elif pa.types.is_map(dtype):
                parts += ["key_value", "key" if step == 0 else "value"]
                dtype = dtype.key_type if step == 0 else dtype.item_type
            else:
                parts += ["list", "element"]
                dtype = dtype.value_type
        out.append(".".join(parts))
    return out


class _OpenFile:
    """One Parquet file being written by pyarrow. The writer opens with the first row group: a float leaf holding a
    NaN gets no footer min/max (as DuckDB writes it), since readers trusting min/max would prune the NaN rows."""

    def __init__(self, spec: FileSpec, rel_path: str, key_values: tuple[str | None, ...]) -> None:
        self.spec = spec
        self.rel_path = rel_path
        self.key_values = key_values
        self.sink: CountingSink | None = None
        self.writer: Any = None
        self.no_stats: set[int] = set()  # leaves written without footer statistics
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0
        self.rows = 0
        self.first: int | None = None  # the smallest input ordinal of its rows (`FileSpec.ordinal`)
        self.bounds = [_Bounds(leaf) for leaf in spec.leaves]

    def _open(self) -> None:
        import pyarrow.parquet as pq

        spec = self.spec
        full = spec.table_dir + self.rel_path
        fs = filesystem(full, spec.storage_options)
        if split_protocol(full)[0] in ("", "file"):
            fs.makedirs(full.rsplit("/", 1)[0], exist_ok=True)
        self.sink = CountingSink(fs.open(full, "wb"))
        stats: bool | list[str] = True
        if self.no_stats:
            paths = parquet_paths(spec.schema, spec.leaves)
            skip = {paths[i] for i in self.no_stats}
            tops = {leaf.path[0] for leaf in spec.leaves}
            extra = [f.name for i, f in enumerate(spec.schema) if i not in tops]  # the lineage columns
            stats = [p for p in paths if p not in skip] + extra
        self.writer = pq.ParquetWriter(
            self.sink, spec.schema, compression=spec.compression, compression_level=spec.compression_level,
            use_dictionary=True, write_statistics=stats, coerce_timestamps="us", version="2.6",
            store_decimal_as_integer=True, use_compliant_nested_type=True)

    def takes(self, batch: pa.RecordBatch) -> bool:
        """False when `batch` has a NaN in a float leaf this open file already writes footer min/max for: such a
        batch starts a new file."""
        import pyarrow.compute as pc

        if self.writer is None:
            return True
        for i, b in enumerate(self.bounds):
            if b.leaf.type in FLOAT_TYPES and i not in self.no_stats:
                arr = leaf_array(batch.column(b.leaf.path[0]), b.leaf.path[1:])
                if pc.any(pc.is_nan(arr)).as_py():
                    return False
        return True

    def add(self, batch: pa.RecordBatch) -> None:
        for i, b in enumerate(self.bounds):
            if b.add(leaf_array(batch.column(b.leaf.path[0]), b.leaf.path[1:])) and self.writer is None:
                self.no_stats.add(i)
        self.pending.append(batch)
        self.pending_rows += batch.num_rows
        self.rows += batch.num_rows
        if self.pending_rows >= self.spec.row_group_size:
            self._flush_row_groups()

    def _flush_row_groups(self) -> None:
        import pyarrow as pa

        if self.pending:
            if self.writer is None:
                self._open()
            self.writer.write_table(pa.Table.from_batches(self.pending, self.spec.schema),
                                    row_group_size=self.spec.row_group_size)
        self.pending, self.pending_rows = [], 0

    @property
    def full(self) -> bool:
        return self.spec.rotates and self.sink is not None and self.sink.size >= self.spec.target_file_size

    def abort(self) -> None:
        """Give up the file: close the stream unfinished and delete what was written of it."""
        if self.sink is not None:
            import contextlib

            with contextlib.suppress(Exception):  # closed now, the writer cannot write to a closed sink later
                self.writer.close()
            with contextlib.suppress(Exception):
                self.sink.close()
            _remove(self.spec, [self.rel_path])

    def close(self) -> list[NewDataFile]:
        self._flush_row_groups()
        if self.writer is None:
            return []
        assert self.sink is not None
        self.writer.close()
        meta = self.writer.writer.metadata
        self.sink.close()
        footer = int.from_bytes(self.sink.tail[:4], "little")
        leaves = []
        for i, b in enumerate(self.bounds):
            nulls = values = size = 0
            for rg in range(meta.num_row_groups):
                col = meta.row_group(rg).column(i)
                st = col.statistics
                n = st.null_count if st is not None and st.has_null_count else 0
                nulls += n
                values += col.num_values - n
                size += col.total_compressed_size
            if i in self.no_stats:  # no footer null count: Parquet's slots less the non-NULL values
                nulls, values = values + nulls - b.values, b.values
            leaves.append(b.stats(values, nulls, size))
        return [NewDataFile(self.rel_path, self.rows, self.sink.size, footer, self.key_values, tuple(leaves),
                            int(meta.num_row_groups))]


# ----- files DuckDB writes ------------------------------------------------------------------------------------

# DuckDB's own name for each leaf type; the inlined tables' names differ only where they store text or blobs.
_DUCK_LEAF = {**DUCKDB_TYPES, "json": "JSON", "geometry": "GEOMETRY", "variant": "VARIANT"}


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _children(dtype: pa.DataType) -> list[tuple[str, pa.Field]]:
    """Nested fields of an Arrow type under the names DuckDB's FIELD_IDS and statistics give them."""
    import pyarrow as pa

    if pa.types.is_struct(dtype):
        return [(dtype.field(i).name, dtype.field(i)) for i in range(dtype.num_fields)]
    if pa.types.is_map(dtype):
        return [("key", dtype.key_field), ("value", dtype.item_field)]
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [("element", dtype.value_field)]
    return []


def _duck_type(dtype: pa.DataType, path: tuple[int, ...], types: dict[tuple[int, ...], str]) -> str:
    import pyarrow as pa

    kids = _children(dtype)
    if pa.types.is_struct(dtype):
        return "STRUCT(" + ", ".join(f"{_ident(n)} {_duck_type(f.type, (*path, i), types)}"
                                     for i, (n, f) in enumerate(kids)) + ")"
    if pa.types.is_map(dtype):
        key, value = (_duck_type(kids[j][1].type, (*path, j), types) for j in (0, 1))
        return f"MAP({key}, {value})"
    if kids:
        return _duck_type(kids[0][1].type, (*path, 0), types) + "[]"
    t = types.get(path, "int64")  # the lineage columns are BIGINT
    if t.startswith("decimal"):
        return t.upper()
    return _DUCK_LEAF[t]


def _field_ids(fields: Sequence[tuple[str, pa.Field]]) -> str:
    parts = []
    for name, f in fields:
        fid = int((f.metadata or {})[b"PARQUET:field_id"])
        kids = _children(f.type)
        parts.append(f"{_lit(name)}: " + (f"{{'__duckdb_field_id': {fid}, {_field_ids(kids)[1:-1]}}}" if kids
                                          else str(fid)))
    return "{" + ", ".join(parts) + "}"


def _duck_exprs(spec: FileSpec) -> list[tuple[str, str, str]]:
    """Per column: its quoted name, the expression giving its DuckDB value from the form Spark holds it in, and the
    DuckDB type's name."""
    types = {leaf.path: leaf.type for leaf in spec.leaves}
    out = []
    for i, f in enumerate(spec.schema):
        col, kind = _ident(f.name), types.get((i,))
        if kind == "geometry":
            out.append((col, f"ST_GeomFromWKB({col})", "GEOMETRY"))
        elif kind == "variant":
            out.append((col, f"CAST(CAST({col} AS JSON) AS VARIANT)", "VARIANT"))
        else:
            duck = _duck_type(f.type, (i,), types)
            out.append((col, f"CAST({col} AS {duck})", duck))
    return out


def duck_copy_sql(spec: FileSpec, source: str, target: str) -> str:
    """The COPY statement DuckDB writes a spooled relation with: each column cast back to its DuckDB type from the
    form Spark holds it in, the table's field ids and Parquet options, files rotated at the target size."""
    exprs = [f"{expr} AS {col}" for col, expr, _ in _duck_exprs(spec)]
    options = [
        "FORMAT parquet", "RETURN_STATS", f"FIELD_IDS {_field_ids([(f.name, f) for f in spec.schema])}",
        *([f"FILE_SIZE_BYTES {spec.target_file_size}"] if spec.rotates else []),
        f"ROW_GROUP_SIZE {spec.row_group_size}",
        f"COMPRESSION {_lit(spec.compression)}", "FILENAME_PATTERN 'part_{i}'",
    ]
    if spec.compression_level is not None:
        options.append(f"COMPRESSION_LEVEL {spec.compression_level}")
    if any(leaf.type == "geometry" for leaf in spec.leaves):
        options.append("GEOPARQUET_VERSION 'V2'")  # the Parquet GEOMETRY logical type, as DuckLake writes it
    return f"COPY (SELECT {', '.join(exprs)} FROM {source}) TO {_lit(target)} ({', '.join(options)})"


def duck_bad_value(con: Any, spec: FileSpec, source: str) -> BadValueError | None:
    """After DuckDB failed to cast the spooled rows: the first value of the first column it cannot cast, as a
    `BadValueError` naming the column, the value and its row; None when no single value fails."""
    n = "__ducklake_n"
    for i, (col, expr, duck) in enumerate(_duck_exprs(spec)):
        found = con.execute(f"SELECT * FROM (SELECT row_number() OVER () AS {n}, * FROM {source}) "
                            f"WHERE {col} IS NOT NULL AND TRY({expr}) IS NULL LIMIT 1").to_arrow_table()
        if found.num_rows:
            row = found.drop_columns([n])
            return BadValueError(f"{column_where(spec.table, spec.schema.names[i])} is {duck}, which cannot hold "
                                 f"{show_value(row.column(i)[0].as_py())}, in {row_text(row, 0)}")
    return None


def _stats_key(schema: pa.Schema, path: Sequence[int]) -> str:
    f = schema.field(path[0])
    names, dtype = [f.name], f.type
    for step in path[1:]:
        name, child = _children(dtype)[step]
        names.append(name)
        dtype = child.type
    return ".".join(_ident(n) for n in names)


def duck_leaf_stats(spec: FileSpec, column_stats: dict[str, dict[str, str]]) -> tuple[LeafStats, ...]:
    """Catalog stats of every leaf from DuckDB's RETURN_STATS (the strings DuckLake itself stores)."""
    out = []
    for leaf in spec.leaves:
        key = _stats_key(spec.schema, leaf.path)
        st = column_stats.get(key)
        if st is None:  # a variant: its stats sit on the `metadata` part (always present)
            st = column_stats.get(key + '."metadata"', {})
        nulls = int(st.get("null_count", 0))
        values = int(st.get("num_values", 0)) - nulls  # DuckLake's value_count leaves NULLs out
        bounded = leaf.type not in NO_BOUNDS and leaf.type != "variant"
        lo, hi = (st.get("min") if bounded else None), (st.get("max") if bounded else None)
        out.append(LeafStats(leaf.column_id, values, nulls, lo, hi,
                             st.get("has_nan") == "true" if leaf.type in FLOAT_TYPES else None,
                             int(st.get("column_size_bytes", 0)), duckdb_string_exact(lo, leaf.type),
                             duckdb_string_exact(hi, leaf.type)))
    return tuple(out)


class _DuckFile:
    """The rows of one partition of a task, spooled to a local Arrow stream and written by DuckDB when closed (it
    writes each type as DuckLake does and rotates files at the target size itself)."""

    full = False
    pending_rows = 0

    def __init__(self, spec: FileSpec, rel_path: str, key_values: tuple[str | None, ...]) -> None:

        self.spec = spec
        self.dir = rel_path.rsplit("/", 1)[0] + "/" if "/" in rel_path else ""
        self.key_values = key_values
        self.tmp = tempfile.mkdtemp(prefix="ducklake-write-")
        self.spool = os.path.join(self.tmp, "spool.arrows")
        self.stream: Any = None
        self.first: int | None = None

    def takes(self, batch: pa.RecordBatch) -> bool:
        return True

    def add(self, batch: pa.RecordBatch) -> None:
        import pyarrow as pa

        if self.stream is None:
            self.stream = pa.ipc.new_stream(self.spool, batch.schema)
        self.stream.write_batch(batch)

    def close(self) -> list[NewDataFile]:
        import duckdb
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.stream.close()
        done: list[NewDataFile] = []
        try:
            con = duckdb.connect(config={"threads": 1, "preserve_insertion_order": True})
            try:
                with pa.memory_map(self.spool) as source:
                    con.register("spool", pa.ipc.open_stream(source))
                    try:
                        rows = con.execute(duck_copy_sql(self.spec, "spool",
                                                         os.path.join(self.tmp, "out"))).fetchall()
                    except duckdb.Error:
                        bad = self._bad_value(con)
                        if bad is None:
                            raise
                        raise bad from None
            finally:
                con.close()
            for path, count, size, footer, column_stats, _ in rows:
                groups = pq.read_metadata(path).num_row_groups  # DuckDB 1.5's COPY does not report them
                rel = self.dir + data_file_name(self.spec.job)
                full = self.spec.table_dir + rel
                fs = filesystem(full, self.spec.storage_options)
                if split_protocol(full)[0] in ("", "file"):
                    fs.makedirs(full.rsplit("/", 1)[0], exist_ok=True)
                fs.put_file(path, full)
                done.append(NewDataFile(rel, int(count), int(size), int(footer), self.key_values,
                                        duck_leaf_stats(self.spec, dict(column_stats)), int(groups)))
            return done
        except BaseException:
            _remove(self.spec, [d.path for d in done])
            raise
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _bad_value(self, con: Any) -> BadValueError | None:
        import pyarrow as pa

        with pa.memory_map(self.spool) as source:  # a table: a stream reader is read by one query only
            con.register("spool_again", pa.ipc.open_stream(source).read_all())
            return duck_bad_value(con, self.spec, "spool_again")

    def abort(self) -> None:
        """Give up the rows: nothing of them reached the table directory yet."""
        if self.stream is not None:
            import contextlib

            with contextlib.suppress(Exception):
                self.stream.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


# ----- partitioning ------------------------------------------------------------------------------------------

def _key_values(batch: pa.RecordBatch, key: PartitionKey) -> list[Any]:
    import pyarrow.compute as pc

    col = batch.column(key.column_index)
    if key.transform == "identity":
        return col.to_pylist()
    if key.transform in CALENDAR:  # vectorised `catalog.partitions.calendar_part`
        return getattr(pc, key.transform)(col).to_pylist()
    if key.transform in EPOCH:
        return epoch_values(col, key.transform).to_pylist()
    assert key.buckets is not None
    return [bucket_of(v, key.column_type, key.buckets) for v in col.to_pylist()]


_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}


def epoch_values(col: pa.Array | pa.ChunkedArray, transform: str) -> pa.Array:
    """Vectorised `catalog.partitions.epoch_part` of a date or timestamp column (a zone's values are UTC instants,
    as Arrow stores them): int64 floor counts since 1970, NULL for NULL."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if pa.types.is_date(col.type):
        ints = col.cast(pa.int32()).cast(pa.int64()) if pa.types.is_date32(col.type) else \
            pc.divide(col.cast(pa.int64()), 86_400_000)
        per_day, naive = 1, col.cast(pa.date32())
    elif pa.types.is_timestamp(col.type):
        ints = col.cast(pa.int64())
        per_day, naive = _PER_DAY[col.type.unit], ints.cast(pa.timestamp(col.type.unit))
    else:
        raise TypeError(f"{transform}() takes a date or timestamp column, not {col.type}")
    if transform in ("epoch_year", "epoch_month"):
        years = pc.subtract(pc.year(naive).cast(pa.int64()), 1970)
        if transform == "epoch_year":
            return years
        return pc.add(pc.multiply(years, 12), pc.subtract(pc.month(naive).cast(pa.int64()), 1))
    values = np.asarray(pc.fill_null(ints, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if transform == "epoch_day":
        out = np.floor_divide(values, per_day)
    else:  # epoch_hour: a DATE is 24 hours a day
        out = np.floor_divide(values, per_day // 24) if per_day > 1 else values * 24
    return pa.array(out, pa.int64(), mask=np.asarray(pc.is_null(ints).to_numpy(zero_copy_only=False), dtype=bool))


def split_partitions(batch: pa.RecordBatch,
                     keys: Sequence[PartitionKey]) -> Iterator[tuple[tuple[str | None, ...], pa.RecordBatch]]:
    """The rows of a batch grouped by their partition key texts (one group when there are no keys)."""
    import pyarrow as pa

    if not keys:
        yield (), batch
        return
    columns = [[key_text(v, k.transform, k.column_type) for v in _key_values(batch, k)] for k in keys]
    groups: dict[tuple[str | None, ...], list[int]] = {}
    for i, tup in enumerate(zip(*columns, strict=True)):
        groups.setdefault(tup, []).append(i)
    for tup, rows in groups.items():
        yield tup, batch.take(pa.array(rows, pa.int64())) if len(rows) != batch.num_rows else batch


def _hive_dir(spec: FileSpec, values: tuple[str | None, ...]) -> str:
    if not spec.hive or not spec.keys:
        return spec.subdir
    return hive_dir([k.dir_name for k in spec.keys], values)


# ----- the mapInArrow entry point ------------------------------------------------------------------------------

def write_batches(batches: Iterator[pa.RecordBatch], spec: FileSpec) -> Iterator[pa.RecordBatch]:
    """Write every row of a Spark task to Parquet files under `spec.table_dir`; yield one JSON row per file (with
    `first`, its rows' smallest input ordinal, and `full`, whether it was cut at the target size). A task that fails
    removes the files it wrote, and raises our errors as themselves (`errors.from_executor`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    open_files: dict[tuple[str | None, ...], _OpenFile | _DuckFile] = {}
    done: list[tuple[NewDataFile, int | None, bool]] = []

    def close(values: tuple[str | None, ...], *, full: bool) -> None:
        f = open_files.pop(values)
        files = f.close()
        done.extend((d, f.first, full or i < len(files) - 1) for i, d in enumerate(files))

    try:
        for raw in batches:
            if raw.num_rows == 0:
                continue
            ordinals = None
            if spec.ordinal:
                ordinals = raw.column(raw.num_columns - 1)
                raw = raw.select(list(range(raw.num_columns - 1)))
            table = pa.Table.from_batches([raw]).rename_columns(spec.schema.names)
            check_not_null(table, [leaf.path[0] for leaf in spec.leaves if leaf.not_null], spec.table)
            if not spec.by_duckdb:  # DuckDB casts each column itself, from the form Spark or the catalog gives it in
                table = cast_batch(table, spec.schema, {leaf.path[0]: leaf.type for leaf in spec.leaves
                                                         if len(leaf.path) == 1}, spec.table)
            if ordinals is not None:
                table = table.append_column("__ducklake_ordinal", ordinals)
            for batch in table.to_batches(max_chunksize=spec.row_group_size):  # rotation is checked per row group
                for values, rows in split_partitions(batch, spec.keys):
                    first = None
                    if ordinals is not None:
                        first = pc.min(rows.column(rows.num_columns - 1)).as_py()
                        rows = rows.select(list(range(rows.num_columns - 1)))
                    done_rows = 0
                    while done_rows < rows.num_rows:  # pieces that end where a row group ends, as files are cut there
                        f = open_files.get(values)
                        room = spec.row_group_size - (f.pending_rows if f is not None else 0)
                        part = rows.slice(done_rows, room)
                        if f is not None and not f.takes(part):
                            close(values, full=False)
                            f = None
                        if f is None:
                            cls = _DuckFile if spec.by_duckdb else _OpenFile
                            f = open_files[values] = cls(spec, _hive_dir(spec, values) + data_file_name(spec.job),
                                                         values)
                            part = rows.slice(done_rows, spec.row_group_size)
                        if first is not None and (f.first is None or first < f.first):
                            f.first = first
                        f.add(part)
                        done_rows += part.num_rows
                        if f.full:
                            close(values, full=True)
        for values in list(open_files):
            close(values, full=False)
    except BaseException:
        for f in open_files.values():
            f.abort()
        _remove(spec, [d.path for d, _, _ in done])
        raise
    if done:
        rows = [json.dumps({**json.loads(file_to_json(d)), "first": first, "full": full}) for d, first, full in done]
        yield pa.RecordBatch.from_arrays([pa.array(rows, pa.string())], ["file"])


def _remove(spec: FileSpec, rel_paths: Sequence[str]) -> None:
    """Delete files this task wrote (relative to the table directory); a file already gone is fine."""
    import contextlib

    for rel in rel_paths:
        full = spec.table_dir + rel
        with contextlib.suppress(FileNotFoundError):
            filesystem(full, spec.storage_options).rm_file(full)
