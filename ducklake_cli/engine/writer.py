"""Driver side of `write`: Spark → DuckLake types, the Arrow layout of files, and the Spark job that writes Parquet
files on executors (engine/parquet_files.py) and returns their descriptions. Input reading and conforming input to
a table are in engine/ingest.py."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog.models import ColumnInfo, NewDataFile, SortKey
from ducklake_cli.catalog.partitions import bucket_count, hive_key_names, transform_name
from ducklake_cli.catalog.types import DECIMAL_TYPE
from ducklake_cli.engine.parquet_files import FileSpec, Leaf, PartitionKey, file_from_json, write_batches
from ducklake_cli.errors import DuckLakeError, UsageError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType



# ----- types -----------------------------------------------------------------------------------------------------

def ducklake_type(dtype: DataType, where: str) -> str:
    """The DuckLake type a new column of this Spark type gets (COMPATIBILITY.md)."""
    from pyspark.sql import types as T

    simple: list[tuple[type, str]] = [
        (T.BooleanType, "boolean"), (T.ByteType, "int8"), (T.ShortType, "int16"), (T.IntegerType, "int32"),
        (T.LongType, "int64"), (T.FloatType, "float32"), (T.DoubleType, "float64"), (T.DateType, "date"),
        (T.TimestampNTZType, "timestamp"), (T.TimestampType, "timestamptz"), (T.StringType, "varchar"),
        (T.CharType, "varchar"), (T.VarcharType, "varchar"), (T.BinaryType, "blob"),
    ]
    if isinstance(dtype, T.DecimalType):
        return f"decimal({dtype.precision},{dtype.scale})"
    if isinstance(dtype, T.StructType):
        return "struct"
    if isinstance(dtype, T.ArrayType):
        return "list"
    if isinstance(dtype, T.MapType):
        return "map"
    for cls, name in simple:
        if isinstance(dtype, cls):
            return name
    if type(dtype).__name__ == "TimeType":  # Parquet TIME files, read with spark.sql.timeType.enabled
        return "time"
    hint = "cast it in --query, e.g. CAST(NULL AS INT)" if isinstance(dtype, T.NullType) else None
    raise UsageError(f"column {where} has Spark type {dtype.simpleString()}, which DuckLake cannot store", hint=hint)


def columns_from_spark(schema: Any) -> tuple[ColumnInfo, ...]:
    """Columns of a new table from a DataFrame schema; ids 1, 2, … in pre-order (spec §5.2)."""
    from pyspark.sql import types as T

    counter = iter(range(1, 1 << 31))

    def build(name: str, dtype: DataType, nullable: bool, parent: int | None, where: str) -> ColumnInfo:
        cid = next(counter)
        kind = ducklake_type(dtype, where)
        children: list[ColumnInfo] = []
        if isinstance(dtype, T.StructType):
            children = [build(f.name, f.dataType, True, cid, f"{where}.{f.name}") for f in dtype.fields]
        elif isinstance(dtype, T.ArrayType):
            children = [build("element", dtype.elementType, True, cid, f"{where}[]")]
        elif isinstance(dtype, T.MapType):
            children = [build("key", dtype.keyType, False, cid, f"{where} key"),
                        build("value", dtype.valueType, True, cid, f"{where} value")]
        return ColumnInfo(column_id=cid, name=name, type=kind, nulls_allowed=nullable or parent is None,
                          initial_default=None, default_value="NULL", default_value_type="literal",
                          parent_column=parent, column_order=cid, begin_snapshot=0, children=tuple(children))

    names = [f.name.lower() for f in schema.fields]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UsageError(f"the input has duplicate column names: {', '.join(dupes)}")
    return tuple(build(f.name, f.dataType, True, None, repr(f.name)) for f in schema.fields)


def arrow_type(col: ColumnInfo) -> pa.DataType:
    """The Arrow type executors receive a column in: DuckDB's Parquet layout for the types pyarrow writes as DuckDB
    does (spec §8.1), else the Arrow form of the column's Spark type (`spark_type`), which DuckDB casts back when it
    writes the file (engine/parquet_files.py, `DUCKDB_WRITTEN`)."""
    import pyarrow as pa

    from ducklake_cli.engine.parquet_files import DUCKDB_WRITTEN

    t = col.type
    if col.children and any(_holds(c, ("geometry", "variant")) for c in col.children):
        raise UsageError(f"column {col.name!r} nests a geometry or variant value, which `ducklake write` cannot "
                         "write yet", hint="see COMPATIBILITY.md, 'Writing'")
    if t == "struct":
        return pa.struct([arrow_field(c) for c in col.children])
    if t == "list":
        return pa.list_(arrow_field(col.children[0]))
    if t == "map":  # map keys are never NULL (Arrow's and Parquet's rule)
        return pa.map_(arrow_field(col.children[0]).with_nullable(False), arrow_field(col.children[1]))
    m = DECIMAL_TYPE.fullmatch(t)
    if m:
        return pa.decimal128(int(m.group(1)), int(m.group(2)))
    simple = {
        "boolean": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
        "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
        "float32": pa.float32(), "float64": pa.float64(), "date": pa.date32(), "timestamp": pa.timestamp("us"),
        "timestamp_us": pa.timestamp("us"), "timestamptz": pa.timestamp("us", tz="UTC"), "varchar": pa.string(),
        "json": pa.string(), "blob": pa.binary(),
    }
    if t in DUCKDB_WRITTEN:  # as the reader gives them to Spark (COMPATIBILITY.md)
        return pa.timestamp("us") if t.startswith("timestamp_") else pa.binary() if t == "geometry" else pa.string()
    if t not in simple:
        raise UsageError(f"column {col.name!r} has type {t}, which `ducklake write` cannot write yet",
                         hint="see COMPATIBILITY.md, 'Writing'")
    return simple[t]


def _holds(col: ColumnInfo, kinds: tuple[str, ...]) -> bool:
    return col.type in kinds or any(_holds(c, kinds) for c in col.children)


def enforces_not_null(col: ColumnInfo) -> bool:
    """Whether writes refuse NULL in a column, as DuckDB 1.5.5 does: NOT NULL on a top-level column of a primitive
    type. DuckDB marks the struct fields it adds or renames NOT NULL and writes NULLs into them itself, and lets NULL
    into a NOT NULL struct, list or map column: those flags are recorded, never enforced."""
    return not col.nulls_allowed and col.parent_column is None and not col.children


def arrow_field(col: ColumnInfo) -> pa.Field:
    """An Arrow field carrying the column's Parquet field id; nullable whatever the catalog says (as DuckDB writes
    every column OPTIONAL): which columns refuse NULL is `enforces_not_null`'s, checked on the executors."""
    import pyarrow as pa

    return pa.field(col.name, arrow_type(col), metadata={b"PARQUET:field_id": str(col.column_id).encode()})


