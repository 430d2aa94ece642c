"""Files with neither Parquet field ids nor a name mapping (issue 11, item 3): flat tables are read by position as
DuckDB reads them (differential scenario ``add_files_positional`` in tests/support/lakes.py); files of tables with
nested columns, whose fields DuckDB reads as NULL, are refused in one line."""

from __future__ import annotations

import pytest

from tests.support.cli import run_cli
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_unmapped_file_with_nested_columns_is_refused_in_one_line(spot: Spot) -> None:
    old = spot.data_path.parent / "old.parquet"
    con = oracle_connect()
    try:
        con.execute(spot.attach("lake"))
        con.execute("CREATE TABLE lake.t (id INTEGER, s STRUCT(a INTEGER))")
        con.execute(f"COPY (SELECT i::INTEGER AS id, {{'a': i::INTEGER}} AS s FROM range(3) r(i)) TO '{old}'")
        con.execute(f"CALL ducklake_add_data_files('lake', 't', '{old}')")
        con.execute("UPDATE __ducklake_metadata_lake.ducklake_data_file SET mapping_id = NULL")
        con.execute("DETACH lake")
    finally:
        con.close()
    out = run_cli("query", spot.catalog, "SELECT * FROM t")
    assert out.returncode == 1 and out.stdout == "", (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "neither Parquet field ids nor a name mapping" in lines[0], out.stderr
