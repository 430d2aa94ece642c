"""A table's change feed on Spark (spec §9): the rows a feed plan's sources inserted and deleted, and the changes
joined from both as DuckDB's `ducklake_table_changes` joins them. Files are read once, by the executors, through
the table scan (field ids, schema evolution, row ids, positions); deleted positions are joined there."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.types import SNAPSHOT_ID_COLUMN
from ducklake_cli.engine.planning.feed_plan import FeedPlan, InlinedChanges
from ducklake_cli.engine.spark_types import FIELD_ID_KEY, spark_field, spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

SNAP = "__feed_snapshot"
ROWID = "__feed_rowid"
RANGE = "__feed_range"
KINDS = ("insertions", "deletions", "changes")


def _col(i: int) -> str:
    # Positional internal names: a table's own `snapshot_id`, `rowid` or `change_type` cannot collide.
    return f"__feed_c{i}"


def _empty(spark: SparkSession, plan: FeedPlan) -> DataFrame:
    from pyspark.sql import types as T

    fields = [T.StructField(SNAP, T.LongType()), T.StructField(ROWID, T.LongType()),
              T.StructField(RANGE, T.LongType())]
    fields += [T.StructField(_col(i), spark_field(c).dataType) for i, c in enumerate(plan.table.columns)]
    return spark.createDataFrame([], T.StructType(fields))


def _local(spark: SparkSession, names: list[str], rows: list[tuple[Any, ...]]) -> DataFrame:
    """A small driver-side table of BIGINT columns (from Arrow: no Python worker)."""
    import pyarrow as pa

    columns = list(zip(*rows, strict=True)) if rows else [()] * len(names)
    table = pa.table({n: pa.array(list(c), pa.int64()) for n, c in zip(names, columns, strict=True)})
    return spark.createDataFrame(table)


def _union(parts: list[DataFrame]) -> DataFrame | None:
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def _file_rows(spark: SparkSession, plan: FeedPlan) -> DataFrame:
    """Every row of every file either side reads: `__file_id`, `__pos`, its row id and snapshot, the columns."""
    from pyspark.sql import functions as F

    from ducklake_cli.engine.scan import FILE_ID, POSITION, ROW_ID, scan

    df = scan(spark, plan.scan, with_lineage=True, with_location=True)
    n = len(plan.table.columns)
    df = df.toDF(*[_col(i) for i in range(n)], *df.columns[n:])
    return df.select(F.col(FILE_ID).alias("__file_id"), F.col(POSITION).alias("__pos"),
                     F.col(ROW_ID).alias(ROWID), F.col(SNAPSHOT_ID_COLUMN).alias(SNAP),
                     *[_col(i) for i in range(n)])


def _data_columns(plan: FeedPlan) -> list[str]:
    return [_col(i) for i in range(len(plan.table.columns))]


def _file_insertions(spark: SparkSession, plan: FeedPlan, rows: DataFrame) -> DataFrame | None:
    from pyspark.sql import functions as F

    if not plan.inserts:
        return None
    info = _local(spark, ["__file_id", RANGE, "__min", "__max"],
                  [(i.data_file_id, i.range_id, i.min_snapshot, i.max_snapshot) for i in plan.inserts])
    kept = rows.join(F.broadcast(info), "__file_id").where(
        (F.col("__min").isNull() | (F.col(SNAP) >= F.col("__min")))
        & (F.col("__max").isNull() | (F.col(SNAP) <= F.col("__max"))))
    return kept.select(SNAP, ROWID, RANGE, *_data_columns(plan))


def _delete_positions(spark: SparkSession, plan: FeedPlan, rows: DataFrame) -> DataFrame | None:
    """`__entry`, `__file_id`, `__pos`, `__psnap` (the position's own snapshot, or NULL) of every deleted row."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from ducklake_cli.catalog.types import DELETE_FILE_PATH_ID, DELETE_POS_ID, SNAPSHOT_ID_FIELD_ID
    from ducklake_cli.engine.scan import file_key, spark_path

    entries = plan.deletes
    if not entries:
        return None
    ranges = dict(enumerate(plan.ranges))
    # (delete file path, entry, role): role 0 = current, 1 = previous
    roles: list[tuple[str, str, int, int]] = []
    for e in entries:
        for role, src in ((0, e.current), (1, e.previous)):
            if src is not None:
                roles.append((src.path, src.format, e.entry_id, role))
    cur_parts: list[DataFrame] = []
    prev_parts: list[DataFrame] = []
    parquet = [r for r in roles if r[1] != "puffin"]
    if parquet:
        schema = T.StructType([
            T.StructField("file_path", T.StringType(), True, {FIELD_ID_KEY: DELETE_FILE_PATH_ID}),
            T.StructField("pos", T.LongType(), True, {FIELD_ID_KEY: DELETE_POS_ID}),
            T.StructField("snap", T.LongType(), True, {FIELD_ID_KEY: SNAPSHOT_ID_FIELD_ID}),
        ])
        paths = sorted({r[0] for r in parquet})
        raw = spark.read.schema(schema).parquet(*[spark_path(p) for p in paths]).select(
            F.regexp_replace(F.col("_metadata.file_path"), r"^[A-Za-z][A-Za-z0-9+.-]*:(//[^/]*)?", "")
            .alias("__dkey"), "pos", "snap")
        keys = spark.createDataFrame(
            [(file_key(p), entry, role) for p, _, entry, role in parquet],
            "__dkey string, __entry bigint, __role bigint")
        found = raw.join(F.broadcast(keys), "__dkey")
        cur_parts.append(found.where(F.col("__role") == 0).select("__entry", "pos", "snap"))
        prev_parts.append(found.where(F.col("__role") == 1).select("__entry", "pos"))
    puffin = [r for r in roles if r[1] == "puffin"]
    if puffin:
        from ducklake_cli.storage.deletion_vector import read_deletion_vectors

        local_cur: list[tuple[Any, ...]] = []
        local_prev: list[tuple[Any, ...]] = []
        starts = {e.entry_id: ranges[e.range_id][0] for e in entries}
        for path, _, entry, role in puffin:
            # A 1.1 container tags each position with the first blob (snapshot) holding it, as a 3-column delete
            # file does, and as a previous file it holds what was deleted before the range: its blob as of then.
            # A bare blob's positions carry no snapshot (they date from the row's begin_snapshot).
            vectors = read_deletion_vectors(path, plan.scan.storage_options)
            if role == 0:
                local_cur.extend((entry, pos, snap) for pos, snap in vectors.first_deleted())
            else:
                local_prev.extend((entry, pos) for pos in vectors.at(starts[entry] - 1))
        if local_cur:
            cur_parts.append(_local(spark, ["__entry", "pos", "snap"], local_cur))
        if local_prev:
            prev_parts.append(_local(spark, ["__entry", "pos"], local_prev))
    info = _local(spark, ["__entry", "__file_id", "__lo", "__hi"],
                  [(e.entry_id, e.data_file_id, *ranges[e.range_id]) for e in entries])
    positions: list[DataFrame] = []
    inlined = [(e.entry_id, e.data_file_id, pos, snap) for e in entries for pos, snap in e.inlined]
    inlined_df = _local(spark, ["__entry", "__file_id", "__pos", "__psnap"], inlined) if inlined else None
    current = _union(cur_parts)
    if current is not None:
        # A delete file's embedded snapshots keep only the positions deleted in range.
        current = current.join(F.broadcast(info), "__entry").where(
            F.col("snap").isNull() | F.col("snap").between(F.col("__lo"), F.col("__hi"))).select(
            "__entry", "__file_id", F.col("pos").alias("__pos"), F.col("snap").alias("__psnap"))
        if inlined_df is not None:
            # A position also deleted inline is listed once, with the inlined deletion's snapshot.
            current = current.join(F.broadcast(inlined_df.select("__entry", "__pos")), ["__entry", "__pos"],
                                   "left_anti")
        positions.append(current)
    if inlined_df is not None:
        positions.append(inlined_df)
    whole = [(e.entry_id, e.data_file_id) for e in entries if e.whole_file]
    if whole:
        positions.append(rows.select("__file_id", "__pos").join(
            F.broadcast(_local(spark, ["__entry", "__file_id"], whole)), "__file_id").select(
            "__entry", "__file_id", "__pos", F.lit(None).cast("bigint").alias("__psnap")))
    merged = _union(positions)
    if merged is None:
        return None
    previous = _union(prev_parts)
    if previous is not None:
        # Positions already in the previous delete file are not new (the plan keeps it only where that applies).
        merged = merged.join(previous.select("__entry", F.col("pos").alias("__pos")), ["__entry", "__pos"],
                             "left_anti")
    return merged


def _file_deletions(spark: SparkSession, plan: FeedPlan, rows: DataFrame) -> DataFrame | None:
    from pyspark.sql import functions as F

    positions = _delete_positions(spark, plan, rows)
    if positions is None:
        return None
    info = _local(spark, ["__entry", RANGE, "__esnap"], [(e.entry_id, e.range_id, e.snapshot_id)
                                                         for e in plan.deletes])
    found = rows.drop(SNAP).join(positions, ["__file_id", "__pos"]).join(F.broadcast(info), "__entry")
    return found.select(F.coalesce(F.col("__psnap"), F.col("__esnap")).alias(SNAP), ROWID, RANGE,
                        *_data_columns(plan))


def _default(value: object, col: Any) -> Column:
    from pyspark.sql import functions as F

    return F.lit(value).cast(spark_type(col))


def _inlined(spark: SparkSession, plan: FeedPlan, sources: tuple[InlinedChanges, ...]) -> list[DataFrame]:
    from pyspark.sql import functions as F

    from ducklake_cli.engine.scan import conform, recast_inlined

    out = []
    for src in sources:
        rows, prior = recast_inlined(src.rows, {c.column_id: c for c in src.columns}, plan.table.columns)
        df = spark.createDataFrame(rows)
        cols = []
        for i, c in enumerate(plan.table.columns):
            if c.column_id in prior:
                cols.append(conform(F.col(f"c{c.column_id}"), prior[c.column_id], c).alias(_col(i)))
            else:
                value = plan.scan.defaults.get(c.column_id, c.initial_default)
                cols.append(_default(value, c).alias(_col(i)))
        out.append(df.select(F.col("snapshot_id").cast("bigint").alias(SNAP),
                             F.col("row_id").cast("bigint").alias(ROWID),
                             F.col("range_id").cast("bigint").alias(RANGE), *cols))
    return out


def feed_sides(spark: SparkSession, plan: FeedPlan) -> tuple[DataFrame, DataFrame]:
    """(insertions, deletions): `__feed_snapshot`, `__feed_rowid`, `__feed_range` and the columns by position."""
    rows = _file_rows(spark, plan) if plan.scan.files else None
    ins: list[DataFrame] = []
    dels: list[DataFrame] = []
    if rows is not None:
        ins += [p for p in [_file_insertions(spark, plan, rows)] if p is not None]
        dels += [p for p in [_file_deletions(spark, plan, rows)] if p is not None]
    ins += _inlined(spark, plan, plan.inlined_inserts)
    dels += _inlined(spark, plan, plan.inlined_deletes)
    return _union(ins) or _empty(spark, plan), _union(dels) or _empty(spark, plan)


def _counted(ins: DataFrame, dels: DataFrame) -> DataFrame:
    """Both sides in one frame (`__side` 'i' or 'd'), each row with how many rows of the other side share its
    range, snapshot and row id (`__other`): one shuffle instead of DuckDB's two joins."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    both = ins.withColumn("__side", F.lit("i")).unionByName(dels.withColumn("__side", F.lit("d")))
    w = Window.partitionBy(RANGE, SNAP, ROWID)
    n_ins = F.sum(F.when(F.col("__side") == "i", 1).otherwise(0)).over(w)
    n_del = F.sum(F.when(F.col("__side") == "d", 1).otherwise(0)).over(w)
    return both.withColumn("__other", F.when(F.col("__side") == "i", n_del).otherwise(n_ins))


def _change_type(side: Column, other: Column) -> Column:
    """DuckDB's join: a row inserted and deleted at the same snapshot under one row id is an update's post- and
    pre-image, otherwise an insert or a delete."""
    from pyspark.sql import functions as F

    return (F.when(side == "i", F.when(other > 0, F.lit("update_postimage")).otherwise(F.lit("insert")))
            .otherwise(F.when(other > 0, F.lit("update_preimage")).otherwise(F.lit("delete"))))


def _changes(ins: DataFrame, dels: DataFrame, data: list[str]) -> DataFrame:
    """`table_changes`: each row once per matching row of the other side (at least once), as DuckDB's LEFT JOINs
    give it (duplicates multiply)."""
    from pyspark.sql import functions as F

    counted = _counted(ins, dels)
    copies = F.greatest(F.col("__other"), F.lit(1))
    return counted.select(SNAP, ROWID, RANGE, _change_type(F.col("__side"), F.col("__other")).alias("__kind"),
                          *data, F.explode(F.sequence(F.lit(1), copies)).alias("__copy")).drop("__copy")


def all_feeds(spark: SparkSession, plan: FeedPlan) -> DataFrame:
    """The three feeds of every range in one frame from one pass over the sources: `feed` (`insertions`,
    `deletions`, `changes`), `range_id`, `snapshot_id`, `rowid`, `change_type` (NULL but in changes), then the
    columns."""
    from pyspark.sql import functions as F

    ins, dels = feed_sides(spark, plan)
    counted = _counted(ins, dels)
    # Copy 0 is the row of its own side's feed; copies 1… its rows in the changes.
    copy = F.explode(F.sequence(F.lit(0), F.greatest(F.col("__other"), F.lit(1)))).alias("__copy")
    rows = counted.select("*", copy)
    own = F.when(F.col("__side") == "i", F.lit("insertions")).otherwise(F.lit("deletions"))
    is_own = F.col("__copy") == 0
    data = _data_columns(plan)
    return rows.select(
        F.when(is_own, own).otherwise(F.lit("changes")).alias("feed"), F.col(RANGE).alias("range_id"),
        F.col(SNAP).alias("snapshot_id"), F.col(ROWID).alias("rowid"),
        F.when(is_own, F.lit(None).cast("string")).otherwise(_change_type(F.col("__side"), F.col("__other")))
        .alias("change_type"),
        *[F.col(n).alias(c.name) for n, c in zip(data, plan.table.columns, strict=True)])


def feed_frames(spark: SparkSession, plan: FeedPlan, *, with_range: bool = False) -> dict[str, DataFrame]:
    """DuckDB's three feeds (`insertions`, `deletions`, `changes`) built on the same two sides, with DuckDB's
    columns: `snapshot_id`, `rowid`, `change_type` (changes only), then the table's columns; `with_range` adds
    the range's index (`range_id`) first."""
    from pyspark.sql import functions as F

    ins, dels = feed_sides(spark, plan)
    data = _data_columns(plan)
    out: dict[str, DataFrame] = {}
    for kind, df in (("insertions", ins), ("deletions", dels), ("changes", _changes(ins, dels, data))):
        cols = [F.col(RANGE).alias("range_id")] if with_range else []
        cols += [F.col(SNAP).alias("snapshot_id"), F.col(ROWID).alias("rowid")]
        if kind == "changes":
            cols.append(F.col("__kind").alias("change_type"))
        cols += [F.col(n).alias(c.name) for n, c in zip(data, plan.table.columns, strict=True)]
        out[kind] = df.select(*cols)
    return out


def feed_frame(spark: SparkSession, plan: FeedPlan, kind: str, *, with_range: bool = False) -> DataFrame:
    """One of DuckDB's feeds (`insertions`, `deletions` or `changes`), see `feed_frames`."""
    if kind not in KINDS:
        raise ValueError(f"unknown feed {kind!r}")
    return feed_frames(spark, plan, with_range=with_range)[kind]
