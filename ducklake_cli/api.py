"""The public Python API: `connect(...)` opens a lake whose tables are Spark DataFrames. The CLI drives the same
operations through `ducklake_cli.lake` and `ducklake_cli.ops`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, overload

from ducklake_cli.catalog.snapshots import SnapshotSelector
from ducklake_cli.errors import UsageError
from ducklake_cli.lake import Lake as _BaseLake

if TYPE_CHECKING:
    import datetime as dt

    from ducklake_cli.engine.session import DataFrame, SparkSession
    from ducklake_cli.ops.dml import ChangeResult
    from ducklake_cli.ops.write import WriteResult


class Lake(_BaseLake):
    """An open DuckLake, as the Python API hands it out: tables and SQL as Spark DataFrames, and changes made on
    the caller's Spark session."""

    _session: SparkSession | None = None

    def spark(self) -> SparkSession:
        """The session a change runs on: the caller's (its DataFrame's, or `spark=`), else the active one."""
        return self._session if self._session is not None else super().spark()

    @contextlib.contextmanager
    def _on(self, session: SparkSession | None) -> Iterator[None]:
        from ducklake_cli.engine.session import adopt

        previous, self._session = self._session, adopt(session) if session is not None else self._session
        try:
            yield
        finally:
            self._session = previous

    def table(
        self, name: str, *, snapshot: int | None = None, as_of: dt.datetime | None = None,
        spark: SparkSession | None = None, with_rowid: bool = False,
    ) -> DataFrame:
        """A table (`name` in schema main, or `schema.name`) at a snapshot as a Spark DataFrame."""
        from ducklake_cli.ops.query import table_dataframe

        with self._on(spark):
            return table_dataframe(self, name, at=SnapshotSelector(snapshot, as_of), with_rowid=with_rowid)

    def sql(
        self, query: str, *, snapshot: int | None = None, as_of: dt.datetime | None = None,
        spark: SparkSession | None = None,
    ) -> DataFrame:
        """Spark SQL over the lake's tables (`schema.table`, `VERSION AS OF n`, `TIMESTAMP AS OF '…'`), quoted as in
        DuckDB (`"name"` is a name, `'it''s'` one string)."""
        from ducklake_cli.ops.query import sql_dataframe

        with self._on(spark):
            return sql_dataframe(self, query, at=SnapshotSelector(snapshot, as_of))
    def table_changes(
        self, table: str, start: int | dt.datetime, end: int | dt.datetime | None = None, *,
        spark: SparkSession | None = None,
    ) -> DataFrame:
        """The rows `table` gained and lost between two snapshots (bounds inclusive; an id, or a time: the first
        snapshot at or after `start`, the last at or before `end`; no `end`: the latest), as DuckDB's
        `ducklake_table_changes` returns them: `snapshot_id`, `rowid`, `change_type` (`insert`, `delete`,
        `update_preimage`, `update_postimage`), then the table's columns as of `end`.

        >>> lake.table_changes("orders", 10, 12).where("change_type = 'delete'")
        """
        from ducklake_cli.ops.feed import feed_dataframe

        with self._on(spark):
            return feed_dataframe(self, table, start, end, feed="changes")

    def table_insertions(
        self, table: str, start: int | dt.datetime, end: int | dt.datetime | None = None, *,
        spark: SparkSession | None = None,
    ) -> DataFrame:
        """The rows inserted into `table` between two snapshots (`snapshot_id`, `rowid`, the columns), as DuckDB's
        `ducklake_table_insertions`; bounds as in `table_changes`."""
        from ducklake_cli.ops.feed import feed_dataframe

        with self._on(spark):
            return feed_dataframe(self, table, start, end, feed="insertions")

    def table_deletions(
        self, table: str, start: int | dt.datetime, end: int | dt.datetime | None = None, *,
        spark: SparkSession | None = None,
    ) -> DataFrame:
        """The rows deleted from `table` between two snapshots (`snapshot_id`, `rowid`, the columns), as DuckDB's
        `ducklake_table_deletions`; bounds as in `table_changes`."""
        from ducklake_cli.ops.feed import feed_dataframe

        with self._on(spark):
            return feed_dataframe(self, table, start, end, feed="deletions")

    @overload
    def write(
        self, df: DataFrame, table: str, *, mode: Literal["merge"], on: Sequence[str] | None = None,
        partition_by: Sequence[str] = (), message: str | None = None, author: str | None = None,
    ) -> ChangeResult: ...

    @overload
    def write(
        self, df: DataFrame, table: str, *, mode: Literal["append", "overwrite", "create"] = "append",
        on: Sequence[str] | None = None, partition_by: Sequence[str] = (), message: str | None = None,
        author: str | None = None, evolve: bool = False,
    ) -> WriteResult: ...

    def write(
        self, df: DataFrame, table: str, *, mode: str = "append", on: Sequence[str] | None = None,
        partition_by: Sequence[str] = (), message: str | None = None, author: str | None = None,
        evolve: bool = False,
    ) -> WriteResult | ChangeResult:
        """Write `df`'s rows (columns by name) into `table` as one snapshot. `mode`: "append" (creates a missing
        table), "overwrite", "create", or "merge" (upsert on the `on` keys: rows with a key the table has replace
        it, the others are inserted; returns a `ChangeResult`). `partition_by` applies when the table is created.
        `evolve`: add `df`'s new columns to the table and widen types where DuckLake allows it, in the same
        snapshot (not with "merge").

        >>> lake.write(spark.read.parquet("extract/"), "crm.customers", mode="merge", on=["customer_id"])
        """
        from ducklake_cli.ops.changes import run_upsert
        from ducklake_cli.ops.write import run_write

        with self._on(df.sparkSession):
            if mode == "merge":
                if evolve:
                    raise UsageError("evolve= does not apply to mode=\"merge\"")
                return run_upsert(self, table, on=list(on or ()), frame=df, partition_by=partition_by,
                                  message=message, author=author)
            if on:
                raise UsageError("on= applies to mode=\"merge\" only")
            return run_write(self, table, frame=df, mode=mode, partition_by=partition_by, message=message,
                             author=author, evolve=evolve)

    def delete(self, table: str, where: str, *, message: str | None = None, author: str | None = None,
               spark: SparkSession | None = None) -> ChangeResult:
        """Delete the rows of `table` for which the SQL condition `where` holds (Spark SQL, quoted as in DuckDB:
        README "SQL dialect"), as one snapshot (`"true"` deletes every row).

        >>> lake.delete("events", "day < DATE '2025-01-01'", message="retention")
        """
        from ducklake_cli.ops.changes import delete_sql
        from ducklake_cli.ops.dml import run_change

        with self._on(spark):
            return run_change(self, [delete_sql(table, where)], message=message, author=author)

    def update(self, table: str, set: Mapping[str, str], where: str | None = None, *,
               message: str | None = None, author: str | None = None,
               spark: SparkSession | None = None) -> ChangeResult:
        """Set columns of `table` to SQL expressions (`{"status": "'closed'", "n": "n + 1"}`) in the rows
        where `where` holds (every row when None), as one snapshot; updated rows keep their row ids.

        >>> lake.update("orders", {"status": "'cancelled'"}, "order_id = 42")
        """
        from ducklake_cli.ops.changes import run_update

        with self._on(spark):
            return run_update(self, table, set, where, message=message, author=author)

    def merge(
        self, source_df: DataFrame, table: str, *, on: Sequence[str], when_matched: str | None = "update",
        when_not_matched: str | None = "insert", message: str | None = None, author: str | None = None,
    ) -> ChangeResult:
        """MERGE `source_df` (the table's columns, by name) into `table` on equal `on` keys, as one snapshot:
        matched rows are updated (every column, "update") or deleted ("delete"), unmatched source rows inserted
        ("insert"); None skips that part. The source must have one row per key.

        >>> lake.merge(changes, "dim.customer", on=["id"], when_matched="delete", when_not_matched=None)
        """
        from ducklake_cli.ops.changes import run_merge

        with self._on(source_df.sparkSession):
            return run_merge(self, table, source_df, on=list(on), when_matched=when_matched,
                             when_not_matched=when_not_matched, message=message, author=author)


connect = Lake.open  # the public entry point: `ducklake_cli.connect("lake.sqlite")` opens a lake as an API `Lake`
