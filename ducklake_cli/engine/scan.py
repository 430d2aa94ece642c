"""Turn a scan plan into a Spark DataFrame with exactly the rows DuckDB returns (spec §3.5-3.7, §4).

Data is never collected to the driver: files are read by executors (by Parquet field id), deletes are applied
as 64-bit masks of 64-row blocks (built on the driver into a literal when the files with deletes are small enough,
`engine.delete_masks`; else folded by the executors and joined by block), and only inlined rows, which live in the
catalog, start on the driver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import ColumnInfo, NameMapping
from ducklake_cli.catalog.partitions import HIVE_NULL
from ducklake_cli.catalog.types import (
    DELETE_POS_ID,
    ROW_ID_COLUMN,
    ROW_ID_FIELD_ID,
    SNAPSHOT_ID_COLUMN,
    SNAPSHOT_ID_FIELD_ID,
    decimal_parts,
)
from ducklake_cli.engine import delete_masks
from ducklake_cli.engine.file_index import file_key, spark_path
from ducklake_cli.engine.planning.scan_plan import FileSource, MappedField, ScanPlan, mapping_tree, needs_fallback
from ducklake_cli.engine.spark_types import FIELD_ID_KEY, spark_field, spark_type

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
    from pyspark.sql.types import DataType

ROWID = "rowid"
# `with_location` columns: each row's data file id and position (NULL for inlined rows) and its row id.
FILE_ID = "__ducklake_file_id"
POSITION = "__ducklake_pos"
ROW_ID = "__ducklake_rowid"
# Files whose rows need their location (deletes, row ids, snapshot filters, defaults) are read one DataFrame per
# file, file id and position as literals, up to this many; more are read together and matched to their file by
# path on every row (a regular expression per row: ~4x the cost of the read itself).
PER_FILE_READS = 16
# Deletes too large for driver-built masks become one 64-bit mask per 64-row block with a deletion, folded on the
# executors; masks are broadcast up to this many blocks (16 bytes each in the driver JVM), above that joined by a
# shuffle. The driver never holds the positions themselves.
BROADCAST_MASK_BLOCKS = 2_000_000
_BLOCK_BITS = delete_masks.BLOCK_BITS
_ORD_SHIFT = 34  # block key = file ordinal << 34 | position >> 6: files of up to 2^40 rows
# Spark's Parquet readers fill a LongType column of this name in the read schema with each row's position in its
# file (what `_metadata.row_index` is made from; Delta Lake's deletion vectors read it the same way). Asking for it
# directly skips the per-row `_metadata` struct (lineitem with 10% deleted: 1.83x -> 1.27x a read without deletes).
ROW_INDEX = "_tmp_metadata_row_index"
# The column types Spark's Parquet reader reads a file's integers of each width as, with DuckDB's values: the
# column's own and the widenings Spark does exactly (by experiment; UINT32 as DOUBLE it reads silently wrong).
_SIGNED_READS = {8: frozenset({"int8", "int16", "int32", "int64", "float64"}),
                 16: frozenset({"int16", "int32", "int64", "float64"}),
                 32: frozenset({"int32", "int64", "float64"}), 64: frozenset({"int64"})}
_UNSIGNED_READS = {8: frozenset({"uint8", "uint16", "uint32", "int16", "int32", "int64", "float64"}),
                   16: frozenset({"uint16", "uint32", "int32", "int64", "float64"}),
                   32: frozenset({"uint32", "int64"}), 64: frozenset({"uint64"})}
_NTZ_TYPES = frozenset({"timestamp", "timestamp_us", "timestamp_ms", "timestamp_s"})


def _spark_key(column: Column) -> Column:
    """The same key computed from `_metadata.file_path` on the executors."""
    from pyspark.sql import functions as F

    return F.regexp_replace(column, r"^[A-Za-z][A-Za-z0-9+.-]*:(//[^/]*)?", "")


def _col_name(column_id: int) -> str:
    # Internal names: user columns may be called c1, c2, … (read schema fields must not collide with them).
    return f"__ducklake_c{column_id}"


def _data_schema(columns: Sequence[ColumnInfo], *, row_index: bool = False) -> object:
    """The read schema by field id: the columns, the embedded row id and snapshot, and (`row_index`) each row's
    position in its file."""
    from pyspark.sql import types as T

    fields = [T.StructField(_col_name(c.column_id), spark_type(c), True, {FIELD_ID_KEY: c.column_id}) for c in columns]
    fields.append(T.StructField(ROW_ID_COLUMN, T.LongType(), True, {FIELD_ID_KEY: ROW_ID_FIELD_ID}))
    fields.append(T.StructField(SNAPSHOT_ID_COLUMN, T.LongType(), True, {FIELD_ID_KEY: SNAPSHOT_ID_FIELD_ID}))
    if row_index:
        fields.append(T.StructField(ROW_INDEX, T.LongType(), True))
    return T.StructType(fields)


def _read_native(
    spark: SparkSession, files: Sequence[FileSource], columns: Sequence[ColumnInfo], *, keyed: bool
) -> DataFrame:
    """Files with field ids; `keyed` adds each row's file key and position (for deletes, row ids, snapshot
    filters, defaults). Unkeyed reads never mention `_metadata`: Spark does not prune it once referenced, and
    would read every row's index and build a per-row struct for nothing."""
    from pyspark.sql import functions as F

    df = _parquet(spark, spark.read.schema(_data_schema(columns, row_index=keyed)), files)  # type: ignore[arg-type]
    names = [_col_name(c.column_id) for c in columns]
    if not keyed:
        return df.select(*names)
    return df.select(
        *names, ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN,
        _spark_key(F.col("_metadata.file_path")).alias("__key"), F.col(ROW_INDEX).alias("__pos"),
    )


