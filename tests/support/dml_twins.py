"""Twin lakes for the row-level change tests: two identical lakes built by DuckDB 1.5.5, one changed by DuckDB
(the oracle), the other by our `run_change`, then compared at every snapshot (rows, row ids, change strings) as
DuckDB reads them and as our reader reads them."""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ducklake_cli.api import connect
from ducklake_cli.catalog.snapshots import SnapshotSelector
from ducklake_cli.ops.dml import ChangeResult, run_change
from ducklake_cli.ops.query import table_dataframe
from tests.support.history_changes import assert_rows_match_table_changes
from tests.support.oracle import oracle_connect, transaction, used
from tests.support.services import pg_database, require_env
from tests.support.spot import Spot

ALIAS = "lk"


@dataclass(frozen=True)
class Step:
    """One change: DuckDB runs `duck` (one transaction), we run `ours` (one `run_change`, the same SQL when None).

    `loose_ids`: the step inserts several rows at once, whose row ids depend on row order (an engine's choice):
    its new rows' ids are compared as a set, and matched by value so that later snapshots compare exactly.
    `rows_only`: the two sides are not the same statements (our multi-action MERGE against DuckDB's equivalent
    separate statements), so from here on only the latest rows are compared.
    `duck_replaces_dv`: DuckDB replaces a deletion vector here; DuckDB 1.5.5 gives the new one the new snapshot as
    `begin_snapshot`, so its lake reads earlier snapshots without the old deletes (we keep them): earlier
    snapshots of the lake DuckDB changed are then checked only against our reader, not against history.
    """

    duck: tuple[str, ...]
    ours: tuple[str, ...] | None = None
    loose_ids: bool = False
    rows_only: bool = False
    duck_replaces_dv: bool = False

    @property
    def spark_sql(self) -> tuple[str, ...]:
        """What we run."""
        return self.ours if self.ours is not None else self.duck


def step(*duck: str, ours: Sequence[str] | None = None, loose_ids: bool = False, rows_only: bool = False,
         duck_replaces_dv: bool = False) -> Step:
    """A `Step` from statements."""
    return Step(tuple(duck), tuple(ours) if ours is not None else None, loose_ids, rows_only, duck_replaces_dv)


@dataclass(frozen=True)
class Sequence_:
    """A named change sequence on one table: setup (DuckDB, on both lakes), steps, then cross-over steps."""

    name: str
    setup: tuple[str, ...]
    steps: tuple[Step, ...]
    cross: tuple[Step, ...] = ()
    table: str = "t"
    order: str = "rowid"
    our_reader: bool = True  # also compare our reader with DuckDB's at the end (seconds per lake: CI time)


