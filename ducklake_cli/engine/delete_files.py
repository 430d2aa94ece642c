"""Executor side of row-level deletes: the positions deleted from each data file become what DuckDB writes for
them (spec §5.4 DELETE): inlined file deletions, an ended file, a new delete file, or a delete file that replaces
the old one and keeps its positions with their snapshots, so time travel to every earlier snapshot reads the same.

Runs inside Spark's Python workers (`mapInArrow`): positions are read and written by executors; only one small
JSON description per data file reaches the driver (with the positions themselves only when there are at most
`inline_limit` of them, for the catalog).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.paths import uuid7
from ducklake_cli.catalog.types import (
    DELETE_FILE_PATH_ID,
    DELETE_POS_ID,
    SNAPSHOT_ID_COLUMN,
    SNAPSHOT_ID_FIELD_ID,
)
from ducklake_cli.storage.files import filesystem, split_protocol

if TYPE_CHECKING:
    import pyarrow as pa

# Column names of the (file id, position) rows executors receive.
FILE_COLUMN = "file_id"
POS_COLUMN = "pos"


@dataclass(frozen=True)
class TargetFile:
    """A committed data file rows are deleted from, with the deletes it already has."""

    data_file_id: int
    path: str  # resolved; written into the delete file's `file_path` column
    record_count: int
    delete_path: str | None = None  # its live delete file (resolved), if any
    delete_format: str | None = None
    delete_begin: int = 0  # that delete file's begin_snapshot: the snapshot of its untagged positions


@dataclass(frozen=True)
class DeleteJob:
    """Everything an executor needs to turn new positions into delete outcomes (picklable; no catalog access)."""

    table_dir: str
    files: Mapping[int, TargetFile]
    inline_limit: int
    snapshot_id: int
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    puffin: bool = False  # a 1.1 catalog with `write_deletion_vectors`: Puffin files instead of Parquet ones


@dataclass(frozen=True)
class DeleteOutcome:
    """What one data file gets: `inline` (positions into the catalog), `end` (every row gone) or `file`."""

    data_file_id: int
    kind: str
    deleted: int  # rows this change deletes from the file
    positions: tuple[int, ...] = ()  # `inline` only
    path: str | None = None  # `file`: relative to the table directory
    size: int = 0
    footer: int = 0
    count: int = 0  # positions in the new delete file
    begin_snapshot: int = 0
    partial_max: int | None = None
    format: str = "parquet"
    row_groups: int | None = None  # a Parquet delete file's row groups (1.1's `row_group_count`)

    def to_json(self) -> str:
        """One line for the driver."""
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> DeleteOutcome:
        """The inverse of `to_json`."""
        d = json.loads(text)
        d["positions"] = tuple(d["positions"])
        return cls(**d)


def parquet_delete_batches(path: str, storage_options: Mapping[str, Any],
                           batch_rows: int = 1 << 16) -> Iterator[tuple[pa.Array, pa.Array | None]]:
    """A Parquet delete file's positions and, when it has that column, the snapshot that deleted each (spec §3.7;
    columns found by field id), a batch at a time."""
    import pyarrow.parquet as pq

    from ducklake_cli.errors import StorageError

    try:
        with filesystem(path, dict(storage_options)).open(path, "rb") as fh:
            reader = pq.ParquetFile(fh)
            schema = reader.schema_arrow
            ids = [int((fl.metadata or {}).get(b"PARQUET:field_id", b"0")) for fl in schema]
            columns = [schema.names[ids.index(DELETE_POS_ID)]]
            if SNAPSHOT_ID_FIELD_ID in ids:
                columns.append(schema.names[ids.index(SNAPSHOT_ID_FIELD_ID)])
            for batch in reader.iter_batches(batch_size=batch_rows, columns=columns):
                yield batch.column(0), batch.column(1) if len(columns) > 1 else None
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read delete file {path}: {exc}") from exc


def old_positions(f: TargetFile, storage_options: Mapping[str, Any]) -> tuple[list[int], list[int]]:
    """The positions in the file's delete file and the snapshot each was deleted in, sorted by position. Inlined
    file deletions are not among them: DuckDB never moves them into delete files."""
    pos: list[int] = []
    snaps: list[int] = []
    if f.delete_path is not None:
        if f.delete_format == "puffin":
            from ducklake_cli.storage.deletion_vector import read_deletion_vectors

            for p, snap in read_deletion_vectors(f.delete_path, dict(storage_options)).first_deleted():
                pos.append(p)
                snaps.append(f.delete_begin if snap is None else snap)
        else:
            for p_batch, s_batch in parquet_delete_batches(f.delete_path, storage_options):
                p = p_batch.to_pylist()
                pos += p
                snaps += s_batch.to_pylist() if s_batch is not None else [f.delete_begin] * len(p)
    order = sorted(range(len(pos)), key=pos.__getitem__)
    return [pos[i] for i in order], [snaps[i] for i in order]


def write_parquet_delete(table_dir: str, data_file: str, positions: Sequence[int], snapshots: Sequence[int] | None,
                         storage_options: Mapping[str, Any]) -> tuple[str, int, int, int]:
    """A Parquet delete file for one data file (spec §3.7), with the snapshot column when `snapshots` is given (a
    partial delete file): `(path relative to table_dir, size, footer size, row groups)`. `positions` are sorted."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ducklake_cli.engine.parquet_files import CountingSink

    def fid(n: int) -> dict[bytes, bytes]:
        return {b"PARQUET:field_id": str(n).encode()}

    fields = [pa.field("file_path", pa.string(), metadata=fid(DELETE_FILE_PATH_ID)),
              pa.field("pos", pa.int64(), metadata=fid(DELETE_POS_ID))]
    arrays = [pa.array([data_file] * len(positions), pa.string()), pa.array(positions, pa.int64())]
    if snapshots is not None:
        fields.append(pa.field(SNAPSHOT_ID_COLUMN, pa.int64(), metadata=fid(SNAPSHOT_ID_FIELD_ID)))
        arrays.append(pa.array(snapshots, pa.int64()))
    table = pa.table(arrays, schema=pa.schema(fields))
    rel = f"ducklake-{uuid7()}-delete.parquet"
    full = table_dir + rel
    fs = filesystem(full, dict(storage_options))
    if split_protocol(full)[0] in ("", "file"):
        fs.makedirs(table_dir.rstrip("/"), exist_ok=True)
    collected: list[Any] = []
    with fs.open(full, "wb") as raw:
        sink = CountingSink(raw)
        pq.write_table(table, sink, compression="snappy", metadata_collector=collected)
    return rel, sink.size, int.from_bytes(sink.tail[:4], "little"), int(collected[0].num_row_groups)


