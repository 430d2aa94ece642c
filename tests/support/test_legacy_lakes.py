"""Legacy lakes (tests/support/legacy_lakes.py): each old DuckDB release builds its catalog version on every backend,
DuckDB 1.5.5 migrates a twin of it to 1.0, and the twin reads at every snapshot what the old release read."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import duckdb
import psycopg
import pytest

from tests.support.legacy_lakes import (
    MIGRATION_FAILURE,
    RELEASES,
    REREAD_BUGS,
    VERSIONS,
    LegacyLake,
    duckdb_file_copy,
    duckdb_migrated_twin,
    known_migration_loss,
    legacy_cases,
    legacy_python,
    legacy_read_attempt,
    legacy_reads,
    migrate_in_place,
    needs_file_copy,
    oracle_json_reads,
    oracle_reads,
    oracle_twin,
    read_differences,
    rereadable,
)
from tests.support.oracle import oracle_connect, sql_str

LakeFactory = Callable[[str, str], LegacyLake]


CASES = legacy_cases()
# Copying is the same code for every release: one case per backend by default.
COPY_CASES = legacy_cases(default={("1.3.2", "postgres"), ("1.4.4", "duckdb"), ("1.5.1", "sqlite")})


def catalog_version(lake: LegacyLake) -> str:
    """The version string in the catalog's ``ducklake_metadata``, read without the ducklake extension."""
    query = "SELECT value FROM ducklake_metadata WHERE key = 'version'"
    if lake.backend == "postgres":
        with psycopg.connect(lake.catalog) as pg:
            row = pg.execute(query).fetchone()
    elif lake.backend == "sqlite":
        con = oracle_connect()
        try:
            con.execute(f"ATTACH {sql_str(lake.catalog)} AS cat (TYPE sqlite, READ_ONLY)")
            row = con.execute(query.replace("FROM ", "FROM cat.")).fetchone()
        finally:
            con.close()
    else:
        with duckdb.connect(lake.catalog, read_only=True) as con:
            row = con.execute(query).fetchone()
    assert row is not None
    return str(row[0])


@pytest.mark.parametrize("release", RELEASES)
def test_venv_holds_the_release_and_its_extensions(release: str) -> None:
    python = legacy_python(release)
    code = "import duckdb, duckdb_extension_ducklake, duckdb_extension_sqlite, duckdb_extension_postgres; " \
           "print(duckdb.__version__)"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == release
    assert (python.parent.parent / "ready.json").is_file()


@pytest.mark.parametrize(("release", "backend"), CASES)
def test_lake_has_the_version_and_the_features_the_release_supports(
        legacy_lake: LakeFactory, release: str, backend: str) -> None:
    lake = legacy_lake(release, backend)
    assert lake.version == VERSIONS[release] == catalog_version(lake)
    assert lake.catalog.startswith("postgresql://") if backend == "postgres" else Path(lake.catalog).is_file()
    assert lake.snapshots[0] == 0 and len(lake.snapshots) > 40 and sorted(lake.writer_reads) == list(lake.snapshots)
    assert lake.expired and not set(lake.expired) & set(lake.snapshots)
    inlining = backend == "duckdb" or release != "1.3.2"
    renamed = release == "1.5.1" or not inlining  # 1.3/1.4 cannot rename an inlining table
    assert lake.tables == ("main.events", "main.ext", "main.items", "main.logs", "main.small",
                           "s2.memo" if renamed else "s2.notes")
    f = lake.features
    assert (f["inlined_rows"] > 0, f["inlined_rows_deleted"] > 0) == (inlining, inlining), f
    assert (f["inlined_file_deletions"] > 0) == (release == "1.5.1"), f
    assert f["delete_files"] > 0 and f["partitioned_files"] > 0 and f["partial_files"] >= 1, f
    assert (f["registered_files"], f["live_logs_files"], f["views"], f["comments"], f["dropped_tables"],
            f["renamed_tables"]) == (1, 1, 1, 3, 1, int(renamed)), f
    last = lake.writer_reads[lake.snapshots[-1]]
    assert {t: len(rows) for t, rows in last.items()} == {
        "main.events": 34, "main.ext": 7, "main.items": 55, "main.logs": 48, "main.small": 4,
        "s2.memo" if renamed else "s2.notes": 2}


