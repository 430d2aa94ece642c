"""Puffin deletion vectors (spec §3.7, versions §3.6): bare blobs and DuckLake 1.1's multi-snapshot containers —
round trips, the snapshot rule, and corrupt shapes refused."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from ducklake_cli.errors import StorageError
from ducklake_cli.storage.deletion_vector import (
    MAGIC,
    PUFFIN_MAGIC,
    build_puffin,
    decode_deletion_vector,
    encode_deletion_vector,
    parse_deletion_vectors,
    read_deletion_vector,
    read_deletion_vectors,
)

# Cumulative sets of three snapshots: 3 deletes 0-2, 7 adds 10, 100000 (a second Roaring container) and 2**32 + 5
# (a second 32-bit bitmap), 12 adds a dense run (a bitmap container).
BLOBS = [(3, [0, 1, 2]), (7, [0, 1, 2, 10, 100_000, 2**32 + 5]),
         (12, [0, 1, 2, 10, 100_000, 2**32 + 5, *range(200_000, 205_000)])]


@pytest.mark.parametrize("positions", [[], [0], [5, 3, 3, 1], list(range(70_000)), [2**33, 1, 2**40 + 7],
                                       list(range(0, 1 << 20, 3))])
def test_bare_blob_round_trip(positions: list[int]) -> None:
    blob = encode_deletion_vector(positions)
    assert blob[4:8] == MAGIC
    assert decode_deletion_vector(blob) == sorted(set(positions))
    parsed = parse_deletion_vectors(blob)
    assert parsed.snapshots == ()
    assert parsed.at(1) == parsed.at(None) == sorted(set(positions))


def test_container_round_trip_and_footer() -> None:
    data, footer = build_puffin(BLOBS, "/lake/main/t/f.parquet")
    assert data[:4] == PUFFIN_MAGIC and data[-4:] == PUFFIN_MAGIC
    length, flags = struct.unpack_from("<II", data, len(data) - 12)
    assert flags == 0 and footer == length + 16
    meta = json.loads(data[len(data) - 12 - length:len(data) - 12])
    assert meta["properties"] == {"created-by": "ducklake"}
    assert [b["properties"]["ducklake-snapshot-id"] for b in meta["blobs"]] == ["3", "7", "12"]
    assert [b["properties"]["cardinality"] for b in meta["blobs"]] == ["3", "6", "5006"]
    assert {b["type"] for b in meta["blobs"]} == {"deletion-vector-v1"}
    assert all(b["snapshot-id"] == -1 and b["sequence-number"] == -1 and b["fields"] == [] for b in meta["blobs"])
    assert {b["properties"]["referenced-data-file"] for b in meta["blobs"]} == {"/lake/main/t/f.parquet"}
    parsed = parse_deletion_vectors(data)
    assert parsed.snapshots == (3, 7, 12)
    assert [list(p) for _, p in parsed.blobs] == [sorted(p) for _, p in BLOBS]


def test_snapshot_selection_every_snapshot() -> None:
    parsed = parse_deletion_vectors(build_puffin(BLOBS, "f")[0])
    for snapshot in range(0, 15):
        want = [p for s, p in BLOBS if s <= snapshot]
        assert parsed.at(snapshot) == (sorted(want[-1]) if want else []), snapshot
    assert parsed.at(None) == sorted(BLOBS[-1][1])
    first = dict(parsed.first_deleted())
    assert first[0] == 3 and first[10] == 7 and first[2**32 + 5] == 7 and first[200_000] == 12
    assert len(first) == len(BLOBS[-1][1])


def test_read_from_file(tmp_path: Path) -> None:
    path = tmp_path / "d.puffin"
    path.write_bytes(build_puffin(BLOBS, "f")[0])
    assert read_deletion_vector(str(path), snapshot=8) == sorted(BLOBS[1][1])
    assert read_deletion_vectors(str(path)).snapshots == (3, 7, 12)


def _container(blobs: list[tuple[dict[str, object], bytes]], *, flags: int = 0) -> bytes:
    """A Puffin file with these (blob metadata without offset/length, bytes)."""
    out = bytearray(PUFFIN_MAGIC)
    metas = []
    for meta, body in blobs:
        metas.append({**meta, "offset": len(out), "length": len(body)})
        out += body
    payload = json.dumps({"blobs": metas}).encode()
    return bytes(out + PUFFIN_MAGIC + payload + struct.pack("<II", len(payload), flags) + PUFFIN_MAGIC)


def _dv(snapshot: int | None, positions: list[int],
        kind: str = "deletion-vector-v1") -> tuple[dict[str, object], bytes]:
    props = {} if snapshot is None else {"ducklake-snapshot-id": str(snapshot)}
    return {"type": kind, "fields": [], "properties": props}, encode_deletion_vector(positions)


def test_other_blob_types_ignored_and_untagged_sets_merge() -> None:
    parsed = parse_deletion_vectors(_container([_dv(5, [1]), ({"type": "apache-datasketches-theta-v1"}, b"xyz"),
                                                _dv(9, [1, 4])]))
    assert parsed.snapshots == (5, 9) and parsed.at(6) == [1]
    untagged = parse_deletion_vectors(_container([_dv(None, [1, 2]), _dv(None, [7])]))
    assert untagged.snapshots == () and untagged.at(0) == [1, 2, 7]


@pytest.mark.parametrize(("data", "why"), [
    (_container([_dv(5, [1]), _dv(None, [2])]), "carry ducklake-snapshot-id"),
    (_container([_dv(5, [1])], flags=1), "LZ4"),
    (b"PFA1garbagePFA1", "neither"),
    (b"\x00\x00\x00\x05nope\x00", "neither"),
    (PUFFIN_MAGIC + b"\x00" * 8 + struct.pack("<II", 999, 0) + PUFFIN_MAGIC, "length"),
    (_container([_dv(5, [1])])[:20] + b"\xff" + _container([_dv(5, [1])])[21:], "checksum"),
])
def test_corrupt_shapes_refused(tmp_path: Path, data: bytes, why: str) -> None:
    path = tmp_path / "bad.puffin"
    path.write_bytes(data)
    with pytest.raises(StorageError, match=why):
        read_deletion_vector(str(path))


@pytest.mark.parametrize("deleted", ["i % 3 = 0", "i < 70000", "i IN (1, 65536, 65537, 99999)"])
def test_duckdb_reads_our_bare_blob(tmp_path: Path, deleted: str) -> None:
    """DuckDB 1.5.5 writes a deletion vector; ours for the same positions, put in its place, reads the same rows
    (array, bitmap and several Roaring containers)."""
    from tests.support.oracle import attach_clause, oracle_connect

    catalog, data = tmp_path / "cat.sqlite", tmp_path / "data"
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", catalog, data))
        con.execute("CALL lake.set_option('write_deletion_vectors', true)")
        con.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
        con.execute("CREATE TABLE lake.t (i BIGINT)")
        con.execute("INSERT INTO lake.t SELECT range FROM range(100000)")
        con.execute(f"DELETE FROM lake.t WHERE {deleted}")
        want = con.execute("SELECT sum(i), count(*) FROM lake.t").fetchall()
        con.execute("DETACH lake")
        (path,) = list(data.rglob("*.puffin"))
        theirs = read_deletion_vector(str(path))
        path.write_bytes(encode_deletion_vector(theirs))
        con.execute(attach_clause("sqlite", catalog, data))
        assert con.execute("SELECT sum(i), count(*) FROM lake.t").fetchall() == want
    finally:
        con.close()
