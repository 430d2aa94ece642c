"""Typed, immutable read models of a DuckLake catalog at one snapshot."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Snapshot:
    """One row of `ducklake_snapshot` joined with its change row."""

    snapshot_id: int
    snapshot_time: dt.datetime
    schema_version: int
    next_catalog_id: int
    next_file_id: int
    changes_made: str | None = None
    author: str | None = None
    commit_message: str | None = None
    commit_extra_info: str | None = None


@dataclass(frozen=True)
class SchemaInfo:
    """A schema visible at the snapshot."""

    schema_id: int
    schema_uuid: str
    name: str
    path: str | None
    path_is_relative: bool
    begin_snapshot: int
    parent_schema_id: int | None = None  # DuckLake 1.1's nested schemas; None at the top level
    parts: tuple[str, ...] = ()  # the full name, outermost first (empty: `name` alone)
    full_name: str = ""  # the full name as printed (empty: `name`)

    @property
    def qualified_parts(self) -> tuple[str, ...]:
        """The schema's full name, outermost first."""
        return self.parts or (self.name,)

    @property
    def shown(self) -> str:
        """The full name as printed (`sales.europe`; a part with a dot quoted on 1.1 catalogs)."""
        return self.full_name or self.name


@dataclass(frozen=True)
class ColumnInfo:
    """A column (one version of it), with its nested children."""

    column_id: int
    name: str
    type: str
    nulls_allowed: bool
    initial_default: str | None
    default_value: str | None
    default_value_type: str | None
    parent_column: int | None
    column_order: int
    begin_snapshot: int
    children: tuple[ColumnInfo, ...] = ()

    def type_text(self) -> str:
        """Full nested type, e.g. `struct(a int32, b list(varchar))`."""
        if self.type == "struct":
            return "struct(" + ", ".join(f"{c.name} {c.type_text()}" for c in self.children) + ")"
        if self.type == "list" and self.children:
            return f"list({self.children[0].type_text()})"
        if self.type == "map" and len(self.children) == 2:
            return f"map({self.children[0].type_text()}, {self.children[1].type_text()})"
        return self.type

    def leaves(self) -> list[ColumnInfo]:
        """Leaf columns under (and including) this one, in pre-order."""
        if not self.children:
            return [self]
        return [leaf for c in self.children for leaf in c.leaves()]


@dataclass(frozen=True)
class PartitionField:
    """One key of a partition spec."""

    key_index: int
    column_id: int
    transform: str


@dataclass(frozen=True)
class PartitionSpec:
    """The partition spec in force for a table."""

    partition_id: int
    fields: tuple[PartitionField, ...]


@dataclass(frozen=True)
class SortKey:
    """One key of a sort spec."""

    key_index: int
    expression: str
    direction: str
    null_order: str


@dataclass(frozen=True)
class InlinedTable:
    """A registered `ducklake_inlined_data_<table>_<schema_version>` table."""

    table_name: str
    schema_version: int


@dataclass(frozen=True)
class NameMapping:
    """A row of `ducklake_name_mapping`: file field `source_name` feeds table column `target_field_id`."""

    column_id: int
    source_name: str
    target_field_id: int
    parent_column: int | None
    is_partition: bool


@dataclass(frozen=True)
class TableInfo:
    """A table visible at the snapshot with its columns and specs."""

    table_id: int
    table_uuid: str
    schema_id: int
    schema_name: str
    name: str
    path: str | None
    path_is_relative: bool
    begin_snapshot: int
    columns: tuple[ColumnInfo, ...]
    inlined_tables: tuple[InlinedTable, ...] = ()
    partition: PartitionSpec | None = None
    sort_keys: tuple[SortKey, ...] = ()
    tags: tuple[tuple[str, str | None], ...] = ()
    column_tags: tuple[tuple[int, str, str | None], ...] = ()
    schema_parts: tuple[str, ...] = ()  # the schema's full name (empty: `schema_name` alone)

    @property
    def schema_path(self) -> tuple[str, ...]:
        """The schema's full name, outermost first."""
        return self.schema_parts or (self.schema_name,)

    @property
    def qualified_name(self) -> str:
        """`schema.table`."""
        return f"{self.schema_name}.{self.name}"

    def comment(self) -> str | None:
        """The table comment (tag key `comment`)."""
        return dict(self.tags).get("comment")

    def leaf_columns(self) -> list[ColumnInfo]:
        """All leaf columns in pre-order."""
        return [leaf for c in self.columns for leaf in c.leaves()]

    def column_by_id(self) -> dict[int, ColumnInfo]:
        """Every column (nested too) by id."""
        out: dict[int, ColumnInfo] = {}

        def walk(col: ColumnInfo) -> None:
            out[col.column_id] = col
            for child in col.children:
                walk(child)

        for c in self.columns:
            walk(c)
        return out