@pytest.mark.parametrize(("release", "backend"), CASES)
def test_the_release_rereads_its_lake_as_it_wrote_it_where_it_can(
        legacy_lake: LakeFactory, release: str, backend: str) -> None:
    lake = legacy_lake(release, backend)
    reads, errors = legacy_read_attempt(lake)
    failed = {(sid, table) for (sid, t) in errors for table in (lake.writer_reads[sid] if t == "*" else [t])}
    assert read_differences(lake.writer_reads, reads) == failed  # every read that succeeded reads as written
    assert all(REREAD_BUGS.search(e) for e in errors.values()), errors
    assert (not errors) == rereadable(lake), sorted(errors.items())[:3]


def _describe(want: dict[int, dict[str, list[str]]], got: dict[int, dict[str, list[str]]],
              where: set[tuple[int, str]]) -> str:
    lines = []
    for sid, table in sorted(where)[:5]:
        w, g = set(want.get(sid, {}).get(table, [])), set(got.get(sid, {}).get(table, []))
        lines.append(f"snapshot {sid} {table}: writer only {sorted(w - g)[:3]}, twin only {sorted(g - w)[:3]}")
    return "\n".join(lines)


@pytest.mark.parametrize(("release", "backend"), CASES)
def test_duckdb_migrates_a_twin_that_reads_like_the_writer(
        legacy_lake: LakeFactory, release: str, backend: str, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    lake = legacy_lake(release, backend)
    pg_url = request.getfixturevalue("pg_url") if backend == "postgres" else None
    want = lake.writer_reads
    if needs_file_copy(lake):
        with pytest.raises(duckdb.Error, match=MIGRATION_FAILURE):
            duckdb_migrated_twin(lake, tmp_path / "direct", pg_url=pg_url)
        source = duckdb_file_copy(lake, tmp_path / "file-copy")
        assert (source.backend, source.version, catalog_version(source)) == ("duckdb", "0.2", "0.2")
        assert legacy_reads(source) == want  # still a 0.2 catalog to DuckDB 1.3.2, reading the same
        twin = duckdb_migrated_twin(source, tmp_path / "twin")
    else:
        twin = duckdb_migrated_twin(lake, tmp_path / "twin", pg_url=pg_url)
    assert (twin.version, catalog_version(twin), twin.snapshots) == ("1.0", "1.0", lake.snapshots)
    assert catalog_version(lake) == lake.version  # the shared lake is untouched
    got = oracle_json_reads(twin.attach)
    differ = read_differences(want, got)
    assert differ == known_migration_loss(lake), _describe(want, got, differ ^ known_migration_loss(lake))
    merged = set(want[lake.snapshots[-1]]["main.logs"])
    assert all(set(got[sid][t]) == merged > set(want[sid][t]) for sid, t in differ)  # the whole merged file
    reads = oracle_reads(twin.attach, twin.snapshots)
    assert list(reads) == list(lake.snapshots)
    assert tuple(sorted(reads[lake.snapshots[-1]])) == lake.tables
    assert {sid: {t: len(rows) for t, (_, rows) in tables.items()} for sid, tables in reads.items()} == \
        {sid: {t: len(rows) for t, rows in tables.items()} for sid, tables in got.items()}


@pytest.mark.parametrize(("release", "backend"), COPY_CASES)
def test_a_private_copy_has_its_own_catalog_and_files(
        legacy_lake: LakeFactory, legacy_lake_copy: LakeFactory,
        release: str, backend: str, tmp_path: Path) -> None:
    lake, mine = legacy_lake(release, backend), legacy_lake_copy(release, backend)
    assert mine.catalog != lake.catalog and mine.data_path != lake.data_path and mine.root is not None
    if rereadable(mine):
        assert legacy_reads(mine) == lake.writer_reads
    # Migrated in place where DuckDB 1.5.5 can (the shared lake must stay as it is), else through a file copy.
    twin = oracle_twin(mine, tmp_path / "twin") if needs_file_copy(mine) else migrate_in_place(mine)
    assert twin.version == "1.0" and catalog_version(lake) == lake.version
    assert read_differences(lake.writer_reads, oracle_json_reads(twin.attach)) == known_migration_loss(lake)
    # Every file of the copy (data, delete and the registered external file) lies under its own directory.
    con = oracle_connect()
    try:
        con.execute(f"ATTACH {sql_str(twin.attach)} AS lake (READ_ONLY)")
        files = [str(p) for t in lake.tables for r in con.execute(
            "SELECT data_file, delete_file FROM ducklake_list_files('lake', ?, schema => ?)",
            [t.split(".")[1], t.split(".")[0]]).fetchall() for p in r if p is not None]
    finally:
        con.close()
    assert files and all(p.startswith(f"{mine.root}/") for p in files), files