def write_puffin_file(table_dir: str, data_file: str, positions: Sequence[int], snapshots: Sequence[int],
                      storage_options: Mapping[str, Any]) -> tuple[str, int, int]:
    """A `.puffin` delete file (spec versions §3.6): a bare deletion vector when every position comes from one
    snapshot, else a container of cumulative blobs, one per snapshot: `(path relative to table_dir, size, footer
    size)` (footer size 0 for a bare blob)."""
    from ducklake_cli.storage.deletion_vector import build_puffin, encode_deletion_vector

    by_snapshot: dict[int, list[int]] = {}
    for p, snap in zip(positions, snapshots, strict=True):
        by_snapshot.setdefault(snap, []).append(p)
    if len(by_snapshot) == 1:
        data, footer = encode_deletion_vector(positions), 0
    else:
        blobs: list[tuple[int, list[int]]] = []
        upto: list[int] = []
        for snap in sorted(by_snapshot):
            upto = sorted([*upto, *by_snapshot[snap]])
            blobs.append((snap, upto))
        data, footer = build_puffin(blobs, data_file)
    rel = f"ducklake-{uuid7()}-delete.puffin"
    full = table_dir + rel
    fs = filesystem(full, dict(storage_options))
    if split_protocol(full)[0] in ("", "file"):
        fs.makedirs(table_dir.rstrip("/"), exist_ok=True)
    with fs.open(full, "wb") as fh:
        fh.write(data)
    return rel, len(data), footer