def _read_fallback(spark: SparkSession, plan: ScanPlan, files: Sequence[FileSource]) -> DataFrame:
    """Files read by the fallback reader (pyarrow on the executors, `engine.fallback`), keyed like `_read_native`."""
    from pyspark.sql import functions as F

    from ducklake_cli.engine.fallback import read_files

    raw = read_files(spark, [(f.path, file_key(f.path)) for f in files], plan.columns,
                     storage_options=plan.storage_options)
    return raw.select(
        *[F.col(f"c{c.column_id}").alias(_col_name(c.column_id)) for c in plan.columns],
        ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN, F.col("__file").alias("__key"), "__pos",
    )


def _read_direct(spark: SparkSession, files: Sequence[FileSource], columns: Sequence[ColumnInfo]) -> DataFrame:
    """The plainest scan (field ids; no deletes, defaults, partial files, inlined rows or row ids): the files read
    straight into the table's column names. No projection, so planning costs a few JVM calls, not several per
    column (~0.1 s per table on TPC-H)."""
    from pyspark.sql import types as T

    schema = T.StructType([spark_field(c) for c in columns])
    return _parquet(spark, spark.read.schema(schema), files)


def _parquet(spark: SparkSession, reader: DataFrameReader, files: Sequence[FileSource]) -> DataFrame:
    """`reader.parquet` of these data files, handed to Spark with their sizes (`engine.file_index`): Spark neither
    stats nor lists them (one request per file on S3)."""
    from ducklake_cli.engine.file_index import read_parquet

    return read_parquet(spark, reader, [(f.path, f.file_size_bytes) for f in files])


def _mapped_type(col: ColumnInfo, node: MappedField | None) -> DataType:
    """A name-mapped column's read type: the file's field names at every level, no field ids (a field the file
    lacks gets a name no file has, so it reads as NULL); a positional cast then gives the table's names."""
    from pyspark.sql import types as T

    kids = node.children if node is not None else {}
    if col.type == "struct":
        return T.StructType([
            T.StructField(kids[c.column_id].name if c.column_id in kids else f"__ducklake_absent_{c.column_id}",
                          _mapped_type(c, kids.get(c.column_id)), True)
            for c in col.children])
    if col.type == "list":
        return T.ArrayType(_mapped_type(col.children[0], kids.get(col.children[0].column_id)), True)
    if col.type == "map":
        key, value = col.children
        return T.MapType(_mapped_type(key, kids.get(key.column_id)), _mapped_type(value, kids.get(value.column_id)),
                         True)
    return spark_type(col)


def _url_decode(value: Column) -> Column:
    """One level of percent-decoding; `+` stays `+` (paths are not form data), malformed escapes stay as they are."""
    from pyspark.sql import functions as F

    return F.coalesce(F.try_url_decode(F.regexp_replace(value, r"\+", "%2B")), value)


