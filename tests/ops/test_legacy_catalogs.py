"""Older catalogs made by real DuckDB releases (1.3.2 → 0.2, 1.4.4 → 0.3, 1.5.1 → 0.4; SQLite, DuckDB-file and
PostgreSQL; tests/support/legacy_lakes.py): `upgrade` leaves exactly DuckDB 1.5.5's migration, reads in place equal
DuckDB's reads of its migrated twin, a SIGKILL at any step leaves the old catalog, the backup restores it, and the
other commands serve them as they are."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ducklake_cli.catalog.migrate import path
from tests.support.catalog_dump import dump, set_version
from tests.support.cli import run_cli
from tests.support.diff import compare_reads
from tests.support.legacy_lakes import (
    LegacyLake,
    LegacyLakes,
    catalog_copy,
    duckdb_file_copy,
    duckdb_migrated_twin,
    legacy_cases,
    legacy_read_attempt,
    migrate_in_place,
    needs_file_copy,
    oracle_reads,
    two_catalog_urls,
    with_catalog,
)
from tests.support.tiers import all_snapshots, is_full

CASES = legacy_cases()


def _upgraded(lake: LegacyLake, workdir: Path, pg_url: str | None, *extra: str) -> LegacyLake:
    """A copy of the lake's catalog (same data files) upgraded to 1.0 by `ducklake upgrade`."""
    ours = catalog_copy(lake, workdir, pg_url=pg_url)
    done = run_cli("upgrade", ours.catalog, "--yes", "--format", "json", *(extra or ("--no-backup",)), cwd=workdir)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["found"], result["target"], result["verify"]["healthy"]) == (lake.version, "1.0", True)
    return ours


@pytest.mark.parametrize(("release", "backend"), CASES)
def test_upgrade_leaves_the_catalog_duckdbs_migration_leaves(release: str, backend: str, legacy_lakes: LegacyLakes,
                                                              tmp_path: Path, request: pytest.FixtureRequest) -> None:
    lake = legacy_lakes.get(release, backend)
    ours_pg, twin_pg = two_catalog_urls(backend, request)
    before = dump(lake.catalog)
    ours = _upgraded(lake, tmp_path / "ours", ours_pg)
    if needs_file_copy(lake):
        # DuckDB 1.5.5 cannot migrate 0.2 on SQLite or PostgreSQL ("Unsupported ALTER TABLE type"): its migration
        # of a DuckDB-file copy of the same catalog is the reference for what every snapshot reads.
        twin = migrate_in_place(duckdb_file_copy(lake, tmp_path / "twin"))
    else:
        twin = duckdb_migrated_twin(lake, tmp_path / "twin", pg_url=twin_pg)
        ours_rows, twin_rows = dump(ours.catalog), dump(twin.catalog)
        assert sorted(ours_rows) == sorted(twin_rows)
        for table in twin_rows:
            assert ours_rows[table] == twin_rows[table], table
    assert oracle_reads(ours.attach, lake.snapshots) == oracle_reads(twin.attach, lake.snapshots)
    assert dump(lake.catalog) == before