def outcomes(f: TargetFile, by_statement: Mapping[int, Sequence[int]], job: DeleteJob) -> list[DeleteOutcome]:
    """DuckDB's choice for one data file: each statement deleting at most `inline_limit` of its rows deletes them
    inline; the positions of the others (sorted, distinct) end the file when no row is left outside inlined
    deletions, else go to a new delete file that also keeps the old one's positions with their snapshots."""
    done = [DeleteOutcome(f.data_file_id, "inline", len(pos), positions=tuple(pos))
            for pos in by_statement.values() if len(pos) <= job.inline_limit]
    new = sorted({p for pos in by_statement.values() if len(pos) > job.inline_limit for p in pos})
    if not new:
        return done
    old_pos, old_snaps = old_positions(f, job.storage_options)
    if len(set(old_pos).union(new)) >= f.record_count:
        return [*done, DeleteOutcome(f.data_file_id, "end", len(new))]
    if not old_pos:
        if job.puffin:
            rel, size, footer = write_puffin_file(job.table_dir, f.path, new, [job.snapshot_id] * len(new),
                                                  job.storage_options)
            return [*done, DeleteOutcome(f.data_file_id, "file", len(new), path=rel, size=size, footer=footer,
                                         count=len(new), begin_snapshot=job.snapshot_id, format="puffin")]
        rel, size, footer, groups = write_parquet_delete(job.table_dir, f.path, new, None, job.storage_options)
        return [*done, DeleteOutcome(f.data_file_id, "file", len(new), path=rel, size=size, footer=footer,
                                     count=len(new), begin_snapshot=job.snapshot_id, row_groups=groups)]
    merged = sorted(zip([*old_pos, *new], [*old_snaps, *[job.snapshot_id] * len(new)], strict=True))
    pos = [p for p, _ in merged]
    snaps = [s for _, s in merged]
    if job.puffin:  # DuckLake 1.1: one cumulative blob per snapshot (begin = the first, partial_max = the last)
        rel, size, footer = write_puffin_file(job.table_dir, f.path, pos, snaps, job.storage_options)
        return [*done, DeleteOutcome(f.data_file_id, "file", len(new), path=rel, size=size, footer=footer,
                                     count=len(pos), begin_snapshot=min(snaps), partial_max=job.snapshot_id,
                                     format="puffin")]
    rel, size, footer, groups = write_parquet_delete(job.table_dir, f.path, pos, snaps, job.storage_options)
    return [*done, DeleteOutcome(f.data_file_id, "file", len(new), path=rel, size=size, footer=footer,
                                 count=len(pos), begin_snapshot=f.delete_begin, partial_max=job.snapshot_id,
                                 row_groups=groups)]


def write_deletes(batches: Iterator[pa.RecordBatch], job: DeleteJob) -> Iterator[pa.RecordBatch]:
    """`mapInArrow` over (file id, position, statement) rows clustered by file: JSON outcome rows per data file."""
    import pyarrow as pa
    import pyarrow.compute as pc

    per_file: dict[int, dict[int, list[pa.Array]]] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        keys = pc.add(pc.multiply(batch.column(FILE_COLUMN), 1 << 20), batch.column("statement"))
        for key in pc.unique(keys).to_pylist():
            file_id, statement = divmod(int(key), 1 << 20)
            chunk = batch.column(POS_COLUMN).filter(pc.equal(keys, key))
            per_file.setdefault(file_id, {}).setdefault(statement, []).append(chunk)
    done = []
    for file_id, statements in per_file.items():
        by_statement = {k: pc.unique(pa.concat_arrays(v)).sort().to_pylist() for k, v in statements.items()}
        done += [o.to_json() for o in outcomes(job.files[file_id], by_statement, job)]
    if done:
        yield pa.RecordBatch.from_arrays([pa.array(done, pa.string())], ["outcome"])
