"""Older catalogs straight to DuckLake 1.1 (`ducklake upgrade --to 1.1`): every snapshot of the 1.1 catalog reads as
DuckDB 1.5.5 reads the same lake after its own migration to 1.0 — on PostgreSQL also after the 1.1 step that gives
DuckDB 1.4's inlined strings, dates and timestamps today's storage types (spec versions §2.6 step 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.catalog_dump import run_sql
from tests.support.cli import run_cli
from tests.support.diff import compare_reads
from tests.support.legacy_lakes import (
    LegacyLakes,
    catalog_copy,
    duckdb_file_copy,
    duckdb_migrated_twin,
    legacy_cases,
    migrate_in_place,
    needs_file_copy,
    oracle_reads,
    two_catalog_urls,
)


@pytest.mark.spark
@pytest.mark.parametrize(("release", "backend"), legacy_cases(default={("1.4.4", "postgres")}))
def test_an_older_catalog_upgraded_to_1_1_reads_as_duckdbs_migration(
        release: str, backend: str, legacy_lakes: LegacyLakes, spark: object, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    lake = legacy_lakes.get(release, backend)
    ours_pg, twin_pg = two_catalog_urls(backend, request)
    ours = catalog_copy(lake, tmp_path / "ours", pg_url=ours_pg)
    done = run_cli("upgrade", ours.catalog, "--to", "1.1", "--yes", "--no-backup", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["found"], result["target"], result["verify"]["healthy"]) == (lake.version, "1.1", True)
    if backend == "postgres" and lake.version == "0.3":
        native = run_sql(ours.catalog, "SELECT count(*) FROM information_schema.columns WHERE table_name LIKE "
                                       "'ducklake_inlined_data_%' AND data_type IN ('date', 'timestamp without "
                                       "time zone', 'timestamp with time zone')")[0][0]
        assert native == 0
    twin = (migrate_in_place(duckdb_file_copy(lake, tmp_path / "twin")) if needs_file_copy(lake)
            else duckdb_migrated_twin(lake, tmp_path / "twin", pg_url=twin_pg))
    compare_reads(oracle_reads(twin.attach, lake.snapshots), ours.catalog, spark,  # type: ignore[arg-type]
                  f"[{backend}] DuckDB {release} lake ({lake.version}) upgraded to 1.1")
