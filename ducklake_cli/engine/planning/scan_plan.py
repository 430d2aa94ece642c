"""What to read for one table at one snapshot, decided from metadata alone (no Spark): the scan plan."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ducklake_cli.catalog.models import ColumnInfo, NameMapping, PartitionField, SchemaInfo, TableInfo
from ducklake_cli.catalog.paths import file_path, table_dir
from ducklake_cli.catalog.queries import as_bool
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.catalog.types import decimal_parts
from ducklake_cli.engine.planning.predicates import Predicate

if TYPE_CHECKING:
    import pyarrow as pa

    from ducklake_cli.catalog.file_scan import StatsTest


@dataclass(frozen=True)
class DeleteSource:
    """A delete file of a data file."""

    delete_file_id: int
    path: str
    format: str
    partial: bool
    begin_snapshot: int = 0


@dataclass(frozen=True)
class FileSource:
    """A data file live at the snapshot, with everything needed to read it like DuckDB."""

    data_file_id: int
    path: str
    record_count: int
    file_size_bytes: int
    row_id_start: int | None
    begin_snapshot: int
    needs_snapshot_filter: bool
    mapping_id: int | None
    delete: DeleteSource | None
    inlined_deletes: tuple[int, ...] = ()


@dataclass(frozen=True)
class InlinedSource:
    """Live rows of one inlined-data table, decoded: Arrow columns `row_id`, `c<column_id>`…"""

    table_name: str
    columns: tuple[ColumnInfo, ...]  # as they were at the inlined table's schema version (still-live ones)
    rows: pa.Table


@dataclass(frozen=True)
class MappedField:
    """A node of a name mapping: the file's field name for a column, and its mapped children by column id."""

    name: str
    children: Mapping[int, MappedField] = field(default_factory=dict)
    is_partition: bool = False


def mapping_tree(mapping: Sequence[NameMapping]) -> dict[int, MappedField]:
    """A name mapping's rows as a tree: top-level column id → its file field (children keyed by column id)."""
    kids: dict[int | None, list[NameMapping]] = {}
    for m in mapping:
        kids.setdefault(m.parent_column, []).append(m)

    def build(m: NameMapping) -> MappedField:
        return MappedField(m.source_name, {c.target_field_id: build(c) for c in kids.get(m.column_id, [])},
                           m.is_partition)

    return {m.target_field_id: build(m) for m in kids.get(None, [])}


@dataclass(frozen=True)
class ScanPlan:
    """Everything the engine reads for a table at a snapshot."""

    table: TableInfo
    snapshot_id: int
    files: tuple[FileSource, ...]
    pruned_files: int  # live files the predicates ruled out
    inlined: tuple[InlinedSource, ...]
    name_mappings: Mapping[int, tuple[NameMapping, ...]] = field(default_factory=dict)
    # Columns with an initial default: data file id → the column ids that file physically lacks.
    missing_columns: Mapping[int, frozenset[int]] = field(default_factory=dict)
    storage_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    # Initial defaults decoded with DuckDB's casts (DuckDB text like `\xAA` for a BLOB), by column id.
    defaults: Mapping[int, object] = field(default_factory=dict)
    # Name-mapped files whose Parquet types Spark's reader cannot read as the columns' types (pyarrow reads them).
    pyarrow_files: frozenset[int] = frozenset()
    # Column id (nested too) → the snapshot its type last changed at (`ALTER COLUMN … TYPE`); never retyped: absent.
    type_changes: Mapping[int, int] = field(default_factory=dict)

    @property
    def columns(self) -> tuple[ColumnInfo, ...]:
        """The table's top-level columns at the snapshot."""
        return self.table.columns