def normal(value: Any) -> Any:
    """A value from DuckDB or Spark in one comparable form (structs as sorted tuples, lists as tuples)."""
    if hasattr(value, "asDict"):
        value = value.asDict(recursive=False)
    if isinstance(value, dict):
        return tuple(sorted((str(k), normal(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(normal(v) for v in value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC)
    return value


def sort_key(row: tuple[Any, ...]) -> tuple[str, ...]:
    """Total order for rows holding None and nested values."""
    return tuple(repr(v) for v in row)


@dataclass
class Lakes:
    """Lake A (DuckDB's) and lake B (ours), their oracle connection, and what the comparison must tolerate."""

    a: Spot
    b: Spot
    con: duckdb.DuckDBPyConnection
    table: str = "t"
    id_map: dict[int, int] = field(default_factory=dict)  # lake B's row id -> lake A's, for `loose_ids` rows
    history: dict[int, list[tuple[Any, ...]] | None] = field(default_factory=dict)  # rows when first compared
    broken_before: dict[str, int] = field(default_factory=dict)  # see `Step.duck_replaces_dv`
    rows_only: bool = False
    log: list[str] = field(default_factory=list)

    # ----- running ----------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def attached(self, spot: Spot) -> Iterator[duckdb.DuckDBPyConnection]:
        """The oracle with `spot` attached as `lk` (the default database), detached afterwards (a DuckDB
        catalog file is then free for our side)."""
        with used(self.con, spot.attach(ALIAS), ALIAS) as con:
            yield con

    def duck(self, spot: Spot, statements: Sequence[str]) -> None:
        """DuckDB runs the statements in one transaction."""
        with self.attached(spot) as con:
            transaction(con, statements)

    def ours(self, spot: Spot, statements: Sequence[str]) -> ChangeResult:
        """We run the statements as one script."""
        lake = connect(spot.catalog)
        try:
            return run_change(lake, list(statements))
        finally:
            lake.close()

    def setup(self, statements: Sequence[str]) -> None:
        """The same DuckDB statements (autocommit each) on both lakes."""
        for spot in (self.a, self.b):
            with self.attached(spot) as con:
                for s in statements:
                    con.execute(s)

    def run(self, st: Step, *, cross: bool = False) -> None:
        """One step on both lakes (DuckDB on A and we on B; the other way round when `cross`), then compare."""
        duck_spot, our_spot = (self.b, self.a) if cross else (self.a, self.b)
        boundary = self.next_row_id(self.a) if st.loose_ids else None
        self.rows_only = self.rows_only or st.rows_only
        self.duck(duck_spot, st.duck)
        result = self.ours(our_spot, st.spark_sql)
        self.log.append(f"{'cross ' if cross else ''}{st.spark_sql} -> {result}")
        if st.duck_replaces_dv:
            self.broken_before.setdefault("b" if cross else "a", self.snapshots(duck_spot)[-1][0])
        if boundary is not None:
            self.match_ids(boundary)
        self.compare_duckdb(full=False)  # earlier snapshots once, at the end (each read costs a query per lake)

    def match_ids(self, boundary: int) -> None:
        """Rows inserted at or above `boundary`: the same rows and the same set of ids on both lakes; pair the
        ids by row value for the comparisons that follow."""
        latest = self.snapshots(self.a)[-1][0]
        rows_a = self.duck_rows(self.a, [latest])[latest] or []
        rows_b = self.duck_rows(self.b, [latest])[latest] or []
        new_a = {r[1:]: r[0] for r in rows_a if r[0] >= boundary}
        new_b = {r[1:]: r[0] for r in rows_b if r[0] >= boundary}
        assert len(new_a) == len([r for r in rows_a if r[0] >= boundary]), "loose_ids needs distinct new rows"
        assert sorted(new_a.values()) == sorted(new_b.values()), "the new rows' ids differ as a set"
        assert new_a.keys() == new_b.keys(), "the new rows differ"
        self.id_map.update({new_b[k]: new_a[k] for k in new_a})

    # ----- reading ----------------------------------------------------------------------------------------------

    def next_row_id(self, spot: Spot) -> int:
        """The table's next row id (DuckDB's catalog view)."""
        with self.attached(spot) as con:
            row = con.execute(
                f"SELECT s.next_row_id FROM __ducklake_metadata_{ALIAS}.ducklake_table_stats s "
                f"JOIN __ducklake_metadata_{ALIAS}.ducklake_table t USING (table_id) "
                f"WHERE t.table_name = ? AND t.end_snapshot IS NULL", [self.table]).fetchone()
        assert row is not None
        return int(row[0])

    def snapshots(self, spot: Spot) -> list[tuple[int, Any]]:
        """(snapshot id, changes) of every snapshot, as `ducklake_snapshots()` shows them."""
        with self.attached(spot) as con:
            rows = con.execute(f"SELECT snapshot_id, changes FROM ducklake_snapshots('{ALIAS}') "
                               "ORDER BY snapshot_id").fetchall()
        return [(int(sid), normal(changes)) for sid, changes in rows]

    def duck_rows(self, spot: Spot, snapshots: Sequence[int]) -> dict[int, list[tuple[Any, ...]] | None]:
        """Per snapshot, `rowid, *` as DuckDB reads it (None where the table does not exist)."""
        out: dict[int, list[tuple[Any, ...]] | None] = {}
        with self.attached(spot) as con:
            for sid in snapshots:
                try:
                    rows = con.execute(f"SELECT rowid, * FROM {self.table} AT (VERSION => {sid})").fetchall()
                except duckdb.CatalogException:
                    out[sid] = None
                    continue
                out[sid] = sorted((tuple(normal(v) for v in r) for r in rows), key=sort_key)
        return out

    def our_rows(self, spot: Spot, snapshots: Sequence[int]) -> dict[int, list[tuple[Any, ...]] | None]:
        """The same through our reader (Spark), every snapshot in one job (a job per snapshot is seconds each)."""
        from pyspark.sql import functions as F

        from ducklake_cli.errors import NotFoundError

        out: dict[int, list[tuple[Any, ...]] | None] = {}
        lake = connect(spot.catalog)
        try:
            union = None
            for sid in snapshots:
                try:
                    df = table_dataframe(lake, self.table, at=SnapshotSelector(sid), with_rowid=True)
                except NotFoundError:
                    out[sid] = None
                    continue
                out[sid] = []
                cols = ["rowid", *[c for c in df.columns if c != "rowid"]]
                df = df.select(F.lit(sid).alias("__snap"), *cols)
                union = df if union is None else union.unionByName(df, allowMissingColumns=True)
            for r in union.collect() if union is not None else []:
                rows = out[r[0]]
                assert rows is not None
                rows.append(tuple(normal(v) for v in r[1:]))
        finally:
            lake.close()
        return {sid: None if rows is None else sorted(rows, key=sort_key) for sid, rows in out.items()}

    # ----- comparing --------------------------------------------------------------------------------------------

    def translated(self, rows: list[tuple[Any, ...]] | None) -> list[tuple[Any, ...]] | None:
        """Lake B's rows with row ids in lake A's terms (see `match_ids`)."""
        if rows is None or not self.id_map:
            return rows
        return sorted(((self.id_map.get(r[0], r[0]), *r[1:]) for r in rows), key=sort_key)

    def compare_duckdb(self, *, full: bool = True) -> None:
        """Both lakes as DuckDB reads them: same snapshots and changes; at each new snapshot the same rows and
        row ids, and (when `full`) at each earlier one the rows it had when first compared."""
        snaps_a, snaps_b = self.snapshots(self.a), self.snapshots(self.b)
        if self.rows_only:
            latest_a, latest_b = snaps_a[-1][0], snaps_b[-1][0]
            got = self.duck_rows(self.b, [latest_b])[latest_b] or []
            want = self.duck_rows(self.a, [latest_a])[latest_a] or []
            strip = sorted((r[1:] for r in got), key=sort_key), sorted((r[1:] for r in want), key=sort_key)
            assert strip[0] == strip[1], f"latest rows differ (ours, DuckDB's)\n{_diff(*strip)}"
            return
        assert snaps_b == snaps_a, "snapshots/changes differ (ours | DuckDB's):\n" + "\n".join(
            f"{x}  |  {y}" for x, y in zip(snaps_b, snaps_a, strict=False)) + "\n" + "\n".join(self.log)
        ids = [s for s, _ in snaps_a if full or s not in self.history]
        rows = {"a": self.duck_rows(self.a, ids), "b": self.duck_rows(self.b, ids)}
        rows["b"] = {sid: self.translated(r) for sid, r in rows["b"].items()}
        for sid in ids:
            if sid not in self.history:
                assert rows["b"][sid] == rows["a"][sid], (
                    f"snapshot {sid} read by DuckDB (ours vs DuckDB's): rows differ\n"
                    f"{_diff(rows['b'][sid] or [], rows['a'][sid] or [])}\n" + "\n".join(self.log))
                self.history[sid] = rows["a"][sid]
                continue
            for name, lake_rows in rows.items():
                broken = self.broken_before.get(name)
                if broken is not None and sid < broken:
                    continue
                assert lake_rows[sid] == self.history[sid], (
                    f"snapshot {sid} of lake {name.upper()} read by DuckDB changed since it was made\n"
                    f"{_diff(lake_rows[sid] or [], self.history[sid] or [])}\n" + "\n".join(self.log))

    def compare_ours(self, *, both: bool = True) -> None:
        """Our reader on lake B (and A when `both`) agrees with DuckDB's reading of it, at every snapshot."""
        for spot in (self.a, self.b) if both else (self.b,):
            ids = [s for s, _ in self.snapshots(spot)]
            want, got = self.duck_rows(spot, ids), self.our_rows(spot, ids)
            name = "DuckDB's" if spot is self.a else "our"
            for sid in ids:
                assert got[sid] == want[sid], f"{name} lake at snapshot {sid}: our reader vs DuckDB\n" + _diff(
                    got[sid] or [], want[sid] or [])


def _diff(got: list[Any], want: list[Any]) -> str:
    extra = [r for r in got if r not in want][:5]
    missing = [r for r in want if r not in got][:5]
    return f"  unexpected: {extra}\n  missing:    {missing}\n  counts: {len(got)} vs {len(want)}"


@contextlib.contextmanager
def twin_spots(backend: str, tmp: Path) -> Iterator[tuple[Spot, Spot]]:
    """Two empty catalog locations of one backend (PostgreSQL: a database each), data paths apart."""
    with contextlib.ExitStack() as stack:
        spots = []
        for name in ("a", "b"):
            data = tmp / name / "data"
            data.mkdir(parents=True)
            if backend == "postgres":
                url = stack.enter_context(pg_database(require_env("DUCKLAKE_TEST_PG")))
                spots.append(Spot(backend, url, url, data))
            else:
                path = str(tmp / name / ("cat.sqlite" if backend == "sqlite" else "cat.ducklake"))
                spots.append(Spot(backend, path, path, data))
        yield spots[0], spots[1]


def run_sequence(seq: Sequence_, backend: str, tmp: Path) -> Lakes:
    """Build the twins, run the steps and the cross-over, and compare after each; our reader at the end."""
    con = oracle_connect()
    try:
        with twin_spots(backend, tmp) as (a, b):
            lakes = Lakes(a, b, con, table=seq.table)
            lakes.setup(seq.setup)
            lakes.compare_duckdb()
            for st in seq.steps:
                lakes.run(st)
            for st in seq.cross:
                lakes.run(st, cross=True)
            lakes.compare_duckdb()
            # Our reader on DuckDB's lake too: once (SQLite); it reads every catalog backend the same way and
            # takes seconds per lake.
            if seq.our_reader:
                lakes.compare_ours(both=backend == "sqlite")
            for spot in (a, b):  # `inspect --snapshots` row counts on both lakes, each changed by both sides
                assert_rows_match_table_changes(spot, seq.table)
            return lakes
    finally:
        con.close()
