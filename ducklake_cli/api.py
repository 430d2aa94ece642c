"""The public Python API: `connect(...)` opens a lake whose tables are Spark DataFrames. The CLI drives the same
operations through `ducklake_cli.lake` and `ducklake_cli.ops`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ducklake_cli.catalog.snapshots import SnapshotSelector
from ducklake_cli.lake import Lake as _BaseLake

if TYPE_CHECKING:
    import datetime as dt

    from ducklake_cli.engine.session import DataFrame, SparkSession


class Lake(_BaseLake):
    """An open DuckLake, as the Python API hands it out: tables and SQL as Spark DataFrames."""

    def table(
        self, name: str, *, snapshot: int | None = None, as_of: dt.datetime | None = None,
        spark: SparkSession | None = None, with_rowid: bool = False,
    ) -> DataFrame:
        """A table (`name` in schema main, or `schema.name`) at a snapshot as a Spark DataFrame."""
        from ducklake_cli.ops.query import table_dataframe

        return table_dataframe(self, name, at=SnapshotSelector(snapshot, as_of), spark=spark, with_rowid=with_rowid)

    def sql(
        self, query: str, *, snapshot: int | None = None, as_of: dt.datetime | None = None,
        spark: SparkSession | None = None,
    ) -> DataFrame:
        """Spark SQL over the lake's tables (`schema.table`, `VERSION AS OF n`, `TIMESTAMP AS OF '…'`)."""
        from ducklake_cli.ops.query import sql_dataframe

        return sql_dataframe(self, query, at=SnapshotSelector(snapshot, as_of), spark=spark)


connect = Lake.open  # the public entry point: `ducklake_cli.connect("lake.sqlite")` opens a lake as an API `Lake`
