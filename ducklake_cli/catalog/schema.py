"""The DuckLake catalog tables (1.0, and 1.1's additions): the one module that spells their names and columns."""

from __future__ import annotations

from typing import Any

from sqlalchemy import TIMESTAMP, BigInteger, Boolean, Column, DateTime, Dialect, MetaData, String, Table, Text, Uuid
from sqlalchemy.types import TypeDecorator, TypeEngine

FORMAT_VERSION = "1.0"  # what `create-catalog` makes unless told otherwise (DuckDB 1.5 and 2.0 both attach it)
LATEST_VERSION = "1.1"  # DuckDB 2.0's format, the newest this tool reads and writes

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

# What DuckLake 1.1 adds to 1.0's tables (spec versions §2.6 step 6): columns appended at the end, in this order,
# then one new table, created last.
V11_COLUMNS: list[tuple[str, str, str]] = [
    ("ducklake_data_file", "row_group_count", BIGINT),
    ("ducklake_delete_file", "row_group_count", BIGINT),
    ("ducklake_file_column_stats", "min_is_exact", BOOLEAN),
    ("ducklake_file_column_stats", "max_is_exact", BOOLEAN),
    ("ducklake_table_column_stats", "min_is_exact", BOOLEAN),
    ("ducklake_table_column_stats", "max_is_exact", BOOLEAN),
    ("ducklake_schema", "parent_schema_id", BIGINT),
]
V11_TABLES: list[tuple[str, list[tuple[str, str]], str | None]] = [
    ("ducklake_view_column_tag", [("view_id", BIGINT), ("column_name", VARCHAR), ("begin_snapshot", BIGINT),
                                  ("end_snapshot", BIGINT), ("key", VARCHAR), ("value", VARCHAR)], None),
]


def _with_v11(layout: list[tuple[str, list[tuple[str, str]], str | None]]
              ) -> list[tuple[str, list[tuple[str, str]], str | None]]:
    added: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in V11_COLUMNS:
        added.setdefault(table, []).append((column, kind))
    return [(name, [*cols, *added.get(name, [])], pk) for name, cols, pk in layout] + V11_TABLES


SPEC_TABLES_V11 = _with_v11(SPEC_TABLES)


def spec_tables(version: str) -> list[tuple[str, list[tuple[str, str]], str | None]]:
    """The tables a new catalog of `version` (1.0 or 1.1) is created with."""
    return SPEC_TABLES_V11 if version == LATEST_VERSION else SPEC_TABLES


INLINED_DATA_PREFIX = "ducklake_inlined_data_"
INLINED_DELETE_PREFIX = "ducklake_inlined_delete_"


# The system columns leading every inlined-data table: 1.0's names, and 1.1's (spec versions §3.3). The
# inlined-deletion tables keep 1.0's names in both.
INLINED_SYSTEM_V10 = ("row_id", "begin_snapshot", "end_snapshot")
INLINED_SYSTEM_V11 = ("_ducklake_row_id", "_ducklake_begin_snapshot", "_ducklake_end_snapshot")
RESERVED_PREFIX_V11 = "_ducklake_"  # 1.1 refuses user columns starting with it (any case)


def inlined_system_columns(v11: bool) -> tuple[str, str, str]:
    """The (row id, begin snapshot, end snapshot) column names of inlined-data tables in a 1.0 or 1.1 catalog."""
    return INLINED_SYSTEM_V11 if v11 else INLINED_SYSTEM_V10


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


# 1.0's tables (`T`, and the `*_t` names below): every statement that does not need a 1.1 column uses these, so a
# whole-table SELECT reads the same on 1.0 and 1.1 catalogs. 1.1's tables (`T11`, `table(name, v11)`) add the 1.1
# columns and `ducklake_view_column_tag`: use them only for a 1.1 catalog (`MetadataReader.v11`, `Transaction.v11`);
# naming a 1.1 column on a 1.0 table object fails loudly ("Unconsumed column names", AttributeError).
METADATA, T = build_tables(SPEC_TABLES)
METADATA_V11, T11 = build_tables(SPEC_TABLES_V11)


def table(name: str, v11: bool) -> Table:
    """A spec table as a catalog of that version has it (1.1: with its added columns)."""
    return T11[name] if v11 else T[name]

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
view_column_tag_t = T11["ducklake_view_column_tag"]  # 1.1 only