def _read_mapped(
    spark: SparkSession, files: Sequence[FileSource], columns: Sequence[ColumnInfo], mapping: Sequence[NameMapping],
    defaults: Mapping[int, object], *, pyarrow: bool, storage_options: Mapping[str, Any],
) -> DataFrame:
    """Files registered with a name mapping (no field ids): read by source name at every nesting level (with
    pyarrow when Spark cannot read their Parquet types as the columns' types), renamed to column ids."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    tree = mapping_tree(mapping)
    if pyarrow:
        from ducklake_cli.engine.fallback import read_files

        df = read_files(spark, [(f.path, file_key(f.path)) for f in files], columns, include_internal=False,
                        storage_options=storage_options, mapping=tree)
        key, pos = F.col("__file"), F.col("__pos")
    else:
        read_fields = [T.StructField(node.name, _mapped_type(c, node), True)
                       for c in columns if (node := tree.get(c.column_id)) is not None and not node.is_partition]
        read_fields.append(T.StructField(ROW_INDEX, T.LongType(), True))
        df = _parquet(spark, spark.read.schema(T.StructType(read_fields)), files)
        key, pos = _spark_key(F.col("_metadata.file_path")), F.col(ROW_INDEX)
    selects = []
    for c in columns:
        node = tree.get(c.column_id)
        if node is None:
            selects.append(_default(c, defaults).alias(_col_name(c.column_id)))
        elif node.is_partition:
            # Hive partition value from the `name=value` path segment: the key is a URI (one level of escapes),
            # the value hive-escaped (another); __HIVE_DEFAULT_PARTITION__ is NULL.
            raw = _url_decode(_url_decode(F.regexp_extract(key, f"/\\Q{node.name}\\E=([^/]*)/", 1)))
            value = F.when(raw == HIVE_NULL, F.lit(None)).otherwise(raw)
            selects.append(value.cast(spark_type(c)).alias(_col_name(c.column_id)))
        elif pyarrow:
            selects.append(F.col(f"c{c.column_id}").alias(_col_name(c.column_id)))
        else:
            name = node.name.replace("`", "``")
            selects.append(F.col(f"`{name}`").cast(spark_type(c)).alias(_col_name(c.column_id)))
    return df.select(
        *selects, F.lit(None).cast("bigint").alias(ROW_ID_COLUMN), F.lit(None).cast("bigint").alias(SNAPSHOT_ID_COLUMN),
        key.alias("__key"), pos.alias("__pos"),
    )


def _default(col: ColumnInfo, defaults: Mapping[int, object] | None = None) -> Column:
    """A column's initial default (what rows written before it existed read as), typed."""
    from pyspark.sql import functions as F

    if col.initial_default is None:
        return F.lit(None).cast(spark_type(col))
    if defaults is not None and col.column_id in defaults:
        return F.lit(defaults[col.column_id]).cast(spark_type(col))
    return F.lit(col.initial_default).cast(spark_type(col))


def _file_info(spark: SparkSession, plan: ScanPlan, groups: Sequence[Sequence[FileSource]],
               mask_offsets: Mapping[int, int]) -> DataFrame:
    """One row per data file, keyed by (file key, read group): a path registered twice is read once per group and
    joined to each of its data files, so every copy keeps its own file id, row ids and snapshot; `__off` is where
    its blocks start in the driver-built delete masks (-1: none)."""
    from pyspark.sql import types as T

    defaulted = _defaulted(plan)
    schema = T.StructType([
        T.StructField("__key", T.StringType()), T.StructField("__grp", T.LongType()),
        T.StructField("__file_id", T.LongType()),
        T.StructField("__row_id_start", T.LongType()), T.StructField("__snap_filter", T.BooleanType()),
        T.StructField("__begin", T.LongType()), T.StructField("__ord", T.LongType()),
        T.StructField("__off", T.LongType()),
        *[T.StructField(f"__missing_{cid}", T.BooleanType()) for cid in defaulted],
    ])
    ords = _ordinals(plan)
    rows = [
        (file_key(f.path), grp, f.data_file_id, f.row_id_start, f.needs_snapshot_filter, f.begin_snapshot,
         ords[f.data_file_id], mask_offsets.get(f.data_file_id, -1),
         *[cid in plan.missing_columns.get(f.data_file_id, ()) for cid in defaulted])
        for grp, files in enumerate(groups) for f in files
    ]
    return _local_frame(spark, schema, rows)


def _ordinals(plan: ScanPlan) -> dict[int, int]:
    """Each data file's position in the plan: a small number for the delete masks' block keys."""
    return {f.data_file_id: i for i, f in enumerate(plan.files)}


def _defaulted(plan: ScanPlan) -> list[int]:
    """Columns some files lack and read as their initial default."""
    return sorted({cid for missing in plan.missing_columns.values() for cid in missing})