def plan_scan(
    reader: MetadataReader,
    *,
    table: TableInfo,
    snapshot_id: int,
    data_path: str,
    schemas: Sequence[SchemaInfo],
    predicates: Sequence[Predicate] = (),
    storage_options: Mapping[str, Any] | None = None,
) -> ScanPlan:
    """Build the scan plan: live files (pruned by predicates), their deletes, and decoded inlined rows."""
    schema = next(sc for sc in schemas if sc.schema_id == table.schema_id)
    tdir = table_dir(data_path, schema, table)
    deletes = {d.data_file_id: d for d in reader.delete_files(snapshot_id, [table.table_id])}
    inlined_deletes = reader.inlined_delete_positions(snapshot_id, table.table_id)

    def source(row: tuple[Any, ...]) -> FileSource:
        fid, path, relative, records, size, row_id_start, begin, partial_max, mapping_id = row[:9]
        if row[10]:  # encryption_key
            _refuse_encrypted(table, True, ())
        d = deletes.get(fid)
        return FileSource(
            data_file_id=fid, path=tdir + path if as_bool(relative) else path, record_count=records or 0,
            file_size_bytes=size or 0, row_id_start=row_id_start, begin_snapshot=begin,
            needs_snapshot_filter=partial_max is not None and partial_max > snapshot_id, mapping_id=mapping_id,
            delete=DeleteSource(d.delete_file_id, file_path(tdir, d), d.format or "parquet",
                                d.partial_max is not None, d.begin_snapshot) if d else None,
            inlined_deletes=tuple(sorted(inlined_deletes.get(fid, ()))),
        )

    sources, pruned = _kept_files(reader, table, snapshot_id, predicates, source)
    _refuse_encrypted(table, False, deletes.values())
    mapping_ids = {s.mapping_id for s in sources if s.mapping_id is not None}
    mappings = {k: tuple(v) for k, v in reader.name_mappings(mapping_ids).items()}
    sources, positional = _positional_mappings(table, sources, storage_options or {})
    mappings.update(positional)
    return ScanPlan(
        table=table, snapshot_id=snapshot_id, files=tuple(sources), pruned_files=pruned,
        inlined=tuple(_inlined_sources(reader, table, snapshot_id)), name_mappings=mappings,
        missing_columns=_missing_columns(reader, table, sources, storage_options or {}),
        storage_options=dict(storage_options or {}), defaults=_defaults(table),
        pyarrow_files=_pyarrow_files(table, sources, mappings, storage_options or {}),
        type_changes=reader.type_changes(table.table_id, snapshot_id),
    )


def _positional_mappings(
    table: TableInfo, files: Sequence[FileSource], storage_options: Mapping[str, Any],
) -> tuple[list[FileSource], dict[int, tuple[NameMapping, ...]]]:
    """Files with neither field ids nor a name mapping (registered by old DuckLake versions) are read by column
    position, as DuckDB reads them: each gets a positional name mapping (negative id). Only files not named like
    DuckLake's own (`ducklake-….parquet`, always written with field ids) have their footers read."""
    import dataclasses
    import posixpath

    unnamed = {f.data_file_id for f in files
               if f.mapping_id is None and not f.path.startswith("ducklake-", f.path.rfind("/") + 1)}
    if not unnamed:
        return list(files), {}
    out: list[FileSource] = []
    mappings: dict[int, tuple[NameMapping, ...]] = {}
    for f in files:
        if f.data_file_id not in unnamed:
            out.append(f)
            continue
        names = _names_without_field_ids(f.path, storage_options)
        if names is None:
            out.append(f)
            continue
        from ducklake_cli.errors import StorageError

        where = f"data file {posixpath.basename(f.path)!r} of table {table.name!r} has neither Parquet field ids " \
                "nor a name mapping"
        if len(names) != len(table.columns):
            raise StorageError(f"{where}, and {len(names)} columns where the table has {len(table.columns)}")
        if any(c.children for c in table.columns):
            raise StorageError(f"{where}; its nested columns cannot be matched (DuckDB reads their fields as NULL)")
        mid = -1 - f.data_file_id
        mappings[mid] = tuple(NameMapping(i, name, c.column_id, None, False)
                              for i, (name, c) in enumerate(zip(names, table.columns, strict=True)))
        out.append(dataclasses.replace(f, mapping_id=mid))
    return out, mappings


