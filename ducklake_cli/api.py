"""The public Python API: `connect(...)` opens a lake whose tables are Spark DataFrames. The CLI drives the same
operations through `ducklake_cli.lake` and `ducklake_cli.ops`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.snapshots import SnapshotSelector
from ducklake_cli.catalog.url import CatalogTarget
from ducklake_cli.lake import Lake as _BaseLake
from ducklake_cli.lake import open_lake

if TYPE_CHECKING:
    import datetime as dt

    from ducklake_cli.engine.session import DataFrame, SparkSession, SparkSettings


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


def connect(
    catalog: str | CatalogTarget,
    *,
    data_path: str | None = None,
    metadata_schema: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    read_only: bool = False,
    spark_settings: SparkSettings | None = None,
) -> Lake:
    """Open a DuckLake from a path, URL or `ducklake:` ATTACH string and check that it is a v1.0 catalog."""
    lake = open_lake(catalog, data_path=data_path, metadata_schema=metadata_schema, storage_options=storage_options,
                     read_only=read_only, spark_settings=spark_settings, cls=Lake)
    assert isinstance(lake, Lake)
    return lake
