"""Twin lakes for DDL: two identical lakes built by DuckDB 1.5.5; each step runs through DuckDB on lake A and
through our `run_ddl` on lake B; afterwards the catalogs match row for row (uuids and times aside), DuckDB reads
every snapshot of B as it reads the same snapshot of A, and then keeps changing B as it changes A."""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ducklake_cli.api import connect
from ducklake_cli.ops.ddl import DdlResult, run_ddl
from tests.support.dml_twins import twin_spots
from tests.support.oracle import oracle_connect, transaction, used
from tests.support.spot import Spot

ALIAS = "lk"
META = f"__ducklake_metadata_{ALIAS}"

# Catalog tables compared row for row, and the columns left out (random or local by nature).
COMPARED: dict[str, frozenset[str]] = {
    "ducklake_schema": frozenset({"schema_uuid"}),
    "ducklake_table": frozenset({"table_uuid"}),
    "ducklake_column": frozenset(),
    "ducklake_partition_info": frozenset(),
    "ducklake_partition_column": frozenset(),
    "ducklake_sort_info": frozenset(),
    "ducklake_sort_expression": frozenset(),
    "ducklake_view": frozenset({"view_uuid"}),
    "ducklake_tag": frozenset(),
    "ducklake_column_tag": frozenset(),
    "ducklake_metadata": frozenset(),
    "ducklake_snapshot": frozenset({"snapshot_time"}),
    "ducklake_snapshot_changes": frozenset(),
    "ducklake_schema_versions": frozenset(),
    "ducklake_inlined_data_tables": frozenset(),
    "ducklake_data_file": frozenset({"path", "file_size_bytes", "footer_size"}),
    "ducklake_table_stats": frozenset({"file_size_bytes"}),
}


@dataclass(frozen=True)
class DStep:
    """DuckDB runs `duck` (one transaction); we run `ours` (the same SQL when None) as one statement."""

    duck: tuple[str, ...]
    ours: str | None = None

    @property
    def our_sql(self) -> str:
        """What we run."""
        if self.ours is not None:
            return self.ours
        assert len(self.duck) == 1
        return self.duck[0]


def ddl(duck: str | Sequence[str], ours: str | None = None) -> DStep:
    """A step: one DuckDB statement (or several in one transaction) and, when it is spelled otherwise, ours."""
    return DStep((duck,) if isinstance(duck, str) else tuple(duck), ours)


@dataclass(frozen=True)
class DdlSequence:
    """Setup (DuckDB, on both lakes), DDL steps (DuckDB on A, we on B), then DuckDB continuing on both."""

    name: str
    setup: tuple[str, ...]
    steps: tuple[DStep, ...]
    after: tuple[str, ...] = ()


_UUID_DIR = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/")


