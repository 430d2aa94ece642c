"""``scripts/make_big_catalog.py``: the lakes it builds read the same in DuckDB and in our reader.

Small sizes (a few hundred snapshots/files) keep this fast; the script's catalog rows (written by the library's
catalog layer) are the ones DuckDB writes for the same INSERTs, so DuckDB opening the result (counts, snapshot list, a
filtered lookup, time travel) is the check, on SQLite and PostgreSQL catalogs.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import ducklake_cli
from ducklake_cli.ops.inspect import SnapshotSelector, summary
from tests.support.oracle import attach_clause, oracle_connect

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_big_catalog.py"


@pytest.fixture(scope="module")
def mbc() -> ModuleType:
    """The script, imported as a module."""
    spec = importlib.util.spec_from_file_location("make_big_catalog", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


def duckdb_view(backend: str, catalog: str, data_path: Path, tables: list[str], probe: dict[str, Any],
                at_version: int) -> dict[str, Any]:
    """What DuckDB sees: snapshot count, rows per table (now and at ``at_version``), matches of the probe id."""
    con = oracle_connect()
    try:
        con.execute(attach_clause(backend, catalog, data_path, extra_options="READ_ONLY"))
        snapshots = con.execute("SELECT count(*) FROM ducklake_snapshots('lake')").fetchone()
        rows = {t: con.execute(f"SELECT count(*) FROM lake.main.{t}").fetchone() for t in tables}
        old = con.execute(f"SELECT count(*) FROM lake.main.{tables[0]} AT (VERSION => {at_version})").fetchone()
        found = con.execute(f"SELECT id, v FROM lake.main.{probe['table']} WHERE id = ?", [probe["id"]]).fetchall()
        con.execute("DETACH lake")
    finally:
        con.close()
    assert snapshots is not None and old is not None
    return {"snapshots": snapshots[0], "rows": {t: r[0] for t, r in rows.items() if r is not None},
            "old_rows": old[0], "probe": found}


@pytest.mark.parametrize(
    ("backend", "snapshots", "files", "tables", "mode", "own_staging"),
    [
        pytest.param("sqlite", 300, 300, 1, "distinct", False, id="300-snapshots-300-files"),
        pytest.param("sqlite", 300, 120, 2, "distinct", True, id="inlined-inserts-2-tables"),
        pytest.param("sqlite", 100, 250, 1, "copy", True, id="copies-several-files-per-snapshot"),
        pytest.param("postgres", 120, 60, 2, "distinct", True, id="postgres-files-and-inlined-inserts",
                     marks=pytest.mark.postgres),
    ],
)
def test_big_catalog_matches_duckdb(tmp_path: Path, mbc: ModuleType, backend: str, snapshots: int, files: int,
                                    tables: int, mode: str, own_staging: bool, request: pytest.FixtureRequest) -> None:
    catalog = str(tmp_path / "cat.sqlite") if backend == "sqlite" else request.getfixturevalue("pg_url")
    data_path = tmp_path / "data"
    rows_per_file, inline_rows = 20, 3
    options = mbc.Options(catalog=catalog, data_path=data_path, snapshots=snapshots, files=files,
                          tables=tables, rows_per_file=rows_per_file, inline_rows=inline_rows, mode=mode,
                          staging_dir=tmp_path if own_staging else None)
    built = mbc.build(options)

    inlined_snapshots = sum(1 for j in range(snapshots) if options.files_in_snapshot(j) == 0)
    bootstrap = 1 + 2 * tables
    assert built["snapshots"] == bootstrap + snapshots
    assert built["data_files"] == tables + files
    assert built["inlined_snapshots"] == inlined_snapshots
    assert built["total_rows"] == (tables + files) * rows_per_file + inlined_snapshots * inline_rows
    assert not list(data_path.glob(mbc.STAGING_PREFIX + "*"))  # staging removed

    names = [mbc.table_name(i) for i in range(tables)]
    mid = bootstrap + snapshots // 2
    duck = duckdb_view(backend, catalog, data_path, names, built["probe"], mid)
    with ducklake_cli.connect(catalog) as lake:
        ours = summary(lake)
        ours_old = summary(lake, at=SnapshotSelector(snapshot_id=mid))

    assert duck["snapshots"] == ours.snapshot_count == built["snapshots"]
    assert ours.snapshot_id == built["snapshots"] - 1
    assert [t.table for t in ours.tables] == names
    assert duck["rows"] == {t.table: t.live_rows for t in ours.tables} == built["rows"]
    assert ours.tables[0].live_rows == duck["rows"][names[0]]
    assert sum(t.data_files for t in ours.tables) == built["data_files"]
    assert sum(t.inlined_rows for t in ours.tables) == inlined_snapshots * inline_rows
    assert ours_old.tables[0].live_rows == duck["old_rows"]
    assert 0 < duck["old_rows"] < duck["rows"][names[0]]
    probe = built["probe"]
    assert duck["probe"] == [(probe["id"], f"v{probe['id']}")] * probe["matches"]
