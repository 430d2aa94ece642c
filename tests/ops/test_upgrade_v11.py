"""`ducklake upgrade --to 1.1` (spec versions §2.6): the steps on every backend (renamed inlined system columns, the
new columns NULL on every existing row, the new table), straight from 0.4, the repairs on rows built by hand, the
pre-check on `_ducklake_` column names, 1.1-dev1 and column-less `1.1` catalogs finished tolerantly, the warning,
no downgrade, and a SIGKILL at every operation leaving the 1.0 catalog as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ducklake_cli.catalog import schema as s
from tests.support.catalog_dump import dump, run_sql, set_version, version_of
from tests.support.cli import run_cli
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot

ALL = ["sqlite", "duckdb", "postgres", "mysql"]
_V11_COLUMNS = {(t, c) for t, c, _ in s.V11_COLUMNS}


def _duckdb_lake(spot: Spot) -> str:
    """A 1.0 lake written by DuckDB 1.5.5: inlined rows (two schema versions, a deletion), a struct column, a
    column retyped FLOAT → DOUBLE with stats, a view, comments."""
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        con.execute("CREATE TABLE lake.t(a INT, s STRUCT(x INT, y VARCHAR))")
        con.execute("INSERT INTO lake.t VALUES (1, {'x': 1, 'y': 'a'}), (2, NULL)")
        con.execute("ALTER TABLE lake.t ADD COLUMN b VARCHAR DEFAULT 'q'")
        con.execute("INSERT INTO lake.t VALUES (3, NULL, 'z')")
        con.execute("DELETE FROM lake.t WHERE a = 1")
        con.execute("CREATE TABLE lake.big(i BIGINT, f FLOAT)")
        con.execute("INSERT INTO lake.big SELECT range, range / 7 FROM range(300)")
        con.execute("ALTER TABLE lake.big ALTER f TYPE DOUBLE")
        con.execute("CREATE VIEW lake.v AS SELECT a FROM lake.t")
        con.execute("COMMENT ON TABLE lake.t IS 'kept'")
    finally:
        con.close()
    return spot.catalog


def _columns(catalog: str, table: str) -> list[str]:
    from ducklake_cli.catalog.backends import backend_for
    from ducklake_cli.catalog.url import parse_catalog

    backend = backend_for(parse_catalog(catalog))
    engine = backend.create_engine(read_only=True)
    try:
        with engine.connect() as conn:
            return backend.column_names(conn, table)
    finally:
        engine.dispose()


def _without_v11(d: dict[str, list[str]]) -> dict[str, list[str]]:
    """A dump with 1.1's additions taken out again: the new columns, the new table, the renamed system columns'
    prefix, the version row."""
    out: dict[str, list[str]] = {}
    for name, rows in d.items():
        if name == "ducklake_view_column_tag" or name == "ducklake_metadata":
            continue
        kept = []
        for row in rows:
            pairs = [(c.removeprefix("_ducklake_") if name.startswith(s.INLINED_DATA_PREFIX) else c, v)
                     for c, v in eval(row) if (name, c) not in _V11_COLUMNS]  # noqa: S307 - our own repr()
            kept.append(repr(sorted(pairs)))
        out[name] = sorted(kept)
    return out


@pytest.mark.parametrize("spot", ["sqlite", "duckdb", "postgres"], indirect=True)
def test_upgrade_to_1_1_renames_adds_and_keeps_every_row(spot: Spot, tmp_path: Path) -> None:
    catalog = _duckdb_lake(spot)
    before = dump(catalog)
    plan = run_cli("upgrade", catalog, "--to", "1.1", "--dry-run", "--format", "json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    doc = json.loads(plan.stdout)
    assert (doc["found"], doc["target"]) == ("1.0", "1.1")
    assert doc["attached_by_after"] == "DuckDB 2.0 (not DuckDB 1.5)"
    assert any("every client of this lake must read DuckLake 1.1 first" in n for n in doc["notes"])
    assert doc["steps"][-1]["action"] == "set the version to '1.1'"
    assert dump(catalog) == before
    done = run_cli("upgrade", catalog, "--to", "1.1", "--yes", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verify"]["healthy"] is True, result["verify"]
    assert version_of(catalog) == "1.1"
    after = dump(catalog)
    companions = [n for n in after if n.startswith(s.INLINED_DATA_PREFIX) and n != "ducklake_inlined_data_tables"]
    assert len(companions) >= 2
    for name in companions:
        assert _columns(catalog, name)[:3] == list(s.INLINED_SYSTEM_V11)
    for name in (n for n in after if n.startswith(s.INLINED_DELETE_PREFIX)):
        assert _columns(catalog, name) == ["file_id", "row_id", "begin_snapshot"]
    for table, column in _V11_COLUMNS:
        assert all(f"('{column}', 'NULL')" in row for row in after[table]), (table, column)
    assert after["ducklake_view_column_tag"] == []
    # Everything else is as it was, except the retyped column's bounds (cleared: §2.6 step 5).
    old, new = _without_v11(before), _without_v11(after)
    changed = {n for n in old if old[n] != new[n]}
    assert changed <= {"ducklake_table_column_stats", "ducklake_file_column_stats"}, changed
    backup = dump(result["backup"])
    if spot.backend == "postgres":  # a SQLite backup: inlined values in SQLite's storage form (see COMPATIBILITY)
        backup = {k: v for k, v in backup.items() if not k.startswith(s.INLINED_DATA_PREFIX)}
        before = {k: v for k, v in before.items() if not k.startswith(s.INLINED_DATA_PREFIX)}
    assert backup == before
    again = run_cli("upgrade", catalog, "--to", "1.1")
    assert again.returncode == 0 and "already a DuckLake 1.1 catalog" in " ".join(again.stderr.split())
    down = run_cli("upgrade", catalog, "--yes")
    assert down.returncode == 2 and "cannot be downgraded" in down.stderr and down.stderr.count("\n") == 1


@pytest.mark.parametrize("spot", ["mysql"], indirect=True)
def test_upgrade_to_1_1_on_mysql(spot: Spot, tmp_path: Path) -> None:
    made = run_cli("create-catalog", spot.catalog, "--data-path", str(spot.data_path))
    assert made.returncode == 0, made.stderr
    assert run_cli("query", spot.catalog, "CREATE SCHEMA s; CREATE TABLE s.t(i INT); CREATE VIEW v AS "
                   "SELECT 1 AS x").returncode == 0
    done = run_cli("upgrade", spot.catalog, "--to", "1.1", "--yes", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["transactional"] is False
    assert version_of(spot.catalog) == "1.1"
    assert "parent_schema_id" in _columns(spot.catalog, "ducklake_schema")


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_a_0_4_catalog_goes_straight_to_1_1(spot: Spot, tmp_path: Path) -> None:
    catalog = _duckdb_lake(spot)
    set_version(catalog, "0.4")
    plan = json.loads(run_cli("upgrade", catalog, "--to", "1.1", "--dry-run", "--format", "json").stdout)
    assert [st["step"] for st in plan["steps"]][0] == "0.4 -> 1.0"
    assert plan["steps"][-1] == {"step": "1.0 -> 1.1", "action": "set the version to '1.1'", "rows": 1,
                                 "irreversible": False}
    done = run_cli("upgrade", catalog, "--to", "1.1", "--yes", "--no-backup")
    assert done.returncode == 0, done.stderr
    assert version_of(catalog) == "1.1"


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_reserved_column_names_are_refused_before_anything(spot: Spot, tmp_path: Path) -> None:
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        con.execute("CREATE TABLE lake.ok(i INT)")
        con.execute('CREATE TABLE lake.bad(i INT, "_DuckLake_x" INT)')
        con.execute("INSERT INTO lake.bad VALUES (1, 2)")
    finally:
        con.close()
    catalog = spot.catalog
    before = dump(catalog)
    for args in (["--dry-run"], ["--yes"]):
        refused = run_cli("upgrade", catalog, "--to", "1.1", *args, cwd=tmp_path)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert "main.bad._DuckLake_x" in refused.stderr and "rename them" in refused.stderr
    assert dump(catalog) == before and not list(tmp_path.glob("*backup*"))


@pytest.mark.parametrize("spot", ["sqlite", "postgres"], indirect=True)
@pytest.mark.parametrize("version", ["1.1-dev1", "1.1"])
def test_a_nightly_or_fork_1_1_without_the_columns_is_refused_then_finished(spot: Spot, version: str,
                                                                           tmp_path: Path) -> None:
    catalog = _duckdb_lake(spot)
    # What a nightly build left: the inlined renames and two of the new columns, then its version string.
    from ducklake_cli.catalog.backends import backend_for
    from ducklake_cli.catalog.migrate import AddColumn, inlined_renames, run_op
    from ducklake_cli.catalog.url import parse_catalog

    backend = backend_for(parse_catalog(catalog))
    engine = backend.create_engine(read_only=False)
    try:
        with engine.begin() as conn:
            for name, old, new in inlined_renames(conn, backend):
                conn.exec_driver_sql(f"ALTER TABLE {backend.qualify(name)} RENAME COLUMN {backend.quote(old)} "
                                     f"TO {backend.quote(new)}")
            for table, column, kind in s.V11_COLUMNS[:2]:
                run_op(conn, backend, AddColumn(table, column, kind), tolerant=False)
    finally:
        engine.dispose()
    set_version(catalog, version)
    before = dump(catalog)
    refused = run_cli("inspect", catalog)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"says DuckLake {version} but lacks" in refused.stderr and "upgrade --to 1.1" in refused.stderr
    writes = run_cli("query", catalog, "CREATE TABLE z(i INT)")
    assert writes.returncode == 2 and dump(catalog) == before
    done = run_cli("upgrade", catalog, "--to", "1.1", "--yes", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verify"]["healthy"] is True
    assert version_of(catalog) == "1.1"
    assert all(c in _columns(catalog, t) for t, c in _V11_COLUMNS)
    assert run_cli("inspect", catalog).returncode == 0


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_a_complete_1_1_dev1_catalog_is_read_in_place_but_not_written(spot: Spot, tmp_path: Path) -> None:
    made = run_cli("create-catalog", spot.catalog, "--data-path", str(spot.data_path), "--format-version", "1.1")
    assert made.returncode == 0, made.stderr
    assert run_cli("query", spot.catalog, "CREATE TABLE t(i INT)").returncode == 0
    set_version(spot.catalog, "1.1-dev1")
    before = dump(spot.catalog)
    seen = run_cli("inspect", spot.catalog, "--format", "json")
    assert seen.returncode == 0 and json.loads(seen.stdout)["format_version"] == "1.1-dev1"
    refused = run_cli("query", spot.catalog, "CREATE TABLE u(i INT)")
    assert refused.returncode == 2 and "upgrade --to 1.1" in refused.stderr and dump(spot.catalog) == before
    assert run_cli("upgrade", spot.catalog, "--to", "1.1", "--yes", "--no-backup").returncode == 0
    assert version_of(spot.catalog) == "1.1"
    assert run_cli("query", spot.catalog, "CREATE TABLE u(i INT)").returncode == 0


@pytest.mark.parametrize("spot", ["sqlite", "postgres"], indirect=True)
def test_a_sigkill_at_any_step_leaves_the_1_0_catalog(spot: Spot) -> None:
    catalog = _duckdb_lake(spot)
    before = dump(catalog)
    from ducklake_cli.catalog.migrate import STEPS

    step = next(st for st in STEPS if st.target == "1.1")
    for point in (*(f"1.0-1.1:{i}" for i in (0, 3, len(step.ops) - 1)), "1.0-1.1:done"):
        killed = run_cli("upgrade", catalog, "--to", "1.1", "--yes", "--no-backup",
                         env={"DUCKLAKE_FAULT_AT": point})
        assert killed.returncode == -9, (point, killed.stderr)
        assert dump(catalog) == before and version_of(catalog) == "1.0", point


def _sqlite_catalog(tmp_path: Path) -> str:
    catalog = str(tmp_path / "c.sqlite")
    assert run_cli("create-catalog", catalog, "--data-path", str(tmp_path / "data")).returncode == 0
    return catalog


def test_repair_missing_schema_versions_rows_of_inlined_tables(tmp_path: Path) -> None:
    catalog = _sqlite_catalog(tmp_path)
    # Table 1 created at snapshot 1 (schema version 1), altered at 2 (version 2, row kept) and at 4 (version 3 —
    # an older writer left its schema_versions row out); snapshot 3 is a data commit.
    run_sql(catalog,
            "INSERT INTO ducklake_snapshot VALUES (1, '2026-01-01 00:00:00+00', 1, 2, 0), "
            "(2, '2026-01-02 00:00:00+00', 2, 2, 0), (3, '2026-01-03 00:00:00+00', 2, 2, 0), "
            "(4, '2026-01-04 00:00:00+00', 3, 2, 0)",
            "INSERT INTO ducklake_schema_versions VALUES (1, 1, 1), (2, 2, 1)",
            "INSERT INTO ducklake_inlined_data_tables VALUES (1, 'ducklake_inlined_data_1_1', 1), "
            "(1, 'ducklake_inlined_data_1_3', 3)",
            "CREATE TABLE ducklake_inlined_data_1_1(row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, i "
            "BIGINT)",
            "CREATE TABLE ducklake_inlined_data_1_3(row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, i "
            "BIGINT)")
    from ducklake_cli.catalog.backends import backend_for
    from ducklake_cli.catalog.migrate import migrate
    from ducklake_cli.catalog.url import parse_catalog

    backend = backend_for(parse_catalog(catalog))
    engine = backend.create_engine(read_only=False)
    try:
        with engine.begin() as conn:
            done = migrate(conn, backend, "1.0", "1.1")
    finally:
        engine.dispose()
    assert done == {"1.0 -> 1.1": 6 + 1}  # two companions × three renames, one schema_versions row
    rows = run_sql(catalog, "SELECT begin_snapshot, schema_version, table_id FROM ducklake_schema_versions "
                            "ORDER BY begin_snapshot")
    assert [tuple(r) for r in rows] == [(1, 1, 1), (2, 2, 1), (4, 3, 1)]


def test_repair_struct_field_defaults_and_retyped_bounds(tmp_path: Path) -> None:
    catalog = _sqlite_catalog(tmp_path)
    run_sql(catalog,
            # a struct field (column 3 in struct 2) renamed at snapshot 5: the new row lost its default
            "INSERT INTO ducklake_column VALUES (3, 1, 5, 1, 0, 'x', 'int32', '7', '7', true, 2, 'literal', NULL), "
            "(3, 5, NULL, 1, 0, 'y', 'int32', NULL, NULL, true, 2, NULL, NULL), "
            # column 4 retyped float32 → float64 at snapshot 6; column 5 never retyped
            "(4, 1, 6, 1, 1, 'f', 'float32', NULL, NULL, true, NULL, 'literal', NULL), "
            "(4, 6, NULL, 1, 1, 'f', 'float64', NULL, NULL, true, NULL, 'literal', NULL), "
            "(5, 1, NULL, 1, 2, 'g', 'float64', NULL, NULL, true, NULL, 'literal', NULL)",
            "INSERT INTO ducklake_table_column_stats VALUES (1, 4, false, false, '0.1', '0.9', NULL), "
            "(1, 5, false, false, '0.1', '0.9', NULL)",
            "INSERT INTO ducklake_file_column_stats VALUES (10, 1, 4, 8, 1, 0, '0.1', '0.9', false, NULL), "
            "(10, 1, 5, 8, 1, 0, '0.1', '0.9', false, NULL)")
    assert run_cli("upgrade", catalog, "--to", "1.1", "--yes", "--no-backup").returncode in (0, 4)
    col = run_sql(catalog, "SELECT column_name, initial_default, default_value, default_value_type "
                           "FROM ducklake_column WHERE column_id = 3 ORDER BY begin_snapshot")
    assert [tuple(r) for r in col] == [("x", "7", "7", "literal"), ("y", "7", "7", "literal")]
    for table in ("ducklake_table_column_stats", "ducklake_file_column_stats"):
        bounds = run_sql(catalog, f"SELECT column_id, min_value, max_value FROM {table} ORDER BY column_id")
        assert [tuple(r) for r in bounds] == [(4, None, None), (5, "0.1", "0.9")], table


def test_create_catalog_makes_1_0_or_1_1(tmp_path: Path) -> None:
    for version, tables in (("1.0", 28), ("1.1", 29)):
        catalog = str(tmp_path / f"c{version}.sqlite")
        made = run_cli("create-catalog", catalog, "--data-path", str(tmp_path / "d"), "--format-version", version,
                       "--format", "json")
        assert made.returncode == 0 and json.loads(made.stdout)["format_version"] == version, made.stderr
        assert version_of(catalog) == version
        assert len([n for n in dump(catalog) if n.startswith("ducklake_")]) == tables
    assert run_cli("create-catalog", str(tmp_path / "plain.sqlite"), "--data-path", str(tmp_path / "d")).returncode == 0
    assert version_of(str(tmp_path / "plain.sqlite")) == "1.0"
    refused = run_cli("create-catalog", str(tmp_path / "x.sqlite"), "--data-path", str(tmp_path / "d"),
                      "--format-version", "2.0")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "1.0, 1.1" in refused.stderr
    assert not (tmp_path / "x.sqlite").exists()