def _footer_schema(path: str, storage_options: Mapping[str, Any]) -> pa.Schema:
    """A data file's Arrow schema, from its footer only."""
    import pyarrow.parquet as pq

    from ducklake_cli.errors import StorageError
    from ducklake_cli.storage.files import filesystem

    try:
        with filesystem(path, storage_options).open(path, "rb") as fh:
            return pq.read_schema(fh)
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read the Parquet footer of {path}: {exc}") from exc


def _names_without_field_ids(path: str, storage_options: Mapping[str, Any]) -> list[str] | None:
    """The top-level column names of a Parquet file that has no field ids at all (None when it has some)."""
    schema = _footer_schema(path, storage_options)
    if any(b"PARQUET:field_id" in (fld.metadata or {}) for fld in schema):
        return None
    return list(schema.names)


def _refuse_encrypted(table: TableInfo, encrypted: bool, deletes: Iterable[Any]) -> None:
    """Encrypted files (`ATTACH … (ENCRYPTED)`): refused in one line, naming neither key nor path."""
    if encrypted or any(d.encryption_key for d in deletes):
        from ducklake_cli.errors import StorageError

        raise StorageError(
            f"table {table.name!r} has encrypted data files (a lake attached with ENCRYPTED); "
            "ducklake cannot read encrypted lakes yet")


def _pyarrow_files(
    table: TableInfo, files: Sequence[FileSource], mappings: Mapping[int, tuple[NameMapping, ...]],
    storage_options: Mapping[str, Any],
) -> frozenset[int]:
    """Name-mapped files Spark cannot read as the table's types (from their footers): every column needing the
    fallback reader, and Parquet types other than the column's own (narrower integers, other timestamp units…)."""
    mapped = [f for f in files if f.mapping_id is not None]
    if not mapped:
        return frozenset()
    trees = {mid: mapping_tree(m) for mid, m in mappings.items()}

    def needs_pyarrow(f: FileSource) -> bool:
        tree = trees.get(f.mapping_id or 0, {})
        schema = _footer_schema(f.path, storage_options)
        by_name = {fld.name: fld.type for fld in schema}
        for col in table.columns:
            node = tree.get(col.column_id)
            if node is None or node.is_partition:
                continue
            if node.name in by_name and not native_arrow_match(by_name[node.name], col, node):
                return True
        return False

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(8, len(mapped))) as pool:
        flags = list(pool.map(needs_pyarrow, mapped))
    return frozenset(f.data_file_id for f, flag in zip(mapped, flags, strict=True) if flag)


def _defaults(table: TableInfo) -> dict[int, object]:
    from ducklake_cli.catalog.inlined import decode_inlined

    cols = [c for c in table.column_by_id().values() if c.initial_default is not None and not c.children]
    if not cols:
        return {}
    decoded = decode_inlined([(0, *[c.initial_default for c in cols])], cols).to_pylist()[0]
    return {c.column_id: decoded[f"c{c.column_id}"] for c in cols}