@pytest.mark.spark
@pytest.mark.parametrize(("release", "backend"), CASES)
def test_reads_in_place_equal_duckdbs_reads_of_the_migrated_twin(
        release: str, backend: str, legacy_lakes: LegacyLakes, spark: object, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    lake = legacy_lakes.get(release, backend)
    twin_pg = two_catalog_urls(backend, request)[1]
    twin = (migrate_in_place(duckdb_file_copy(lake, tmp_path / "twin")) if needs_file_copy(lake)
            else duckdb_migrated_twin(lake, tmp_path / "twin", pg_url=twin_pg))
    snapshots = _read_at(lake)
    before = dump(lake.catalog)
    compare_reads(oracle_reads(twin.attach, snapshots), lake.catalog, spark,  # type: ignore[arg-type]
                  f"[{backend}] DuckDB {release} lake ({lake.version}) read in place")
    assert dump(lake.catalog) == before


def _read_at(lake: LegacyLake) -> list[int]:
    """Every snapshot of the 0.3 SQLite lake (the most migration rewrites: schema versions, partial files, default
    kinds) and, by default, every fourth of the other SQLite lakes and the last three elsewhere; every snapshot
    everywhere with `--full`."""
    every = list(lake.snapshots)
    if all_snapshots() or (lake.backend, lake.version) == ("sqlite", "0.3"):
        return every
    if lake.backend == "sqlite":
        return sorted(set(every[::4] + every[-1:]))
    return every[-3:]


def _fault_points(version: str) -> list[str]:
    """Where `DUCKLAKE_FAULT_AT` can kill the migration: before each operation and after each step."""
    points = []
    for step, _ in path(version):
        points += [f"{step.source}-{step.target}:{i}" for i in range(len(step.ops))]
        points.append(f"{step.source}-{step.target}:done")
    return points


@pytest.mark.parametrize(("release", "backend"), legacy_cases(default={("1.3.2", "duckdb"), ("1.4.4", "sqlite"),
                                                                       ("1.4.4", "postgres")}))
def test_a_sigkill_at_any_step_leaves_the_old_catalog(release: str, backend: str, legacy_lakes: LegacyLakes,
                                                      tmp_path: Path, request: pytest.FixtureRequest) -> None:
    lake = legacy_lakes.get(release, backend)
    ours = catalog_copy(lake, tmp_path / "ours", pg_url=two_catalog_urls(backend, request)[0])
    before = dump(ours.catalog)
    points = _fault_points(lake.version)
    if not is_full():  # every step's first operation and end, and the irreversible ones
        points = [p for i, p in enumerate(points) if p.endswith((":0", ":done")) or "drop" in p or i % 5 == 0]
    for point in points:
        killed = run_cli("upgrade", ours.catalog, "--yes", "--no-backup", env={"DUCKLAKE_FAULT_AT": point})
        assert killed.returncode == -9, (point, killed.stderr)
        assert dump(ours.catalog) == before, point
    # The release that made the catalog still attaches it and reads what it read before.
    assert legacy_read_attempt(ours) == legacy_read_attempt(lake)


@pytest.mark.parametrize(("release", "backend"), legacy_cases(default={("1.3.2", "sqlite"), ("1.4.4", "duckdb"),
                                                                       ("1.5.1", "postgres")}))
def test_the_backup_restores_the_old_catalog(release: str, backend: str, legacy_lakes: LegacyLakes, tmp_path: Path,
                                             request: pytest.FixtureRequest) -> None:
    lake = legacy_lakes.get(release, backend)
    ours_pg, restore_pg = two_catalog_urls(backend, request)
    before = dump(lake.catalog)
    ours = catalog_copy(lake, tmp_path / "ours", pg_url=ours_pg)
    done = run_cli("upgrade", ours.catalog, "--yes", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    backup = result["backup"]
    # The backup is the old catalog, version string and all (a server catalog's inlined values in the SQLite types).
    assert (_spec_tables(dump(backup)) == _spec_tables(before)) if backend == "postgres" else (dump(backup) == before)
    if backend == "postgres":
        assert result["restore"].startswith("drop the catalog's ducklake_* tables, then: ducklake copy-catalog")
        restored = run_cli("copy-catalog", backup, str(restore_pg))
        assert restored.returncode == 0, restored.stderr
        target = str(restore_pg)
    else:
        assert result["restore"].startswith("cp ")
        shutil.copy(backup, ours.catalog)
        target = ours.catalog
    restored = dump(target)
    if backend == "postgres":  # inlined values come back in this ducklake's column types for them: same values
        assert _spec_tables(restored) == _spec_tables(before)
        assert {k: len(v) for k, v in restored.items()} == {k: len(v) for k, v in before.items()}
    else:
        assert restored == before
    # The release that made the catalog attaches the restored one as it attached its own.
    assert legacy_read_attempt(with_catalog(lake, target)) == legacy_read_attempt(lake)


@pytest.mark.spark
@pytest.mark.parametrize(("release", "backend"), legacy_cases(default={("1.4.4", "sqlite")}))
def test_changes_in_place_equal_duckdbs_table_changes_of_the_migrated_twin(
        release: str, backend: str, legacy_lakes: LegacyLakes, spark: object, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    import collections

    import ducklake_cli
    from tests.support.oracle import oracle_connect, sql_str

    lake = legacy_lakes.get(release, backend)
    twin = (migrate_in_place(duckdb_file_copy(lake, tmp_path / "twin")) if needs_file_copy(lake)
            else duckdb_migrated_twin(lake, tmp_path / "twin", pg_url=two_catalog_urls(backend, request)[1]))
    snaps = list(lake.snapshots)
    pairs = [(a, b) for a, b in zip(snaps, snaps[1:], strict=False)] + [(snaps[0], snaps[-1])]
    if not is_full():  # every fourth neighbour pair and the whole history (every pair of neighbours with --full)
        pairs = pairs[::4] + [pairs[-1]]
    con = oracle_connect()
    want: dict[tuple[str, int, int], collections.Counter[tuple[str, ...]]] = {}
    try:
        con.execute(f"ATTACH {sql_str(twin.attach)} AS lake (READ_ONLY)")
        for table in ("items", "events", "logs"):
            for a, b in pairs:
                try:
                    rows = con.execute(f"SELECT snapshot_id, rowid, change_type, id FROM "
                                       f"ducklake_table_changes('lake', 'main', '{table}', {a}, {b})").fetchall()
                except Exception:  # noqa: BLE001 (the table does not exist at b)
                    continue
                want[(table, a, b)] = collections.Counter(tuple(map(str, r)) for r in rows)
    finally:
        con.close()
    assert want
    with ducklake_cli.connect(lake.catalog, read_only=True) as ours:
        for (table, a, b), rows in want.items():
            df = ours.table_changes(f"main.{table}", a, b, spark=spark)  # type: ignore[arg-type]
            got = collections.Counter(tuple(map(str, (r[0], r[1], r[2], r[3])))
                                      for r in df.select("snapshot_id", "rowid", "change_type", "id").collect())
            assert got == rows, (table, a, b, sorted(got - rows)[:3], sorted(rows - got)[:3])


def _spec_tables(rows: dict[str, list[str]]) -> dict[str, list[str]]:
    return {k: v for k, v in rows.items() if not k.startswith(("ducklake_inlined_data_", "ducklake_inlined_delete_"))}


@pytest.mark.parametrize(("release", "backend", "dev"), [
    # The step a dev string stands in not run at all (the catalog is the version before it) ...
    pytest.param("1.3.2", "duckdb", "0.3-dev1", marks=pytest.mark.xdist_group("legacy-1.3.2-duckdb")),
    pytest.param("1.4.4", "sqlite", "0.4-dev1", marks=pytest.mark.xdist_group("legacy-1.4.4-sqlite")),
    # ... or run to its end.
    pytest.param("1.4.4", "sqlite", "0.3-dev1", marks=pytest.mark.xdist_group("legacy-1.4.4-sqlite")),
    pytest.param("1.5.1", "duckdb", "0.4-dev1", marks=pytest.mark.xdist_group("legacy-1.5.1-duckdb")),
])
def test_dev_versions_read_through_a_tolerant_migration(release: str, backend: str, dev: str,
                                                        legacy_lakes: LegacyLakes, tmp_path: Path) -> None:
    """A `-dev1` catalog re-runs the step it stands in, skipping what is already there (DuckDB's tolerant
    variant): the catalog our reads go through equals DuckDB 1.5.5's migration of the same catalog under its plain
    version. (DuckDB 1.5.5 itself fails on a `0.4-dev1` catalog whose `partial_file_info` is already gone:
    'Referenced column "partial_file_info" not found'.)"""
    from ducklake_cli.catalog.backends import backend_for
    from ducklake_cli.catalog.copy import migrated_copy
    from ducklake_cli.catalog.url import parse_catalog

    lake = legacy_lakes.get(release, backend)
    dev_lake = catalog_copy(lake, tmp_path / "dev")
    set_version(dev_lake.catalog, dev)
    twin = duckdb_migrated_twin(lake, tmp_path / "twin")
    source = backend_for(parse_catalog(dev_lake.catalog))
    engine = source.create_engine(read_only=True)
    try:
        with engine.connect() as conn:
            assert migrated_copy(conn, source, tmp_path / "ours.sqlite") == dev
    finally:
        engine.dispose()
    assert _spec_tables(dump(str(tmp_path / "ours.sqlite"))) == _spec_tables(dump(twin.catalog))
    inspect = run_cli("inspect", dev_lake.catalog, "--format", "json")
    assert inspect.returncode == 0, inspect.stderr
    assert json.loads(inspect.stdout)["format_version"] == dev
    refused = run_cli("upgrade", dev_lake.catalog, "--yes")
    assert refused.returncode == 2 and "a development version" in refused.stderr
