"""`inspect` at scale keeps its results: column bounds narrowed in SQL pick what the typed comparison of every
distinct bound picked, on every backend; streamed `--files` / `--snapshots` JSON and CSV equal the in-memory
rendering byte for byte."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ducklake_cli.catalog.backends import byte_order
from ducklake_cli.cli.render import OutputFormat, StreamedResult, render, render_streamed
from ducklake_cli.lake import Lake
from ducklake_cli.ops import inspect as inspect_ops
from ducklake_cli.ops.results import Result
from tests.support.cli import run_cli
from tests.support.oracle import attach_clause, oracle_connect
from tests.support.spot import ALL_BACKENDS, Spot

# One INSERT per file (inlining off): bounds of every length and sign, text whose byte order differs from a
# case- or accent-folding collation, decimals, and floats (compared as numbers, never narrowed).
_COLUMNS = ("i BIGINT, h HUGEINT, u UBIGINT, f DOUBLE, dc DECIMAL(9,2), d DATE, ts TIMESTAMP, s VARCHAR, "
            "b BOOLEAN")
_BATCHES = [
    "(5, 170141183460469231731687303715884105727, 18446744073709551615, 1.5, 12.30, DATE '2024-01-02', "
    "TIMESTAMP '2024-01-02 03:04:05', 'a', true)",
    "(-12, -99, 0, -2.25e10, -0.50, DATE '1999-12-31', TIMESTAMP '1999-12-31 23:59:59.5', 'B', false)",
    "(123456, 7, 42, 1e-300, 9999999.99, DATE '2000-02-29', TIMESTAMP '2000-02-29 00:00:00', 'é', NULL), "
    "(-98765, 8, 43, 3.0, -9999999.99, DATE '0001-01-01', TIMESTAMP '0001-01-01 00:00:00', 'z', true)",
    "(0, 1000000000000000000000, 9, 0.1, 0.00, DATE '9999-12-31', TIMESTAMP '9999-12-31 23:59:59', 'a ', true)",
    "(99, -1000000000000000000000, 10, -0.0, 1.00, DATE '1970-01-01', TIMESTAMP '1970-01-01 00:00:00', 'A', false)",
    "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
]
# Stats texts DuckDB never writes but a catalog may hold: each stays a candidate, so picks stay as before.
_ODD = [("i", "min_value", "-0099999"), ("i", "max_value", "+0200000"), ("u", "min_value", " 3"),
        ("h", "max_value", "0001000000000000000000001"), ("s", "max_value", "zz\u00e9"), ("s", "min_value", "A"),
        ("dc", "min_value", "-1e8"), ("dc", "max_value", "010000000.00")]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A DuckDB-written SQLite lake: one table, one data file per INSERT, a delete file on one of them."""
    root = tmp_path_factory.mktemp("scale-inspect")
    cat, data = root / "src.sqlite", root / "data"
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", cat, data, extra_options="DATA_INLINING_ROW_LIMIT 0"))
        con.execute(f"CREATE TABLE lake.t ({_COLUMNS})")
        for values in _BATCHES:
            con.execute(f"INSERT INTO lake.t VALUES {values}")
        for k in range(12):  # bounds of one length class: narrowed to that class's MIN and MAX
            con.execute(f"INSERT INTO lake.t VALUES ({100 + k}, {k}, {k}, {k}.5, {k + 10}.25, DATE '2020-01-{k + 10}', "
                        f"TIMESTAMP '2020-01-01 00:00:{k + 10}', 'm{k}', true)")
        con.execute("DELETE FROM lake.t WHERE i = -98765")
        con.execute("CREATE TABLE lake.empty (x INTEGER)")
        con.execute("DETACH lake")
    finally:
        con.close()
    return cat, data