def _kept_files(
    reader: MetadataReader, table: TableInfo, snapshot_id: int, predicates: Sequence[Predicate],
    source: Callable[[tuple[Any, ...]], FileSource],
) -> tuple[list[FileSource], int]:
    """The live files the predicates may match, as sources (by data file id), and how many they rule out.

    The catalog's SQL drops files whose stats rule them out and marks those whose stats prove they may match
    (catalog/file_scan.py: integer, DATE and TIMESTAMP bounds, NULL counts); the exact rules (prune.py) judge the
    rest here, on the files SQL kept."""
    from ducklake_cli.catalog.file_scan import live_file_count, live_files
    from ducklake_cli.engine.planning.prune import judged

    columns = {c.name.lower(): c for c in table.columns}
    relevant = [(p, col) for p in predicates
                if (col := columns.get(p.column.lower())) is not None and judged(col)]
    if not relevant:
        return [source(r) for r in live_files(reader, snapshot_id, table.table_id)], 0
    specs = reader.partition_specs(table.table_id)
    tests = [stats_test(p, col, specs) for p, col in relevant]
    stats_columns = list(dict.fromkeys(col.column_id for _, col in relevant))
    entries: list[FileSource | tuple[Any, ...]] = [
        source(row) if row[-1] else row
        for row in live_files(reader, snapshot_id, table.table_id, stats_columns=stats_columns,
                              tests=[t for t in tests if t is not None], complete=None not in tests)]
    unsure = [e for e in entries if not isinstance(e, FileSource)]
    out = _judged_out(reader, table, unsure, relevant, stats_columns, specs) if unsure else set()
    files = [e if isinstance(e, FileSource) else source(e) for e in entries
             if isinstance(e, FileSource) or e[0] not in out]
    return files, live_file_count(reader, snapshot_id, table.table_id) - len(files)


def _judged_out(reader: MetadataReader, table: TableInfo, rows: Sequence[tuple[Any, ...]],
                relevant: Sequence[tuple[Predicate, ColumnInfo]], stats_columns: Sequence[int],
                specs: Mapping[int, Sequence[PartitionField]]) -> set[int]:
    """Ids of the files (`live_files` rows with the stats columns) the exact rules rule out."""
    from ducklake_cli.catalog.file_scan import FILE_FIELDS, STATS_FIELDS
    from ducklake_cli.engine.planning.prune import Candidate, FileStats, keep_file

    keyed = [r[0] for r in rows if r[9] is not None and specs.get(r[9])]
    values = reader.file_partition_values(table.table_id, keyed) if keyed else {}
    columns = {p.column.lower(): col for p, col in relevant}
    predicates = [p for p, _ in relevant]
    width = len(STATS_FIELDS)
    out: set[int] = set()
    for r in rows:
        stats = {}
        for i, cid in enumerate(stats_columns):
            lo, hi, nulls, count, nan = fields = r[len(FILE_FIELDS) + i * width:len(FILE_FIELDS) + (i + 1) * width]
            if any(f is not None for f in fields):  # a stats row of all NULLs tells what no row tells
                stats[cid] = FileStats(cid, lo, hi, nulls, count, as_bool(nan))
        partition_id = r[9]
        candidate = Candidate(r[0], stats, values.get(r[0], {}),
                              tuple(specs.get(partition_id, ())) if partition_id is not None else ())
        if not keep_file(candidate, predicates, columns):
            out.add(r[0])
    return out


def stats_test(predicate: Predicate, col: ColumnInfo, specs: Mapping[int, Sequence[PartitionField]]
               ) -> StatsTest | None:
    """The predicate as a test the catalog's SQL decides from stats, or None when only Python can judge it:
    NULL tests on any judged column; comparisons of an integer column with integer literals, and of a DATE or
    TIMESTAMP (not TIMESTAMPTZ, not TIMESTAMP_NS) column with literals whose readings are years 1-9999."""
    from ducklake_cli.catalog.file_scan import StatsTest
    from ducklake_cli.catalog.types import INT_TYPES

    keyed = tuple(pid for pid, fields in specs.items() if any(f.column_id == col.column_id for f in fields))
    if predicate.op in ("is_null", "is_not_null"):
        return StatsTest(col.column_id, predicate.op, (), keyed)
    values = predicate.values
    arity = len(values) == 2 if predicate.op == "between" else (
        1 <= len(values) <= _MAX_IN if predicate.op == "in" else len(values) == 1)
    if not arity or predicate.op not in _SQL_OPS:
        return None
    if col.type in INT_TYPES:
        ints = [(v, v) for v in values if type(v) is int and -_INT_LIMIT < v < _INT_LIMIT]
        return StatsTest(col.column_id, predicate.op, tuple(ints), keyed) if len(ints) == len(values) else None
    if col.type in _TIME_TYPES:
        ranges = [_time_range(v, col.type) for v in values]
        if None in ranges:
            return None
        kind: Literal["date", "timestamp"] = "date" if col.type == "date" else "timestamp"
        return StatsTest(col.column_id, predicate.op, tuple(r for r in ranges if r is not None), keyed, kind)
    return None


