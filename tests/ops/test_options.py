"""`options` against DuckDB 1.5.5's `ducklake_set_option`: twin lakes, one changed by DuckDB and one by us with the
same values, hold the same `ducklake_metadata` rows (value formats, scopes, UPDATE of an existing row), create no
snapshot, and DuckDB lists the same options on both; unset removes the row; bad input changes nothing."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import duckdb
import pytest

from ducklake_cli.catalog import options as catalog_options
from ducklake_cli.catalog.models import LakeMetadata, OptionValue
from ducklake_cli.engine.writer import sort_on_insert
from ducklake_cli.errors import DuckLakeError, NotFoundError, UsageError
from ducklake_cli.lake import Lake
from ducklake_cli.ops.cleanup import resolve_age
from ducklake_cli.ops.inspect import summary, table_detail
from ducklake_cli.ops.options import change_options, list_options
from ducklake_cli.ops.tables import file_spec, parse_size, pick_tables
from ducklake_cli.ops.write import inline_limit
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot

SETUP = ("CREATE SCHEMA lake.s", "CREATE TABLE lake.s.t (a INTEGER)", "CREATE TABLE lake.u (b INTEGER)")
# (DuckDB's arguments after the catalog, our key, our value, our scope): DuckDB is given typed SQL values, we are
# given the text a user types; both must store the same row.
CASES: list[tuple[str, str, str, dict[str, str]]] = [
    ("'target_file_size', '10MB'", "target_file_size", "10MB", {}),
    ("'target_file_size', '512MiB', table_name => 't', schema => 's'", "target_file_size", "512MiB",
     {"table": "s.t"}),
    ("'parquet_version', 2", "parquet_version", "2", {}),
    ("'parquet_version', 1, schema => 's'", "parquet_version", "1", {"schema": "s"}),
    ("'rewrite_delete_threshold', 0.5", "rewrite_delete_threshold", ".5", {}),
    ("'rewrite_delete_threshold', 0.1234567, table_name => 'u'", "rewrite_delete_threshold", "0.1234567",
     {"table": "u"}),
    ("'parquet_compression', 'ZSTD'", "parquet_compression", "ZSTD", {}),
    ("'parquet_compression', 'lz4_raw', schema => 's'", "parquet_compression", "LZ4_RAW", {"schema": "s"}),
    ("'parquet_compression_level', 3", "parquet_compression_level", "3", {}),
    ("'require_commit_message', true", "require_commit_message", "yes", {}),
    ("'expire_older_than', '1 week'", "expire_older_than", "1 week", {}),
    ("'delete_older_than', '7d'", "delete_older_than", "7d", {}),
    ("'data_inlining_row_limit', 20", "data_inlining_row_limit", "20", {}),
    ("'data_inlining_row_limit', 0, table_name => 'u'", "data_inlining_row_limit", "0", {"table": "main.u"}),
    ("'hive_file_pattern', false", "hive_file_pattern", "f", {}),
    ("'auto_compact', 'FALSE', table_name => 't', schema => 's'", "auto_compact", "FALSE", {"table": "s.t"}),
    ("'per_thread_output', true, schema => 's'", "per_thread_output", "t", {"schema": "s"}),
    ("'write_deletion_vectors', true", "write_deletion_vectors", "1", {}),
    ("'sort_on_insert', 0", "sort_on_insert", "0", {}),
    ("'parquet_row_group_size', 1000", "parquet_row_group_size", "1000", {}),
    ("'parquet_row_group_size_bytes', '1MB'", "parquet_row_group_size_bytes", "1MB", {}),
    # Set again: the existing row is updated, not duplicated.
    ("'target_file_size', '1.5GB'", "target_file_size", "1.5GB", {}),
    ("'auto_compact', true, table_name => 't', schema => 's'", "auto_compact", "true", {"table": "s.t"}),
]


def _rows(spot: Spot) -> tuple[list[tuple[Any, ...]], int, list[tuple[Any, ...]]]:
    """DuckDB's view of a lake: metadata rows (data_path left out), latest snapshot id, `ducklake_options()`."""
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        rows = con.execute("SELECT key, value, scope, scope_id FROM __ducklake_metadata_lake.ducklake_metadata "
                           "WHERE key <> 'data_path' ORDER BY ALL").fetchall()
        snap = con.execute("SELECT id FROM lake.current_snapshot()").fetchone()
        listed = con.execute("SELECT option_name, value, scope, scope_entry FROM lake.options() "
                             "WHERE option_name <> 'data_path' ORDER BY ALL").fetchall()
        con.execute("DETACH lake")
    finally:
        con.close()
    assert snap is not None
    return rows, int(snap[0]), listed


