"""DuckLake's Puffin deletion vectors: a bare Iceberg `deletion-vector-v1` blob (one snapshot; spec §3.7) or, in
DuckLake 1.1, a Puffin container of cumulative blobs, one per snapshot that deleted rows (spec versions §3.6)."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ducklake_cli.errors import StorageError
from ducklake_cli.storage.files import filesystem

MAGIC = b"\xd1\xd3\x39\x64"
PUFFIN_MAGIC = b"PFA1"
DV_BLOB = "deletion-vector-v1"
SNAPSHOT_PROPERTY = "ducklake-snapshot-id"
_COOKIE_RUNS = 12347
_COOKIE_NO_RUNS = 12346
_ARRAY_MAX = 4096  # a Roaring container holds at most this many values as a sorted array, else a bitmap


def _roaring32(buf: bytes, at: int) -> tuple[list[int], int]:
    """Decode one portable Roaring32 bitmap at `at`; returns its values and the offset after it."""
    (cookie,) = struct.unpack_from("<I", buf, at)
    at += 4
    if cookie & 0xFFFF == _COOKIE_RUNS:
        size = (cookie >> 16) + 1
        run_flags = buf[at:at + (size + 7) // 8]
        at += (size + 7) // 8
        has_offsets = size >= 4
    elif cookie == _COOKIE_NO_RUNS:
        (size,) = struct.unpack_from("<I", buf, at)
        at += 4
        run_flags = b""
        has_offsets = True
    else:
        raise ValueError(f"not a portable Roaring bitmap (cookie {cookie})")
    headers = [struct.unpack_from("<HH", buf, at + 4 * i) for i in range(size)]
    at += 4 * size
    if has_offsets:
        at += 4 * size  # container offsets: containers follow in order, so they are not needed
    values: list[int] = []
    for i, (key, card_minus_1) in enumerate(headers):
        high = key << 16
        is_run = bool(run_flags) and bool(run_flags[i // 8] >> (i % 8) & 1)
        if is_run:
            (runs,) = struct.unpack_from("<H", buf, at)
            at += 2
            for j in range(runs):
                start, length = struct.unpack_from("<HH", buf, at + 4 * j)
                values.extend(high | v for v in range(start, start + length + 1))
            at += 4 * runs
        elif card_minus_1 + 1 <= _ARRAY_MAX:
            n = card_minus_1 + 1
            values.extend(high | v for v in struct.unpack_from(f"<{n}H", buf, at))
            at += 2 * n
        else:
            words = struct.unpack_from("<1024Q", buf, at)
            at += 8192
            for w_index, word in enumerate(words):
                while word:
                    low = word & -word
                    values.append(high | (w_index * 64 + low.bit_length() - 1))
                    word ^= low
    return values, at


def _encode_roaring32(values: Sequence[int]) -> bytes:
    """Sorted distinct 32-bit values as a portable Roaring32 bitmap without run containers."""
    groups: dict[int, list[int]] = {}
    for v in values:
        groups.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(groups)
    head = struct.pack("<II", _COOKIE_NO_RUNS, len(keys))
    head += b"".join(struct.pack("<HH", k, len(groups[k]) - 1) for k in keys)
    bodies = []
    for k in keys:
        lows = groups[k]
        if len(lows) <= _ARRAY_MAX:
            bodies.append(struct.pack(f"<{len(lows)}H", *lows))
        else:
            words = [0] * 1024
            for low in lows:
                words[low >> 6] |= 1 << (low & 63)
            bodies.append(struct.pack("<1024Q", *words))
    offset = len(head) + 4 * len(keys)
    offsets = []
    for b in bodies:
        offsets.append(offset)
        offset += len(b)
    return head + struct.pack(f"<{len(keys)}I", *offsets) + b"".join(bodies)


def encode_deletion_vector(positions: Sequence[int]) -> bytes:
    """A `deletion-vector-v1` blob of row positions (length, magic, 64-bit Roaring, CRC-32): what a bare `.puffin`
    delete file holds, and each blob of a container."""
    by_high: dict[int, list[int]] = {}
    for p in sorted(set(positions)):
        if p < 0:
            raise ValueError(f"a deletion vector cannot hold the negative position {p}")
        by_high.setdefault(p >> 32, []).append(p & 0xFFFFFFFF)
    body = MAGIC + struct.pack("<q", len(by_high))
    body += b"".join(struct.pack("<i", high) + _encode_roaring32(lows) for high, lows in sorted(by_high.items()))
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def decode_deletion_vector(blob: bytes) -> list[int]:
    """Row positions deleted by a deletion-vector blob (length, magic, 64-bit Roaring, CRC-32)."""
    (length,) = struct.unpack_from(">I", blob, 0)
    body = blob[4:4 + length]
    if body[:4] != MAGIC:
        raise ValueError("deletion vector has the wrong magic bytes")
    (crc,) = struct.unpack_from(">I", blob, 4 + length)
    if zlib.crc32(body) != crc:
        raise ValueError("deletion vector checksum mismatch")
    (count,) = struct.unpack_from("<q", body, 4)
    at = 12
    positions: list[int] = []
    for _ in range(count):
        (high,) = struct.unpack_from("<i", body, at)
        low, at = _roaring32(body, at + 4)
        positions.extend((high << 32) | v for v in low)
    return positions


# ----- the Puffin container (DuckLake 1.1) ---------------------------------------------------------------------

@dataclass(frozen=True)
class DeletionVectors:
    """What a `.puffin` delete file holds: cumulative position sets in ascending snapshot order. A bare blob is one
    set with snapshot None (its positions date from the catalog row's `begin_snapshot`)."""

    blobs: tuple[tuple[int | None, tuple[int, ...]], ...]

    @property
    def snapshots(self) -> tuple[int, ...]:
        """The snapshot ids the blobs carry (empty for a bare blob)."""
        return tuple(s for s, _ in self.blobs if s is not None)

    def at(self, snapshot: int | None) -> list[int]:
        """The positions deleted as of `snapshot` (None: all): the blob with the greatest snapshot ≤ it."""
        chosen: tuple[int, ...] = ()
        for snap, positions in self.blobs:
            if snap is None or snapshot is None or snap <= snapshot:
                chosen = positions
        return list(chosen)

    def first_deleted(self) -> list[tuple[int, int | None]]:
        """Every position with the snapshot of the first blob holding it (None for a bare blob), by position."""
        seen: dict[int, int | None] = {}
        for snap, positions in self.blobs:
            for p in positions:
                seen.setdefault(p, snap)
        return sorted(seen.items())


def parse_deletion_vectors(data: bytes) -> DeletionVectors:
    """A `.puffin` file's blobs, its shape told by its bytes: a bare blob (the DV magic at offset 4) or a container
    (`PFA1` … `PFA1`); blobs of other types are ignored; a container's deletion vectors carry a snapshot each or
    none do (then they are one set)."""
    if data[4:8] == MAGIC:
        return DeletionVectors(((None, tuple(decode_deletion_vector(data))),))
    if not (data[:4] == PUFFIN_MAGIC and data[-4:] == PUFFIN_MAGIC and len(data) >= 20):
        raise ValueError("neither a deletion-vector blob nor a Puffin file (no PFA1 magic)")
    length, flags = struct.unpack_from("<II", data, len(data) - 12)
    if flags & 1:
        raise ValueError("the Puffin footer is LZ4-compressed, which DuckLake never writes")
    start = len(data) - 12 - length
    if start < 8 or data[start - 4:start] != PUFFIN_MAGIC:
        raise ValueError("the Puffin footer's length does not match the file")
    footer = json.loads(data[start:start + length].decode("utf-8"))
    found: list[tuple[int | None, tuple[int, ...]]] = []
    for meta in footer.get("blobs", []):
        if meta.get("type") != DV_BLOB:
            continue
        if meta.get("compression-codec") not in (None, "none"):
            raise ValueError(f"a deletion vector blob is compressed ({meta['compression-codec']})")
        offset, size = int(meta["offset"]), int(meta["length"])
        if offset < 4 or offset + size > start - 4:
            raise ValueError("a blob lies outside the Puffin file's blob area")
        snap = (meta.get("properties") or {}).get(SNAPSHOT_PROPERTY)
        found.append((None if snap is None else int(snap), tuple(decode_deletion_vector(data[offset:offset + size]))))
    tagged = sum(s is not None for s, _ in found)
    if tagged and tagged != len(found):
        raise ValueError(f"only {tagged} of {len(found)} deletion vector blobs carry {SNAPSHOT_PROPERTY}")
    if not tagged:
        return DeletionVectors(((None, tuple(sorted({p for _, ps in found for p in ps}))),))
    return DeletionVectors(tuple(sorted(found, key=lambda b: b[0] or 0)))


def build_puffin(blobs: Sequence[tuple[int, Sequence[int]]], data_file: str) -> tuple[bytes, int]:
    """A Puffin container of cumulative deletion vectors `(snapshot id, positions up to it)` in ascending snapshot
    order, for the data file at `data_file`: `(bytes, footer_size)`, footer_size being the JSON payload's length
    + 16 as DuckLake records it."""
    out = bytearray(PUFFIN_MAGIC)
    metas = []
    for snap, positions in blobs:
        blob = encode_deletion_vector(positions)
        metas.append({"type": DV_BLOB, "fields": [], "snapshot-id": -1, "sequence-number": -1,
                      "offset": len(out), "length": len(blob),
                      "properties": {"referenced-data-file": data_file, "cardinality": str(len(set(positions))),
                                     SNAPSHOT_PROPERTY: str(snap)}})
        out += blob
    payload = json.dumps({"blobs": metas, "properties": {"created-by": "ducklake"}},
                         separators=(",", ":")).encode("utf-8")
    out += PUFFIN_MAGIC + payload + struct.pack("<II", len(payload), 0) + PUFFIN_MAGIC
    return bytes(out), len(payload) + 16


def read_deletion_vectors(path: str, storage_options: Mapping[str, Any] | None = None) -> DeletionVectors:
    """Read and parse a `.puffin` delete file."""
    fs = filesystem(path, storage_options)
    try:
        with fs.open(path, "rb") as fh:
            data = fh.read()
        return parse_deletion_vectors(data)
    except (OSError, ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as exc:
        raise StorageError(f"cannot read deletion vector {path}: {exc}") from exc


def read_deletion_vector(path: str, storage_options: Mapping[str, Any] | None = None, *,
                         snapshot: int | None = None) -> list[int]:
    """The positions a `.puffin` delete file deletes as of `snapshot` (None: its latest set)."""
    return read_deletion_vectors(path, storage_options).at(snapshot)