def _read_located(spark: SparkSession, plan: ScanPlan, f: FileSource, columns: Sequence[ColumnInfo], ordinal: int,
                  mask_offset: int) -> DataFrame:
    """One file with field ids, its `_file_info` columns as literals: no per-row lookup of the file."""
    from pyspark.sql import functions as F

    df = spark.read.schema(_data_schema(columns, row_index=True)).parquet(spark_path(f.path))  # type: ignore[arg-type]
    info = {"__file_id": f.data_file_id, "__row_id_start": f.row_id_start, "__begin": f.begin_snapshot,
            "__ord": ordinal, "__off": mask_offset}
    missing = plan.missing_columns.get(f.data_file_id, ())
    return df.select(
        *[_col_name(c.column_id) for c in columns], ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN,
        F.col(ROW_INDEX).alias("__pos"),
        *[F.lit(v).cast("bigint").alias(k) for k, v in info.items()],
        F.lit(f.needs_snapshot_filter).alias("__snap_filter"),
        *[F.lit(cid in missing).alias(f"__missing_{cid}") for cid in _defaulted(plan)],
    )


def _distinct_paths(files: Sequence[FileSource]) -> list[FileSource]:
    """One file per path (the first), in order: Spark reads a path given twice only once or twice, never per copy."""
    seen: dict[str, FileSource] = {}
    for f in files:
        seen.setdefault(f.path, f)
    return list(seen.values())


def _local_frame(spark: SparkSession, schema: Any, rows: Sequence[tuple[Any, ...]]) -> DataFrame:
    """A small driver-side table as a local relation (from Arrow), not a Python RDD that costs a job and a worker."""
    import pyarrow as pa
    from pyspark.sql import types as T

    arrow = {T.StringType: pa.string(), T.LongType: pa.int64(), T.BooleanType: pa.bool_()}
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema.fields)
    table = pa.table({f.name: pa.array(list(col), arrow[type(f.dataType)])
                      for f, col in zip(schema.fields, columns, strict=True)})
    return spark.createDataFrame(table, schema)


def _deleted_positions(spark: SparkSession, plan: ScanPlan, extra: DataFrame | None) -> DataFrame | None:
    """(file ordinal, position) of every row deleted at the snapshot, plus `extra` (a script's own deletes)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    ords = _ordinals(plan)
    pair = T.StructType([T.StructField("__ord", T.LongType()), T.StructField("__pos", T.LongType())])
    parts: list[DataFrame] = []
    parquet = [f for f in plan.files if f.delete is not None and f.delete.format == "parquet"]
    if parquet:
        schema = T.StructType([
            T.StructField("pos", T.LongType(), True, {FIELD_ID_KEY: DELETE_POS_ID}),
            T.StructField("snap", T.LongType(), True, {FIELD_ID_KEY: SNAPSHOT_ID_FIELD_ID}),
        ])
        live = F.col("snap").isNull() | (F.col("snap") <= F.lit(plan.snapshot_id))
        if len(parquet) <= PER_FILE_READS:  # each delete file read alone, its data file a literal
            parts.extend(spark.read.schema(schema).parquet(spark_path(f.delete.path)).where(live)
                         .select(F.lit(ords[f.data_file_id]).cast("bigint").alias("__ord"), F.col("pos").alias("__pos"))
                         for f in parquet if f.delete is not None)
        else:
            info = _local_frame(spark, T.StructType([T.StructField("__dkey", T.StringType()),
                                                     T.StructField("__ord", T.LongType())]),
                                [(file_key(f.delete.path), ords[f.data_file_id]) for f in parquet if f.delete])
            raw = spark.read.schema(schema).parquet(*[spark_path(f.delete.path) for f in parquet if f.delete])
            keyed = raw.where(live).select(_spark_key(F.col("_metadata.file_path")).alias("__dkey"), F.col("pos"))
            parts.append(keyed.join(F.broadcast(info), "__dkey").select("__ord", F.col("pos").alias("__pos")))
    local = [(ords[f.data_file_id], pos) for f in plan.files for pos in f.inlined_deletes]
    puffin = [f for f in plan.files if f.delete is not None and f.delete.format == "puffin"]
    if puffin:
        from ducklake_cli.storage.deletion_vector import read_deletion_vector

        for f in puffin:
            assert f.delete is not None
            ordinal = ords[f.data_file_id]
            local.extend((ordinal, pos) for pos in read_deletion_vector(f.delete.path, plan.storage_options,
                                                                         snapshot=plan.snapshot_id))
    if local:
        parts.append(_local_frame(spark, pair, local))
    if extra is not None:
        by_id = _local_frame(spark, T.StructType([T.StructField("__fid", T.LongType()),
                                                  T.StructField("__ord", T.LongType())]), list(ords.items()))
        parts.append(extra.select(F.col(FILE_ID).alias("__fid"), F.col(POSITION).alias("__pos"))
                     .join(F.broadcast(by_id), "__fid").select("__ord", "__pos"))
    return _union(parts) if parts else None


def _union(parts: Sequence[DataFrame]) -> DataFrame:
    """The parts' rows together, columns matched by name."""
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def _block(ordinal: Column, pos: Column) -> Column:
    """A 64-row block's key: the file's ordinal in the plan and the block's number in the file."""
    from pyspark.sql import functions as F

    return F.shiftleft(ordinal, _ORD_SHIFT) + F.shiftright(pos, _BLOCK_BITS)