def _copy(source: tuple[Path, Path], spot: Spot) -> str:
    """The source lake's catalog on the spot's backend, with odd stats texts written into it."""
    cat, data = source
    res = run_cli("copy-catalog", str(cat), spot.catalog, "--data-path", str(data))
    assert res.returncode == 0, res.stderr
    with Lake.open(spot.catalog) as lake, lake.connection(write=True) as conn:
        q = lake.backend.qualify
        ids = {name: cid for cid, name in conn.exec_driver_sql(
            f"SELECT column_id, column_name FROM {q('ducklake_column')}").all()}
        files = [r[0] for r in conn.exec_driver_sql(
            f"SELECT data_file_id FROM {q('ducklake_data_file')} ORDER BY data_file_id").all()]
        for n, (column, bound, text) in enumerate(_ODD):
            conn.exec_driver_sql(
                f"UPDATE {q('ducklake_file_column_stats')} SET {bound} = '{text}' "
                f"WHERE column_id = {ids[column]} AND data_file_id = {files[n % len(files)]}")
    return spot.catalog


@pytest.mark.parametrize("spot", ALL_BACKENDS, indirect=True)
def test_bounds_narrowed_in_sql_pick_what_every_bound_picks(source: tuple[Path, Path], spot: Spot) -> None:
    catalog = _copy(source, spot)
    with Lake.open(catalog, read_only=True) as lake, lake.reader() as r:
        sid = r.latest_snapshot().snapshot_id
        t = r.find_table(sid, "t")
        by_id = t.column_by_id()
        leaves = t.leaf_columns()
        every = r.column_stats_at(sid, t.table_id)  # no types: every distinct bound comes back
        narrowed = r.column_stats_at(sid, t.table_id, {c.column_id: by_id[c.column_id].type for c in leaves})
        assert every.keys() == narrowed.keys()
        for c in leaves:
            name = c.name
            old = inspect_ops._stat_row(name, by_id[c.column_id], every.get(c.column_id))
            new = inspect_ops._stat_row(name, by_id[c.column_id], narrowed.get(c.column_id))
            assert new == old, name
        picked = {c.name: inspect_ops._stat_row(c.name, by_id[c.column_id], narrowed[c.column_id]) for c in leaves}
    assert (picked["i"].min, picked["i"].max) == ("-0099999", "+0200000")
    assert (picked["u"].min, picked["u"].max) == ("0", "18446744073709551615")
    assert (picked["h"].min, picked["h"].max) == (None, "0001000000000000000000001")  # int128: no DuckDB bounds
    assert (picked["s"].min, picked["s"].max) == ("A", "\u00e9")  # code points: "A" < "B" < "a" < "zzé" < "é"
    assert (picked["dc"].min, picked["dc"].max) == ("-1e8", "010000000.00")
    assert picked["d"].min == "0001-01-01"


@pytest.mark.parametrize("spot", ALL_BACKENDS, indirect=True)
def test_table_detail_counts_in_sql_what_the_file_rows_give(source: tuple[Path, Path], spot: Spot) -> None:
    catalog = _copy(source, spot)
    with Lake.open(catalog, read_only=True) as lake:
        detail = inspect_ops.table_detail(lake, "t")
        assert isinstance(detail, inspect_ops.TableDetail)
        with lake.reader() as r:
            sid = r.latest_snapshot().snapshot_id
            tid = r.find_table(sid, "t").table_id
            data = r.data_files(sid, [tid])
            live = {f.data_file_id for f in data}
            deletes = [d.delete_file_id for d in r.delete_files(sid, [tid]) if d.data_file_id in live]
            limits = [limit for limit, _ in inspect_ops.HISTOGRAM]
            buckets = [sum(1 for f in data if (limits[i - 1] if i else -1) <= f.file_size_bytes < limit)
                       for i, limit in enumerate([*limits, 1 << 62])]
    assert list(detail.file_size_histogram.values()) == buckets and sum(buckets) == detail.data_files == 18
    assert [d.delete_file_id for d in detail.delete_files] == deletes and len(deletes) == 1
    with Lake.open(str(source[0]), data_path=str(source[1]), read_only=True) as lake:
        original = inspect_ops.table_detail(lake, "t")  # the odd bounds were written into the copy only
        assert isinstance(original, inspect_ops.TableDetail)
    assert dataclasses.replace(detail, column_stats=()) == dataclasses.replace(original, column_stats=())


