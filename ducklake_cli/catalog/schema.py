"""The DuckLake v1.0 catalog tables: the one module that spells their names and columns."""

from __future__ import annotations

from typing import Any

from sqlalchemy import TIMESTAMP, BigInteger, Boolean, Column, DateTime, Dialect, MetaData, String, Table, Text, Uuid
from sqlalchemy.types import TypeDecorator, TypeEngine

FORMAT_VERSION = "1.0"

# Column kinds; each backend hook maps them to its DDL type names (DuckDB's own choices).
BIGINT, VARCHAR, VARCHAR_NN, BOOLEAN, UUID, TIMESTAMPTZ = "BIGINT", "VARCHAR", "VARCHAR_NN", "BOOLEAN", "UUID", "TSTZ"

# (table, [(column, kind)], primary key column or None) in DuckDB's creation order (spec §1).
SPEC_TABLES: list[tuple[str, list[tuple[str, str]], str | None]] = [
    ("ducklake_metadata", [("key", VARCHAR_NN), ("value", VARCHAR_NN), ("scope", VARCHAR), ("scope_id", BIGINT)],
     None),
    ("ducklake_snapshot", [("snapshot_id", BIGINT), ("snapshot_time", TIMESTAMPTZ), ("schema_version", BIGINT),
                           ("next_catalog_id", BIGINT), ("next_file_id", BIGINT)], "snapshot_id"),
    ("ducklake_snapshot_changes", [("snapshot_id", BIGINT), ("changes_made", VARCHAR), ("author", VARCHAR),
                                   ("commit_message", VARCHAR), ("commit_extra_info", VARCHAR)], "snapshot_id"),
    ("ducklake_schema", [("schema_id", BIGINT), ("schema_uuid", UUID), ("begin_snapshot", BIGINT),
                         ("end_snapshot", BIGINT), ("schema_name", VARCHAR), ("path", VARCHAR),
                         ("path_is_relative", BOOLEAN)], "schema_id"),
    ("ducklake_table", [("table_id", BIGINT), ("table_uuid", UUID), ("begin_snapshot", BIGINT),
                        ("end_snapshot", BIGINT), ("schema_id", BIGINT), ("table_name", VARCHAR), ("path", VARCHAR),
                        ("path_is_relative", BOOLEAN)], None),
    ("ducklake_view", [("view_id", BIGINT), ("view_uuid", UUID), ("begin_snapshot", BIGINT), ("end_snapshot", BIGINT),
                       ("schema_id", BIGINT), ("view_name", VARCHAR), ("dialect", VARCHAR), ("sql", VARCHAR),
                       ("column_aliases", VARCHAR)], None),
    ("ducklake_tag", [("object_id", BIGINT), ("begin_snapshot", BIGINT), ("end_snapshot", BIGINT), ("key", VARCHAR),
                      ("value", VARCHAR)], None),
    ("ducklake_column_tag", [("table_id", BIGINT), ("column_id", BIGINT), ("begin_snapshot", BIGINT),
                             ("end_snapshot", BIGINT), ("key", VARCHAR), ("value", VARCHAR)], None),
    ("ducklake_data_file", [("data_file_id", BIGINT), ("table_id", BIGINT), ("begin_snapshot", BIGINT),
                            ("end_snapshot", BIGINT), ("file_order", BIGINT), ("path", VARCHAR),
                            ("path_is_relative", BOOLEAN), ("file_format", VARCHAR), ("record_count", BIGINT),
                            ("file_size_bytes", BIGINT), ("footer_size", BIGINT), ("row_id_start", BIGINT),
                            ("partition_id", BIGINT), ("encryption_key", VARCHAR), ("mapping_id", BIGINT),
                            ("partial_max", BIGINT)], "data_file_id"),
    ("ducklake_file_column_stats", [("data_file_id", BIGINT), ("table_id", BIGINT), ("column_id", BIGINT),
                                    ("column_size_bytes", BIGINT), ("value_count", BIGINT), ("null_count", BIGINT),
                                    ("min_value", VARCHAR), ("max_value", VARCHAR), ("contains_nan", BOOLEAN),
                                    ("extra_stats", VARCHAR)], None),
    ("ducklake_file_variant_stats", [("data_file_id", BIGINT), ("table_id", BIGINT), ("column_id", BIGINT),
                                     ("variant_path", VARCHAR), ("shredded_type", VARCHAR),
                                     ("column_size_bytes", BIGINT), ("value_count", BIGINT), ("null_count", BIGINT),
                                     ("min_value", VARCHAR), ("max_value", VARCHAR), ("contains_nan", BOOLEAN),
                                     ("extra_stats", VARCHAR)], None),
    ("ducklake_delete_file", [("delete_file_id", BIGINT), ("table_id", BIGINT), ("begin_snapshot", BIGINT),
                              ("end_snapshot", BIGINT), ("data_file_id", BIGINT), ("path", VARCHAR),
                              ("path_is_relative", BOOLEAN), ("format", VARCHAR), ("delete_count", BIGINT),
                              ("file_size_bytes", BIGINT), ("footer_size", BIGINT), ("encryption_key", VARCHAR),
                              ("partial_max", BIGINT)], "delete_file_id"),
    ("ducklake_column", [("column_id", BIGINT), ("begin_snapshot", BIGINT), ("end_snapshot", BIGINT),
                         ("table_id", BIGINT), ("column_order", BIGINT), ("column_name", VARCHAR),
                         ("column_type", VARCHAR), ("initial_default", VARCHAR), ("default_value", VARCHAR),
                         ("nulls_allowed", BOOLEAN), ("parent_column", BIGINT), ("default_value_type", VARCHAR),
                         ("default_value_dialect", VARCHAR)], None),
    ("ducklake_table_stats", [("table_id", BIGINT), ("record_count", BIGINT), ("next_row_id", BIGINT),
                              ("file_size_bytes", BIGINT)], None),
    ("ducklake_table_column_stats", [("table_id", BIGINT), ("column_id", BIGINT), ("contains_null", BOOLEAN),
                                     ("contains_nan", BOOLEAN), ("min_value", VARCHAR), ("max_value", VARCHAR),
                                     ("extra_stats", VARCHAR)], None),
    ("ducklake_partition_info", [("partition_id", BIGINT), ("table_id", BIGINT), ("begin_snapshot", BIGINT),
                                 ("end_snapshot", BIGINT)], None),
    ("ducklake_partition_column", [("partition_id", BIGINT), ("table_id", BIGINT), ("partition_key_index", BIGINT),
                                   ("column_id", BIGINT), ("transform", VARCHAR)], None),
    ("ducklake_file_partition_value", [("data_file_id", BIGINT), ("table_id", BIGINT),
                                       ("partition_key_index", BIGINT), ("partition_value", VARCHAR)], None),
    ("ducklake_files_scheduled_for_deletion", [("data_file_id", BIGINT), ("path", VARCHAR),
                                               ("path_is_relative", BOOLEAN), ("schedule_start", TIMESTAMPTZ)], None),
    ("ducklake_inlined_data_tables", [("table_id", BIGINT), ("table_name", VARCHAR), ("schema_version", BIGINT)],
     None),
    ("ducklake_column_mapping", [("mapping_id", BIGINT), ("table_id", BIGINT), ("type", VARCHAR)], None),
    ("ducklake_name_mapping", [("mapping_id", BIGINT), ("column_id", BIGINT), ("source_name", VARCHAR),
                               ("target_field_id", BIGINT), ("parent_column", BIGINT), ("is_partition", BOOLEAN)],
     None),
    ("ducklake_schema_versions", [("begin_snapshot", BIGINT), ("schema_version", BIGINT), ("table_id", BIGINT)],
     None),
    ("ducklake_macro", [("schema_id", BIGINT), ("macro_id", BIGINT), ("macro_name", VARCHAR),
                        ("begin_snapshot", BIGINT), ("end_snapshot", BIGINT)], None),
    ("ducklake_macro_impl", [("macro_id", BIGINT), ("impl_id", BIGINT), ("dialect", VARCHAR), ("sql", VARCHAR),
                             ("type", VARCHAR)], None),
    ("ducklake_macro_parameters", [("macro_id", BIGINT), ("impl_id", BIGINT), ("column_id", BIGINT),
                                   ("parameter_name", VARCHAR), ("parameter_type", VARCHAR),
                                   ("default_value", VARCHAR), ("default_value_type", VARCHAR)], None),
    ("ducklake_sort_info", [("sort_id", BIGINT), ("table_id", BIGINT), ("begin_snapshot", BIGINT),
                            ("end_snapshot", BIGINT)], None),
    ("ducklake_sort_expression", [("sort_id", BIGINT), ("table_id", BIGINT), ("sort_key_index", BIGINT),
                                  ("expression", VARCHAR), ("dialect", VARCHAR), ("sort_direction", VARCHAR),
                                  ("null_order", VARCHAR)], None),
]