def _time_range(value: object, col_type: str) -> tuple[str, str] | None:
    """A literal's lowest and highest reading as canonical text (see catalog/file_scan.py), or None."""
    from ducklake_cli.engine.planning.prune import time_readings

    try:
        readings = time_readings(value, col_type)
    except (ArithmeticError, ValueError, TypeError):  # the rules keep every file for such a literal
        return None
    if not readings:
        return None
    low, high = (_time_text(ns, col_type == "date") for ns in (min(readings), max(readings)))
    return None if low is None or high is None else (low, high)


def _time_text(ns: int, date_column: bool) -> str | None:
    """ns since the epoch as canonical DATE/TIMESTAMP text (a DATE column's midnight as the bare date)."""
    import datetime as dt

    from ducklake_cli.catalog.partitions import DAY_NS, EPOCH_ORDINAL, NS

    days, rest = divmod(ns, DAY_NS)
    if not 1 <= days + EPOCH_ORDINAL <= dt.date.max.toordinal():
        return None
    day = dt.date.fromordinal(days + EPOCH_ORDINAL).isoformat()
    if date_column and rest == 0:
        return day
    seconds, fraction = divmod(rest, NS)
    clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    digits = f"{fraction:09d}".rstrip("0")
    return f"{day} {clock}" + (f".{digits}" if digits else "")


_SQL_OPS = frozenset({"=", "<", "<=", ">", ">=", "between", "in"})
_MAX_IN = 100  # longer IN lists are judged in Python
_INT_LIMIT = 10 ** 18  # integer literals SQL compares (BIGINT on every backend, like the bounds it reads)
_TIME_TYPES = frozenset({"date", "timestamp", "timestamp_us", "timestamp_ms", "timestamp_s"})


def _inlined_sources(reader: MetadataReader, table: TableInfo, snapshot_id: int) -> list[InlinedSource]:
    from ducklake_cli.catalog.inlined import decode_inlined

    out = []
    current = {c.column_id for c in table.columns}
    for inlined in table.inlined_tables:
        # The inlined table's columns are named as the table's columns were at its schema version.
        at = reader.schema_version_snapshot(table.table_id, inlined.schema_version, table.begin_snapshot)
        versions = reader.tables(at, table_ids=[table.table_id])
        columns = versions[0].columns if versions else table.columns
        rows = reader.inlined_rows(snapshot_id, inlined, columns)
        if not rows:
            continue
        decoded = decode_inlined(rows, columns)
        keep = [c for c in columns if c.column_id in current]
        out.append(InlinedSource(inlined.table_name, tuple(keep),
                                 decoded.select(["row_id", *[f"c{c.column_id}" for c in keep]])))
    return out


def _missing_columns(
    reader: MetadataReader, table: TableInfo, files: Sequence[FileSource], storage_options: Mapping[str, Any]
) -> dict[int, frozenset[int]]:
    """For columns added later with a default, which files lack them (read from footers, only when needed).

    A file that began before the column cannot hold it; one that began later holds it if it has stats for it (a
    restored copy of an older file begins later without it, so a file with no stats for the column is checked)."""
    defaulted = [c for c in table.columns if c.initial_default is not None]
    if not defaulted:
        return {}
    from ducklake_cli.storage.parquet import top_level_field_ids

    subtree = {c.column_id: _subtree_ids(c) for c in defaulted}
    newer = [f.data_file_id for f in files
             if f.mapping_id is None and any(f.begin_snapshot >= c.begin_snapshot for c in defaulted)]
    with_stats = {fid: {st.column_id for st in rows}
                  for fid, rows in reader.file_column_stats(table.table_id, newer).items()} if newer else {}
    out: dict[int, frozenset[int]] = {}
    for f in files:
        if f.mapping_id is not None:
            continue  # name-mapped files: the mapping says what they hold
        stats = with_stats.get(f.data_file_id, set())
        unsure = [c for c in defaulted if f.begin_snapshot < c.begin_snapshot or not subtree[c.column_id] & stats]
        if not unsure:
            continue
        present = top_level_field_ids(f.path, storage_options)
        missing = frozenset(c.column_id for c in unsure if c.column_id not in present)
        if missing:
            out[f.data_file_id] = missing
    return out