def _setup(spot: Spot) -> None:
    """DuckDB makes the SETUP schema and tables in the lake at `spot`."""
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        for sql in SETUP:
            con.execute(sql)
        con.execute("DETACH lake")
    finally:
        con.close()


def _twins(tmp_path: Path, backend: str) -> tuple[Spot, Spot]:
    spots = []
    for name in ("duck", "ours"):
        path = str(tmp_path / (f"{name}.sqlite" if backend == "sqlite" else f"{name}.ducklake"))
        spot = Spot(backend, path, path, tmp_path / f"{name}-data")
        _setup(spot)
        spots.append(spot)
    return spots[0], spots[1]


@pytest.mark.parametrize("backend", ["sqlite", "duckdb"])
def test_set_option_twins(tmp_path: Path, backend: str) -> None:
    duck, ours = _twins(tmp_path, backend)
    before = _rows(ours)[1]
    con = oracle_connect()
    try:
        con.execute(duck.attach())
        for args, *_ in CASES:
            con.execute(f"CALL lake.set_option({args})")
        con.execute("DETACH lake")
    finally:
        con.close()
    with Lake.open(ours.catalog) as lake:
        for _, key, text, scope in CASES:
            change_options(lake, assignments={key: text}, **scope)
    duck_rows, duck_snap, duck_listed = _rows(duck)
    our_rows, our_snap, our_listed = _rows(ours)
    assert our_rows == duck_rows
    assert our_listed == duck_listed
    assert our_snap == duck_snap == before  # options create no snapshot

    with Lake.open(ours.catalog) as lake:
        listed = {(r.option_name, r.scope, r.scope_entry): r.value for r in list_options(lake).options}
        assert listed[("target_file_size", "GLOBAL", None)] == "1500000000"
        assert listed[("target_file_size", "TABLE", "s.t")] == "536870912"
        assert listed[("parquet_version", "SCHEMA", "s")] == "V1"
        assert listed[("rewrite_delete_threshold", "TABLE", "main.u")] == "0.123457"
        # Effective for s.t: table row, then schema row, then global, then the default.
        eff = {r.option_name: (r.value, r.scope) for r in list_options(lake, table="s.t").options}
        assert eff["target_file_size"] == ("536870912", "TABLE")
        assert eff["parquet_compression"] == ("lz4_raw", "SCHEMA")
        assert eff["parquet_version"] == ("V1", "SCHEMA")
        assert eff["rewrite_delete_threshold"] == ("0.500000", "GLOBAL")
        assert eff["expire_older_than"] == ("1 week", "GLOBAL")
        # inspect shows the same, for the lake and for the table.
        lake_rows = {(r.option_name, r.scope) for r in summary(lake).options}
        assert ("auto_compact", "TABLE") in lake_rows and ("sort_on_insert", "GLOBAL") in lake_rows
        detail = {r.option_name: (r.value, r.scope, r.scope_entry) for r in table_detail(lake, "s.t").options}
        assert detail["target_file_size"] == ("536870912", "TABLE", "s.t")
        assert detail["data_inlining_row_limit"] == ("20", "GLOBAL", None)

        # Unset: the row goes, the next scope's value applies; unsetting again changes nothing.
        done = change_options(lake, assignments={}, unset=["target_file_size", "auto_compact"], table="s.t")
        assert [c.action for c in done.changes] == ["unset", "unset"]
        again = change_options(lake, assignments={}, unset=["target_file_size"], table="s.t")
        assert [c.action for c in again.changes] == ["unchanged"]
        eff = {r.option_name: (r.value, r.scope) for r in list_options(lake, table="s.t").options}
        assert eff["target_file_size"] == ("1500000000", "GLOBAL")
        assert eff["auto_compact"] == ("true", "DEFAULT")
    rows = _rows(ours)[0]
    assert not [r for r in rows if r[0] in ("target_file_size", "auto_compact") and r[2] == "table"]


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_bad_options_change_nothing(spot: Spot) -> None:
    _setup(spot)
    before = Path(spot.catalog).read_bytes()
    bad: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"assignments": {"nonsense": "1"}}, NotFoundError, "unknown option 'nonsense'"),
        ({"assignments": {"version": "2"}}, NotFoundError, "fixed when the lake is created"),
        ({"assignments": {"target_file_size": "10PB"}}, DuckLakeError, "is not a size"),
        ({"assignments": {"parquet_version": "3"}}, DuckLakeError, "1 or 2"),
        ({"assignments": {"parquet_compression": "none"}}, DuckLakeError, "not a Parquet codec"),
        ({"assignments": {"parquet_row_group_size": "0"}}, DuckLakeError, "greater than 0"),
        ({"assignments": {"rewrite_delete_threshold": "1.5"}}, DuckLakeError, "between 0 and 1"),
        ({"assignments": {"rewrite_delete_threshold": "nan"}}, DuckLakeError, "between 0 and 1"),
        ({"assignments": {"auto_compact": "on"}}, DuckLakeError, "not a boolean"),
        ({"assignments": {"data_inlining_row_limit": "-1"}}, DuckLakeError, "whole number"),
        ({"assignments": {"expire_older_than": "garbage"}}, DuckLakeError, "not an interval"),
        ({"assignments": {"expire_older_than": "1 day"}, "schema": "s"}, DuckLakeError, "whole lake"),
        ({"assignments": {"require_commit_message": "true"}, "table": "u"}, DuckLakeError, "whole lake"),
        ({"assignments": {"auto_compact": "true"}, "table": "nope"}, NotFoundError, "does not exist"),
        ({"assignments": {"auto_compact": "true"}, "schema": "nope"}, NotFoundError, "does not exist"),
        ({"assignments": {"auto_compact": "true"}, "unset": ["auto_compact"]}, UsageError, "both set and unset"),
        ({"assignments": {}, "unset": ["nonsense"]}, NotFoundError, "unknown option"),
        # A good item next to a bad one: nothing is written.
        ({"assignments": {"target_file_size": "1MB", "sort_on_insert": "maybe"}}, DuckLakeError, "not a boolean"),
    ]
    with Lake.open(spot.catalog) as lake:
        for kwargs, error, text in bad:
            with pytest.raises(error, match=text):
                change_options(lake, **kwargs)
    assert Path(spot.catalog).read_bytes() == before


