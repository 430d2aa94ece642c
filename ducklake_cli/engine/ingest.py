"""Input for `write`: CSV and JSON parsed by DuckDB itself (so rows and types equal DuckDB's `read_csv`/`read_json`),
Parquet and ORC by Spark; and conforming any input to an existing table with lossless casts only.

CSV/JSON: the driver sniffs the union schema of all files with DuckDB (`union_by_name`), then Spark executors parse
one file each with DuckDB and that fixed schema (`mapInArrow`), so ingest still spreads over a cluster.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.inlined import spark_compatible_type, stored_type
from ducklake_cli.catalog.models import ColumnInfo
from ducklake_cli.catalog.types import DECIMAL_TYPE, DUCKDB_TYPES, FLOAT_TYPES, INT_DECIMAL_DIGITS, INT_TYPES
from ducklake_cli.engine.ingest_duckdb import (
    FileRead,
    connect_duckdb,
    count_rejects,
    exact_check,
    one_line,
    read_file,
    read_files,
    sniff,
)
from ducklake_cli.engine.planning.dml_plan import quote_name
from ducklake_cli.errors import InputError, UsageError

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType

INPUT_FORMATS = ("parquet", "csv", "json", "orc")
ON_ERROR = ("fail", "skip")
STDIN = "-"
# Type promotions that keep every value (spec §5.4 plus decimal widening and exact float conversions).
_ACCEPTS: dict[str, frozenset[str]] = {
    "int16": frozenset({"int8", "uint8"}), "int32": frozenset({"int8", "int16", "uint8", "uint16"}),
    "int64": frozenset({"int8", "int16", "int32", "uint8", "uint16", "uint32"}),
    "float32": frozenset({"int8", "int16", "uint8", "uint16"}),
    "float64": frozenset({"float32", "int8", "int16", "int32", "uint8", "uint16", "uint32"}),
    "timestamptz": frozenset({"timestamp"}), "timestamp": frozenset({"date"}),
    # Unsigned columns read back by Spark as the next wider signed type; the writer's Arrow cast checks the range.
    "uint8": frozenset({"int8", "int16"}), "uint16": frozenset({"int8", "int16", "int32"}),
    "uint32": frozenset({"int8", "int16", "int32", "int64"}), "uint64": frozenset({"int8", "int16", "int32", "int64"}),
    "json": frozenset({"varchar"}),
}
# DuckDB type ids (DuckDBPyType.id) → DuckLake types (spec §8.1): DUCKDB_TYPES inverted for the types an input may
# have (ids spell two names out).
_ID_SPELLING = {"TIMESTAMPTZ": "timestamp with time zone", "TIMETZ": "time with time zone"}
_FROM_DUCKDB = {_ID_SPELLING.get(DUCKDB_TYPES[t], DUCKDB_TYPES[t].lower()): t for t in (
    "boolean", *sorted(INT_TYPES), "int128", "uint128", *sorted(FLOAT_TYPES), "varchar", "blob", "date", "time",
    "timestamp", "timestamptz", "timestamp_s", "timestamp_ms", "timestamp_ns", "timetz", "uuid", "interval")}
# Spark reader option names people already use, as DuckDB's `read_csv` parameters.
_CSV_ALIASES = {"sep": "delim", "delimiter": "delim", "nullvalue": "nullstr", "dateformat": "dateformat",
                "timestampformat": "timestampformat", "encoding": "encoding", "header": "header",
                "quote": "quote", "escape": "escape", "comment": "comment"}


# Spark reader options DuckDB's readers need no counterpart for (it detects types and multi-line records itself).
_SPARK_ONLY = frozenset({"inferschema", "multiline"})


@dataclass(frozen=True)
class Ingest:
    """The input as a DataFrame, with its DuckLake columns when DuckDB parsed it (None: take them from Spark)."""

    df: DataFrame
    columns: tuple[ColumnInfo, ...] | None
    fmt: str
    skipped: Any = field(default=None, repr=False)  # () -> int: rows `--on-error skip` dropped (an extra pass)


# ----- types ---------------------------------------------------------------------------------------------------

def duckdb_name(col: ColumnInfo) -> str:
    """A column type as DuckDB spells it (`TIMESTAMP WITH TIME ZONE`, `DECIMAL(20,2)`), for messages."""
    if col.type == "json":
        return "JSON"
    text = stored_type(col)
    return text.replace("TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE")


def parse_type(con: duckdb.DuckDBPyConnection, text: str, where: str) -> Any:
    """A DuckDB type from its text (`DECIMAL(20,2)`, `STRUCT(a INT)`), checked by DuckDB itself."""
    if ";" in text or "--" in text:
        raise UsageError(f"{where}: {text!r} is not a type")
    try:
        return con.sql(f"SELECT CAST(NULL AS {text}) AS x").types[0]
    except Exception as exc:  # duckdb.Error: an unknown or malformed type
        raise UsageError(f"{where}: {text!r} is not a DuckDB type ({one_line(str(exc))})") from exc


def columns_from_duckdb(names: Sequence[str], types: Sequence[Any]) -> tuple[ColumnInfo, ...]:
    """Columns of a new table from DuckDB types (DuckDBPyType); ids 1, 2, … in pre-order (spec §5.2)."""
    counter = iter(range(1, 1 << 31))

    def build(name: str, t: Any, parent: int | None, where: str) -> ColumnInfo:
        cid = next(counter)
        tid, text = str(t.id), str(t)
        children: list[ColumnInfo] = []
        if text == "JSON":
            kind = "json"
        elif tid == "decimal":
            p, s = dict(t.children)["precision"], dict(t.children)["scale"]
            kind = f"decimal({p},{s})"
        elif tid == "struct":
            kind = "struct"
            children = [build(n, ct, cid, f"{where}.{n}") for n, ct in t.children]
        elif tid == "list":
            kind = "list"
            children = [build("element", t.children[0][1], cid, f"{where}[]")]
        elif tid == "map":
            kind = "map"
            kids = dict(t.children)
            children = [build("key", kids["key"], cid, f"{where} key"), build("value", kids["value"], cid,
                                                                               f"{where} value")]
        elif tid in _FROM_DUCKDB:
            kind = _FROM_DUCKDB[tid]
        else:
            raise InputError(f"column {where} has DuckDB type {text}, which DuckLake cannot store",
                             hint="give it another type with --schema")
        return ColumnInfo(column_id=cid, name=name, type=kind, nulls_allowed=True, initial_default=None,
                          default_value="NULL", default_value_type="literal", parent_column=parent,
                          column_order=cid, begin_snapshot=0,
                          children=tuple(children))

    _refuse_duplicates(names)
    return tuple(build(n, t, None, repr(n)) for n, t in zip(names, types, strict=True))


def _refuse_duplicates(names: Sequence[str]) -> None:
    lowered = [n.lower() for n in names]
    dupes = sorted({n for n in lowered if lowered.count(n) > 1})
    if dupes:
        raise InputError(f"the input has duplicate column names: {', '.join(dupes)}")


def refuse_nameless(names: Sequence[str], what: str) -> None:
    """Input with no columns, or a column with an empty name, is refused (DuckDB can read neither back)."""
    if not names:
        raise InputError(f"{what} has no columns; a DuckLake table needs at least one",
                         hint="check the input; nothing was written")
    if "" in names:
        raise InputError(f"{what} has a column with an empty name; DuckDB cannot read such a column",
                         hint="rename it; nothing was written")


def refuse_unstorable(columns: Sequence[ColumnInfo], what: str) -> None:
    """Columns DuckDB cannot attach or read must never reach the catalog: no columns at all (DuckDB refuses to
    attach the whole lake), an empty name, a struct without fields, or two fields named alike (case-insensitive)."""
    refuse_nameless([c.name for c in columns], what)

    def walk(siblings: Sequence[ColumnInfo], where: str) -> None:
        seen: set[str] = set()
        for c in siblings:
            name = f"{where}.{c.name}" if where else repr(c.name)
            if not c.name:
                raise InputError(f"{what} has a column with an empty name{f' in {where}' if where else ''}; "
                                 "DuckDB cannot read such a column", hint="rename it; nothing was written")
            if c.name.lower() in seen:
                raise InputError(f"{what} has two columns named {name} (names are case-insensitive)")
            seen.add(c.name.lower())
            if c.type == "struct" and not c.children:
                raise InputError(f"column {name} of {what} is a struct without fields, which DuckLake cannot "
                                 "store", hint="drop it or give it a field; nothing was written")
            if c.type == "struct":
                walk(c.children, name)
            else:  # list element and map key/value: their own names are fixed
                for child in c.children:
                    walk([child], f"{name}[]" if c.type == "list" else f"{name} {child.name}")

    walk(columns, "")


def parse_schema_option(text: str) -> list[tuple[str, str]]:
    """`--schema "id BIGINT, \\"a.b\\" DECIMAL(20,2)"` as (column, DuckDB type text) pairs."""
    items, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    out = []
    for item in (x.strip() for x in items):
        if not item:
            continue
        m = re.fullmatch(r'"((?:[^"]|"")+)"\s+(.+)|([^\s"]+)\s+(.+)', item, re.DOTALL)
        if not m:
            raise UsageError(f"--schema: {item!r} is not `column TYPE`")
        name = m.group(1).replace('""', '"') if m.group(1) else m.group(3)
        out.append((name, (m.group(2) or m.group(4)).strip()))
    if not out:
        raise UsageError("--schema is empty; expected \"column TYPE, …\"")
    return out


# ----- locating input files ----------------------------------------------------------------------------------

def guess_format(path: str) -> str | None:
    """The input format a file name implies (`.csv`, `.tsv`, `.json`, `.jsonl`, `.ndjson`, `.parquet`, `.orc`)."""
    name = path.rstrip("/").rsplit("/", 1)[-1].lower()
    for ext, fmt in ((".parquet", "parquet"), (".csv", "csv"), (".tsv", "csv"), (".txt", "csv"), (".json", "json"),
                     (".jsonl", "json"), (".ndjson", "json"), (".orc", "orc")):
        for comp in ("", ".gz", ".zst", ".bz2"):
            if name.endswith(ext + comp):
                return fmt
    return None


def _visible(name: str) -> bool:
    base = name.rstrip("/").rsplit("/", 1)[-1]
    return not base.startswith((".", "_"))


def expand_paths(paths: Sequence[str], storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """Files named by paths, globs and directories (a directory's visible files, recursively), sorted per item."""
    from ducklake_cli.storage.files import filesystem, split_protocol

    out: list[str] = []
    for p in paths:
        proto, _ = split_protocol(p)
        if proto == "file":
            local = p[len("file://"):] if p.startswith("file://") else p
            if os.path.isdir(local):
                found = sorted(os.path.join(d, f) for d, subdirs, files in os.walk(local) for f in files
                               if _visible(f) and all(_visible(s) for s in os.path.relpath(d, local).split(os.sep)
                                                      if s != "."))
            elif glob.has_magic(local):
                found = sorted(f for f in glob.glob(local, recursive=True) if os.path.isfile(f))
            else:
                found = [local] if os.path.exists(local) else []
            if not found:
                raise InputError(f"--from {p}: no such file or no files match")
            out.extend(found)
            continue
        fs = filesystem(p, storage_options)
        prefix = p.split("://", 1)[0] + "://"
        if glob.has_magic(p):
            found = sorted(prefix + f for f in fs.glob(p) if _visible(f))
        elif fs.isdir(p):
            found = sorted(prefix + f for f in fs.find(p) if _visible(f))
        else:
            found = [p] if fs.exists(p) else []
        if not found:
            raise InputError(f"--from {p}: no such file or no files match")
        out.extend(found)
    return out


def _is_blank(path: str, storage_options: Mapping[str, Any] | None) -> bool:
    """Whether a file holds nothing but whitespace and a byte-order mark (no header, no rows)."""
    from ducklake_cli.storage.files import filesystem

    with filesystem(path, storage_options).open(path, "rb") as fh:
        head = fh.read(4096)
    return not head.replace(b"\xef\xbb\xbf", b"").strip()


def spool_stdin(directory: str | None = None) -> str:
    """Standard input copied to a temporary file (DuckDB sniffs by reading ahead, then re-reads)."""
    fd, path = tempfile.mkstemp(prefix="ducklake-stdin-", dir=directory)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    return path


def _sniff_stdin_format(path: str) -> str:
    with open(path, "rb") as fh:
        head = fh.read(4096).replace(b"\xef\xbb\xbf", b"").lstrip()
    return "json" if head[:1] in (b"{", b"[") else "csv"


# ----- reader parameters ------------------------------------------------------------------------------------

def _csv_params(options: Mapping[str, str], on_error: str) -> dict[str, Any]:
    """read_csv parameters: RFC 4180 quoting unless the user says otherwise, their options, error handling."""
    params: dict[str, Any] = {"quote": '"', "escape": '"'}
    for key, value in options.items():
        if key.lower() in _SPARK_ONLY:
            continue
        name = _CSV_ALIASES.get(key.lower(), key.lower())
        params[name] = _option_value(value)
    if on_error == "skip":
        params["ignore_errors"] = True
    return params


def _json_params(options: Mapping[str, str], on_error: str) -> dict[str, Any]:
    params: dict[str, Any] = {k.lower(): _option_value(v) for k, v in options.items() if k.lower() not in _SPARK_ONLY}
    if on_error == "skip":
        raise UsageError("--on-error skip applies to CSV input; DuckDB's JSON reader turns bad records into "
                         "NULL rows instead of skipping them")
    return params


def _option_value(value: str) -> Any:
    low = value.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if re.fullmatch(r"-?\d+", low):
        return int(low)
    return value


# ----- the driver side ---------------------------------------------------------------------------------------

def read_input(
    spark: SparkSession,
    paths: Sequence[str],
    fmt: str | None,
    options: Mapping[str, str],
    *,
    table: Sequence[ColumnInfo] | None = None,
    schema: str | None = None,
    on_error: str = "fail",
    storage_options: Mapping[str, Any] | None = None,
) -> Ingest:
    """Files, globs, directories or `-` (standard input) as a DataFrame. `table`: the existing table's columns
    (CSV/JSON text is parsed straight into their types); `schema`: `--schema` types for a new table."""
    if on_error not in ON_ERROR:
        raise UsageError(f"--on-error must be fail or skip, not {on_error!r}")
    if fmt and fmt not in INPUT_FORMATS:
        raise UsageError(f"--input-format must be parquet, csv, json or orc, not {fmt!r}")
    if STDIN in paths:
        if len(paths) > 1:
            raise UsageError("--from - (standard input) cannot be combined with other inputs")
        spooled = spool_stdin()
        try:
            return _read_duckdb(spark, [spooled], fmt or _sniff_stdin_format(spooled), options, table=table,
                                schema=schema, on_error=on_error, storage_options=None, on_driver=True,
                                label="standard input")
        finally:
            os.unlink(spooled)
    files = expand_paths(paths, storage_options)
    fmt = fmt or next((f for f in map(guess_format, files) if f), None) or "parquet"
    if fmt in ("csv", "json"):
        return _read_duckdb(spark, files, fmt, options, table=table, schema=schema, on_error=on_error,
                            storage_options=storage_options, on_driver=False, label=None)
    if schema:
        raise UsageError("--schema applies to CSV and JSON input; Parquet and ORC files carry their own types")
    if on_error != "fail":
        raise UsageError("--on-error skip applies to CSV input")
    try:
        df = spark.read.format(fmt).options(**dict(options)).load(list(paths))
    except Exception as exc:
        if fmt != "parquet" or not _spark_lacks_type(exc):
            raise
        # UUID, INTERVAL, TIME, TIMETZ, TIMESTAMP_NS, … (e.g. files from DuckDB's COPY): DuckDB reads them exactly.
        return _read_duckdb(spark, files, fmt, {}, table=table, schema=None, on_error=on_error,
                            storage_options=storage_options, on_driver=False, label=None)
    return Ingest(df, None, fmt)


def _spark_lacks_type(exc: Exception) -> bool:
    """Whether Spark's Parquet reader refused a file's schema for a type it has no form for."""
    text = str(exc)
    return any(f"[{cls}]" in text for cls in ("PARQUET_TYPE_ILLEGAL", "PARQUET_TYPE_NOT_SUPPORTED",
                                                "PARQUET_TYPE_NOT_RECOGNIZED", "UNSUPPORTED_TIME_TYPE"))


def _read_duckdb(spark: SparkSession, files: list[str], fmt: str, options: Mapping[str, str], *,
                 table: Sequence[ColumnInfo] | None, schema: str | None, on_error: str,
                 storage_options: Mapping[str, Any] | None, on_driver: bool, label: str | None) -> Ingest:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructField, StructType

    from ducklake_cli.engine.spark_types import spark_type

    nonblank = [f for f in files if not _is_blank(f, storage_options)]
    if not nonblank:
        what = label or (files[0] if len(files) == 1 else f"all {len(files)} input files")
        raise InputError(f"{what} is empty: no header and no rows, so no columns to write",
                         hint="nothing was written")
    if schema and table is not None:
        raise UsageError("--schema applies when the table is created; the table exists",
                         hint="appends parse the input into the table's own column types")
    params = (_csv_params(options, on_error) if fmt == "csv" else _json_params(options, on_error) if fmt == "json"
              else {})
    con = connect_duckdb(storage_options, nonblank)
    try:
        names, types, params = sniff(con, fmt, nonblank, params, storage_options)
        overrides = _overrides(con, names, table, schema)
        types = [overrides.get(n.lower(), t) for n, t in zip(names, types, strict=True)]
        columns = columns_from_duckdb(names, types)
        refuse_unstorable(columns, label or "the input")
    finally:
        con.close()
    parse = tuple(str(t) for t in types)
    out = tuple(spark_compatible_type(c) for c in columns)
    spark_schema = StructType([StructField(c.name, spark_type(c), True) for c in columns])
    forced = {n.lower() for n, _ in parse_schema_option(schema)} if schema else set()
    exact = tuple(exact_check(t, sniffed=n.lower() not in forced) if fmt == "csv" else ""
                  for n, t in zip(names, types, strict=True))
    read_spec = FileRead(fmt, params, tuple(names), parse, out, dict(storage_options or {}), exact)
    target = to_arrow_schema(spark_schema, timezone="UTC")
    if on_driver:
        import pyarrow as pa

        batches = [b for f in nonblank for b in read_file(f, read_spec, target)]
        data = pa.Table.from_batches(batches, schema=target)
        rejects = _count_on_driver(nonblank, read_spec) if on_error == "skip" else 0
        return Ingest(spark.createDataFrame(data, schema=spark_schema), columns, fmt, skipped=lambda: rejects)
    # One task per file; `range` partitions need no shuffle (a DataFrame of paths would need a repartition).
    ids = spark.range(0, len(nonblank), 1, len(nonblank))
    df = ids.mapInArrow(functools.partial(read_files, spec=read_spec, target=target, files=tuple(nonblank)),
                        spark_schema)

    def skipped() -> int:
        counted = ids.mapInArrow(functools.partial(count_rejects, spec=read_spec, files=tuple(nonblank)),
                                 "n long").collect()
        return sum(int(r[0]) for r in counted)

    return Ingest(df, columns, fmt, skipped=skipped if on_error == "skip" else None)


def _count_on_driver(files: Sequence[str], spec: FileRead) -> int:
    import pyarrow as pa

    batch = pa.RecordBatch.from_arrays([pa.array(range(len(files)), pa.int64())], ["id"])
    return sum(int(b.column(0)[0].as_py()) for b in count_rejects(iter([batch]), spec, tuple(files)))


def _overrides(con: duckdb.DuckDBPyConnection, names: Sequence[str], table: Sequence[ColumnInfo] | None,
               schema: str | None) -> dict[str, Any]:
    """Types to parse columns as instead of the sniffed ones: the existing table's, or `--schema`'s."""
    lowered = {n.lower() for n in names}
    out: dict[str, Any] = {}
    if table is not None:
        for c in table:
            if c.name.lower() in lowered:
                out[c.name.lower()] = parse_type(con, stored_type(c) if c.type != "json" else "JSON",
                                                 f"column {c.name!r}")
        return out
    for name, text in parse_schema_option(schema) if schema is not None else []:
        if name.lower() not in lowered:
            raise UsageError(f"--schema names column {name!r}, which the input does not have",
                             hint="columns: " + ", ".join(names))
        out[name.lower()] = parse_type(con, text, f"--schema {name}")
    return out


# ----- conforming input to a table ---------------------------------------------------------------------------

def input_type_name(dtype: DataType) -> str:
    """A Spark input type as DuckDB names the type it becomes (`TIMESTAMP`, `TIMESTAMP WITH TIME ZONE`)."""
    from ducklake_cli.engine.writer import columns_from_spark

    try:
        return duckdb_name(columns_from_spark(_one_field(dtype))[0])
    except UsageError:
        return dtype.simpleString()


def _one_field(dtype: DataType) -> Any:
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField("x", dtype, True)])