def lineage_fields() -> list[pa.Field]:
    """The trailing BIGINT columns rewritten files embed: each row's id and inserting snapshot (spec §5.6)."""
    import pyarrow as pa

    from ducklake_cli.catalog.types import ROW_ID_COLUMN, ROW_ID_FIELD_ID, SNAPSHOT_ID_COLUMN, SNAPSHOT_ID_FIELD_ID

    return [pa.field(name, pa.int64(), metadata={b"PARQUET:field_id": str(fid).encode()})
            for name, fid in ((ROW_ID_COLUMN, ROW_ID_FIELD_ID), (SNAPSHOT_ID_COLUMN, SNAPSHOT_ID_FIELD_ID))]


def leaves(columns: Sequence[ColumnInfo]) -> tuple[Leaf, ...]:
    """Leaf columns with their paths (Parquet leaf order) and whether writes refuse NULL in them."""
    out: list[Leaf] = []

    def walk(c: ColumnInfo, path: tuple[int, ...]) -> None:
        if not c.children:
            out.append(Leaf(c.column_id, c.type, path, enforces_not_null(c)))
        for i, child in enumerate(c.children):
            walk(child, (*path, i))

    for i, c in enumerate(columns):
        walk(c, (i,))
    return tuple(out)


# ----- the write job -----------------------------------------------------------------------------------------