def test_normalise_matches_duckdb_formats() -> None:
    """Value formats DuckDB 1.5.5 was seen to store (spec §2, /tmp/docs/optreg.md)."""
    cases = {
        ("target_file_size", "10 MB"): "10000000", ("target_file_size", "10KiB"): "10240",
        ("target_file_size", "1 gigabyte"): "1000000000", ("target_file_size", "0.5KB"): "500",
        ("target_file_size", "1000 bytes"): "1000", ("target_file_size", "1TiB"): "1099511627776",
        ("rewrite_delete_threshold", "1"): "1.000000", ("rewrite_delete_threshold", "5e-1"): "0.500000",
        ("rewrite_delete_threshold", "0.9999999"): "1.000000", ("parquet_version", " 2"): "V2",
        ("data_inlining_row_limit", "+20"): "20", ("auto_compact", "N"): "false", ("HIVE_FILE_PATTERN", "Y"): "true",
        ("expire_older_than", "2 days 12 hours"): "2 days 12 hours",
    }
    for (key, text), stored in cases.items():
        assert catalog_options.normalise(key, text)[1] == stored, (key, text)


@pytest.mark.postgres
@pytest.mark.parametrize("spot", ["postgres"], indirect=True)
def test_options_on_postgres(spot: Spot) -> None:
    _setup(spot)
    with Lake.open(spot.catalog) as lake:
        change_options(lake, assignments={"target_file_size": "10MB", "auto_compact": "no"}, table="s.t")
        change_options(lake, assignments={"target_file_size": "1GB"})
        change_options(lake, assignments={"target_file_size": "2GB"})
        change_options(lake, assignments={}, unset=["auto_compact"], table="s.t")
    rows, _, listed = _rows(spot)
    assert [r for r in rows if r[0] == "target_file_size"] == [
        ("target_file_size", "10000000", "table", 2), ("target_file_size", "2000000000", None, None)]
    assert ("target_file_size", "10000000", "TABLE", "s.t") in listed
    assert not [r for r in rows if r[0] == "auto_compact"]