def accepts(table: ColumnInfo, given: DataType, where: str) -> bool:
    """Whether every value of a Spark input type fits the table's column type exactly."""
    from pyspark.sql import types as T

    from ducklake_cli.engine.writer import ducklake_type

    have = ducklake_type(given, where)
    if table.type == "struct":
        if not isinstance(given, T.StructType) or len(given.fields) != len(table.children):
            return False
        return all(f.name.lower() == c.name.lower() and accepts(c, f.dataType, f"{where}.{f.name}")
                   for f, c in zip(given.fields, table.children, strict=True))
    if table.type == "list":
        return isinstance(given, T.ArrayType) and accepts(table.children[0], given.elementType, where)
    if table.type == "map":
        return (isinstance(given, T.MapType) and accepts(table.children[0], given.keyType, where)
                and accepts(table.children[1], given.valueType, where))
    return holds(table.type, have)


def holds(want: str, have: str) -> bool:
    """Whether every value of DuckLake leaf type `have` casts into `want` unchanged."""
    if have == want or have in _ACCEPTS.get(want, ()):
        return True
    m_to, m_from = DECIMAL_TYPE.fullmatch(want), DECIMAL_TYPE.fullmatch(have)
    if m_to and (m_from or have in INT_DECIMAL_DIGITS):
        p2, s2 = int(m_to.group(1)), int(m_to.group(2))
        p1, s1 = (int(m_from.group(1)), int(m_from.group(2))) if m_from else (INT_DECIMAL_DIGITS[have], 0)
        return s2 >= s1 and p2 - s2 >= p1 - s1
    return want == "uint64" and have == "decimal(20,0)"


