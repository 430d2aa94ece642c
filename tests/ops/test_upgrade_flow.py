"""`ducklake upgrade` as a command on every backend: plan, backup and restore, nothing to do, every refusal
changing nothing, a commit landing meanwhile, a SIGKILL at the commit. The catalogs are 0.4 catalogs: 0.4 and 1.0
have the same tables (DuckDB's 0.4 → 1.0 step only changes the version string), so a 1.0 catalog with its version
set to 0.4 is exactly what DuckDB 1.5.0/1.5.1 leaves. The steps from 0.2 and 0.3 run on lakes made by those DuckDB
releases (tests/ops/test_legacy_lakes.py)."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.ops import upgrade as upgrade_op
from ducklake_cli.ops.upgrade import apply_upgrade, plan_upgrade
from tests.support.catalog_dump import dump, run_sql, set_version, version_of
from tests.support.cli import run_cli
from tests.support.spot import Spot

ALL = ["sqlite", "duckdb", "postgres", "mysql"]


@pytest.fixture
def v04(spot: Spot) -> str:
    """A 0.4 catalog with a schema, two tables (one dropped), a view and comments: metadata only, no Spark."""
    made = run_cli("create-catalog", spot.catalog, "--data-path", str(spot.data_path))
    assert made.returncode == 0, made.stderr
    ddl = run_cli("query", spot.catalog, "CREATE SCHEMA s; CREATE TABLE s.t(i INT, j VARCHAR); "
                  "CREATE TABLE u(x INT); COMMENT ON TABLE s.t IS 'kept'; CREATE VIEW v AS SELECT i FROM s.t; "
                  "ALTER TABLE s.t ADD COLUMN k DOUBLE; DROP TABLE u")
    assert ddl.returncode == 0, ddl.stderr
    set_version(spot.catalog, "0.4")
    return spot.catalog


@pytest.mark.parametrize("spot", ALL, indirect=True)
def test_upgrade_backs_up_migrates_verifies_and_the_backup_restores(v04: str, spot: Spot, tmp_path: Path) -> None:
    before = dump(v04)
    plan = run_cli("upgrade", v04, "--dry-run", "--format", "json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    doc = json.loads(plan.stdout)
    assert (doc["found"], doc["target"]) == ("0.4", "1.0")
    assert doc["steps"] == [{"step": "0.4 -> 1.0", "action": "set the version to '1.0'", "rows": 1,
                             "irreversible": False}]
    assert doc["attached_by_before"] == "DuckDB 1.5.0-1.5.1"
    assert doc["transactional"] is (spot.backend != "mysql")
    assert dump(v04) == before
    refused = run_cli("upgrade", v04, cwd=tmp_path)  # no terminal, no --yes
    assert refused.returncode == 2 and "not confirmed" in refused.stderr
    assert dump(v04) == before
    done = run_cli("upgrade", v04, "--yes", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["applied"] is True and result["verify"]["healthy"] is True
    assert version_of(v04) == "1.0"
    after = dump(v04)
    assert {k: v for k, v in after.items() if k != "ducklake_metadata"} == \
        {k: v for k, v in before.items() if k != "ducklake_metadata"}
    backup = result["backup"]
    assert Path(backup).exists() and (Path(backup).parent == (tmp_path if spot.backend in ("postgres", "mysql")
                                                                else Path(v04).parent))
    assert dump(backup) == before  # the backup is the catalog as it was
    inspect = run_cli("inspect", v04, "--format", "json")
    assert json.loads(inspect.stdout)["format_version"] == "1.0"
    again = run_cli("upgrade", v04)
    assert again.returncode == 0 and "already a DuckLake 1.0 catalog: nothing to do" in " ".join(again.stderr.split())
    if spot.backend in ("sqlite", "duckdb"):  # the printed restore command gives back the old catalog
        assert result["restore"].startswith("cp ")
        shutil.copy(backup, v04)
        assert dump(v04) == before and version_of(v04) == "0.4"


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_a_commit_landing_meanwhile_makes_the_upgrade_start_over(v04: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_upgrade(parse_catalog(v04), backup=parse_catalog(str(tmp_path / "b.sqlite"), must_exist=False))
    real_copy = upgrade_op.copy_catalog
    copies: list[int] = []

    def copy_then_another_client_commits(source: Any, destination: Any) -> Any:
        done = real_copy(source, destination)
        copies.append(1)
        if len(copies) == 1:  # after the first backup, before the migration: a snapshot the backup lacks
            run_sql(v04, "INSERT INTO ducklake_snapshot SELECT snapshot_id + 1, snapshot_time, schema_version, "
                      "next_catalog_id, next_file_id FROM ducklake_snapshot "
                      "WHERE snapshot_id = (SELECT MAX(snapshot_id) FROM ducklake_snapshot)")
        return done

    monkeypatch.setattr(upgrade_op, "copy_catalog", copy_then_another_client_commits)
    result = apply_upgrade(plan)
    assert len(copies) == 2
    assert result.plan.snapshot_id == plan.snapshot_id + 1  # planned again
    assert version_of(v04) == "1.0"
    newest = run_sql(str(tmp_path / "b.sqlite"), "SELECT MAX(snapshot_id) FROM ducklake_snapshot")[0][0]
    assert newest == plan.snapshot_id + 1  # the backup that was kept holds the late commit


@pytest.mark.parametrize("spot", ["sqlite", "duckdb", "postgres"], indirect=True)
def test_a_sigkill_before_the_commit_leaves_the_old_catalog(v04: str, tmp_path: Path) -> None:
    before = dump(v04)
    killed = run_cli("upgrade", v04, "--yes", "--no-backup", env={"DUCKLAKE_FAULT_AT": "0.4-1.0:done"})
    assert killed.returncode == -9, killed.stderr
    assert dump(v04) == before and version_of(v04) == "0.4"


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("version", "needle"), [
    ("0.4-dev1", "a development version"), ("0.3-dev1", "a development version"),
    ("1.1", "cannot be downgraded"), ("0.0", "which no DuckDB release writes"),
])
def test_refusals_change_nothing(v04: str, version: str, needle: str) -> None:
    set_version(v04, version)
    before = dump(v04)
    refused = run_cli("upgrade", v04, "--yes")
    assert refused.returncode == 2 and needle in refused.stderr and refused.stderr.count("\n") == 1, refused.stderr
    assert dump(v04) == before
    assert not list(Path(v04).parent.glob("*backup*"))


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_bad_options_are_refused(v04: str, tmp_path: Path) -> None:
    before = dump(v04)
    taken = tmp_path / "taken.sqlite"
    taken.write_bytes(b"")
    for args, needle in ((["--backup", str(taken)], "already exists"), (["--to", "2.0"], "upgrades to 1.0 or 1.1"),
                         (["--backup", str(tmp_path / "b.db"), "--no-backup"], "--backup")):
        refused = run_cli("upgrade", v04, "--yes", *args)
        assert refused.returncode == 2 and needle in refused.stderr, refused.stderr
    assert dump(v04) == before


@pytest.mark.parametrize("spot", ["mysql"], indirect=True)
def test_mysql_needs_its_backup(v04: str) -> None:
    before = dump(v04)
    refused = run_cli("upgrade", v04, "--yes", "--no-backup")
    assert refused.returncode == 2 and "--no-backup is refused on MySQL" in refused.stderr
    assert dump(v04) == before


@pytest.mark.parametrize("spot", ["postgres"], indirect=True)
def test_postgres_rights_are_checked_before_the_backup(v04: str, tmp_path: Path) -> None:
    before = dump(v04)
    # A role that may read the catalog but owns none of its tables (ALTER TABLE needs the owner).
    role = f"dl_reader_{uuid.uuid4().hex[:8]}"
    run_sql(v04, f"CREATE ROLE {role} LOGIN PASSWORD 'r'", f"GRANT USAGE, CREATE ON SCHEMA public TO {role}",
         f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    try:
        as_reader = v04.replace("lake:lake@", f"{role}:r@")
        refused = run_cli("upgrade", as_reader, "--yes", cwd=tmp_path)
        assert refused.returncode == 1 and "belong to another role" in refused.stderr, refused.stderr
        assert "run the upgrade as lake" in refused.stderr and ":r@" not in refused.stderr
        # A read-only session (a standby, or default_transaction_read_only).
        database = v04.rsplit("/", 1)[1]
        run_sql(v04, f"ALTER DATABASE {database} SET default_transaction_read_only = on")
        refused = run_cli("upgrade", v04, "--yes", cwd=tmp_path)
        assert refused.returncode == 1 and "read-only" in refused.stderr, refused.stderr
        run_sql(v04, "SET TRANSACTION READ WRITE", f"ALTER DATABASE {database} RESET default_transaction_read_only")
    finally:
        run_sql(v04, f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}",
                f"REVOKE ALL ON SCHEMA public FROM {role}", f"DROP ROLE {role}")
    assert dump(v04) == before
    assert not list(tmp_path.glob("*backup*"))


@pytest.mark.parametrize("spot", ["sqlite", "postgres"], indirect=True)
def test_every_write_to_an_older_catalog_is_refused_before_any_work(v04: str, tmp_path: Path) -> None:
    before = dump(v04)
    csv = tmp_path / "in.csv"
    csv.write_text("i,j,k\n1,a,1.5\n")
    commands = [
        ["write", v04, "s.t", "--from", str(csv)],
        ["query", v04, "DELETE FROM s.t WHERE i = 1"],
        ["query", v04, "INSERT INTO s.t VALUES (1, 'a', 1.5)"],
        ["query", v04, "CREATE TABLE n(i INT)"],
        ["delete", v04, "s.t", "--all", "--yes"],
        ["register", v04, "s.t", str(tmp_path / "none.parquet")],
        ["options", v04, "--set", "parquet_compression=zstd"],
        ["maintain", "expire", v04, "--keep-last", "1", "--yes"],
        ["maintain", "flush", v04, "--yes"],
        ["maintain", "compact", v04, "--yes"],
        ["restore", v04, "s.t", "--to-snapshot", "2", "--yes"],
    ]
    for args in commands:
        refused = run_cli(*args)
        assert refused.returncode == 2, (args, refused.stderr)
        assert refused.stderr.count("\n") == 1 and "DuckLake 0.4 catalog" in refused.stderr, refused.stderr
        assert "run `ducklake upgrade` first" in refused.stderr and "Traceback" not in refused.stderr
    for args in (["inspect", v04, "s.t"], ["maintain", "expire", v04, "--keep-last", "1", "--dry-run"],
                 ["options", v04], ["verify", v04], ["inspect", v04, "--snapshots"]):
        read = run_cli(*args)
        assert read.returncode == 0, (args, read.stderr)
    assert dump(v04) == before


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_the_python_api_reads_an_older_catalog_and_refuses_writes(v04: str) -> None:
    import ducklake_cli
    from ducklake_cli.errors import UnsupportedVersionError

    before = dump(v04)
    with ducklake_cli.connect(v04) as lake:
        assert lake.format_version == "0.4" and lake.legacy_version == "0.4"
        with lake.reader() as r:
            assert r.metadata().version == "0.4"
            assert [t.name for t in r.tables(r.latest_snapshot().snapshot_id)] == ["t"]
        for attempt in (lambda: lake.delete("s.t", "true"), lambda: lake.update("s.t", {"i": "1"}),
                        lambda: lake.commit(lambda tx: None)):
            with pytest.raises(UnsupportedVersionError, match="reads it but writes only 1.0"):
                attempt()
    assert dump(v04) == before
