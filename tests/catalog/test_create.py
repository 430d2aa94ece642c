"""`create-catalog` makes exactly what DuckDB's extension makes, and DuckDB can then use it."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

import ducklake_cli
from ducklake_cli.catalog.backends import backend_for
from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.ops import inspect as inspect_ops
from tests.support.cli import run_cli
from tests.support.oracle import oracle_connect
from tests.support.services import pg_database
from tests.support.spot import ORACLE_BACKENDS, Spot


def _catalog_ddl(catalog: str) -> dict[str, tuple[list[tuple[str, str, bool]], list[str]]]:
    """Per ducklake_* table: (name, native type, nullable) of each column in order, and the primary key."""
    from sqlalchemy import inspect

    backend = backend_for(parse_catalog(catalog))
    if backend.name == "duckdb":  # duckdb_engine's inspector does not support column reflection
        import duckdb

        con = duckdb.connect(catalog, read_only=True)
        try:
            cols = con.execute(
                "SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
                "WHERE table_name LIKE 'ducklake_%' ORDER BY table_name, column_index").fetchall()
            pks = con.execute("SELECT table_name, constraint_column_names FROM duckdb_constraints() "
                              "WHERE constraint_type = 'PRIMARY KEY'").fetchall()
        finally:
            con.close()
        result: dict[str, tuple[list[tuple[str, str, bool]], list[str]]] = {}
        for table, column, dtype, nullable in cols:
            result.setdefault(table, ([], []))[0].append((column, dtype, bool(nullable)))
        for table, names in pks:
            result[table][1].extend(names)
        return result
    engine = backend.create_engine(read_only=True)
    try:
        with engine.connect() as conn:
            insp = inspect(conn)
            out = {}
            for table in sorted(backend.list_tables(conn)):
                cols = [(c["name"], str(c["type"]), bool(c["nullable"])) for c in insp.get_columns(table)]
                out[table] = (cols, list(insp.get_pk_constraint(table)["constrained_columns"]))
            return out
    finally:
        engine.dispose()


def _extension_catalog(spot: Spot) -> None:
    """Let DuckDB's extension create its own catalog at this spot (ATTACH creates it)."""
    con = oracle_connect()
    try:
        con.execute(spot.attach("ref"))
        con.execute("DETACH ref")
    finally:
        con.close()


@pytest.mark.parametrize("spot", ORACLE_BACKENDS, indirect=True)
def test_duckdb_uses_our_new_catalog(spot: Spot) -> None:
    res = run_cli("create-catalog", spot.catalog, "--data-path", str(spot.data_path), "--format", "json")
    assert res.returncode == 0, res.stderr
    created = json.loads(res.stdout)
    assert created["data_path"] == str(spot.data_path) + "/"
    assert created["format_version"] == "1.0"

    con = oracle_connect()
    try:
        con.execute(spot.attach())
        con.execute("CREATE TABLE lake.t (id BIGINT, s VARCHAR)")
        con.execute("INSERT INTO lake.t SELECT range, 'v' || range FROM range(1000)")
        con.execute("DELETE FROM lake.t WHERE id < 10")
        assert con.execute("SELECT count(*), min(id) FROM lake.t").fetchone() == (990, 10)
        snapshots = [r[0] for r in con.execute("SELECT snapshot_id FROM ducklake_snapshots('lake')").fetchall()]
        con.execute("DETACH lake")
    finally:
        con.close()

    with ducklake_cli.connect(spot.catalog, read_only=True) as lake:
        summary = inspect_ops.summary(lake)
        assert [(t.table, t.live_rows) for t in summary.tables] == [("t", 990)]
        assert [s.snapshot_id for s in inspect_ops.snapshots(lake).snapshots] == snapshots


@pytest.mark.parametrize("spot", ORACLE_BACKENDS, indirect=True)
def test_same_tables_and_types_as_the_extension(spot: Spot, tmp_path: Path) -> None:
    """Our DDL, seen through DuckDB, equals what the extension itself creates on the same backend."""
    assert run_cli("create-catalog", spot.catalog, "--data-path", str(spot.data_path)).returncode == 0
    ours = _catalog_ddl(spot.catalog)
    with contextlib.ExitStack() as stack:
        if spot.backend == "postgres":
            ref_target = stack.enter_context(pg_database(os.environ["DUCKLAKE_TEST_PG"]))
        else:
            ref_target = str(tmp_path / ("ref.sqlite" if spot.backend == "sqlite" else "ref.ducklake"))
        reference = Spot(spot.backend, ref_target, ref_target, tmp_path / "ref_data")
        _extension_catalog(reference)
        theirs = _catalog_ddl(reference.catalog)
    assert len(ours) == 28
    assert ours == theirs


@pytest.mark.parametrize("spot", ["sqlite", "duckdb", "postgres", "mysql"], indirect=True)
def test_refuses_an_existing_catalog(spot: Spot) -> None:
    assert run_cli("create-catalog", spot.catalog, "--data-path", str(spot.data_path)).returncode == 0
    again = run_cli("create-catalog", spot.catalog, "--data-path", str(spot.data_path))
    assert again.returncode == 1
    assert again.stderr.count("\n") == 1 and "already holds DuckLake catalog tables" in again.stderr
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake:
        assert inspect_ops.summary(lake).snapshot_count == 1