def _delete_masks(positions: DataFrame) -> DataFrame:
    """Deleted positions folded on the executors into one 64-bit mask per block: the join side is at most one
    row per 64 data rows, however many rows were deleted."""
    from pyspark.sql import functions as F

    return positions.groupBy(_block(F.col("__ord"), F.col("__pos")).alias("__blk")).agg(
        F.expr(f"bit_or(shiftleft(1L, cast(__pos & {(1 << _BLOCK_BITS) - 1} AS INT)))").alias("__mask"))


def _mask_blocks(plan: ScanPlan, *, extra: bool) -> int:
    """The most mask rows the deletes can make: 64-row blocks of the files that have deletes (of every file when a
    script's own deletes may hit any)."""
    return sum(delete_masks.blocks(f.record_count) for f in plan.files
               if extra or f.delete is not None or f.inlined_deletes)


def _not_masked(masks: Column) -> Column:
    """True for a row (`__off`, `__pos`) whose bit in the driver-built masks is clear, or whose file has none."""
    from pyspark.sql import functions as F

    off, pos = F.col("__off"), F.col("__pos")
    mask = F.element_at(masks, (off + F.shiftright(pos, _BLOCK_BITS) + 1).cast("int"))
    return F.when(off < 0, F.lit(True)).otherwise(F.getbit(mask, (pos % (1 << _BLOCK_BITS)).cast("int")) == 0)


def _without_deleted(data: DataFrame, plan: ScanPlan, positions: DataFrame, *, extra: bool) -> DataFrame:
    """`data` (`__ord`, `__pos` per row) without the deleted rows: a hash join on the row's block, then its bit.
    Small mask sets are broadcast (no shuffle of the data); larger ones are joined by a shuffle."""
    from pyspark.sql import functions as F

    masks = _delete_masks(positions)
    if _mask_blocks(plan, extra=extra) <= BROADCAST_MASK_BLOCKS:
        masks = F.broadcast(masks)
    bit = F.expr(f"bit_get(__mask, cast(__pos & {(1 << _BLOCK_BITS) - 1} AS INT))")
    joined = data.withColumn("__blk", _block(F.col("__ord"), F.col("__pos"))).join(masks, "__blk", "left")
    return joined.where(F.col("__mask").isNull() | (bit == 0)).drop("__blk", "__mask")


def _spark_reads(file_type: pa.DataType, col: ColumnInfo) -> bool:
    """Whether Spark's Parquet reader reads a file leaf of this (pyarrow) type as the leaf column's Spark type with
    the values DuckDB reads: the type DuckDB writes for the column, or a widening Spark does exactly (established
    by experiment). Spark reads some promotions silently wrong (a DECIMAL(9,2) or a UINT32 as DOUBLE), so anything
    not known good is read by the fallback reader."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    while isinstance(file_type, pa.ExtensionType):
        file_type = file_type.storage_type
    if file_type == to_arrow_type(spark_type(col), timezone="UTC"):  # what Spark reads it as (our own writes)
        return True
    t, dec = col.type, decimal_parts(col.type)
    if pa.types.is_integer(file_type):
        width = file_type.bit_width
        if pa.types.is_unsigned_integer(file_type):
            return t in _UNSIGNED_READS.get(width, ())
        if dec is not None:
            return dec[0] - dec[1] >= (10 if width <= 32 else 20)
        return t in _SIGNED_READS.get(width, ())
    if pa.types.is_decimal(file_type):
        whole = file_type.precision - file_type.scale
        return dec is not None and dec[1] >= file_type.scale and dec[0] - dec[1] >= whole
    if pa.types.is_floating(file_type):
        return t == "float64" or (t == "float32" and pa.types.is_float32(file_type))
    if pa.types.is_date(file_type):
        return t in _NTZ_TYPES
    if pa.types.is_timestamp(file_type):
        if t == "timestamptz":
            return file_type.unit == "us" or (file_type.tz is not None and file_type.unit == "ms")
        return t in _NTZ_TYPES and file_type.tz is None and file_type.unit in ("ms", "us")
    if t == "json":
        return pa.types.is_string(file_type) or pa.types.is_large_string(file_type)
    return False


def _leaf_types(path: str, storage_options: Mapping[str, Any]) -> dict[int, pa.DataType]:
    """A Parquet file's leaf fields (nested too) by field id, as pyarrow reads them (its footer only)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ducklake_cli.errors import StorageError
    from ducklake_cli.storage.files import filesystem

    try:
        with filesystem(path, storage_options).open(path, "rb") as fh:
            schema = pq.read_schema(fh)
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read the Parquet footer of {path}: {exc}") from exc
    out: dict[int, pa.DataType] = {}

    def walk(field: pa.Field) -> None:
        t = field.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field)
        elif pa.types.is_map(t):
            walk(t.key_field)
            walk(t.item_field)
        elif (raw := (field.metadata or {}).get(b"PARQUET:field_id")) is not None:
            out[int(raw)] = t

    for f in schema:
        walk(f)
    return out


