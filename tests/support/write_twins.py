"""Twin lakes for "write what DuckDB writes": DuckDB 1.5.5 runs each statement on lake A, `ducklake query` runs the
same text (or its Spark spelling) on lake B, and after every step every `ducklake_*` catalog table — inlined data and
deletion tables included — is compared row for row, less the columns that differ by nature (`IGNORED`: random
names, sizes of files two writers encode differently, clock times). Rows read by DuckDB are compared too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from tests.support.ddl_twins import catalog_value
from tests.support.dml_twins import sort_key
from tests.support.oracle import oracle_connect, transaction, used
from tests.support.spot import Spot

ALIAS = "lk"
META = f"__ducklake_metadata_{ALIAS}"

# Columns that differ between two writers of the same change by nature, per table (all tables: `*`).
IGNORED: dict[str, frozenset[str]] = {
    "*": frozenset({"schema_uuid", "table_uuid", "view_uuid", "snapshot_time", "schedule_start", "encryption_key"}),
    "ducklake_data_file": frozenset({"path", "file_size_bytes", "footer_size"}),
    # Which of one statement's delete files gets which id follows DuckDB's hash map, which varies run to run.
    "ducklake_delete_file": frozenset({"path", "file_size_bytes", "footer_size", "delete_file_id"}),
    "ducklake_files_scheduled_for_deletion": frozenset({"path"}),
    "ducklake_table_stats": frozenset({"file_size_bytes"}),
    "ducklake_file_column_stats": frozenset({"column_size_bytes"}),
    "ducklake_metadata": frozenset(),
}


@dataclass
class WriteTwins:
    """Lake A (DuckDB's) and lake B (ours), the oracle connection, and the steps run so far (for messages)."""

    a: Spot
    b: Spot
    con: duckdb.DuckDBPyConnection = field(default_factory=oracle_connect)
    log: list[str] = field(default_factory=list)

    @contextlib.contextmanager
    def attached(self, spot: Spot) -> Iterator[duckdb.DuckDBPyConnection]:
        """The oracle with `spot` attached as `lk` and in use, detached afterwards."""
        with used(self.con, spot.attach(ALIAS), ALIAS) as con:
            yield con

    def setup(self, statements: Sequence[str]) -> None:
        """The same DuckDB statements (each its own transaction) on both lakes."""
        for spot in (self.a, self.b):
            with self.attached(spot) as con:
                for s in statements or ("SELECT 1",):
                    con.execute(s)

    def duck(self, spot: Spot, statements: Sequence[str]) -> None:
        """DuckDB runs the statements in one transaction."""
        with self.attached(spot) as con:
            transaction(con, statements)

    def ours(self, spot: Spot, sql: str) -> tuple[int, str]:
        """`ducklake query CATALOG SQL` in this process: (exit code, the error line or '')."""
        return self.cli(spot, "query", sql)

    def cli(self, spot: Spot, command: str, *args: str) -> tuple[int, str]:
        """`ducklake COMMAND CATALOG ARGS…` in this process: (exit code, the error line or '')."""
        import io
        import sys

        from ducklake_cli.cli.app import main

        err, out = io.StringIO(), io.StringIO()
        saved = sys.stderr, sys.stdout
        sys.stderr, sys.stdout = err, out
        try:
            main([*command.split(), spot.catalog, *args])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        finally:
            sys.stderr, sys.stdout = saved
        return code, err.getvalue().strip()

    def step(self, duck: str | Sequence[str], ours: str | Callable[[Spot], object] | None = None, *,
             compare: bool = True, loose_ids: bool = False) -> None:
        """DuckDB runs `duck` on A (one transaction); we run `ours` on B (the same text when None: a SQL text through
        `ducklake query`, or a callable given B); then every catalog table and DuckDB's reading are compared
        (`loose_ids`: rows whose order an engine chooses got their row ids in another order: rows compared
        without them)."""
        statements = [duck] if isinstance(duck, str) else list(duck)
        self.duck(self.a, statements)
        if callable(ours):
            ours(self.b)
        else:
            sql = ours if ours is not None else ";\n".join(statements)
            code, err = self.ours(self.b, sql)
            assert code == 0, f"ours failed on {sql!r}: {err}"
        self.log.append(" ; ".join(statements))
        if compare:
            self.compare(loose_ids=loose_ids)

    def refused(self, duck: str, ours: str | None = None, *, needle: str = "") -> str:
        """DuckDB refuses `duck` on A, and we refuse it (`ours`, else the same text) on B in one line (exit 1 or 2),
        changing nothing on either side; our error line."""
        before = self.catalog(self.b)
        with self.attached(self.a) as con, contextlib.suppress(duckdb.Error):
            con.execute(duck)
            raise AssertionError(f"DuckDB accepted {duck!r}")
        code, err = self.ours(self.b, ours if ours is not None else duck)
        assert code in (1, 2) and len(err.splitlines()) == 1 and needle in err, (code, err)
        assert self.catalog(self.b) == before, "a refused statement changed the catalog"
        return err

    def refused_all(self, cases: Sequence[tuple[str, str | None, str]]) -> list[str]:
        """`refused` for each (duck, ours or None, needle), the catalog read once before and once after all of them
        (each refusal changes nothing, so neither does the batch); our error lines."""
        before = self.catalog(self.b)
        errors = []
        for duck, ours, needle in cases:
            with self.attached(self.a) as con, contextlib.suppress(duckdb.Error):
                con.execute(duck)
                raise AssertionError(f"DuckDB accepted {duck!r}")
            code, err = self.ours(self.b, ours if ours is not None else duck)
            assert code in (1, 2) and len(err.splitlines()) == 1 and needle in err, (duck, code, err)
            errors.append(err)
        assert self.catalog(self.b) == before, "a refused statement changed the catalog"
        return errors

    def unchanged(self, duck: str, ours: str | None = None, *, compare: bool = False) -> None:
        """DuckDB runs `duck` on A and we run `ours` (else the same text) on B, and neither commits a snapshot (a
        no-op DuckDB accepts; nothing but a commit changes our catalog); `compare`: the catalogs too."""
        before = self.snapshots(self.a), self.snapshots(self.b)
        self.step(duck, ours, compare=compare)
        assert (self.snapshots(self.a), self.snapshots(self.b)) == before, f"{duck!r} committed a snapshot"

    def snapshots(self, spot: Spot) -> int:
        """How many snapshots the lake has."""
        with self.attached(spot) as con:
            return int(con.execute(f"SELECT count(*) FROM {META}.ducklake_snapshot").fetchone()[0])  # type: ignore[index]

    # ----- comparing --------------------------------------------------------------------------------------------

    def catalog(self, spot: Spot) -> dict[str, list[tuple[Any, ...]]]:
        """Every `ducklake_*` table as DuckDB reads it, rows sorted, less the `IGNORED` columns (names kept)."""
        from ducklake_cli.catalog.schema import SPEC_TABLES

        out = {}
        with self.attached(spot) as con:
            # The metadata database is hidden from DuckDB's listings: the spec's tables, the inlined-data tables the
            # catalog names, and an inlined-deletion table per table that has one.
            tables = [name for name, _cols, _key in SPEC_TABLES]
            inlined = con.execute(f"SELECT table_name FROM {META}.ducklake_inlined_data_tables").fetchall()
            tables += [r[0] for r in inlined]
            for (tid,) in con.execute(f"SELECT DISTINCT table_id FROM {META}.ducklake_table").fetchall():
                with contextlib.suppress(duckdb.Error):
                    con.execute(f"SELECT 1 FROM {META}.ducklake_inlined_delete_{tid} LIMIT 0")
                    tables.append(f"ducklake_inlined_delete_{tid}")
            for table in sorted(tables):
                cur = con.execute(f"SELECT * FROM {META}.{table}" + (
                    " WHERE key <> 'data_path'" if table == "ducklake_metadata" else ""))
                names = [d[0] for d in cur.description]
                skip = IGNORED["*"] | IGNORED.get(table, frozenset())
                keep = [i for i, n in enumerate(names) if n not in skip]
                rows = [tuple((names[i], catalog_value(r[i])) for i in keep) for r in cur.fetchall()]
                out[table] = sorted(rows, key=sort_key)
        return out

    def compare(self, *, loose_ids: bool = False) -> None:
        """Every catalog table row for row, and the latest rows of every table as DuckDB reads them (without row
        ids when `loose_ids`)."""
        got, want = self.catalog(self.b), self.catalog(self.a)
        diffs = []
        for table in sorted(set(got) | set(want)):
            g, w = got.get(table), want.get(table)
            if g != w:
                diffs.append(f"{table}:\n   only ours:   {[r for r in g or [] if r not in (w or [])][:6]}\n"
                             f"   only DuckDB: {[r for r in w or [] if r not in (g or [])][:6]}")
        assert not diffs, "after " + " | ".join(self.log[-1:]) + ":\n" + "\n".join(diffs)
        self.compare_rows(loose_ids=loose_ids)

    def compare_rows(self, *, loose_ids: bool = False) -> None:
        """The latest rows of every table as DuckDB reads them (without row ids when `loose_ids`)."""
        got_rows, want_rows = self.rows(self.b), self.rows(self.a)
        if loose_ids:
            got_rows, want_rows = ({t: sorted((r[1:] for r in rows), key=sort_key) for t, rows in side.items()}
                                   for side in (got_rows, want_rows))
        assert got_rows == want_rows, f"rows differ after {self.log[-1:]}"

    def rows(self, spot: Spot) -> dict[str, list[tuple[Any, ...]]]:
        """Every table's rows (with row ids) at the latest snapshot, as DuckDB reads them."""
        with self.attached(spot) as con:
            names = con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? "
                                "ORDER BY ALL", [ALIAS]).fetchall()
            return {f"{s}.{t}": sorted((tuple(catalog_value(v) for v in r) for r in con.execute(
                f'SELECT rowid, * FROM {ALIAS}."{s}"."{t}"').fetchall()), key=sort_key) for s, t in names}

    def close(self) -> None:
        """Close the oracle."""
        self.con.close()


@contextlib.contextmanager
def write_twins(backend: str, tmp: Path) -> Iterator[WriteTwins]:
    """Two empty lakes of one backend (PostgreSQL: a database each), compared by `WriteTwins`."""
    from tests.support.dml_twins import twin_spots

    with twin_spots(backend, tmp) as (a, b):
        twins = WriteTwins(a, b)
        try:
            yield twins
        finally:
            twins.close()
