"""`maintain compact` and `maintain rewrite` on registered (name-mapped) files against DuckDB 1.5.5's
`ducklake_merge_adjacent_files` / `ducklake_rewrite_data_files` on twin lakes: the same pyarrow-written files (no
field ids: reordered columns, nested fields, a hive-partitioned directory) registered by DuckDB in one lake and by
us in the other, merged with each other, with field-id files and around inlined rows; DuckDB keeps inserting into
both. At every snapshot both lakes hold as many live files, and both tools read the same rows with the same row
ids from both; `maintain cleanup` leaves the registered files alone (they lie outside the data path)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ducklake_cli.catalog.snapshots import SnapshotSelector
from ducklake_cli.lake import Lake
from tests.ops.test_register import Twins, comparable
from tests.support.cli import run_main

pytestmark = pytest.mark.spark

DDL = ("CREATE TABLE t (id INTEGER, name VARCHAR, s STRUCT(a INTEGER, b VARCHAR), l INTEGER[])",
       "CREATE TABLE hp (id BIGINT, v DOUBLE, region VARCHAR)",
       "ALTER TABLE hp SET PARTITIONED BY (region)")
TABLES = ("t", "hp")
STRUCT_BA = pa.struct([("b", pa.string()), ("a", pa.int32())])


def _write_files(d: Path) -> None:
    for sub in ("hive/region=eu", "hive/region=us"):
        (d / sub).mkdir(parents=True)
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "name": ["a", None, "c"]}), d / "a.parquet")
    pq.write_table(pa.table({"name": ["d", "e"], "id": pa.array([4, 5], pa.int32())}), d / "b.parquet")  # reordered
    pq.write_table(pa.table({  # nested, every level in another order than the table's
        "l": pa.array([[6, 7], None], pa.list_(pa.int32())),
        "s": pa.array([{"b": "x", "a": 6}, None], STRUCT_BA),
        "name": ["f", "g"], "id": pa.array([6, 7], pa.int32())}), d / "c.parquet")
    pq.write_table(pa.table({"id": pa.array([40, 41, 42, 43], pa.int32()), "name": ["p", "q", "r", "s"]}),
                   d / "d.parquet")
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "v": [1.5, 2.5]}), d / "hive/region=eu/f1.parquet")
    pq.write_table(pa.table({"id": pa.array([3], pa.int64()), "v": [3.5]}), d / "hive/region=us/f2.parquet")
    pq.write_table(pa.table({"id": pa.array([5], pa.int64()), "v": [5.5]}), d / "hive/region=eu/f3.parquet")


# Each step is one snapshot on each lake: ("sql", …) DuckDB runs on both; ("register", table, path, flags) DuckDB's
# ducklake_add_data_files on one, our `register` on the other; ("compact"/"rewrite", table) likewise.
STEPS: tuple[tuple[str, ...], ...] = (
    ("sql", "INSERT INTO t SELECT i, 'n' || i, {'a': i, 'b': 'q'}, [i] FROM range(100, 130) r(i)"),  # a file
    ("register", "t", "a.parquet", "allow_missing"),
    ("register", "t", "b.parquet", "allow_missing"),
    ("sql", "INSERT INTO t VALUES (200, 'inlined', NULL, NULL)"),  # row ids of the files are not contiguous
    ("register", "t", "c.parquet", ""),
    ("register", "t", "d.parquet", "allow_missing"),
    ("sql", "DELETE FROM t WHERE id = 41"),  # d.parquet has a delete: not merged, but rewritten below
    ("register", "hp", "hive/*/*.parquet", "hive_partitioning"),
    ("sql", "INSERT INTO hp VALUES (9, 9.5, 'eu')"),
    ("compact", "t"),
    ("compact", "hp"),
    ("rewrite", "t"),
    ("sql", "INSERT INTO t SELECT i, NULL, NULL, [i, i] FROM range(300, 320) r(i)"),
    ("sql", "INSERT INTO hp SELECT i, i / 2, 'us' FROM range(20) r(i)"),
    ("compact", "t"),  # the merged file with the new one
)


def _duck_step(twins: Twins, step: tuple[str, ...], side: str) -> str:
    kind, *args = step
    if kind == "sql":
        return args[0]
    if kind == "register":
        table, path, flag = args
        return (f"CALL ducklake_add_data_files('lake', '{table}', '{twins.files(side) / path}'"
                f"{f', {flag} => true' if flag else ''})")
    if kind == "compact":
        return f"CALL ducklake_merge_adjacent_files('lake', '{args[0]}')"
    return f"CALL ducklake_rewrite_data_files('lake', '{args[0]}', delete_threshold => 0.2)"


def _our_step(twins: Twins, step: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> str:
    kind, *args = step
    catalog = twins.spots["ours"].catalog
    if kind == "register":
        table, path, flag = args
        cmd = ["register", catalog, table, str(twins.files("ours") / path),
               *([f"--{flag.replace('_', '-')}"] if flag else [])]
    elif kind == "compact":
        cmd = ["maintain", "compact", catalog, "--table", args[0], "--yes"]
    else:
        cmd = ["maintain", "rewrite", catalog, "--table", args[0], "--delete-threshold", "0.2", "--yes"]
    code, out, err = run_main(capsys, *cmd)
    assert code == 0, (step, err)
    return out + err


def _live_files(twins: Twins, side: str, snapshots: range) -> list[tuple[int, int, int]]:
    """(snapshot, table id, live data files) at each snapshot."""
    rows = twins.duckdb(twins.spots[side], [
        f"SELECT {s}, table_id, count(*) FROM __ducklake_metadata_lake.ducklake_data_file WHERE begin_snapshot <= {s}"
        f" AND (end_snapshot IS NULL OR end_snapshot > {s}) GROUP BY table_id ORDER BY table_id" for s in snapshots])
    return [r for rs in rows for r in rs]


def _duck_reads(twins: Twins, side: str, snapshots: range) -> dict[tuple[int, str], list[tuple[Any, ...]]]:
    keys = [(s, t) for s in snapshots for t in TABLES]
    got = twins.duckdb(twins.spots[side], [f"SELECT rowid, * FROM {t} AT (VERSION => {s}) ORDER BY rowid"
                                           for s, t in keys])
    return {k: [tuple(comparable(v) for v in r) for r in rs] for k, rs in zip(keys, got, strict=True)}


def _our_reads(twins: Twins, side: str, snapshots: range, spark: Any) -> dict[tuple[int, str], list[tuple[Any, ...]]]:
    """Every (snapshot, table) read by our scan, as one Spark job per table."""
    from pyspark.sql import functions as F

    from ducklake_cli.ops.query import table_dataframe

    out: dict[tuple[int, str], list[tuple[Any, ...]]] = {(s, t): [] for s in snapshots for t in TABLES}
    with Lake.open(twins.spots[side].catalog) as lake:
        for t in TABLES:
            frames = [table_dataframe(lake, t, at=SnapshotSelector(s), spark=spark, with_rowid=True)
                      for s in snapshots]
            union = None
            for s, df in zip(snapshots, frames, strict=True):
                df = df.select(F.lit(s).alias("__snap"), "rowid", *[c for c in df.columns if c != "rowid"])
                union = df if union is None else union.unionByName(df)
            assert union is not None
            for r in union.collect():
                out[(r[0], t)].append(tuple(comparable(v) for v in r[1:]))
    return {k: sorted(v, key=lambda r: int(r[0])) for k, v in out.items()}


def test_compact_and_rewrite_registered_files_like_duckdb(tmp_path: Path, spark: Any,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    twins = Twins(tmp_path, "sqlite", DDL)
    for side in ("duck", "ours"):
        _write_files(twins.files(side))
    first = twins.duckdb(twins.spots["duck"], ["SELECT max(snapshot_id) FROM ducklake_snapshots('lake')"])[0][0][0]
    said = []
    for step in STEPS:
        twins.duckdb(twins.spots["duck"], [_duck_step(twins, step, "duck")])
        if step[0] == "sql":
            twins.duckdb(twins.spots["ours"], [step[1]])
        else:
            said.append(_our_step(twins, step, capsys))
    snapshots = range(first, first + len(STEPS) + 1)
    last = twins.duckdb(twins.spots["ours"], ["SELECT max(snapshot_id) FROM ducklake_snapshots('lake')"])[0][0][0]
    assert last == snapshots[-1]  # one snapshot per step on both lakes

    assert _live_files(twins, "ours", snapshots) == _live_files(twins, "duck", snapshots)
    expected = _duck_reads(twins, "duck", snapshots)
    assert _duck_reads(twins, "ours", snapshots) == expected
    assert _our_reads(twins, "ours", snapshots, spark) == expected
    # DuckDB's lake read by our scan from its first merge on (before it, the twins' catalogs are alike).
    merged = range(first + 1 + [s[0] for s in STEPS].index("compact"), snapshots[-1] + 1)
    assert _our_reads(twins, "duck", merged, spark) == {k: v for k, v in expected.items() if k[0] in merged}
    assert len(expected[(snapshots[-1], "t")]) == 30 + 3 + 2 + 1 + 2 + 3 + 20

    # Merged and rewritten files are ordinary ones (field ids, no mapping); the inputs outside the data path are
    # scheduled by path as DuckDB schedules them, and the reports say cleanup will not delete them.
    def catalog(side: str) -> list[list[tuple[Any, ...]]]:
        prefix = str(tmp_path / side) + "/"

        def plain(v: Any) -> Any:  # paths relative to the side, file names without their UUIDs
            return re.sub(r"ducklake-[0-9a-f-]{36}", "ducklake-*", v.replace(prefix, "")) if isinstance(v, str) else v

        return [sorted(tuple(plain(v) for v in r) for r in rs)
                for rs in twins.duckdb(twins.spots[side], [
                    "SELECT table_id, begin_snapshot, end_snapshot, record_count, partition_id, mapping_id, "
                    "path_is_relative FROM __ducklake_metadata_lake.ducklake_data_file",
                    "SELECT data_file_id, path, path_is_relative FROM "
                    "__ducklake_metadata_lake.ducklake_files_scheduled_for_deletion",
                    "SELECT * FROM __ducklake_metadata_lake.ducklake_file_partition_value"])]

    ours, duck = catalog("ours"), catalog("duck")
    assert ours[1:] == duck[1:]
    # partial_max and row_id_start aside (we embed every row id), the data file rows agree.
    assert ours[0] == duck[0]
    assert any(not r[2] and r[1].startswith("files/") for r in ours[1])
    assert all("outside the data path" in text for text in said[-4:-1]), said

    # cleanup deletes the merged field-id inputs under the data path but never the registered files.
    code, out, err = run_main(capsys, "maintain", "cleanup", twins.spots["ours"].catalog, "--all", "--yes",
                              "--format", "json")
    assert code == 0, err
    skipped = {f["path"]: f["reason"] for f in json.loads(out)["files"] if f["action"] == "skip"}
    assert skipped and all(reason == "outside the data path" for reason in skipped.values())
    assert all(Path(p).exists() for p in skipped)
    assert (twins.files("ours") / "a.parquet").exists()