def partition_keys(columns: Sequence[ColumnInfo], fields: Sequence[tuple[int, str]]) -> tuple[PartitionKey, ...]:
    """How executors compute each `(column_id, transform)` key of a spec over rows of `columns` (top-level)."""
    by_id = {c.column_id: (i, c) for i, c in enumerate(columns)}
    dir_keys = hive_key_names({c.column_id: c.name for c in columns}, fields)
    keys = []
    for key_index, ((cid, transform), dir_key) in enumerate(zip(fields, dir_keys, strict=True)):
        if cid not in by_id:
            raise UsageError("the table is partitioned by a nested or dropped column; `write` cannot place rows")
        pos, col = by_id[cid]
        keys.append(PartitionKey(key_index, pos, col.type, transform_name(transform), bucket_count(transform),
                                 dir_key))
    return tuple(keys)


def partition_exprs(df: DataFrame, keys: Sequence[PartitionKey]) -> list[Any]:
    """Spark expressions that cluster rows of one partition key tuple into one task."""
    from pyspark.sql import functions as F

    out = []
    for k in keys:
        col = F.col(f"`{df.columns[k.column_index]}`")
        transform = {"year": F.year, "month": F.month, "day": F.dayofmonth, "hour": F.hour,
                     # epoch counts: any finer key clusters them too (a part split across tasks is joined later)
                     "epoch_year": F.year, "epoch_month": lambda c: F.date_trunc("month", c),
                     "epoch_day": lambda c: F.date_trunc("day", c),
                     "epoch_hour": lambda c: F.date_trunc("hour", c)}.get(k.transform)
        out.append(transform(col) if transform else col)
    return out