INLINED_DATA_PREFIX = "ducklake_inlined_data_"
INLINED_DELETE_PREFIX = "ducklake_inlined_delete_"


def inlined_delete_table_name(table_id: int) -> str:
    """Name of the (unregistered) inlined file-deletion table of a table."""
    return f"{INLINED_DELETE_PREFIX}{table_id}"


class _Timestamptz(TypeDecorator[Any]):
    """TIMESTAMPTZ: native on PostgreSQL/DuckDB/MySQL; SQLite keeps DuckDB's text rendering (backend encodes)."""

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        """The column type each dialect binds and reads."""
        if dialect.name in ("postgresql", "duckdb"):
            return dialect.type_descriptor(TIMESTAMP(timezone=True))
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(DateTime())
        return dialect.type_descriptor(Text())


class _Uuid(TypeDecorator[Any]):
    """UUID: native on PostgreSQL (read back as text), text elsewhere."""

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        """The column type each dialect binds and reads."""
        if dialect.name == "postgresql":
            return dialect.type_descriptor(Uuid(as_uuid=False))
        return dialect.type_descriptor(Text())


def _sa_type(kind: str) -> TypeEngine[Any]:
    # Query-side types; DDL text comes from the backend hooks.
    if kind == BIGINT:
        return BigInteger()
    if kind == BOOLEAN:
        return Boolean(create_constraint=False)
    if kind == UUID:
        return _Uuid()
    if kind == TIMESTAMPTZ:
        return _Timestamptz()
    return String()