def test_bounds_compare_by_code_point_whatever_the_collation() -> None:
    from sqlalchemy import column, func, select
    from sqlalchemy.dialects import mysql, postgresql, sqlite

    def sql(dialect: object) -> str:
        return str(select(func.min(byte_order(column("v")))).compile(dialect=dialect))  # type: ignore[arg-type]

    assert 'COLLATE "C"' in sql(postgresql.dialect())
    assert "CAST(CONVERT(v USING utf8mb4) AS BINARY)" in sql(mysql.dialect())
    assert "min(v)" in sql(sqlite.dialect())


def test_bounds_in_canonical_form_come_back_narrowed(source: tuple[Path, Path]) -> None:
    with Lake.open(str(source[0]), data_path=str(source[1]), read_only=True) as lake, lake.reader() as r:
        sid = r.latest_snapshot().snapshot_id
        t = r.find_table(sid, "t")
        every = r.column_stats_at(sid, t.table_id)
        narrowed = r.column_stats_at(sid, t.table_id, {c.column_id: c.type for c in t.leaf_columns()})
        for c in t.leaf_columns():
            if c.type in ("int64", "uint64", "decimal(9,2)", "varchar", "date", "timestamp"):
                st, all_of = narrowed[c.column_id], every[c.column_id]
                assert 2 * len(st.mins) <= len(all_of.mins) and 2 * len(st.maxs) <= len(all_of.maxs), c.name


class _Terminal(io.StringIO):
    """Captured stdout that says it is a terminal (JSON is then indented)."""

    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def _stdout(tty: bool) -> Iterator[io.StringIO]:
    out = _Terminal() if tty else io.StringIO()
    saved, sys.stdout = sys.stdout, out
    try:
        yield out
    finally:
        sys.stdout = saved


@pytest.mark.parametrize("tty", [False, True])
@pytest.mark.parametrize("fmt", [OutputFormat.json, OutputFormat.csv])
def test_streamed_listings_equal_the_in_memory_rendering(source: tuple[Path, Path], fmt: OutputFormat,
                                                          tty: bool) -> None:
    cat, data = source
    with Lake.open(str(cat), data_path=str(data), read_only=True) as lake:
        cases: list[tuple[str, Callable[[], Result], Callable[[], StreamedResult]]] = [
                 ("all files", lambda: inspect_ops.files(lake), lambda: inspect_ops.file_stream(lake)),
                 ("t's files", lambda: inspect_ops.files(lake, "t"), lambda: inspect_ops.file_stream(lake, "t")),
                 ("no files", lambda: inspect_ops.files(lake, "empty"),
                  lambda: inspect_ops.file_stream(lake, "empty")),
                 ("snapshots", lambda: inspect_ops.snapshots(lake), lambda: inspect_ops.snapshot_stream(lake)),
                 ("t's snapshots", lambda: inspect_ops.snapshots(lake, "t"),
                  lambda: inspect_ops.snapshot_stream(lake, "t"))]
        for label, built, streamed in cases:
            with _stdout(tty) as old:
                render(built(), fmt)
            with _stdout(tty) as new:
                render_streamed(streamed(), fmt)
            assert new.getvalue() == old.getvalue(), label
            assert len(old.getvalue()) > (20 if label == "no files" else 400), label


@pytest.mark.parametrize("spot", ALL_BACKENDS, indirect=True)
def test_cli_streams_the_same_bytes_on_every_backend(source: tuple[Path, Path], spot: Spot) -> None:
    catalog = _copy(source, spot)
    with Lake.open(catalog, read_only=True) as lake:
        for fmt in (OutputFormat.json, OutputFormat.csv):
            for flag, built in (("--files", lambda: inspect_ops.files(lake)),
                                ("--snapshots", lambda: inspect_ops.snapshots(lake))):
                with _stdout(False) as old:
                    render(built(), fmt)
                res = run_cli("inspect", catalog, flag, "--format", fmt.value)
                assert res.returncode == 0, res.stderr
                assert res.stdout == old.getvalue(), (flag, fmt)
