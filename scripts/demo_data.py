"""Load sample rows into a lake with DuckDB's ducklake extension (offline wheels), for the quickstart."""

from __future__ import annotations

import argparse
import importlib
import tempfile
from pathlib import Path

import duckdb


def _extension_file(name: str) -> Path:
    pkg = importlib.import_module(f"duckdb_extension_{name}")
    return Path(next(iter(pkg.__path__))) / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"


def main() -> None:
    """Create `main.trips` with 10,000 rows over a few snapshots, one delete and one small (inlined) insert."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("catalog")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as ext_dir:
        con = duckdb.connect(config={"extension_directory": ext_dir, "autoinstall_known_extensions": False})
        for name in ("ducklake", "sqlite"):
            con.execute(f"INSTALL '{_extension_file(name)}'")
            con.execute(f"LOAD {name}")
        con.execute(f"ATTACH 'ducklake:sqlite:{args.catalog}' AS lake")  # the data path is stored in the catalog
        con.execute("CREATE TABLE lake.trips (id BIGINT, city VARCHAR, started TIMESTAMPTZ, fare DECIMAL(8,2))")
        con.execute(
            "INSERT INTO lake.trips SELECT i, ['Amsterdam','Berlin','Lisbon'][1 + i % 3], "
            "TIMESTAMPTZ '2026-01-01 00:00:00+00' + INTERVAL (i) MINUTE, (5 + i % 40)::DECIMAL(8,2) "
            "FROM range(10000) t(i)"
        )
        con.execute("DELETE FROM lake.trips WHERE id % 100 = 0")
        con.execute("INSERT INTO lake.trips VALUES (10000, 'Porto', TIMESTAMPTZ '2026-02-01 08:00:00+00', 12.50)")
        con.execute("DETACH lake")
        con.close()


if __name__ == "__main__":
    main()
