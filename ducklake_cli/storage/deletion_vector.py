"""Read DuckLake's Puffin deletion vectors: one bare Iceberg `deletion-vector-v1` blob per file (spec §3.7)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from typing import Any

from ducklake_cli.errors import StorageError
from ducklake_cli.storage.files import filesystem

MAGIC = b"\xd1\xd3\x39\x64"
_COOKIE_RUNS = 12347
_COOKIE_NO_RUNS = 12346


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
        elif card_minus_1 + 1 <= 4096:
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


def read_deletion_vector(path: str, storage_options: Mapping[str, Any] | None = None) -> list[int]:
    """Read and decode a `.puffin` delete file."""
    fs = filesystem(path, storage_options)
    try:
        with fs.open(path, "rb") as fh:
            blob = fh.read()
        return decode_deletion_vector(blob)
    except (OSError, ValueError, struct.error) as exc:
        raise StorageError(f"cannot read deletion vector {path}: {exc}") from exc
