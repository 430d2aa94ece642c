"""Where a test's catalog lives (`Spot`), and the catalog backends tests run on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ORACLE_BACKENDS = ["sqlite", "duckdb", "postgres"]
ALL_BACKENDS = [*ORACLE_BACKENDS, "mysql"]


@dataclass(frozen=True)
class Spot:
    """Where a test's catalog lives: what our CLI takes, what the DuckDB oracle attaches, the data path."""

    backend: str
    catalog: str
    oracle_target: str
    data_path: Path

    def attach(self, alias: str = "lake", extra: str = "") -> str:
        """DuckDB's ATTACH statement for this catalog."""
        from tests.support.oracle import attach_clause  # imported late: the oracle plugin is assert-rewritten

        return attach_clause(self.backend, self.oracle_target, self.data_path, alias=alias, extra_options=extra)