def catalog_value(value: Any) -> Any:
    """A catalog (or row) value in one comparable form: NaN equal to itself, uuid-named directories as one."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, str) and _UUID_DIR.fullmatch(value):
        return "<uuid>/"  # the directory of a schema or table whose name is not plain
    if isinstance(value, decimal.Decimal | dt.date | dt.time | dt.datetime | dt.timedelta | bytes):
        return str(value)
    if isinstance(value, list | tuple):
        return tuple(catalog_value(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), catalog_value(v)) for k, v in value.items()))
    return value


def _sorted(rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted((tuple(catalog_value(v) for v in r) for r in rows), key=lambda r: tuple(repr(v) for v in r))


@dataclass
class DdlTwins:
    """Lake A (DuckDB's) and lake B (ours) and the oracle connection."""

    a: Spot
    b: Spot
    con: duckdb.DuckDBPyConnection

    @contextlib.contextmanager
    def attached(self, spot: Spot, version: int | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """The oracle with `spot` attached as `lk` (at a snapshot when `version`), detached afterwards."""
        extra = f"SNAPSHOT_VERSION {version}" if version is not None else ""
        with used(self.con, spot.attach(ALIAS, extra), ALIAS) as con:
            yield con

    def duck(self, spot: Spot, statements: Sequence[str]) -> None:
        """DuckDB runs the statements in one transaction."""
        with self.attached(spot) as con:
            transaction(con, statements)

    def ours(self, spot: Spot, sql: str) -> DdlResult:
        """We run one statement."""
        lake = connect(spot.catalog)
        try:
            return run_ddl(lake, [sql])
        finally:
            lake.close()

    def setup(self, statements: Sequence[str]) -> None:
        """The same DuckDB statements (autocommit each) on both lakes."""
        if not statements:  # both catalogs are made by the first attach
            statements = ("SELECT 1",)
        for spot in (self.a, self.b):
            with self.attached(spot) as con:
                for s in statements:
                    con.execute(s)

    # ----- comparing --------------------------------------------------------------------------------------------

    def catalog(self, spot: Spot) -> dict[str, list[tuple[Any, ...]]]:
        """The compared catalog tables, as DuckDB reads them (rows sorted; `data_path` left out)."""
        out = {}
        with self.attached(spot) as con:
            for table, skip in COMPARED.items():
                where = " WHERE key <> 'data_path'" if table == "ducklake_metadata" else ""
                cur = con.execute(f"SELECT * FROM {META}.{table}{where}")
                names = [d[0] for d in cur.description]
                keep = [i for i, n in enumerate(names) if n not in skip]
                rows = [tuple(r[i] for i in keep) for r in cur.fetchall()]
                out[table] = [tuple(zip([names[i] for i in keep], r, strict=True)) for r in _sorted(rows)]
        return out

    def compare_catalogs(self) -> None:
        """Row for row, every compared table."""
        got, want = self.catalog(self.b), self.catalog(self.a)
        for table in COMPARED:
            ours = [r for r in got[table] if r not in want[table]]
            theirs = [r for r in want[table] if r not in got[table]]
            assert got[table] == want[table], f"{table} differs:\n only ours:   {ours}\n only DuckDB: {theirs}"

    def history(self, spot: Spot, versions: Sequence[int]) -> dict[int, Any]:
        """What DuckDB reads at each snapshot (one attach): every table's columns with types and its rows, via
        `AT (VERSION => n)` (the table list comes from the catalog at that snapshot); and under key -1, the
        latest snapshot as `latest` reads it."""
        out: dict[int, Any] = {}
        with self.attached(spot) as con:
            out[-1] = self._latest(con)
            for v in versions:
                tables = con.execute(
                    f"SELECT s.schema_name, t.table_name FROM {META}.ducklake_table t JOIN {META}.ducklake_schema s "
                    "USING (schema_id) WHERE t.begin_snapshot <= $v AND (t.end_snapshot IS NULL OR "
                    "t.end_snapshot > $v) AND s.begin_snapshot <= $v AND (s.end_snapshot IS NULL OR "
                    "s.end_snapshot > $v) ORDER BY ALL", {"v": v}).fetchall()
                seen = {}
                for schema, name in tables:
                    q = f'SELECT * FROM {ALIAS}."{schema}"."{name}" AT (VERSION => {v})'
                    cols = [(r[0], r[1]) for r in con.execute(f"DESCRIBE {q}").fetchall()]
                    seen[f"{schema}.{name}"] = (cols, _sorted(con.execute(q).fetchall()))
                out[v] = seen
        return out

    def latest(self, spot: Spot) -> Any:
        """The latest snapshot as DuckDB reads it: columns, rows, views and table comments."""
        with self.attached(spot) as con:
            return self._latest(con)

    @staticmethod
    def _latest(con: duckdb.DuckDBPyConnection) -> Any:
        """Columns with types, views with SQL and comments, tables with comments, and every table's rows."""
        cols = con.execute(
            "SELECT table_schema, table_name, column_name, data_type, ordinal_position FROM "
            "information_schema.columns WHERE table_catalog = ? ORDER BY ALL", [ALIAS]).fetchall()
        views = con.execute("SELECT schema_name, view_name, sql, comment FROM duckdb_views() "
                            "WHERE database_name = ? ORDER BY ALL", [ALIAS]).fetchall()
        tables = con.execute("SELECT schema_name, table_name, comment FROM duckdb_tables() "
                             "WHERE database_name = ? ORDER BY ALL", [ALIAS]).fetchall()
        rows = {f"{sc}.{n}": _sorted(con.execute(f'SELECT * FROM {ALIAS}."{sc}"."{n}"').fetchall())
                for sc, n, _ in tables}
        return cols, views, tables, rows

    def compare_history(self) -> None:
        """DuckDB reads every snapshot of our lake as it reads the same snapshot of its own."""
        with self.attached(self.a) as con:
            versions = [r[0] for r in con.execute(f"SELECT snapshot_id FROM {META}.ducklake_snapshot "
                                                  "ORDER BY 1").fetchall()]
        got, want = self.history(self.b, versions), self.history(self.a, versions)
        for v in [*versions, -1]:
            assert got[v] == want[v], f"snapshot {v} reads differently:\n ours:   {got[v]}\n duckdb: {want[v]}"


def run_ddl_sequence(seq: DdlSequence, backend: str, tmp: Path) -> DdlTwins:
    """Build the twins, run the steps, compare catalogs and history, let DuckDB continue on both, compare again."""
    con = oracle_connect()
    try:
        with twin_spots(backend, tmp) as (a, b):
            twins = DdlTwins(a, b, con)
            twins.setup(seq.setup)
            with twins.attached(a) as duck:  # only DuckDB writes lake A meanwhile: attached once
                for st in seq.steps:
                    transaction(duck, st.duck)
                    twins.ours(b, st.our_sql)
            twins.compare_catalogs()
            twins.compare_history()
            for sql in seq.after:
                twins.duck(a, [sql])
                twins.duck(b, [sql])
            if seq.after:
                twins.compare_catalogs()
                assert twins.latest(b) == twins.latest(a)
            return twins
    finally:
        con.close()