# ----- readers: every option is read through catalog/options.py, as DuckDB 1.5.5 reads the stored text --------


def _meta(*rows: tuple[str, str, str | None, int | None], encrypted: bool = False) -> LakeMetadata:
    return LakeMetadata("1.0", "/data/", None, encrypted, tuple(OptionValue(*r) for r in rows))


def test_parse_uint_is_duckdbs_cast() -> None:
    """Integer options are read with DuckDB's VARCHAR → UBIGINT cast (`Value(text).GetValue<idx_t>()`)."""
    con = oracle_connect()
    try:
        for text in (" 5 ", "+5", "1e2", "20.5", "20.4", "2.5", "0x10", "0b11", "1_000", "-0", "1.5e1", ".5", "",
                     "abc", "1e20", "-1", "1GiB", "512MB", "18446744073709551615", "18446744073709551616"):
            try:
                want = con.execute("SELECT CAST(? AS UBIGINT)", [text]).fetchone()
            except duckdb.Error:
                want = None
            try:
                got: int | None = catalog_options.parse_uint(text)
            except ValueError:
                got = None
            assert (got if got is None else (got,)) == want, text
    finally:
        con.close()


def test_readers_follow_duckdb() -> None:
    meta = _meta(("auto_compact", "TRUE", "table", 1), ("auto_compact", "false", "schema", 7),
                 ("auto_compact", "true", None, None), ("hive_file_pattern", "False", "table", 1),
                 ("parquet_compression", "ZSTD", "schema", 7), ("parquet_row_group_size", " 1e3 ", None, None),
                 ("target_file_size", "1073741824", "table", 1), ("target_file_size", "1GiB", "table", 2),
                 ("data_inlining_row_limit", "0", "table", 1), ("require_commit_message", "true", "table", 1),
                 ("sort_on_insert", "1", "table", 1))
    # Lookup order: table, schema, global, default; LakeMetadata.option is the same lookup without the default.
    assert catalog_options.effective(meta, "auto_compact", table_id=1, schema_id=7).source == "table"
    assert catalog_options.effective(meta, "auto_compact", table_id=3, schema_id=7).source == "schema"
    assert catalog_options.effective(meta, "auto_compact", table_id=3, schema_id=8).source == "global"
    assert catalog_options.effective(meta, "sort_on_insert", table_id=3).source == "default"
    assert meta.option("auto_compact", table_id=1) == "TRUE" and meta.option("per_thread_output") is None
    # Booleans: DuckDB compares the text with 'true' ('TRUE', '1' written by hand read false).
    assert not catalog_options.flag(meta, "auto_compact", table_id=1, schema_id=7)
    assert catalog_options.flag(meta, "auto_compact", table_id=3, schema_id=8)
    assert not catalog_options.flag(meta, "sort_on_insert", table_id=1) and sort_on_insert(None)
    assert not sort_on_insert("1") and not sort_on_insert("TRUE") and sort_on_insert("true")
    assert catalog_options.flag(meta, "hive_file_pattern", table_id=9)
    assert not catalog_options.flag(_meta(encrypted=True), "hive_file_pattern")  # DuckDB: flat names when encrypted
    # require_commit_message is read lake-wide only.
    assert not catalog_options.flag(meta, "require_commit_message", table_id=1)
    # Integers: DuckDB's cast; a size with a unit stored by hand is refused, as DuckDB refuses it.
    with pytest.raises(DuckLakeError, match="'1GiB' .* not a whole number"):
        catalog_options.uint(meta, "target_file_size", table_id=2)
    lake = cast(Any, SimpleNamespace(storage_options={}, backend=SimpleNamespace(transactional_ddl=True)))
    assert inline_limit(lake, meta, (), table_id=1, schema_id=7) == 0
    assert inline_limit(lake, meta, (), table_id=2, schema_id=7) == 10
    spec = file_spec(lake, meta, table_dir="/t/", columns=(), table_id=1, schema_id=7)
    assert (spec.compression, spec.compression_level, spec.row_group_size, spec.target_file_size, spec.hive) == (
        "zstd", None, 1000, 1 << 30, False)
    spec = file_spec(lake, _meta(), table_dir="/t/", columns=())
    assert (spec.compression, spec.row_group_size, spec.target_file_size, spec.hive) == (
        "snappy", 122_880, 1 << 29, True)
    tables = [SimpleNamespace(table_id=i, schema_id=s) for i, s in ((1, 7), (2, 7), (3, 8))]
    reader = cast(Any, SimpleNamespace(tables=lambda _snapshot: tables))
    assert [t.table_id for t in pick_tables(reader, 1, None, meta)] == [3]
    # Intervals: the option, else the default, and where it came from.
    now = dt.datetime(2026, 1, 10, tzinfo=dt.UTC)
    assert resolve_age(_meta(), older_than=None, all_files=False, now=now).source == \
        "older than 2026-01-08T00:00:00+00:00 (default '2 days')"
    assert resolve_age(_meta(("delete_older_than", "1 week", None, None)), older_than=None, all_files=False,
                       now=now).source == "older than 2026-01-03T00:00:00+00:00 (option delete_older_than = '1 week')"
    assert parse_size("1 gigabyte") == 10 ** 9 and parse_size("512MiB") == 1 << 29
    with pytest.raises(UsageError, match="cannot read the size"):
        parse_size("10PB")


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_auto_compact_read_as_duckdb_reads_it(spot: Spot) -> None:
    """A hand-written `TRUE` is not `true` to DuckDB's merge_adjacent_files, nor to our maintenance verbs."""
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        con.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
        for name in ("a", "b", "c"):
            con.execute(f"CREATE TABLE lake.{name} (x INTEGER)")
            con.execute(f"INSERT INTO lake.{name} VALUES (1)")
            con.execute(f"INSERT INTO lake.{name} VALUES (2)")
        con.execute("CALL lake.set_option('auto_compact', 'TRUE', table_name => 'a')")  # stored as 'true'
        con.execute("CALL lake.set_option('auto_compact', 'true', table_name => 'b')")
        con.execute("DETACH lake")
        db = sqlite3.connect(spot.catalog)
        db.execute("UPDATE ducklake_metadata SET value = 'TRUE' WHERE key = 'auto_compact' AND scope_id = "
                   "(SELECT table_id FROM ducklake_table WHERE table_name = 'b')")
        db.commit()
        db.close()
        with Lake.open(spot.catalog) as lake, lake.reader() as r:
            ours = sorted(t.name for t in pick_tables(r, r.latest_snapshot().snapshot_id, None, r.metadata()))
        con.execute(spot.attach())
        theirs = sorted(row[1] for row in con.execute("CALL ducklake_merge_adjacent_files('lake')").fetchall())
    finally:
        con.close()
    assert ours == theirs == ["a", "c"]