def _retyped_files(plan: ScanPlan, files: Sequence[FileSource]) -> frozenset[int]:
    """Files written before a column's type changed (`ALTER COLUMN … TYPE`) that hold it in a type Spark's reader
    cannot read as the new one exactly: read by the fallback reader, which converts as DuckDB does. Only files older
    than a type change have their footers read (in parallel)."""
    changed = plan.type_changes
    leaves = [leaf for c in plan.columns for leaf in c.leaves() if leaf.column_id in changed]
    newest = max((changed[leaf.column_id] for leaf in leaves), default=0)
    unsure = [f for f in files if f.mapping_id is None and f.begin_snapshot < newest]
    if not unsure:
        return frozenset()
    from concurrent.futures import ThreadPoolExecutor

    def retyped(f: FileSource) -> bool:
        held = _leaf_types(f.path, plan.storage_options)
        return any(changed[leaf.column_id] > f.begin_snapshot and leaf.column_id in held
                   and not _spark_reads(held[leaf.column_id], leaf) for leaf in leaves)

    with ThreadPoolExecutor(max_workers=min(8, len(unsure))) as pool:
        flags = list(pool.map(retyped, unsure))
    return frozenset(f.data_file_id for f, flag in zip(unsure, flags, strict=True) if flag)


def conform(value: Column, old: ColumnInfo, new: ColumnInfo) -> Column:
    """A value stored under an older version of a column, as the current version: nested fields matched by
    field id (renamed ones keep their values, added ones are NULL, dropped ones vanish), types promoted."""
    from pyspark.sql import functions as F

    if new.type == "struct" and old.type == "struct":
        old_children = {c.column_id: c for c in old.children}
        fields = []
        for child in new.children:
            prior = old_children.get(child.column_id)
            inner = conform(value.getField(prior.name), prior, child) if prior else _default(child)
            fields.append(inner.alias(child.name))
        return F.when(value.isNull(), F.lit(None)).otherwise(F.struct(*fields)).cast(spark_type(new))
    if new.type == "list" and old.type == "list":
        return F.transform(value, lambda e: conform(e, old.children[0], new.children[0]))
    if new.type == "map" and old.type == "map":
        keyed = F.transform_keys(value, lambda k, _v: conform(k, old.children[0], new.children[0]))
        return F.transform_values(keyed, lambda _k, v: conform(v, old.children[1], new.children[1]))
    return value.cast(spark_type(new))


def _inlined(spark: SparkSession, plan: ScanPlan, gone: frozenset[int]) -> list[DataFrame]:
    from pyspark.sql import functions as F

    out = []
    for src in plan.inlined:
        rows = src.rows
        if gone:
            import pyarrow.compute as pc

            rows = rows.filter(pc.invert(pc.is_in(rows.column("row_id"), value_set=_arrow_ids(gone))))
        prior = {c.column_id: c for c in src.columns}
        rows, prior = recast_inlined(rows, prior, plan.columns)
        df = spark.createDataFrame(rows)
        out.append(df.select(
            *[conform(F.col(f"c{c.column_id}"), prior[c.column_id], c).alias(_col_name(c.column_id))
              if c.column_id in prior else _default(c, plan.defaults).alias(_col_name(c.column_id))
              for c in plan.columns],
            F.col("row_id").cast("bigint").alias("__rowid"),
        ))
    return out