def _widens(old: str, new: str) -> bool:
    """A promotion DuckLake allows that keeps every value: what `--evolve` may do to a column (DuckDB's ALTER also
    allows lossy ones, int64 → FLOAT, anything → JSON, which an append must not do silently)."""
    from ducklake_cli.catalog.columns import promotion_allowed

    unsigned = old.startswith("uint") and new.startswith("uint")
    return promotion_allowed(old, new) and (holds(new, old) or unsigned)


def conform(df: DataFrame, columns: Sequence[ColumnInfo], *, ignore_extra: bool) -> DataFrame:
    """Select the table's columns from `df` by name (case-insensitive), cast where no value can change, the DEFAULT
    (else NULL) for missing columns; refuse other types (naming both), missing columns that refuse NULL
    (`writer.enforces_not_null`) without a DEFAULT, and extra columns.
    Output columns are named `_c0`, `_c1`, … in table order: Spark's `mapInArrow` mis-resolves dotted names."""
    from pyspark.sql import functions as F

    from ducklake_cli.engine.spark_types import spark_type
    from ducklake_cli.engine.writer import column_default, enforces_not_null

    by_name = {f.name.lower(): f for f in df.schema.fields}
    wanted = {c.name.lower() for c in columns}
    extra = [f.name for f in df.schema.fields if f.name.lower() not in wanted]
    if extra and not ignore_extra:
        raise InputError(f"the input has columns the table does not: {', '.join(extra)}",
                         hint="pass --ignore-extra-columns to drop them")
    exprs = []
    for i, c in enumerate(columns):
        f = by_name.get(c.name.lower())
        target = spark_type(c)
        if f is None:
            default = column_default(df, c, InputError(
                f"the input lacks column {c.name!r}, whose DEFAULT {c.default_value} `ducklake` cannot compute",
                hint="give the column in the input"))
            if default is None and enforces_not_null(c):
                raise InputError(f"the input lacks column {c.name!r}, which is NOT NULL and has no DEFAULT")
            exprs.append((F.lit(None).cast(target) if default is None else default).alias(f"_c{i}"))
            continue
        if f.dataType != target and not accepts(c, f.dataType, repr(c.name)):
            raise InputError(f"column {c.name!r} is {duckdb_name(c)} in the table but {input_type_name(f.dataType)} "
                             "in the input; converting could change values",
                             hint="cast it in --query, or write to a new table")
        exprs.append(F.col(quote_name(f.name)).cast(target).alias(f"_c{i}"))
    return df.select(*exprs)