Layout = list[tuple[str, list[tuple[str, str]], str | None]]


def build_tables(layout: Layout) -> tuple[MetaData, dict[str, Table]]:
    """SQLAlchemy tables for a catalog layout (the 1.0 spec tables, or an older version's)."""
    md = MetaData()
    tables: dict[str, Table] = {}
    for name, columns, pk in layout:
        tables[name] = Table(
            name, md, *(Column(col, _sa_type(kind), primary_key=(col == pk), autoincrement=False)
                        for col, kind in columns),
        )
    return md, tables


METADATA, T = build_tables(SPEC_TABLES)

metadata_t = T["ducklake_metadata"]
snapshot_t = T["ducklake_snapshot"]
snapshot_changes_t = T["ducklake_snapshot_changes"]
schema_t = T["ducklake_schema"]
table_t = T["ducklake_table"]
view_t = T["ducklake_view"]
tag_t = T["ducklake_tag"]
column_tag_t = T["ducklake_column_tag"]
data_file_t = T["ducklake_data_file"]
file_column_stats_t = T["ducklake_file_column_stats"]
delete_file_t = T["ducklake_delete_file"]
column_t = T["ducklake_column"]
table_stats_t = T["ducklake_table_stats"]
table_column_stats_t = T["ducklake_table_column_stats"]
partition_info_t = T["ducklake_partition_info"]
partition_column_t = T["ducklake_partition_column"]
file_partition_value_t = T["ducklake_file_partition_value"]
scheduled_t = T["ducklake_files_scheduled_for_deletion"]
inlined_tables_t = T["ducklake_inlined_data_tables"]
column_mapping_t = T["ducklake_column_mapping"]
name_mapping_t = T["ducklake_name_mapping"]
schema_versions_t = T["ducklake_schema_versions"]
sort_info_t = T["ducklake_sort_info"]
sort_expression_t = T["ducklake_sort_expression"]