def spark_expression(text: str, names: Mapping[str, str] | None = None) -> str | None:
    """A DuckDB SQL expression from the catalog (a DEFAULT, a sort key) as Spark SQL, with column `c` renamed to
    `names[c.lower()]`; None when it cannot be translated or names a column not in `names`."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from ducklake_cli.engine.planning.dialect import quiet_sqlglot

    try:
        with quiet_sqlglot():
            tree = sqlglot.parse_one(text, read="duckdb")
        if names is not None:
            for node in list(tree.find_all(exp.Column)):
                head, *rest = [p.name for p in node.parts]
                if head.lower() not in names:
                    return None
                new: exp.Expression = exp.column(names[head.lower()], quoted=True)
                for field_name in rest:  # `s.x`: field x of struct column s
                    new = exp.Dot(this=new, expression=exp.to_identifier(field_name, quoted=True))
                replaced = node.replace(new)
                tree = replaced if node is tree else tree
        return tree.sql(dialect="spark")
    except SqlglotError:
        return None


def column_default(df: DataFrame, col: ColumnInfo, cant: Exception) -> Column | None:
    """What an insert gives a column its input lacks, as DuckDB's INSERT does: the DEFAULT (a literal read as
    DuckDB reads its text; an expression such as now() computed by Spark, once per write), or None for NULL;
    raises `cant` for a DEFAULT Spark cannot compute."""
    import datetime as dt

    from pyspark.sql import functions as F

    from ducklake_cli.catalog.inlined import decode_inlined
    from ducklake_cli.engine.spark_types import spark_type

    text, target = col.default_value, spark_type(col)
    if text is None or text == "NULL":  # DuckDB also reads a VARCHAR literal 'NULL' back as NULL
        return None
    if col.default_value_type == "expression":
        sql = spark_expression(text, {})
        try:
            out = F.expr(sql).cast(target) if sql is not None else None
            if out is not None:
                df.select(out).schema  # noqa: B018 (analysis happens here, also on Spark Connect)
        except Exception:  # Spark's parse and analysis errors have no common base class
            out = None
        if out is None:
            raise cant
        return out
    try:
        value = decode_inlined([(0, text)], [col]).column(1)[0].as_py()
    except Exception as exc:  # duckdb.Error: a literal DuckDB cannot cast to the column type
        raise cant from exc
    if isinstance(value, dt.datetime):  # as text: a Python datetime would pass through the local time zone
        return F.lit(value.isoformat(sep=" ")).cast(target)
    return F.lit(value).cast(target)


def sort_orders(df: DataFrame, columns: Sequence[ColumnInfo], keys: Sequence[SortKey], table: str) -> list[Column]:
    """Spark sort orders for a table's sort keys (DuckDB expressions over column names) on `df`, whose leading
    columns are `columns` by position; a key Spark cannot compute is refused, naming it."""
    from pyspark.sql import functions as F

    names = {c.name.lower(): df.columns[i] for i, c in enumerate(columns)}
    out = []
    for k in sorted(keys, key=lambda k: k.key_index):
        text = spark_expression(k.expression, names)
        try:
            col = F.expr(text) if text is not None else None
            if col is not None:
                df.select(col).schema  # noqa: B018 (analysis happens here, also on Spark Connect)
        except Exception:  # Spark's parse and analysis errors have no common base class
            col = None
        if col is None:
            raise UsageError(f"table {table} is sorted by {k.expression}, which `ducklake` cannot compute on Spark",
                             hint="RESET SORTED BY in DuckDB, or set the table option sort_on_insert=false for "
                                  "unsorted writes")
        desc, nulls_first = k.direction.upper() == "DESC", k.null_order.upper().startswith("NULLS_FIRST")
        out.append((col.desc_nulls_first() if nulls_first else col.desc_nulls_last()) if desc
                   else (col.asc_nulls_first() if nulls_first else col.asc_nulls_last()))
    return out


def sort_on_insert(option: str | None) -> bool:
    """Whether inserts sort by the table's sort keys, given the stored `sort_on_insert` (None: not set); callers
    holding the metadata use `catalog.options.flag` instead."""
    from ducklake_cli.catalog.options import is_true

    return is_true("sort_on_insert", option)


def sort_arrow(table: pa.Table, keys: Sequence[SortKey], what: str) -> pa.Table:
    """Rows of a driver-side Arrow table ordered by sort keys, evaluated by DuckDB itself (ties keep their order)."""
    import duckdb
    import pyarrow as pa

    if not keys or table.num_rows < 2:
        return table
    pos = "__ducklake_position"
    order = ", ".join(f"{k.expression} {'DESC' if k.direction.upper() == 'DESC' else 'ASC'} "
                      f"{'NULLS FIRST' if k.null_order.upper().startswith('NULLS_FIRST') else 'NULLS LAST'}"
                      for k in sorted(keys, key=lambda k: k.key_index))
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("rows_to_sort", table.append_column(pos, pa.array(range(table.num_rows), pa.int64())))
        picked = con.execute(f"SELECT {pos} FROM rows_to_sort ORDER BY {order}, {pos}").fetchall()
    except duckdb.Error as exc:
        raise UsageError(f"{what} is sorted by {order}, which DuckDB cannot evaluate here: "
                         f"{str(exc).splitlines()[0]}") from exc
    finally:
        con.close()
    return table.take([p for (p,) in picked])


# Parts to join up to this many bytes in all are joined by the driver itself, more by a Spark job.
DRIVER_JOIN_BYTES = 32 << 20
_ORDINAL = "__ducklake_ordinal"


def write_files(df: DataFrame, spec: FileSpec, *, single_file: bool = False,
                sort: Sequence[Column] = ()) -> list[NewDataFile]:
    """Run the Spark job writing `df` (already conformed) as Parquet under `spec.table_dir`, in the files DuckDB
    would write: an unpartitioned write is one stream of files cut at the target size, a partitioned one a file per
    partition in the order its first row came (`single_file`: one task and one file, for compaction). Each task
    writes its own parts; the parts below the target are then joined (`plan_joins`, `engine/parquet_stitch.py`).
    `sort`: the table's sort order, over all files in file order (as DuckDB sorts an insert), or within each
    partition's file when partitioned. A job that fails leaves no file behind, and a value the executors refuse
    (`executor_error`) is one line naming the table."""
    import secrets

    from ducklake_cli.engine.session import executor_error

    spec = dataclasses.replace(spec, job=secrets.token_hex(4), ordinal=bool(spec.keys) and not single_file)
    if single_file:
        df = df.coalesce(1)
        if sort:
            df = df.sortWithinPartitions(*sort)
    elif spec.keys:
        from pyspark.sql import functions as F

        # Rows keep their input order within a partition's file (a tie-breaker after the sort keys), and files
        # their partition's first row's place, as DuckDB writes them.
        df = df.withColumn(_ORDINAL, F.monotonically_increasing_id())
        df = df.repartition(*partition_exprs(df, spec.keys)).sortWithinPartitions(*sort, F.col(_ORDINAL))
    elif sort:
        df = df.orderBy(*sort)  # range partitions in order, so files (and row ids) follow the sort
    # PySpark's mapInArrow resolves each column by name (`df["a.b"]` reads as a struct field): positional names;
    # write_batches names the columns from `spec` by position.
    df = df.toDF(*[f"_c{i}" for i in range(len(df.columns))])
    out = df.mapInArrow(functools.partial(write_batches, spec=spec), "file string")
    try:
        parts = [Part.from_json(r[0], i) for i, r in enumerate(out.collect())]
        return join_parts(df.sparkSession, spec, plan_joins(parts, spec))
    except Exception as exc:
        remove_job_files(spec)
        known = executor_error(exc, table=spec.table)
        if known is not None:
            raise known from exc
        raise


@dataclasses.dataclass(frozen=True)
class Part:
    """A file one task wrote: its description, the smallest input ordinal of its rows (partitioned writes), whether
    it was cut at the target size, and its place in the job's output."""

    file: NewDataFile
    first: int | None
    full: bool
    index: int

    @classmethod
    def from_json(cls, text: str, index: int) -> Part:
        """A part from `write_batches`' JSON row."""
        import json

        d = json.loads(text)
        return cls(file_from_json(text), d.get("first"), bool(d.get("full")), index)