# ----- write --evolve ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Evolution:
    """How `write --evolve` changes a table for an input: `steps` in the order the catalog applies them, each
    ("add", a new top-level column) or ("retype", an existing column's new tree: widened leaves, struct fields
    added); `columns` is the table afterwards, with the ids `catalog/columns.py` will assign (the data files carry
    them as field ids)."""

    steps: tuple[tuple[str, ColumnInfo], ...]
    columns: tuple[ColumnInfo, ...]

    def names(self, kind: str) -> tuple[str, ...]:
        """The top-level columns added (`add`) or retyped (`retype`)."""
        return tuple(c.name for k, c in self.steps if k == kind)


def evolve_columns(table: Sequence[ColumnInfo], given: Sequence[ColumnInfo], next_id: int) -> Evolution:
    """The table's columns grown to take `given` (the input's columns): input columns the table lacks are added,
    leaf types widened where DuckLake allows it without losing a value (`_widens`), fields added to structs; a
    column the input lacks stays (its DEFAULT or NULL is written). Other differences are refused, naming both
    types."""

    counter = iter(range(next_id, 1 << 31))

    def number(c: ColumnInfo, parent: int | None) -> ColumnInfo:
        cid = next(counter)
        return replace(c, column_id=cid, column_order=cid, parent_column=parent,
                       children=tuple(number(k, cid) for k in c.children))

    def fits(old: ColumnInfo, new: ColumnInfo) -> bool:
        if old.children or new.children:
            return old.type == new.type and len(old.children) == len(new.children) and all(
                a.name.lower() == b.name.lower() and fits(a, b) for a, b in zip(old.children, new.children,
                                                                                 strict=True))
        return holds(old.type, new.type)

    def merge(old: ColumnInfo, new: ColumnInfo, where: str) -> ColumnInfo:
        if fits(old, new):
            return old
        if old.type == "struct" and new.type == "struct":
            incoming = {k.name.lower(): k for k in new.children}
            kids = [merge(k, incoming[k.name.lower()], f"{where}.{k.name}") if k.name.lower() in incoming else k
                    for k in old.children]
            known = {k.name.lower() for k in old.children}
            kids += [number(k, old.column_id) for k in new.children if k.name.lower() not in known]
            return replace(old, children=tuple(kids))
        if not old.children and not new.children and _widens(old.type, new.type):
            return replace(old, type=new.type)
        raise InputError(f"column {where} is {duckdb_name(old)} in the table but {duckdb_name(new)} in the input, "
                         "and DuckLake cannot widen one to the other",
                         hint="cast it in --query, or write to a new table")

    final = list(table)
    steps: list[tuple[str, ColumnInfo]] = []
    by_name = {c.name.lower(): i for i, c in enumerate(table)}
    for col in given:
        i = by_name.get(col.name.lower())
        if i is None:
            added = number(col, None)
            steps.append(("add", added))
            final.append(added)
            continue
        merged = merge(table[i], col, repr(table[i].name))
        if merged is not table[i]:
            steps.append(("retype", merged))
            final[i] = merged
    return Evolution(tuple(steps), tuple(final))


def column_shape(columns: Sequence[ColumnInfo]) -> tuple[Any, ...]:
    """Ids, names and types of a column tree, to compare an evolution's plan with what the catalog made."""
    return tuple((c.column_id, c.name.lower(), c.type, column_shape(c.children)) for c in columns)