def recast_inlined(rows: pa.Table, prior: Mapping[int, ColumnInfo],
                   columns: Sequence[ColumnInfo]) -> tuple[pa.Table, dict[int, ColumnInfo]]:
    """Inlined rows of top-level columns whose type changed since they were inlined, cast by DuckDB itself (as it
    reads them: old type → new type), in the new type's Spark form; and the columns as the rows now are. Nested
    fields are promoted by `conform`."""
    changed = [c for c in columns if (old := prior.get(c.column_id)) is not None and not c.children
               and not old.children and old.type != c.type]
    if not changed:
        return rows, dict(prior)
    import duckdb

    from ducklake_cli.catalog.inlined import spark_compatible_type, stored_type

    def duck(col: ColumnInfo) -> str:
        return {"json": "JSON", "variant": "VARIANT"}.get(col.type) or stored_type(col)

    exprs = {}
    for c in changed:
        value = f"CAST(CAST(c{c.column_id} AS {stored_type(prior[c.column_id])}) AS {duck(c)})"
        if c.type == "variant":
            value = f"CAST({value} AS JSON)"
        exprs[f"c{c.column_id}"] = f"CAST({value} AS {spark_compatible_type(c)})"
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("source", rows)
        selects = ", ".join(f"{exprs[n]} AS {n}" if n in exprs else f'"{n}"' for n in rows.column_names)
        recast = con.execute(f"SELECT {selects} FROM source").to_arrow_table()
    except duckdb.Error as exc:  # DuckDB cannot read them either (JSON that is not JSON, a value out of range)
        from ducklake_cli.errors import QueryError

        names = ", ".join(repr(c.name) for c in changed)
        raise QueryError(f"inlined rows of {names} cannot be read as the type the column has now: "
                         f"{str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    return recast, {**prior, **{c.column_id: c for c in changed}}


def _arrow_ids(ids: frozenset[int]) -> Any:
    """Row ids as an Arrow int64 array."""
    import pyarrow as pa

    return pa.array(sorted(ids), pa.int64())


def _has_struct(col: ColumnInfo) -> bool:
    return col.type == "struct" or any(_has_struct(c) for c in col.children)


def _keep_nested_field_ids(spark: SparkSession) -> None:
    """Turn off Spark's nested schema pruning: it rebuilds a pruned struct's read schema without the fields'
    field ids, so renamed nested fields silently read as NULL. Session-wide (the optimizer reads it per query),
    never turned back on: a later query may still hold this scan."""
    key = "spark.sql.optimizer.nestedSchemaPruning.enabled"
    if spark.conf.get(key, "true") != "false":
        spark.conf.set(key, "false")


def scan(spark: SparkSession, plan: ScanPlan, *, with_rowid: bool = False, with_lineage: bool = False,
         with_location: bool = False, extra_deletes: DataFrame | None = None,
         gone_inlined: frozenset[int] = frozenset()) -> DataFrame:
    """The table's rows at the plan's snapshot, columns named as the table has them (plus `rowid` if asked).

    `with_lineage` (files only, for rewrites) adds each row's id and the snapshot that inserted it as
    `_ducklake_internal_row_id` and `_ducklake_internal_snapshot_id`, the columns rewritten files embed.
    `with_location` (row-level changes) adds `FILE_ID`, `POSITION` and `ROW_ID`; `extra_deletes` (`FILE_ID`,
    `POSITION`) and `gone_inlined` (row ids) hide rows a script deleted before committing."""
    from pyspark.sql import functions as F

    columns = plan.columns
    names = [_col_name(c.column_id) for c in columns]
    if any(_has_struct(c) for c in columns):
        _keep_nested_field_ids(spark)
    parts: list[DataFrame] = []
    plain = [f for f in plan.files if f.mapping_id is None]
    by_mapping: dict[int, list[FileSource]] = {}
    for f in plan.files:
        if f.mapping_id is not None:
            by_mapping.setdefault(f.mapping_id, []).append(f)

    missing = {cid for m in plan.missing_columns.values() for cid in m}
    # Deletes as masks built on the driver when they are few enough, else folded into masks by the executors.
    masks = delete_masks.build(spark, plan) if plan.files and extra_deletes is None else None
    deletes = _deleted_positions(spark, plan, extra_deletes) if plan.files and masks is None else None
    mask_offsets = masks.offsets if masks is not None else {}
    snap_filter = any(f.needs_snapshot_filter for f in plan.files)
    shared_path = len({f.path for f in plan.files}) < len(plan.files)  # one file registered twice: read per copy
    fallback = any(needs_fallback(c) for c in columns)
    # Files holding a column in an older type Spark cannot read as its current one: read like fallback columns.
    retyped = frozenset() if fallback else _retyped_files(plan, plain)
    plain = [f for f in plain if f.data_file_id not in retyped]
    # Every row needs its file and position when row ids are shown or a script's deletes may hit any file;
    # otherwise only the rows of files with deletes, snapshot filters or defaulted columns do.
    all_located = with_rowid or with_lineage or with_location or extra_deletes is not None or shared_path or fallback
    located: list[FileSource] = []
    free: list[FileSource] = []
    for f in plain:
        needs = (all_located or f.delete is not None or bool(f.inlined_deletes) or f.needs_snapshot_filter
                 or bool(plan.missing_columns.get(f.data_file_id)))
        (located if needs else free).append(f)
    if free and not located and not by_mapping and not plan.inlined and not retyped:
        return _read_direct(spark, free, columns)
    if free:
        parts.append(_read_native(spark, free, columns, keyed=False)
                     .select(*names, F.lit(None).cast("bigint").alias("__rowid")))
    groups: list[list[FileSource]] = []  # bulk reads matched to their files by path: one per group, each path once
    raw_parts: list[DataFrame] = []
    by_file: list[DataFrame] = []
    if located and not fallback and not shared_path and len(located) <= PER_FILE_READS:
        ords = _ordinals(plan)
        by_file = [_read_located(spark, plan, f, columns, ords[f.data_file_id], mask_offsets.get(f.data_file_id, -1))
                   for f in located]
    elif located:
        groups.append(located)
        reads = _distinct_paths(located)
        raw_parts.append(_read_fallback(spark, plan, reads) if fallback else
                         _read_native(spark, reads, columns, keyed=True))
    if retyped:
        group = [f for f in plan.files if f.data_file_id in retyped]
        groups.append(group)
        raw_parts.append(_read_fallback(spark, plan, _distinct_paths(group)))
    for mapping_id, files in by_mapping.items():
        mapping = plan.name_mappings.get(mapping_id, ())
        for pyarrow in (False, True):
            group = [f for f in files if (f.data_file_id in plan.pyarrow_files) == pyarrow]
            if group:
                groups.append(group)
                raw_parts.append(_read_mapped(spark, _distinct_paths(group), columns, mapping, plan.defaults,
                                              pyarrow=pyarrow, storage_options=plan.storage_options))

    if raw_parts or by_file:
        located_parts = list(by_file)
        if raw_parts:
            bulk = _union([p.withColumn("__grp", F.lit(g).cast("bigint")) for g, p in enumerate(raw_parts)])
            located_parts.append(bulk.join(F.broadcast(_file_info(spark, plan, groups, mask_offsets)),
                                           ["__key", "__grp"])
                                 .drop("__key", "__grp"))
        data = _union(located_parts)
        if snap_filter:
            data = data.where(~F.col("__snap_filter") | (F.col(SNAPSHOT_ID_COLUMN) <= F.lit(plan.snapshot_id)))
        if masks is not None:
            data = data.where(_not_masked(masks.literal(spark)))
        if deletes is not None:
            data = _without_deleted(data, plan, deletes, extra=extra_deletes is not None)
        selects = []
        for c in columns:
            value = F.col(_col_name(c.column_id))
            if c.column_id in missing:
                value = F.when(F.col(f"__missing_{c.column_id}"), _default(c, plan.defaults)).otherwise(value)
            selects.append(value.alias(_col_name(c.column_id)))
        rowid = F.coalesce(F.col(ROW_ID_COLUMN), F.col("__row_id_start") + F.col("__pos"))
        lineage = [rowid.alias(ROW_ID_COLUMN), F.coalesce(F.col(SNAPSHOT_ID_COLUMN), F.col("__begin"))
                   .alias(SNAPSHOT_ID_COLUMN)] if with_lineage else []
        location = [F.col("__file_id").alias(FILE_ID), F.col("__pos").alias(POSITION)] if with_location else []
        parts.append(data.select(*selects, rowid.alias("__rowid"), *lineage, *location))
    if not with_lineage:
        inlined = _inlined(spark, plan, gone_inlined)
        if with_location:
            inlined = [p.select("*", F.lit(None).cast("bigint").alias(FILE_ID), F.lit(None).cast("bigint")
                                .alias(POSITION)) for p in inlined]
        parts.extend(inlined)

    if not parts:
        from pyspark.sql import types as T

        empty_schema = T.StructType([spark_field(c) for c in columns])
        result = spark.createDataFrame([], empty_schema)
        if with_location:
            return result.select("*", *[F.lit(None).cast("bigint").alias(n) for n in (FILE_ID, POSITION, ROW_ID)])
        return result.withColumn(ROWID, F.lit(None).cast("bigint")) if with_rowid else result
    result = _union(parts)
    out = [F.col(n).alias(c.name) for n, c in zip(names, columns, strict=True)]
    if with_rowid:
        out.append(F.col("__rowid").alias(ROWID))
    if with_lineage:
        out += [F.col(ROW_ID_COLUMN), F.col(SNAPSHOT_ID_COLUMN)]
    if with_location:
        out += [F.col(FILE_ID), F.col(POSITION), F.col("__rowid").alias(ROW_ID)]
    return result.select(*out)