def plan_joins(parts: Sequence[Part], spec: FileSpec) -> list[list[Part]]:
    """The files DuckDB would have written, each as the parts that make it up, in file order. Partitioned: one file
    per partition, ordered by its first row. Unpartitioned: the parts in task order, as one stream: a part cut at the
    target size stays a file, and consecutive smaller ones are joined until a file reaches the target, so rows keep
    their order (a sorted insert's too) and only a run of small parts before a cut one stays below the target."""
    if spec.keys:
        by_key: dict[tuple[str | None, ...], list[Part]] = {}
        for p in sorted(parts, key=lambda p: (p.first if p.first is not None else -1, p.index)):
            by_key.setdefault(p.file.partition_values, []).append(p)
        return list(by_key.values())
    out: list[list[Part]] = []
    run: list[Part] = []
    size = 0
    for p in sorted(parts, key=lambda p: p.index):
        if p.full:
            out.append([p])
            run, size = [], 0
            continue
        if not run:
            out.append(run)
        run.append(p)
        size += p.file.file_size_bytes
        if size >= spec.target_file_size:
            run, size = [], 0
    return out


def join_on_driver(spec: FileSpec, size: int) -> bool:
    """Whether parts of `size` bytes in all are joined here rather than by a Spark job: small joins, and any on the
    local file system (the kernel copies there, nothing passes through Python), cost less than a job."""
    from ducklake_cli.storage.files import split_protocol

    return split_protocol(spec.table_dir)[0] in ("", "file") or size <= DRIVER_JOIN_BYTES


