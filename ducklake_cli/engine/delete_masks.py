"""Deleted rows as bit masks built on the driver, for scans whose files with deletes are small enough.

Every 64-row block of a data file with deletes gets one 64-bit mask (bit `i` set: row `64 * block + i` is deleted),
the blocks of all such files laid end to end in one array. The array goes to the executors inside the plan as a
literal, so each row is tested with one array lookup: no join, no shuffle, no extra Spark job. The driver holds the
masks (8 bytes per 64 rows, at most `MAX_BLOCKS` of them) and one batch of positions at a time, never a file's
positions all at once; larger delete sets are folded into masks on the executors instead (`engine.scan`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from pyspark.sql import Column, SparkSession

    from ducklake_cli.engine.planning.scan_plan import FileSource, ScanPlan

# 2^19 blocks: files with deletes of up to 33.5 million rows in all, 4 MiB of masks in the plan.
MAX_BLOCKS = 1 << 19
BLOCK_BITS = 6
_BATCH_ROWS = 1 << 16


@dataclass(frozen=True)
class DeleteMasks:
    """The masks of every file with deletes, and where each file's blocks start in them."""

    masks: np.ndarray  # uint64, one per block
    offsets: Mapping[int, int]  # data file id -> index of its first block

    def literal(self, spark: SparkSession) -> Column:
        """The masks as an `array<bigint>` literal column, built in the JVM from one byte buffer (a Python list
        would cost a JVM call per element). Held as Catalyst's flat `UnsafeArrayData`: tasks receive one byte
        blob and read longs unboxed (~30% faster per row than the boxed array `functions.lit` makes, which is
        kept should Spark's internals move)."""
        from py4j.protocol import Py4JError
        from pyspark.sql.classic.column import Column as ClassicColumn

        jvm = spark._jvm
        assert jvm is not None
        buffer = jvm.java.nio.ByteBuffer.wrap(bytearray(self.masks.astype("<u8").tobytes()))
        longs = buffer.order(jvm.java.nio.ByteOrder.LITTLE_ENDIAN).asLongBuffer()
        array = spark.sparkContext._gateway.new_array(jvm.long, len(self.masks))  # type: ignore[union-attr]
        longs.get(array)
        try:
            types = jvm.org.apache.spark.sql.types.DataTypes
            flat = jvm.org.apache.spark.sql.catalyst.expressions.UnsafeArrayData.fromPrimitiveArray(array)
            value = jvm.org.apache.spark.sql.catalyst.expressions.Literal.create(
                flat, types.createArrayType(types.LongType, False))
            node = jvm.org.apache.spark.sql.classic.ExpressionColumnNode.apply(value)
            return ClassicColumn(jvm.org.apache.spark.sql.Column(node))
        except Py4JError:
            return ClassicColumn(jvm.org.apache.spark.sql.functions.lit(array))


def blocks(record_count: int) -> int:
    """How many 64-row blocks a file of this many rows has."""
    return -(-record_count >> BLOCK_BITS)


def build(spark: SparkSession, plan: ScanPlan) -> DeleteMasks | None:
    """The plan's deletes as masks, or None where the executors must apply them: no JVM on this side (Spark
    Connect), more than `MAX_BLOCKS` blocks, or a position past a file's recorded row count (the executors' join
    does not depend on that count)."""
    import numpy as np

    if getattr(spark, "_jvm", None) is None:
        return None
    deleted = [f for f in plan.files if f.delete is not None or f.inlined_deletes]
    offsets: dict[int, int] = {}
    total = 0
    for f in deleted:
        offsets[f.data_file_id] = total
        total += blocks(f.record_count)
    if not deleted or total > MAX_BLOCKS:
        return None
    masks = np.zeros(total, dtype=np.uint64)
    for f in deleted:
        start = offsets[f.data_file_id]
        own = masks[start:start + blocks(f.record_count)]
        batches = _positions(f, plan.snapshot_id, plan.storage_options)
        for pos in batches:
            if len(pos) and (int(pos.min()) < 0 or int(pos.max()) >= len(own) << BLOCK_BITS):
                return None
            np.bitwise_or.at(own, pos >> BLOCK_BITS, np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64)))
    return DeleteMasks(masks, offsets)


def _positions(f: FileSource, snapshot: int, storage_options: Mapping[str, Any]) -> Iterable[np.ndarray]:
    """The file's deleted positions at `snapshot` (int64 batches): its delete file's, then its inlined ones."""
    import numpy as np

    if f.inlined_deletes:
        yield np.asarray(f.inlined_deletes, dtype=np.int64)
    if f.delete is None:
        return
    if f.delete.format == "puffin":
        from ducklake_cli.storage.deletion_vector import read_deletion_vector

        yield np.asarray(read_deletion_vector(f.delete.path, storage_options, snapshot=snapshot), dtype=np.int64)
        return
    yield from _parquet_positions(f.delete.path, snapshot, storage_options)


def _parquet_positions(path: str, snapshot: int, storage_options: Mapping[str, Any]) -> Iterable[np.ndarray]:
    """Positions of a Parquet delete file deleted at or before `snapshot`, in batches."""
    import numpy as np
    import pyarrow.compute as pc

    from ducklake_cli.engine.delete_files import parquet_delete_batches

    for pos, snap in parquet_delete_batches(path, storage_options, _BATCH_ROWS):
        if snap is not None:
            pos = pc.filter(pos, pc.or_kleene(pc.is_null(snap), pc.less_equal(snap, snapshot)))
        yield np.asarray(pos.to_numpy(zero_copy_only=False), dtype=np.int64)