def _subtree_ids(column: ColumnInfo) -> set[int]:
    """A column's id and every nested child's (stats rows are kept for leaves only)."""
    return {column.column_id, *(i for child in column.children for i in _subtree_ids(child))}


# Types Spark's Parquet reader cannot read as DuckDB wrote them; files holding them go through the fallback
# reader (engine/fallback.py), which returns the Spark type given by `spark_type`.
FALLBACK_TYPES = frozenset({"uuid", "interval", "timetz", "timestamp_ns", "time", "time_ns", "int128", "uint128",
                            "variant"})


def needs_fallback(col: ColumnInfo) -> bool:
    """Whether a column (or any nested child) has a type Spark's Parquet reader rejects."""
    return col.type in FALLBACK_TYPES or any(needs_fallback(c) for c in col.children)



# Parquet types (as pyarrow reads them) Spark's reader reads as each flat DuckLake type; anything else goes through
# the fallback reader. Checked only for files registered by name, whose types DuckDB lets differ from the column's.
_NATIVE_ARROW: dict[str, tuple[str, ...]] = {
    "boolean": ("bool",), "int8": ("int8",), "int16": ("int16",), "int32": ("int32",), "int64": ("int64",),
    "uint8": ("uint8",), "uint16": ("uint16",), "uint32": ("uint32",), "uint64": ("uint64",),
    "float32": ("float",), "float64": ("double",), "date": ("date32[day]",),
    "timestamp": ("timestamp[us]",), "timestamp_us": ("timestamp[us]",), "timestamp_ms": ("timestamp[ms]",),
    "varchar": ("string", "large_string"), "json": ("string", "large_string"),
    "blob": ("binary", "large_binary"), "geometry": ("binary", "large_binary"),
}


def native_arrow_match(file_type: pa.DataType, col: ColumnInfo, node: MappedField) -> bool:
    """Whether Spark's Parquet reader reads a file field of this (pyarrow) type, mapped by `node`, as `col`."""
    import pyarrow as pa

    if col.type == "struct":
        if not pa.types.is_struct(file_type):
            return False
        fields = {file_type.field(i).name: file_type.field(i).type for i in range(file_type.num_fields)}
        for child in col.children:
            sub = node.children.get(child.column_id)
            if sub is not None and sub.name in fields and not native_arrow_match(fields[sub.name], child, sub):
                return False
        return True
    if col.type == "list":
        if not (pa.types.is_list(file_type) or pa.types.is_large_list(file_type)):
            return False
        sub = node.children.get(col.children[0].column_id)
        return sub is None or native_arrow_match(file_type.value_type, col.children[0], sub)
    if col.type == "map":
        if not pa.types.is_map(file_type):
            return False
        pairs = zip((file_type.key_type, file_type.item_type), col.children, strict=True)
        return all((sub := node.children.get(c.column_id)) is None or native_arrow_match(t, c, sub) for t, c in pairs)
    if col.type == "timestamptz":
        return pa.types.is_timestamp(file_type) and file_type.tz is not None and file_type.unit in ("ms", "us")
    dec = decimal_parts(col.type)
    if dec:
        return pa.types.is_decimal(file_type) and (file_type.precision, file_type.scale) == dec
    return str(file_type) in _NATIVE_ARROW.get(col.type, ())