def join_parts(spark: Any, spec: FileSpec, plan: Sequence[Sequence[Part]]) -> list[NewDataFile]:
    """The files of `plan`: a single part as it is, several joined into a new file (their row groups copied, not
    re-encoded) and removed; on the driver when small or local, else one Spark task per file."""
    import json
    import posixpath

    from ducklake_cli.catalog.stats import joined_file_stats
    from ducklake_cli.engine.parquet_files import data_file_name
    from ducklake_cli.engine.parquet_stitch import join_batches, join_here

    jobs = []
    for group in plan:
        if len(group) > 1:
            first = group[0].file.path
            target = (posixpath.dirname(first) + "/" if "/" in first else "") + data_file_name(spec.job)
            jobs.append(json.dumps({"target": target, "sources": [p.file.path for p in group]}))
    done: dict[str, tuple[int, int, str]] = {}
    if jobs:
        if join_on_driver(spec, sum(p.file.file_size_bytes for g in plan if len(g) > 1 for p in g)):
            rows = join_here(jobs, spec)
        else:
            frame = spark.createDataFrame([(j,) for j in jobs], "job string").repartition(len(jobs))
            rows = [r[0] for r in frame.mapInArrow(functools.partial(join_batches, spec=spec),
                                                   "file string").collect()]
        for row in rows:
            d = json.loads(row)
            done[d["sources"][0]] = (d["size"], d["footer"], d["target"])
    types = {leaf.column_id: leaf.type for leaf in spec.leaves}
    files = []
    for group in plan:
        if len(group) == 1:
            files.append(group[0].file)
            continue
        size, footer, target = done[group[0].file.path]
        stats = tuple(joined_file_stats([p.file.stats[i] for p in group], types[st.column_id])
                      for i, st in enumerate(group[0].file.stats))
        groups = [p.file.row_group_count for p in group]  # row groups are copied whole (parquet_stitch)
        files.append(dataclasses.replace(group[0].file, path=target, record_count=sum(p.file.record_count
                                                                                      for p in group),
                                         file_size_bytes=size, footer_size=footer, stats=stats,
                                         row_group_count=None if None in groups else sum(g or 0 for g in groups)))
    return files


def remove_job_files(spec: FileSpec) -> None:
    """Delete the files a failed write job left (tasks that finished before another failed keep theirs): the
    files under the table directory whose names carry the job's mark (`parquet_files.data_file_name`)."""
    import contextlib
    import posixpath

    from ducklake_cli.engine.parquet_files import job_file
    from ducklake_cli.storage.listing import delete_files, list_files

    with contextlib.suppress(DuckLakeError):  # cannot list: the files stay orphans, as after a kill
        left = [f.path for f in list_files(spec.table_dir, spec.storage_options)
                if job_file(posixpath.basename(f.path), spec.job)]
        delete_files(left, spec.storage_options)


def read_row_ids(paths: Sequence[str], storage_options: Mapping[str, Any]) -> list[int]:
    """The embedded row ids of just-written (small) files of updated rows, in file order."""
    import pyarrow.parquet as pq

    from ducklake_cli.catalog.types import ROW_ID_COLUMN
    from ducklake_cli.storage.files import filesystem

    out: list[int] = []
    for path in paths:
        with filesystem(path, dict(storage_options)).open(path, "rb") as fh:
            out += pq.read_table(fh, columns=[ROW_ID_COLUMN]).column(0).to_pylist()
    return out


def read_back(paths: Sequence[str], columns: Sequence[ColumnInfo], storage_options: Mapping[str, Any]) -> pa.Table:
    """The rows of just-written (small) files in the Arrow types `arrow_field` gives the columns, to inline them.
    Files DuckDB wrote (`DUCKDB_WRITTEN` types) are read back by DuckDB, since pyarrow reads INTERVAL as bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ducklake_cli.catalog.inlined import spark_compatible_type
    from ducklake_cli.engine.parquet_files import DUCKDB_WRITTEN
    from ducklake_cli.storage.files import filesystem

    schema = pa.schema([arrow_field(c) for c in columns])
    tables = []
    for path in paths:
        with filesystem(path, dict(storage_options)).open(path, "rb") as fh:
            raw = fh.read()
        if not any(leaf.type in DUCKDB_WRITTEN for leaf in leaves(columns)):
            tables.append(pq.read_table(pa.BufferReader(raw)).select([c.name for c in columns]).cast(schema))
            continue
        import tempfile

        import duckdb

        with tempfile.NamedTemporaryFile(suffix=".parquet") as tmp:
            tmp.write(raw)
            tmp.flush()
            con = duckdb.connect()
            try:
                con.execute("SET TimeZone = 'UTC'")
                picks = ", ".join(f'CAST("{c.name.replace(chr(34), chr(34) * 2)}" AS {spark_compatible_type(c)})'
                                  for c in columns)
                got = con.execute(f"SELECT {picks} FROM read_parquet(?)", [tmp.name]).to_arrow_table()
            finally:
                con.close()
        tables.append(got.rename_columns(schema.names).cast(schema))
    return pa.concat_tables(tables)

