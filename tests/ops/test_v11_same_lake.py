"""Same lake, two versions (issue #28 acceptance): a DuckDB-built 1.0 lake is cloned and the clone upgraded to 1.1 by
us; the two catalogs then differ only where DuckLake 1.1 says they must (spec versions §2.6, §3), and our reader
reads the 1.1 clone exactly as DuckDB 1.5.5 reads the 1.0 original, at every snapshot. Then the DML and DDL twin
sequences run on both through our tool (DuckDB 1.5.5 runs them on a third, 1.0, twin as the oracle): the 1.0 lake
still equals DuckDB's, the 1.1 lake reads the same at every snapshot, and the catalogs again differ only where 1.1
says.

Legacy lakes (0.2-0.4, written by DuckDB 1.3/1.4/1.5.1) are upgraded by us to 1.0 and, another copy, straight to
1.1: the catalogs differ only as 1.1's, and our reads of the 1.1 one equal DuckDB 1.5.5's of its own migration.

Default tier: SQLite, the scenarios and sequences whose 1.1 shape differs most (inlined companions with renamed
system columns, type changes whose bounds the upgrade clears, nested fields, delete files, deletion vectors), the
1.4.4 legacy catalog; the full tier: every scenario, sequence and legacy lake on SQLite, DuckDB-file and PostgreSQL
catalogs, at every snapshot. The 1.1 catalog is made by `ducklake upgrade --to 1.1` (`tests.support.v11.VIA_CLI`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pytest import ParameterSet

from ducklake_cli.catalog import schema as s
from tests.ops.test_ddl_twins import SEQUENCES as DDL_SEQUENCES
from tests.ops.test_dml_twins import SEQUENCES as DML_SEQUENCES
from tests.support.built_lakes import BuiltLakes
from tests.support.catalog_dump import version_of
from tests.support.ddl_twins import DdlSequence, DdlTwins
from tests.support.diff import compare_reads, duckdb_lake_rows
from tests.support.dml_twins import Lakes, Sequence_, twin_spots
from tests.support.lakes import SCENARIOS
from tests.support.legacy_lakes import LegacyLake, LegacyLakes, catalog_copy, legacy_cases, oracle_reads, oracle_twin
from tests.support.oracle import oracle_connect, transaction
from tests.support.services import pg_database, require_env
from tests.support.spot import ORACLE_BACKENDS, Spot
from tests.support.tiers import tiered
from tests.support.v11 import (
    Dump,
    assert_same_but_v11,
    cli_upgrade_v11,
    clone,
    latest_snapshot,
    rows_of,
    snapshot_ids,
    upgrade_v11,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Scenarios of the default tier (SQLite): inlined rows and their history (renamed system columns), type promotion
# (bounds the upgrade clears), nested evolution, delete files and deletion vectors.
CATALOG_SCENARIOS = frozenset({"inlined_updates", "type_promotion", "nested_evolution", "catalog_example",
                               "deletion_vectors"})
READ_SCENARIOS = frozenset({"inlined_updates"})
# Where row ids are compared too (they come from the renamed `_ducklake_row_id` for inlined rows).
ROWID_SCENARIOS = frozenset({"inlined_updates", "flush_inlined", "updates", "merge_adjacent", "rewrite_files",
                             "add_files", "deletion_vectors"})
DML_DEFAULT = frozenset({"inlined_rows"})  # "updates" (delete files) runs in the full tier: ~30 s more
DDL_DEFAULT = frozenset({"add_columns", "nested_renames"})


def _cases(default: frozenset[str]) -> list[ParameterSet]:
    cases = [pytest.param(b, sc, marks=[pytest.mark.postgres] if b == "postgres" else [], id=f"{b}-{sc}")
             for b in ORACLE_BACKENDS for sc in sorted(SCENARIOS)]
    return tiered(cases, lambda case: case[0] == "sqlite" and case[1] in default)


@contextlib.contextmanager
def upgraded_clone(built_lakes: BuiltLakes, backend: str, scenario: str, tmp: Path
                   ) -> Iterator[tuple[Spot, Spot, list[int]]]:
    """The shared 1.0 lake of a scenario, its clone upgraded to 1.1 by us, and the snapshot ids."""
    original, ids = built_lakes.get(backend, scenario)
    with contextlib.ExitStack() as stack:
        copy = clone(original, tmp / "v11", stack=stack)
        upgrade_v11(copy.catalog)
        yield original, copy, ids


@pytest.mark.parametrize(("backend", "scenario"), _cases(CATALOG_SCENARIOS))
def test_catalog_differs_only_as_v11(built_lakes: BuiltLakes, backend: str, scenario: str, tmp_path: Path) -> None:
    """Row for row equal, but for the version, 1.1's columns (NULL) and table (empty), the renamed inlined system
    columns and the repairs."""
    with upgraded_clone(built_lakes, backend, scenario, tmp_path) as (original, copy, _):
        assert version_of(original.catalog) == s.FORMAT_VERSION
        assert_same_but_v11(copy.catalog, original.catalog)


@pytest.mark.spark
@pytest.mark.parametrize(("backend", "scenario"), _cases(READ_SCENARIOS))
def test_reads_as_duckdb_reads_the_original(built_lakes: BuiltLakes, backend: str, scenario: str, tmp_path: Path,
                                             spark: SparkSession) -> None:
    """Every table at every snapshot: our read of the 1.1 clone and of the 1.0 original equal DuckDB 1.5.5's read of
    the original (row ids too where they move)."""
    with upgraded_clone(built_lakes, backend, scenario, tmp_path) as (original, copy, ids):
        rowid = scenario in ROWID_SCENARIOS
        expected = duckdb_lake_rows(original, ids, with_rowid=rowid)
        compare_reads(expected, original.catalog, spark, f"[{backend}] {scenario} 1.0", with_rowid=rowid)
        compare_reads(expected, copy.catalog, spark, f"[{backend}] {scenario} 1.1", with_rowid=rowid)


# --------------------------------------------------------------------------------------------------------------
# the twin sequences on both versions


def _seq_cases(sequences: list[Sequence_] | list[DdlSequence], default: frozenset[str]) -> list[ParameterSet]:
    cases = [pytest.param(seq, b, marks=[pytest.mark.postgres] if b == "postgres" else [], id=f"{seq.name}-{b}")
             for b in ORACLE_BACKENDS for seq in sequences]
    return tiered(cases, lambda case: case[1] == "sqlite" and case[0].name in default)


def _our_reads_equal(lakes: Lakes, v10: Spot, v11: Spot) -> None:
    """Our reader: the same rows and row ids in both lakes at every snapshot."""
    ids = [sid for sid, _ in lakes.snapshots(v10)]
    assert latest_snapshot(v11.catalog) == ids[-1], "the two lakes have different snapshots"
    got, want = lakes.our_rows(v11, ids), lakes.our_rows(v10, ids)
    for sid in ids:
        assert got[sid] == want[sid], f"snapshot {sid}: our read of the 1.1 lake differs from the 1.0 lake's"


@pytest.mark.spark
@pytest.mark.parametrize(("seq", "backend"), _seq_cases(DML_SEQUENCES, DML_DEFAULT))
def test_dml_twins_on_both_versions(seq: Sequence_, backend: str, tmp_path: Path, spark: SparkSession) -> None:
    """DuckDB on lake A (1.0), we on lake B (1.0) and on C (B's clone upgraded to 1.1): B equals A after every step as
    today; C reads as B at every snapshot and its catalog differs from B's only as 1.1's."""
    con = oracle_connect()
    try:
        with twin_spots(backend, tmp_path) as (a, b), contextlib.ExitStack() as stack:
            lakes = Lakes(a, b, con, table=seq.table)
            lakes.setup(seq.setup)
            lakes.compare_duckdb()  # the setup's snapshots as DuckDB reads them now (see `Step.duck_replaces_dv`)
            c = clone(b, tmp_path / "c", stack=stack)
            upgrade_v11(c.catalog)
            upgraded = rows_of(c.catalog)
            for st in seq.steps:
                lakes.run(st)
                lakes.ours(c, st.spark_sql)
            lakes.compare_duckdb()
            _our_reads_equal(lakes, b, c)
            assert_same_but_v11(c.catalog, b.catalog, volatile=True, upgraded=upgraded)
    finally:
        con.close()


@pytest.mark.spark
@pytest.mark.parametrize(("seq", "backend"), _seq_cases(DDL_SEQUENCES, DDL_DEFAULT))
def test_ddl_twins_on_both_versions(seq: DdlSequence, backend: str, tmp_path: Path, spark: SparkSession) -> None:
    """DuckDB on lake A (1.0), we on B (1.0) and on C (B's clone upgraded to 1.1): B's catalog and every snapshot
    equal A's as today; our reads of C equal DuckDB's reads of A at every snapshot; C's catalog differs from B's
    only as 1.1's."""
    con = oracle_connect()
    try:
        with twin_spots(backend, tmp_path) as (a, b), contextlib.ExitStack() as stack:
            twins = DdlTwins(a, b, con)
            twins.setup(seq.setup)
            c = clone(b, tmp_path / "c", stack=stack)
            upgrade_v11(c.catalog)
            upgraded = rows_of(c.catalog)
            with twins.attached(a) as duck:
                for st in seq.steps:
                    transaction(duck, st.duck)
                    twins.ours(b, st.our_sql)
                    twins.ours(c, st.our_sql)
            twins.compare_catalogs()
            twins.compare_history()
            ids = snapshot_ids(a.catalog)
            expected = duckdb_lake_rows(a, ids)
            if any(expected.values()):
                compare_reads(expected, c.catalog, spark, f"[{backend}] {seq.name} 1.1")
            assert_same_but_v11(c.catalog, b.catalog, volatile=True, upgraded=upgraded)
    finally:
        con.close()


# --------------------------------------------------------------------------------------------------------------
# legacy lakes (0.2-0.4) upgraded straight to 1.1


@contextlib.contextmanager
def _legacy_upgraded(lake: LegacyLake, tmp: Path) -> Iterator[tuple[LegacyLake, LegacyLake, str | None]]:
    """Two copies of a legacy lake's catalog (its data files shared), upgraded by us to 1.0 and straight to 1.1; and
    a spare PostgreSQL database for a twin when the lake is on PostgreSQL."""
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(pg_database(require_env("DUCKLAKE_TEST_PG"))) if lake.backend == "postgres"
                else None for _ in range(3)]
        v10 = catalog_copy(lake, tmp / "v10", pg_url=urls[0])
        v11 = catalog_copy(lake, tmp / "v11", pg_url=urls[1])
        cli_upgrade_v11(v10.catalog, s.FORMAT_VERSION)
        cli_upgrade_v11(v11.catalog)
        yield v10, v11, urls[2]


@pytest.mark.parametrize(("release", "backend"), legacy_cases(default={("1.4.4", "sqlite")}))
def test_legacy_catalog_upgraded_to_v11(release: str, backend: str, legacy_lakes: LegacyLakes, tmp_path: Path) -> None:
    """A lake DuckDB 1.3/1.4/1.5.1 wrote, upgraded by us to 1.0 and (another copy) straight to 1.1: the catalogs
    differ only as 1.1's."""
    with _legacy_upgraded(legacy_lakes.get(release, backend), tmp_path) as (v10, v11, _):
        assert_same_but_v11(v11.catalog, v10.catalog)


@pytest.mark.spark
@pytest.mark.parametrize(("release", "backend"), legacy_cases(default=()))
def test_legacy_lake_upgraded_to_v11_reads(release: str, backend: str, legacy_lakes: LegacyLakes, tmp_path: Path,
                                           spark: SparkSession) -> None:
    """Our reads of the legacy lake upgraded straight to 1.1 equal DuckDB 1.5.5's reads of its own 1.0 migration, at
    every snapshot (full tier only: tests/ops/test_legacy_catalogs.py reads the same lakes in place by default)."""
    lake = legacy_lakes.get(release, backend)
    with _legacy_upgraded(lake, tmp_path) as (_, v11, spare):
        twin = oracle_twin(lake, tmp_path / "twin", pg_url=spare)
        compare_reads(oracle_reads(twin.attach, lake.snapshots), v11.catalog, spark,
                      f"[{backend}] DuckDB {release} lake ({lake.version}) upgraded to 1.1")


# --------------------------------------------------------------------------------------------------------------
# the comparison itself


def _dumps() -> tuple[Dump, Dump]:
    """A tiny 1.0 catalog (one retyped column with a bound, a struct field without a default, an inlined table) and
    its 1.1 form as the migration leaves it."""
    d10: Dump = {
        "ducklake_metadata": [{"key": "version", "value": "1.0", "scope": "NULL", "scope_id": "NULL"}],
        "ducklake_column": [
            {"table_id": "1", "column_id": "1", "begin_snapshot": "1", "column_type": "int32", "parent_column": "NULL",
             "initial_default": "NULL", "default_value": "NULL", "default_value_type": "NULL",
             "default_value_dialect": "NULL"},
            {"table_id": "1", "column_id": "1", "begin_snapshot": "2", "column_type": "int64", "parent_column": "NULL",
             "initial_default": "NULL", "default_value": "NULL", "default_value_type": "NULL",
             "default_value_dialect": "NULL"},
            {"table_id": "1", "column_id": "3", "begin_snapshot": "3", "column_type": "int32", "parent_column": "2",
             "initial_default": "NULL", "default_value": "NULL", "default_value_type": "NULL",
             "default_value_dialect": "NULL"},
        ],
        "ducklake_table_column_stats": [{"table_id": "1", "column_id": "1", "min_value": "1", "max_value": "9"}],
        "ducklake_schema_versions": [{"table_id": "1", "schema_version": "1", "begin_snapshot": "1"}],
        "ducklake_inlined_data_tables": [{"table_id": "1", "schema_version": "2", "table_name": "i_1_2"}],
        "ducklake_inlined_data_1_2": [{"row_id": "0", "begin_snapshot": "2", "end_snapshot": "NULL", "a": "5"}],
    }
    d11 = {t: [dict(r) for r in rows] for t, rows in d10.items()}
    d11["ducklake_metadata"][0]["value"] = "1.1"
    d11["ducklake_column"][2].update(initial_default="7", default_value="7", default_value_type="literal")
    d11["ducklake_table_column_stats"] = [{"table_id": "1", "column_id": "1", "min_value": "NULL", "max_value": "NULL",
                                           "min_is_exact": "NULL", "max_is_exact": "NULL"}]
    d11["ducklake_schema_versions"].append({"table_id": "1", "schema_version": "2", "begin_snapshot": "2"})
    d11["ducklake_inlined_data_1_2"] = [{"_ducklake_row_id": "0", "_ducklake_begin_snapshot": "2",
                                         "_ducklake_end_snapshot": "NULL", "a": "5"}]
    d11["ducklake_view_column_tag"] = []
    return d11, d10


def test_v10_form_normalises_only_what_v11_changes() -> None:
    from tests.support.v11 import diff_dumps, v10_form

    d11, d10 = _dumps()
    n11, n10, problems = v10_form(d11, d10, data_path=False)
    assert not problems and not diff_dumps(n11, n10)
    # anything else is a difference: a user value, a bound of a column never retyped, a schema_versions row not
    # for an inlined table, a 1.1 column set on an old row, a default of a top-level column
    def never_retyped(d11: Dump, d10: Dump) -> None:
        for d in (d11, d10):
            d["ducklake_column"][1]["column_type"] = "int32"

    changes: list[Callable[[Dump, Dump], object]] = [
        lambda d11, _: d11["ducklake_inlined_data_1_2"][0].update(a="6"),
        never_retyped,
        lambda d11, _: d11["ducklake_schema_versions"].append({"table_id": "1", "schema_version": "3",
                                                              "begin_snapshot": "3"}),
        lambda d11, _: d11["ducklake_table_column_stats"][0].update(min_is_exact="True"),
        lambda d11, _: d11["ducklake_column"][0].update(initial_default="1"),
        lambda d11, _: d11["ducklake_metadata"][0].update(value="1.1-dev1"),
        lambda _, d10: d10.__setitem__("ducklake_view_column_tag", []),
    ]
    for change in changes:
        e11, e10 = _dumps()
        change(e11, e10)
        n11, n10, problems = v10_form(e11, e10, data_path=False)
        assert problems or diff_dumps(n11, n10), "a change outside 1.1's went unnoticed"