@dataclass(frozen=True)
class ViewInfo:
    """A view visible at the snapshot."""

    view_id: int
    view_uuid: str
    schema_id: int
    schema_name: str
    name: str
    dialect: str | None
    sql: str | None
    column_aliases: str | None
    schema_parts: tuple[str, ...] = ()  # the schema's full name (empty: `schema_name` alone)
    column_tags: tuple[tuple[str, str, str | None], ...] = ()  # DuckLake 1.1: (column name, key, value)

    @property
    def schema_path(self) -> tuple[str, ...]:
        """The schema's full name, outermost first."""
        return self.schema_parts or (self.schema_name,)

    def column_comments(self) -> dict[str, str]:
        """The view's column comments (1.1's `ducklake_view_column_tag`, key `comment`) by query column name."""
        return {name: value for name, key, value in self.column_tags if key == "comment" and value is not None}


@dataclass(frozen=True)
class DataFile:
    """A row of `ducklake_data_file`."""

    data_file_id: int
    table_id: int
    begin_snapshot: int
    end_snapshot: int | None
    path: str
    path_is_relative: bool
    file_format: str | None
    record_count: int
    file_size_bytes: int
    footer_size: int | None
    row_id_start: int | None
    partition_id: int | None
    encryption_key: str | None = field(default=None, repr=False)
    mapping_id: int | None = None
    partial_max: int | None = None


@dataclass(frozen=True)
class DeleteFile:
    """A row of `ducklake_delete_file`."""

    delete_file_id: int
    table_id: int
    begin_snapshot: int
    end_snapshot: int | None
    data_file_id: int
    path: str
    path_is_relative: bool
    format: str | None
    delete_count: int
    file_size_bytes: int
    footer_size: int | None
    encryption_key: str | None = field(default=None, repr=False)
    partial_max: int | None = None


@dataclass(frozen=True)
class ColumnStats:
    """Per-file (or merged table-level) statistics of one leaf column."""

    column_id: int
    value_count: int | None
    null_count: int | None
    min_value: str | None
    max_value: str | None
    contains_nan: bool | None
    column_size_bytes: int | None = None


@dataclass(frozen=True)
class OptionValue:
    """A scoped option row of `ducklake_metadata`."""

    key: str
    value: str
    scope: str | None
    scope_id: int | None


@dataclass(frozen=True)
class LakeMetadata:
    """The global keys of `ducklake_metadata` plus all scoped options."""

    version: str
    data_path: str
    created_by: str | None
    encrypted: bool
    options: tuple[OptionValue, ...] = ()

    def option(self, key: str, *, table_id: int | None = None, schema_id: int | None = None) -> str | None:
        """The stored option value in DuckDB's order (table scope, schema scope, global), no default: prefer
        `catalog.options.value`/`flag`/`uint`, which add the defaults and read values as DuckDB does."""
        from ducklake_cli.catalog.options import stored

        return stored(self, key, table_id=table_id, schema_id=schema_id)


@dataclass(frozen=True)
class LeafStats:
    """Stats of one leaf column over one file (or one batch of inlined rows)."""

    column_id: int
    value_count: int
    null_count: int
    min_value: str | None
    max_value: str | None
    contains_nan: bool | None
    column_size_bytes: int | None = None
    # Whether a string/blob bound is a real value, not a truncated or footer-read one (1.1's `*_is_exact`).
    min_exact: bool = True
    max_exact: bool = True


@dataclass(frozen=True)
class NewDataFile:
    """A Parquet file just written for a table: path relative to the table directory, sizes, partition values
    (transformed, as text) and one `LeafStats` per leaf column."""

    path: str
    record_count: int
    file_size_bytes: int
    footer_size: int
    partition_values: tuple[str | None, ...]
    stats: tuple[LeafStats, ...]
    row_group_count: int | None = None  # Parquet row groups written (1.1's `row_group_count`)
