"""`write`: load files or a query result into a table through Spark and commit one snapshot (spec §4–§6)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog import options as lake_options
from ducklake_cli.catalog.models import ColumnInfo, LakeMetadata, NewDataFile, SchemaInfo, TableInfo
from ducklake_cli.catalog.partitions import parse_partition_by, refuse_epoch, resolve_partition
from ducklake_cli.catalog.snapshots import LATEST, SnapshotSelector
from ducklake_cli.engine.ingest import INPUT_FORMATS
from ducklake_cli.engine.writer import partition_keys
from ducklake_cli.errors import CommitConflictError, InputError, NotFoundError, TableExistsError, UsageError
from ducklake_cli.ops.results import Section
from ducklake_cli.ops.tables import file_spec, split_table_path
from ducklake_cli.storage.files import ensure_dir

if TYPE_CHECKING:

    from ducklake_cli.catalog.transaction import Transaction
    from ducklake_cli.engine.ingest import Evolution
    from ducklake_cli.engine.session import DataFrame
    from ducklake_cli.lake import Lake

MODES = ("append", "overwrite", "create")
ALL_MODES = (*MODES, "merge")  # merge: `ops/changes.run_upsert`, a MERGE through `ops/dml.py`


@dataclass(frozen=True)
class WriteResult:
    """What one write committed."""

    table: str
    mode: str
    snapshot_id: int | None
    rows: int
    files: int
    bytes_written: int
    inlined_rows: int
    created_table: bool
    paths: tuple[str, ...] = field(default=(), repr=False)
    skipped_rows: int = 0
    columns_added: tuple[str, ...] = ()  # `--evolve`
    columns_widened: tuple[str, ...] = ()

    def sections(self) -> list[Section]:
        """One key/value section for the table renderer."""
        rows = [("table", self.table), ("mode", self.mode),
                ("snapshot", "nothing committed" if self.snapshot_id is None else self.snapshot_id),
                ("rows written", self.rows), ("data files", self.files), ("bytes written", self.bytes_written),
                ("rows inlined in the catalog", self.inlined_rows), ("table created", self.created_table)]
        if self.skipped_rows:
            rows.append(("malformed rows skipped", self.skipped_rows))
        if self.columns_added:
            rows.append(("columns added", ", ".join(self.columns_added)))
        if self.columns_widened:
            rows.append(("columns widened", ", ".join(self.columns_widened)))
        return [Section("write", ("field", "value"), tuple(rows))]

    def to_json(self) -> dict[str, Any]:
        """Stable JSON (README: `write --format json`)."""
        return {"table": self.table, "mode": self.mode, "snapshot_id": self.snapshot_id, "rows": self.rows,
                "files": self.files, "bytes_written": self.bytes_written, "inlined_rows": self.inlined_rows,
                "created_table": self.created_table, "skipped_rows": self.skipped_rows,
                "columns_added": list(self.columns_added), "columns_widened": list(self.columns_widened)}


@dataclass(frozen=True)
class _Target:
    """Where the table lives (planned before the Spark job; the commit re-checks it)."""

    schema_name: str  # as printed (nested: `a.b`)
    name: str
    existing: TableInfo | None
    schema: SchemaInfo | None
    schema_dir_name: str
    table_dir_name: str
    table_dir: str
    base_snapshot: int
    meta: LakeMetadata
    replaced: TableInfo | None = None  # CREATE OR REPLACE TABLE … AS: the table that ends in the same snapshot
    schema_parts: tuple[str, ...] = ()  # the schema's full name (DuckLake 1.1 nests schemas)

    @property
    def created_name(self) -> str:
        """The table's name as a change string's `created_table` reads back (`parse_changes`)."""
        return ".".join((*(self.schema_parts or (self.schema_name,)), self.name))


def _where(target: _Target) -> dict[str, int | None]:
    """The table and schema ids an option of the target is looked up at (the table may not exist yet)."""
    return {"table_id": target.existing.table_id if target.existing else None,
            "schema_id": target.schema.schema_id if target.schema else None}


def _plan_target(lake: Lake, schema_path: tuple[str, ...], name: str, mode: str) -> _Target:
    from ducklake_cli.catalog.names import shown_path
    from ducklake_cli.catalog.reader import pick_schema
    from ducklake_cli.catalog.writes import dir_name

    with lake.reader() as r:
        meta = r.metadata()
        latest = r.latest_snapshot()
        data_path = r.data_path
        if len(schema_path) > 1 and not r.v11:  # 1.0 has no nested schemas: its own refusal, as before
            raise UsageError(f"table name {'.'.join((*schema_path, name))!r} must be TABLE or SCHEMA.TABLE")
        schemas = r.schemas(latest.snapshot_id)
        schema = next((x for x in schemas if x.qualified_parts == schema_path), None)
        if schema is None and len(schema_path) > 1:  # a nested schema is found in any case, never made here
            schema = pick_schema(schemas, schema_path) or pick_schema(schemas, schema_path[1:])  # or `catalog.`
            if schema is None:
                raise NotFoundError(f"schema {shown_path(schema_path, quote=True)} does not exist",
                                    hint="create it first (ducklake query CATALOG \"CREATE SCHEMA …\")")
        schema_name = schema.shown if schema is not None else shown_path(schema_path, quote=r.v11)
        existing = None
        if schema is not None:
            existing = next((t for t in r.tables(latest.snapshot_id)
                             if t.schema_id == schema.schema_id and t.name == name), None)
    if meta.encrypted:
        raise UsageError("this lake is encrypted; `ducklake write` cannot write encrypted files yet")
    if existing is not None and mode == "create":
        raise TableExistsError(f"table {schema_name}.{name} already exists",
                               hint="use --mode append or --mode overwrite")
    replaced, existing = (existing, None) if mode == "replace" else (None, existing)
    from ducklake_cli.catalog.paths import schema_dir, table_dir

    sdir_name = (schema.path or "") if schema else dir_name(schema_name)
    sdir = schema_dir(data_path, schema) if schema else ensure_dir(data_path) + sdir_name
    tdir_name = (existing.path or "") if existing else dir_name(name)
    tdir = table_dir(data_path, schema, existing) if schema and existing else ensure_dir(sdir) + tdir_name
    return _Target(schema_name, name, existing, schema, sdir_name, tdir_name, ensure_dir(tdir), latest.snapshot_id,
                   meta, replaced, schema.qualified_parts if schema is not None else schema_path)


_NEVER_INLINED = frozenset({"geometry", "variant"})


def _has_type(col: ColumnInfo, types: frozenset[str]) -> bool:
    return col.type in types or any(_has_type(c, types) for c in col.children)


def inline_limit(lake: Lake, meta: LakeMetadata, columns: Sequence[ColumnInfo], *, table_id: int | None,
                 schema_id: int | None) -> int:
    """How many rows a write (or a statement's deletions from one file) may keep in the catalog (spec §4)."""
    from ducklake_cli.catalog.writes import blocks_inlining

    if not lake.backend.transactional_ddl:  # inlined tables need DDL inside the commit
        return 0
    if any(blocks_inlining(c.name, v11=lake.v11) for c in columns):  # 1.1: plain `row_id` inlines
        return 0
    if any(_has_type(c, _NEVER_INLINED) for c in columns):  # DuckDB: never GEOMETRY, VARIANT only in .ducklake files
        return 0
    return lake_options.count(meta, "data_inlining_row_limit", table_id=table_id, schema_id=schema_id)


def _inline_limit(target: _Target, inline: bool, columns: Sequence[ColumnInfo], lake: Lake) -> int:
    if not inline:
        return 0
    return inline_limit(lake, target.meta, columns, **_where(target))


def _read_back(lake: Lake, target: _Target, files: Sequence[NewDataFile], columns: Sequence[ColumnInfo]) -> Any:
    """The rows of small just-written files (≤ the inlining limit), to inline instead."""
    from ducklake_cli.engine.writer import read_back

    return read_back([target.table_dir + f.path for f in files], columns, lake.storage_options)


def _remove(lake: Lake, target: _Target, files: Sequence[NewDataFile]) -> None:
    from ducklake_cli.storage.files import filesystem

    for f in files:
        path = target.table_dir + f.path
        with contextlib.suppress(OSError):  # what stays is left for `maintain orphans`
            filesystem(path, lake.storage_options).rm(path)


def run_write(
    lake: Lake,
    table: str,
    *,
    source: Sequence[str] = (),
    query: str | None = None,
    input_format: str | None = None,
    options: Mapping[str, str] | None = None,
    mode: str = "append",
    partition_by: Sequence[str] = (),
    message: str | None = None,
    author: str | None = None,
    inline: bool = True,
    ignore_extra_columns: bool = False,
    at: SnapshotSelector = LATEST,
    schema: str | None = None,
    on_error: str = "fail",
    frame: DataFrame | None = None,
    evolve: bool = False,
) -> WriteResult:
    """Write files (`-`: standard input) or a query's rows (at snapshot `at`) into `table` and commit exactly one
    snapshot.
    `schema`: `--schema "col TYPE, …"` for CSV/JSON into a new table; `on_error`: `fail` or `skip` (CSV rows);
    `frame`: a DataFrame on the lake's Spark session instead (columns by name); `evolve`: add the input's new
    columns to the table and widen types where DuckLake allows it, in the same snapshot."""
    lake.refuse_writes()  # an older catalog: refused before any work
    if mode not in (*MODES, "replace"):  # replace: CREATE OR REPLACE TABLE … AS (ops/dml.py)
        raise UsageError(f"--mode must be one of {', '.join(ALL_MODES)}, not {mode!r}")
    _check_input(source=source, query=query, frame=frame, input_format=input_format, schema=schema,
                 on_error=on_error)
    requests = parse_partition_by(partition_by)
    schema_path, name = split_table_path(table)
    target = _plan_target(lake, schema_path, name, mode)
    lake_options.require_message(target.meta, message)

    from ducklake_cli.engine.ingest_duckdb import ingest_errors
    from ducklake_cli.engine.session import spark_errors

    with spark_errors(), ingest_errors():
        got = _read(lake, target, source=source, query=query, frame=frame, input_format=input_format,
                    options=options, schema=schema, on_error=on_error, at=at, requests=requests,
                    ignore_extra_columns=ignore_extra_columns, evolve=evolve)
        files, skipped_rows = _write(lake, target, got)
    result = _commit(lake, target, got.columns, got.partition, files, mode=mode, message=message, author=author,
                     limit=_inline_limit(target, inline, got.columns, lake), evolution=got.evolution,
                     inlines=_inline_limit(target, True, got.columns, lake) > 0)
    return replace(result, skipped_rows=skipped_rows) if skipped_rows else result


def _check_input(*, source: Sequence[str], query: str | None, frame: DataFrame | None, input_format: str | None,
                 schema: str | None, on_error: str) -> None:
    if sum(map(bool, (source, query, frame is not None))) != 1:
        raise UsageError("give exactly one of --from and --query")
    if input_format and input_format not in INPUT_FORMATS:
        raise UsageError(f"--input-format must be parquet, csv, json or orc, not {input_format!r}")
    if query and (schema or on_error != "fail"):
        raise UsageError("--schema and --on-error apply to --from input, not --query")


@dataclass
class _Input:
    """The rows to write, conformed to the table's columns (named `_c0`, `_c1`, … in table order)."""

    df: DataFrame
    columns: Sequence[ColumnInfo]
    partition: list[tuple[int, str]]
    skipped: Callable[[], int] | None
    evolution: Evolution | None = None  # `--evolve` changes the table: `columns` are its columns afterwards


def _read(lake: Lake, target: _Target, *, source: Sequence[str], query: str | None, frame: DataFrame | None,
          input_format: str | None, options: Mapping[str, str] | None, schema: str | None, on_error: str,
          at: SnapshotSelector, requests: Any, ignore_extra_columns: bool, evolve: bool = False) -> _Input:
    """Read the input (files, a query or a frame) lazily and conform it to the table (or the new table's) columns;
    with `evolve`, to the existing table grown to take the input."""
    refuse_epoch([r.transform for r in requests], v11=lake.v11, where=lake.target.display())  # before any work
    from ducklake_cli.engine.ingest import conform, evolve_columns, read_input, refuse_nameless, refuse_unstorable
    from ducklake_cli.engine.writer import columns_from_spark
    from ducklake_cli.ops.query import sql_dataframe

    spark = lake.spark()
    skipped = None
    known = target.existing.columns if target.existing is not None else None
    if source:
        ingest = read_input(spark, list(source), input_format, options or {}, table=known, schema=schema,
                            on_error=on_error, storage_options=lake.storage_options)
        df, parsed, skipped = ingest.df, ingest.columns, ingest.skipped
    elif frame is not None:
        df, parsed = frame, None
    else:
        df, parsed = sql_dataframe(lake, query or "", at=at), None
    refuse_nameless(df.columns, "the input")  # also for an existing table: rows of defaults alone are no input
    evolution = None
    if target.existing is not None:
        columns = target.existing.columns
        if evolve:
            given = parsed if parsed is not None else columns_from_spark(df.schema)
            refuse_unstorable(given, "the input")
            evolution = evolve_columns(columns, given, _next_column_id(lake, target.existing))
            columns = evolution.columns
        partition = [(f.column_id, f.transform) for f in target.existing.partition.fields] \
            if target.existing.partition else []
        if requests and resolve_partition(columns, requests) != partition:
            raise UsageError(f"table {target.schema_name}.{target.name} exists with another partitioning",
                             hint="omit --partition-by when appending to an existing table")
    else:
        columns = parsed if parsed is not None else columns_from_spark(df.schema)
        refuse_unstorable(columns, "the input")
        partition = resolve_partition(columns, requests)
    _refuse_reserved(target, columns)
    return _Input(conform(df, columns, ignore_extra=ignore_extra_columns), columns, list(partition), skipped,
                  evolution if evolution is not None and evolution.steps else None)


def _refuse_reserved(target: _Target, columns: Sequence[ColumnInfo]) -> None:
    """A new top-level column named like an inlined-data table's own columns while the table would inline is
    refused, as DuckDB refuses it in CREATE TABLE (… AS) and ADD COLUMN; one the table has already stays."""
    from ducklake_cli.catalog.names import inlining_reserved
    from ducklake_cli.catalog.versions import is_v11
    from ducklake_cli.catalog.writes import RESERVED_INLINE_NAMES

    if is_v11(target.meta.version):  # 1.1's inlined-data tables prefix their own columns: `row_id` is free
        from ducklake_cli.catalog.names import reserved_v11

        had = {c.name.lower() for c in target.existing.columns} if target.existing is not None else set()
        name = next((c.name for c in columns if c.name.lower().startswith("_ducklake_") and c.name.lower() not in had),
                    None)
        if name is not None:  # refused whether or not the table inlines
            raise InputError(reserved_v11(name), hint="rename it; nothing was written")
        return
    had = {c.name.lower() for c in target.existing.columns} if target.existing is not None else set()
    name = next((c.name for c in columns if c.name.lower() in RESERVED_INLINE_NAMES - had), None)
    if name is not None and lake_options.count(target.meta, "data_inlining_row_limit", **_where(target)) > 0:
        raise InputError(inlining_reserved(name), hint="rename it, or set data_inlining_row_limit to 0 first "
                         "(ducklake options CATALOG --set data_inlining_row_limit=0); nothing was written")


def _next_column_id(lake: Lake, table: TableInfo) -> int:
    """The id the table's next new column gets (checked again at commit)."""
    with lake.reader() as r:
        return r.next_column_id(table.table_id)


def _evolve(tx: Transaction, table: TableInfo, evolution: Evolution, *, inline: bool) -> TableInfo:
    """Stage `--evolve`'s column changes (one schema version, one `altered_table`) ahead of the data."""
    from ducklake_cli.catalog.columns import add_column, set_column_type
    from ducklake_cli.catalog.models import InlinedTable
    from ducklake_cli.engine.ingest import column_shape

    for i, (kind, col) in enumerate(evolution.steps):
        last = inline and i == len(evolution.steps) - 1  # one new inlined-data table, with the final columns
        table = add_column(tx, table, col, inline=last) if kind == "add" else \
            set_column_type(tx, table, col.column_id, col, inline=last)
    if column_shape(table.columns) != column_shape(evolution.columns):
        raise CommitConflictError(f"the columns of table {table.qualified_name} changed while the data was written",
                                  hint="nothing was changed; rerun the write")
    made = tx.inlined_made.get(table.table_id)
    return replace(table, inlined_tables=(*table.inlined_tables, InlinedTable(made, tx.schema_version))) \
        if made else table


def _write(lake: Lake, target: _Target, got: _Input) -> tuple[list[NewDataFile], int]:
    """Write the input's data files (Spark executors); the files and how many malformed rows were skipped."""
    from ducklake_cli.engine.writer import sort_orders, write_files

    keys = target.existing.sort_keys if target.existing is not None else ()
    where = _where(target)
    sort = sort_orders(got.df, got.columns, keys, f"{target.schema_name}.{target.name}") \
        if keys and lake_options.flag(target.meta, "sort_on_insert", **where) else []
    spec = file_spec(lake, target.meta, table_dir=target.table_dir, columns=got.columns,
                     keys=partition_keys(got.columns, got.partition), table_id=where["table_id"],
                     schema_id=where["schema_id"], table=f"{target.schema_name}.{target.name}")
    files = write_files(got.df, spec, sort=sort)
    return files, got.skipped() if got.skipped is not None else 0


def _commit(lake: Lake, target: _Target, columns: Sequence[ColumnInfo], partition: Sequence[tuple[int, str]],
            files: list[NewDataFile], *, mode: str, message: str | None, author: str | None,
            limit: int, evolution: Evolution | None = None, inlines: bool = False) -> WriteResult:
    from ducklake_cli.catalog.inlined import encode_inlined
    from ducklake_cli.engine.ingest import refuse_unstorable
    from ducklake_cli.engine.parquet_files import data_stats
    from ducklake_cli.engine.writer import leaves

    rows = sum(f.record_count for f in files)
    inlined: list[list[tuple[str | None, Any]]] = []
    inline_stats: tuple[Any, ...] = ()
    if files and 0 < rows <= limit:
        data = _read_back(lake, target, files, columns)
        inlined = encode_inlined(data, columns)
        inline_stats = data_stats(data, leaves(columns))
        _remove(lake, target, files)
        files = []
    created = target.existing is None
    raced: list[bool] = []  # set when another writer created the table since we planned (we append to it)

    def build(tx: Transaction) -> None:
        raced.clear()
        if _check_conflicts(tx, target, mode, columns, partition):
            raced.append(True)
        from ducklake_cli.catalog.writes import TableWrite, create_table, ensure_schema

        table = _table_at(tx, target)
        if mode == "replace" and table is not None:  # DuckDB: dropped_table, then created_table, one snapshot
            from ducklake_cli.catalog.ddl import drop_table

            drop_table(tx, table)
            table = None
        if table is None:
            refuse_unstorable(columns, "the input")  # where every table creation meets (write, merge, CTAS)
            schema = _schema_at(tx, target) if len(target.schema_parts) > 1 else \
                ensure_schema(tx, target.schema_parts[0], path=target.schema_dir_name)
            planned = ensure_dir(target.schema_dir_name)
            path = (target.table_dir_name, True) if (schema.path or "") == planned else (target.table_dir, False)
            table = create_table(tx, schema, target.name, columns, partition, inline=limit > 0, path=path)
        elif evolution is not None:
            table = _evolve(tx, table, evolution, inline=inlines)
        tw = TableWrite(tx, table)
        if mode == "overwrite" and (not created or raced):
            tw.end_live_data()
        tw.add_files(files)
        if inlined:
            tw.add_inlined(inlined, inline_stats)
        tw.finish()

    try:
        snapshot_id = lake.commit(build, author=author, message=message)
    except BaseException:
        _remove(lake, target, files)
        raise
    made = created and not raced and snapshot_id is not None
    return WriteResult(f"{target.schema_name}.{target.name}", mode, snapshot_id, rows, len(files),
                       sum(f.file_size_bytes for f in files), len(inlined), made,
                       tuple(target.table_dir + f.path for f in files),
                       columns_added=evolution.names("add") if evolution else (),
                       columns_widened=evolution.names("retype") if evolution else ())


def _table_at(tx: Transaction, target: _Target) -> TableInfo | None:
    latest = tx.latest.snapshot_id
    for sch in tx.reader.schemas(latest):
        if sch.qualified_parts == target.schema_parts:
            return next((t for t in tx.reader.tables(latest) if t.schema_id == sch.schema_id and t.name == target.name),
                        None)
    return None


def _schema_at(tx: Transaction, target: _Target) -> SchemaInfo:
    """The target's nested schema at the commit (it is never created by a write)."""
    found = next((x for x in tx.reader.schemas(tx.latest.snapshot_id) if x.qualified_parts == target.schema_parts),
                 None)
    if found is None:
        raise CommitConflictError(f"another writer dropped schema {target.schema_name} meanwhile",
                                  hint="nothing was changed")
    return found


def _layout(columns: Sequence[ColumnInfo]) -> tuple[Any, ...]:
    """What our data files depend on: field ids, names and types, nested included."""
    return tuple((c.column_id, c.name.lower(), c.type, _layout(c.children)) for c in columns)


def _check_conflicts(tx: Transaction, target: _Target, mode: str, columns: Sequence[ColumnInfo],
                     partition: Sequence[tuple[int, str]]) -> bool:
    """Spec §5.5 for a write: what others committed since we planned must not touch our table. True when another
    writer created our new table meanwhile with exactly our columns: an append (or overwrite) then goes into it."""
    if tx.latest.snapshot_id == target.base_snapshot:
        return False
    other = tx.changes_since(target.base_snapshot)
    qualified = f"{target.schema_name}.{target.name}"
    if target.replaced is not None:
        tid = str(target.replaced.table_id)
        touched = ("tables_dropped", "tables_altered", "tables_inserted_into", "tables_deleted_from", "inlined_insert",
                   "inlined_delete", "merge_adjacent", "rewrite_delete", "flushed_inlined")
        if any(tid in other.get(key, set()) for key in touched) or _table_at(tx, target) is None:
            raise CommitConflictError(f"another writer changed table {qualified} meanwhile",
                                      hint="nothing was changed; rerun the statement")
        return False
    if target.existing is None:
        if target.created_name not in other.get("tables_created", set()):
            return False
        if mode == "create":
            raise TableExistsError(f"another writer created table {qualified} meanwhile",
                                   hint="nothing was changed; rerun with --mode append to add these rows")
        theirs = _table_at(tx, target)
        their_partition = [(f.column_id, f.transform) for f in theirs.partition.fields] \
            if theirs is not None and theirs.partition else []
        schema = next((x for x in tx.reader.schemas(tx.latest.snapshot_id)
                       if x.qualified_parts == target.schema_parts), None)
        same_dir = theirs is not None and schema is not None and (theirs.path or "") == target.table_dir_name \
            and theirs.path_is_relative and schema.path_is_relative and (schema.path or "") == target.schema_dir_name
        if theirs is None or not same_dir or _layout(theirs.columns) != _layout(columns) \
                or their_partition != list(partition):
            raise CommitConflictError(f"another writer created table {qualified} meanwhile, with other columns "
                                      "or partitioning", hint="nothing was changed; rerun the write to append")
        return True
    tid = str(target.existing.table_id)
    blocking = ["tables_dropped", "tables_altered", "tables_deleted_from", "inlined_delete"]
    if mode == "overwrite":
        blocking += ["tables_inserted_into", "inlined_insert", "merge_adjacent", "rewrite_delete", "flushed_inlined"]
    for key in blocking:
        if tid in other.get(key, set()):
            raise CommitConflictError(
                f"another writer changed table {qualified} meanwhile ({key.replace('_', ' ')})",
                hint="nothing was changed; rerun the write")
    if _table_at(tx, target) is None:
        raise NotFoundError(f"table {qualified} was dropped meanwhile")
    return False



# ----- upsert input (`ops/changes.py` runs the MERGE) ------------------------------------------------------------

def merge_keys(on: Sequence[str], columns: Sequence[ColumnInfo], table: str) -> list[str]:
    """The `--on` keys as the table spells them; each must be a top-level column, given once."""
    if not on:
        raise UsageError("--mode merge needs --on KEY[,KEY…]: the columns that identify a row")
    by_name = {c.name.lower(): c for c in columns}
    out: list[str] = []
    for key in on:
        col = by_name.get(key.strip().lower())
        if col is None:
            raise InputError(f"--on {key.strip()}: table {table} has no column {key.strip()!r}")
        if col.name in out:
            raise UsageError(f"--on names column {col.name} twice")
        out.append(col.name)
    return out


def refuse_bad_keys(df: DataFrame, keys: Sequence[str]) -> None:
    """Each input row must have its own non-NULL key (checked on the executors, the input never collected)."""
    from ducklake_cli.engine.keys import bad_key

    found = bad_key(df, keys)
    if found is None:
        return
    values, repeats = found
    shown = ", ".join(f"{k}={v!r}" for k, v in zip(keys, values, strict=True))
    if repeats:
        raise InputError(f"the input has more than one row with {shown}",
                         hint="a merge needs one input row per key; deduplicate the input first")
    raise InputError(f"the input has a row with a NULL key ({shown}); such a row never matches",
                     hint="fill the key, or filter those rows out")


@dataclass(frozen=True)
class UpsertInput:
    """An upsert's input, checked and ready to MERGE into the existing table `table`."""

    table: str
    frame: DataFrame  # the table's columns, by name
    keys: tuple[str, ...]


def stage_upsert(
    lake: Lake,
    table: str,
    *,
    on: Sequence[str],
    source: Sequence[str] = (),
    query: str | None = None,
    input_format: str | None = None,
    options: Mapping[str, str] | None = None,
    partition_by: Sequence[str] = (),
    message: str | None = None,
    author: str | None = None,
    ignore_extra_columns: bool = False,
    at: SnapshotSelector = LATEST,
    schema: str | None = None,
    frame: DataFrame | None = None,
) -> UpsertInput | WriteResult:
    """Read and check an upsert's input (one row per non-NULL key, found by the executors). A missing table is
    created with the input's rows, like dlt's first merge load: the `WriteResult`; else the input to MERGE. Must
    run inside `spark_errors()` and `ingest_errors()` (the MERGE reads the input again)."""
    _check_input(source=source, query=query, frame=frame, input_format=input_format, schema=schema,
                 on_error="fail")
    if not on:
        raise UsageError("--mode merge needs --on KEY[,KEY…]: the columns that identify a row")
    requests = parse_partition_by(partition_by)
    schema_path, name = split_table_path(table)
    target = _plan_target(lake, schema_path, name, "merge")
    schema_name = target.schema_name
    lake_options.require_message(target.meta, message)
    got = _read(lake, target, source=source, query=query, frame=frame, input_format=input_format,
                options=options, schema=schema, on_error="fail", at=at, requests=requests,
                ignore_extra_columns=ignore_extra_columns)
    keys = merge_keys(on, got.columns, f"{schema_name}.{name}")
    df = got.df.toDF(*[c.name for c in got.columns])
    refuse_bad_keys(df, keys)  # reads the whole input: its parse errors surface here, as InputError
    if target.existing is not None:
        return UpsertInput(f"{schema_name}.{name}", df, tuple(keys))
    files, _ = _write(lake, target, got)
    return _commit(lake, target, got.columns, got.partition, files, mode="append", message=message,
                   author=author, limit=_inline_limit(target, True, got.columns, lake))
