"""Parquet files joined without re-encoding: the row groups of several files written with one schema copied byte for
byte into one file, behind one footer whose offsets are moved to where each row group now sits.

DuckDB writes an insert as one stream of row groups into one file until it reaches `target_file_size`; Spark's
tasks each write their own files, so the small files of one write are joined here afterwards (`engine/writer.py`).
Runs on the driver or in Spark's Python workers: pure Python over fsspec.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ducklake_cli.errors import StorageError
from ducklake_cli.storage.files import filesystem, split_protocol

if TYPE_CHECKING:
    import pyarrow as pa

    from ducklake_cli.engine.parquet_files import FileSpec

MAGIC = b"PAR1"
_CHUNK = 8 << 20  # bytes copied per read

# Thrift compact protocol type ids.
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)

# Field ids of parquet.thrift holding absolute file offsets, per struct.
_ROW_GROUP_OFFSETS = (5,)  # RowGroup.file_offset
_CHUNK_OFFSETS = (2, 4, 6)  # ColumnChunk.file_offset, offset_index_offset, column_index_offset
_META_OFFSETS = (9, 10, 11, 14)  # ColumnMetaData.data_page/index_page/dictionary_page/bloom_filter offsets

Struct = list[list[Any]]  # [[field id, compact type, value], ...] in wire order


# ----- Thrift compact protocol (only what FileMetaData needs; unknown fields pass through) --------------------------

class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, kind: int) -> Any:
        if kind in (_TRUE, _FALSE):  # a boolean inside a list: one byte
            return self.byte() == _TRUE
        if kind == _BYTE:
            return self.byte()
        if kind in (_I16, _I32, _I64):
            return self.zigzag()
        if kind == _DOUBLE:
            self.pos += 8
            return self.data[self.pos - 8:self.pos]
        if kind == _BINARY:
            n = self.varint()
            self.pos += n
            return self.data[self.pos - n:self.pos]
        if kind in (_LIST, _SET):
            head = self.byte()
            size = head >> 4 if head >> 4 != 15 else self.varint()
            elem = head & 0x0F
            return (elem, [self.value(elem) for _ in range(size)])
        if kind == _MAP:
            size = self.varint()
            types = self.byte() if size else 0
            return (types, [(self.value(types >> 4), self.value(types & 0x0F)) for _ in range(size)])
        if kind == _STRUCT:
            return self.struct()
        raise StorageError(f"unknown Thrift compact type {kind} in a Parquet footer")

    def struct(self) -> Struct:
        fields: Struct = []
        last = 0
        while True:
            head = self.byte()
            kind = head & 0x0F
            if kind == _STOP:
                return fields
            fid = last + (head >> 4) if head >> 4 else self.zigzag()
            value = kind == _TRUE if kind in (_TRUE, _FALSE) else self.value(kind)
            fields.append([fid, kind, value])
            last = fid


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while n > 0x7F:
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7
        self.out.append(n)

    def zigzag(self, n: int) -> None:
        self.varint((n << 1) ^ (n >> 63))

    def value(self, kind: int, value: Any) -> None:
        if kind in (_TRUE, _FALSE):
            self.out.append(_TRUE if value else _FALSE)
        elif kind == _BYTE:
            self.out.append(value & 0xFF)
        elif kind in (_I16, _I32, _I64):
            self.zigzag(value)
        elif kind in (_DOUBLE,):
            self.out += value
        elif kind == _BINARY:
            self.varint(len(value))
            self.out += value
        elif kind in (_LIST, _SET):
            elem, items = value
            if len(items) < 15:
                self.out.append(len(items) << 4 | elem)
            else:
                self.out.append(0xF0 | elem)
                self.varint(len(items))
            for item in items:
                self.value(elem, item)
        elif kind == _MAP:
            types, items = value
            self.varint(len(items))
            if items:
                self.out.append(types)
            for k, v in items:
                self.value(types >> 4, k)
                self.value(types & 0x0F, v)
        else:
            self.struct(value)

    def struct(self, fields: Struct) -> None:
        last = 0
        for fid, kind, value in fields:
            wire = (_TRUE if value else _FALSE) if kind in (_TRUE, _FALSE) else kind
            if 0 < fid - last <= 15:
                self.out.append((fid - last) << 4 | wire)
            else:
                self.out.append(wire)
                self.zigzag(fid)
            if kind not in (_TRUE, _FALSE):
                self.value(kind, value)
            last = fid
        self.out.append(_STOP)


def parse_footer(data: bytes) -> Struct:
    """A serialized Parquet `FileMetaData` as a field tree (`encode_footer` gives the same bytes back)."""
    return _Reader(data).struct()


def encode_footer(fields: Struct) -> bytes:
    """The bytes of a `FileMetaData` field tree."""
    w = _Writer()
    w.struct(fields)
    return bytes(w.out)


def _field(fields: Struct, fid: int) -> list[Any] | None:
    return next((f for f in fields if f[0] == fid), None)


def _shift(fields: Struct, fids: Sequence[int], by: int) -> None:
    for f in fields:
        if f[0] in fids and f[1] == _I64:
            f[2] += by


# ----- joining files ------------------------------------------------------------------------------------------

def _tail(fh: Any, size: int, path: str) -> bytes:
    """The footer bytes of an open Parquet file of `size` bytes."""
    if size < 12:
        raise StorageError(f"{path} is too short to be a Parquet file")
    fh.seek(size - 8)
    end = fh.read(8)
    length = int.from_bytes(end[:4], "little")
    if end[4:] != MAGIC or length + 12 > size:
        raise StorageError(f"{path} does not end like a Parquet file")
    fh.seek(size - 8 - length)
    return bytes(fh.read(length))


def _copy(src: Any, out: Any, start: int, count: int, path: str) -> None:
    """`count` bytes of `src` from `start` appended to `out`: by the kernel between local files (os.copy_file_range,
    several times faster than reading and writing here), else in blocks."""
    import os

    try:
        src_fd, out_fd = src.fileno(), out.fileno()
    except (AttributeError, OSError, ValueError):  # not a local file
        src_fd = out_fd = -1
    if src_fd >= 0 and out_fd >= 0 and hasattr(os, "copy_file_range"):
        out.flush()
        at = out.tell()
        done = 0
        try:
            while done < count:
                n = os.copy_file_range(src_fd, out_fd, count - done, start + done, at + done)
                if n == 0:
                    raise StorageError(f"{path} ended early while it was copied")
                done += n
        except OSError:  # a file system without it: the rest in blocks
            pass
        out.seek(at + done)
        start, count = start + done, count - done
        if not count:
            return
    src.seek(start)
    while count > 0:
        block = src.read(min(_CHUNK, count))
        if not block:
            raise StorageError(f"{path} ended early while it was copied")
        out.write(block)
        count -= len(block)


def join_files(sources: Sequence[str], target: str, storage_options: Mapping[str, Any]) -> tuple[int, int]:
    """Write `target` holding every row group of `sources` (Parquet files of one schema, in order); returns the new
    file's (size, footer length). The sources are left in place; a failed join removes what it wrote."""
    fs = filesystem(target, dict(storage_options))
    if split_protocol(target)[0] in ("", "file"):
        fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
    merged: Struct | None = None
    groups: list[Any] = []
    rows = 0
    try:
        with fs.open(target, "wb") as out:
            out.write(MAGIC)
            at = len(MAGIC)
            for path in sources:
                src_fs = filesystem(path, dict(storage_options))
                size = int(src_fs.size(path))
                with src_fs.open(path, "rb") as fh:
                    raw = _tail(fh, size, path)
                    footer = parse_footer(raw)
                    region = size - 8 - len(raw)
                    by = at - len(MAGIC)
                    _copy(fh, out, len(MAGIC), region - len(MAGIC), path)
                    at += region - len(MAGIC)
                num_rows, row_groups = _field(footer, 3), _field(footer, 4)
                rows += num_rows[2] if num_rows else 0
                for rg in row_groups[2][1] if row_groups else []:
                    _shift(rg, _ROW_GROUP_OFFSETS, by)
                    columns = _field(rg, 1)
                    for chunk in columns[2][1] if columns else []:
                        _shift(chunk, _CHUNK_OFFSETS, by)
                        meta = _field(chunk, 3)
                        if meta is not None:
                            _shift(meta[2], _META_OFFSETS, by)
                    groups.append(rg)
                if merged is None:
                    merged = footer
            assert merged is not None, "join_files needs at least one source"
            for i, rg in enumerate(groups):
                ordinal = _field(rg, 7)
                if ordinal is not None:
                    ordinal[2] = i
            for f in merged:
                if f[0] == 3:
                    f[2] = rows
                elif f[0] == 4:
                    f[2] = (_STRUCT, groups)
            data = encode_footer(merged)
            out.write(data)
            out.write(struct.pack("<I", len(data)) + MAGIC)
            return at + len(data) + 8, len(data)
    except BaseException:
        import contextlib

        with contextlib.suppress(Exception):
            fs.rm_file(target)
        raise


def join_here(jobs: Sequence[str], spec: FileSpec) -> list[str]:
    """Join parts into files in this process (`engine.writer.join_parts`' JSON jobs: a target and its sources,
    relative to the table directory), removing the sources; one JSON row per job, with the new size and footer."""
    import contextlib

    out = []
    for text in jobs:
        job = json.loads(text)
        size, footer = join_files([spec.table_dir + p for p in job["sources"]], spec.table_dir + job["target"],
                                  spec.storage_options)
        for rel in job["sources"]:
            with contextlib.suppress(FileNotFoundError):
                filesystem(spec.table_dir + rel, spec.storage_options).rm_file(spec.table_dir + rel)
        out.append(json.dumps({**job, "size": size, "footer": footer}))
    return out


def join_batches(batches: Iterator[pa.RecordBatch], spec: FileSpec) -> Iterator[pa.RecordBatch]:
    """The mapInArrow entry point of `join_here` (one JSON job per row)."""
    import pyarrow as pa

    for batch in batches:
        jobs = batch.column(0).to_pylist()
        if jobs:
            yield pa.RecordBatch.from_arrays([pa.array(join_here(jobs, spec), pa.string())], ["file"])
