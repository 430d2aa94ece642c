"""Spark side of row-level changes: the target table as a view with each row's location, the checks on new values,
and the job that turns deleted positions into delete outcomes on the executors (engine/delete_files.py)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ducklake_cli.catalog.models import ColumnInfo
from ducklake_cli.engine.delete_files import FILE_COLUMN, POS_COLUMN, DeleteJob, DeleteOutcome, write_deletes
from ducklake_cli.engine.planning.dml_plan import quote_name
from ducklake_cli.engine.planning.sql_rewrite import ROWID_NAME
from ducklake_cli.engine.scan import FILE_ID, POSITION, ROW_ID
from ducklake_cli.errors import QueryError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType

    from ducklake_cli.engine.planning.scan_plan import ScanPlan

# A statement's index travels with its deletes: DuckDB decides inline-or-file per statement and data file.
STATEMENT = "__ducklake_statement"
# Rows a script wrote before this statement carry this file id in the target view.
PENDING_FILE = -1


def target_frame(spark: SparkSession, plan: ScanPlan, *, deletes: DataFrame | None, gone_inlined: frozenset[int],
                 pending: DataFrame | None) -> DataFrame:
    """The target table with `FILE_ID`, `POSITION`, `ROW_ID`; a script's earlier deletes hidden and its pending
    new rows (file id `PENDING_FILE`) included."""
    from ducklake_cli.engine.scan import scan

    df = scan(spark, plan, with_location=True, extra_deletes=deletes, gone_inlined=gone_inlined)
    return df if pending is None else df.unionByName(pending)


def table_rows(target: DataFrame, columns: Sequence[ColumnInfo]) -> DataFrame:
    """A target frame's rows as the table's columns and DuckDB's virtual `rowid` (unless a column has that name),
    its location columns left out."""
    from pyspark.sql import functions as F

    rowid = [] if any(c.name.lower() == ROWID_NAME for c in columns) else [F.col(ROW_ID).alias(ROWID_NAME)]
    return target.select(*[F.col(quote_name(c.name)) for c in columns], *rowid)


def _family(dtype: DataType) -> str:
    from pyspark.sql import types as T

    if isinstance(dtype, T.NullType):
        return "null"
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType,
                          T.DecimalType)):
        return "number"
    if isinstance(dtype, (T.StringType, T.CharType, T.VarcharType)):
        return "string"
    if isinstance(dtype, (T.DateType, T.TimestampType, T.TimestampNTZType)):
        return "datetime"
    return type(dtype).__name__


def _assignable(value: DataType, column: DataType) -> bool:
    """Spark's ANSI store assignment, roughly: numbers to numbers, strings to strings, dates and timestamps to
    each other, nested values field by field; NULL to anything."""
    from pyspark.sql import types as T

    if isinstance(value, T.NullType):
        return True
    if isinstance(column, T.StructType) and isinstance(value, T.StructType):
        return len(column.fields) == len(value.fields) and all(
            _assignable(v.dataType, c.dataType) for v, c in zip(value.fields, column.fields, strict=True))
    if isinstance(column, T.ArrayType) and isinstance(value, T.ArrayType):
        return _assignable(value.elementType, column.elementType)
    if isinstance(column, T.MapType) and isinstance(value, T.MapType):
        return _assignable(value.keyType, column.keyType) and _assignable(value.valueType, column.valueType)
    return _family(value) == _family(column)


def conform_values(df: DataFrame, columns: Sequence[ColumnInfo], *, keep: Sequence[str] = (),
                   table: str = "") -> DataFrame:
    """The new values (one column per table column, by name) cast to the columns' Spark types; a value of another
    kind (text into a number column, …) is a `QueryError` naming the column. A number the column's type cannot
    hold fails the write with a `BadValueError` naming the column (of `table`, when given), the value and the
    updated row's id."""
    from pyspark.sql import functions as F

    from ducklake_cli.engine.spark_types import spark_type

    fields = {f.name.lower(): f for f in df.schema.fields}
    rowid = F.col(ROW_ID) if ROW_ID in keep else None
    out = []
    for c in columns:
        f = fields[c.name.lower()]
        want = spark_type(c)
        if not _assignable(f.dataType, want):
            raise QueryError(f"cannot assign a {f.dataType.simpleString().upper()} value to column {c.name} "
                             f"({c.type.upper()})", hint="CAST the value to the column's type")
        value = F.col(quote_name(f.name))
        out.append(_checked_cast(value, f.dataType, c, table, rowid).alias(c.name))
    return df.select(*out, *[F.col(k) for k in keep])


def _checked_cast(value: Column, given: DataType, col: ColumnInfo, table: str, rowid: Column | None) -> Column:
    """`value` cast to the column's type; a number that does not fit raises our error on the executor (Spark's own
    overflow error names neither the column nor the row)."""
    from pyspark.sql import functions as F

    from ducklake_cli.catalog.types import DUCKDB_TYPES
    from ducklake_cli.engine.spark_types import spark_type
    from ducklake_cli.engine.write_checks import column_where
    from ducklake_cli.errors import BadValueError, executor_text

    want = spark_type(col)
    cast = value.cast(want)
    if given == want or _family(given) != "number" or _family(want) != "number":
        return cast
    kind = DUCKDB_TYPES.get(col.type, col.type.upper())
    said = executor_text(BadValueError(f"{column_where(table, col.name)} is {kind}, which cannot hold"))
    parts = [F.lit(said + " "), value.cast("string")]
    if rowid is not None:
        parts += [F.lit(", in the row with rowid "), F.coalesce(rowid.cast("string"), F.lit("?"))]
    return F.when(value.isNotNull() & value.try_cast(want).isNull(), F.raise_error(F.concat(*parts))).otherwise(cast)


def delete_outcomes(deletes: DataFrame, job: DeleteJob) -> list[DeleteOutcome]:
    """Write the delete files for `(FILE_ID, POSITION, STATEMENT)` rows on the executors, one task per group of
    data files; the driver gets one outcome per data file and statement group."""
    from pyspark.sql import functions as F

    rows = deletes.select(F.col(FILE_ID).alias(FILE_COLUMN), F.col(POSITION).alias(POS_COLUMN),
                          F.col(STATEMENT).alias("statement"))
    rows = rows.repartition(F.col(FILE_COLUMN)).sortWithinPartitions(FILE_COLUMN, "statement", POS_COLUMN)
    out = rows.mapInArrow(functools.partial(write_deletes, job=job), "outcome string")
    return [DeleteOutcome.from_json(r[0]) for r in out.collect()]


def location_rows(df: DataFrame, statement: int) -> DataFrame:
    """The committed-file locations of `df`'s rows, tagged with the statement's index."""
    from pyspark.sql import functions as F

    return df.where(F.col(FILE_ID).isNotNull() & (F.col(FILE_ID) != PENDING_FILE)).select(
        FILE_ID, POSITION, F.lit(statement).alias(STATEMENT))


def touches_pending(df: DataFrame) -> bool:
    """Whether a statement's affected rows include rows an earlier statement of the script wrote."""
    from pyspark.sql import functions as F

    return bool(df.where(F.col(FILE_ID) == PENDING_FILE).limit(1).count())


def inlined_row_ids(df: DataFrame) -> list[int]:
    """Row ids of the affected rows that live inlined in the catalog (few: the catalog holds them)."""
    from pyspark.sql import functions as F

    return [int(r[0]) for r in df.where(F.col(FILE_ID).isNull()).select(ROW_ID).collect()]


def merge_parts(df: DataFrame, actions: Sequence[str], matched: Sequence[int]) -> tuple[DataFrame, DataFrame,
                                                                                         DataFrame]:
    """A MERGE's (removed target rows, new versions of updated rows, inserted rows), from the clause index each
    row got (`ACTION`); several source rows matching one target row is a `QueryError`."""
    from pyspark.sql import functions as F

    from ducklake_cli.engine.planning.dml_plan import ACTION

    df = df.where(F.col(ACTION).isNotNull())
    if matched:
        twice = (df.where(F.col(ACTION).isin(list(matched)) & F.col(ROW_ID).isNotNull()).groupBy(ROW_ID).count()
                 .where(F.col("count") > 1).limit(1).collect())
        if twice:
            raise QueryError(f"MERGE: several source rows match the same target row (rowid {twice[0][0]})",
                             hint="make the source unique on the ON keys, e.g. with GROUP BY or ROW_NUMBER()")
    pick = {k: [i for i, a in enumerate(actions) if a == k] for k in ("update", "delete", "insert")}
    removed = df.where(F.col(ACTION).isin(pick["update"] + pick["delete"]) & F.col(ROW_ID).isNotNull())
    return removed, df.where(F.col(ACTION).isin(pick["update"])), df.where(F.col(ACTION).isin(pick["insert"]))


def duckdb_rows(spark: SparkSession, sql: str, table: str) -> DataFrame:
    """The rows of a DuckDB query (constants: an INSERT's VALUES cast as DuckDB casts them) as a DataFrame; a value
    DuckDB cannot cast is one line naming the table."""
    import duckdb

    from ducklake_cli.errors import BadValueError

    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        rows = con.execute(sql).to_arrow_table()
    except duckdb.Error as exc:
        message = str(exc).splitlines()[0].split(": ", 1)[-1]
        raise BadValueError(f"table {table}: {message}") from None
    finally:
        con.close()
    return spark.createDataFrame(rows)


def insert_frame(df: DataFrame, columns: Sequence[ColumnInfo], named: Sequence[str], table: str,
                 marks: Sequence[int] = ()) -> DataFrame:
    """An INSERT's rows as the table's columns: by the statement's column list (others get their DEFAULT, as in
    DuckDB), else by position. `marks`: the query's last columns flag where VALUES said DEFAULT, one per value
    position listed."""
    from pyspark.sql import functions as F

    if marks:
        flags, values = df.columns[-len(marks):], df.columns[:-len(marks)]
        by_name = {c.name.lower(): c for c in columns}
        targets = [by_name.get(n.lower()) for n in named] if named else list(columns)
        picks = []
        for j, name in enumerate(values):
            col, target = F.col(quote_name(name)), targets[j] if j < len(targets) else None
            if j in marks and target is not None:
                col = F.when(F.col(quote_name(flags[list(marks).index(j)])), _default(df, target)).otherwise(col)
            picks.append(col.alias(name))
        df = df.select(*picks)
    if named:
        known = {c.name.lower() for c in columns}
        unknown = [c for c in named if c.lower() not in known]
        if unknown:
            raise QueryError(f"table {table} has no column {unknown[0]}")
        if len(df.columns) != len(named):
            raise QueryError(f"INSERT names {len(named)} columns but the query gives {len(df.columns)}")
        given = {c.lower(): df.columns[i] for i, c in enumerate(named)}
        return df.select(*[F.col(quote_name(given[c.name.lower()])).alias(c.name) if c.name.lower() in given
                           else _default(df, c).alias(c.name) for c in columns])
    if len(df.columns) != len(columns):
        raise QueryError(f"table {table} has {len(columns)} columns but the query gives {len(df.columns)}",
                         hint="name the columns: INSERT INTO t (a, b) SELECT …")
    return df.toDF(*[c.name for c in columns])


def merge_insert_defaults(df: DataFrame, columns: Sequence[ColumnInfo], unnamed: Sequence[Sequence[str]]) -> DataFrame:
    """A MERGE's inserted rows with the columns their INSERT clause does not name (`unnamed[i]` for clause i,
    by `ACTION`) given their DEFAULT, as DuckDB gives them (the generated SELECT left them NULL)."""
    from pyspark.sql import functions as F

    from ducklake_cli.engine.planning.dml_plan import ACTION

    out = []
    for c in columns:
        clauses = [i for i, names in enumerate(unnamed) if c.name.lower() in {n.lower() for n in names}]
        value = F.col(quote_name(c.name))
        if clauses:
            default = _default(df, c)
            value = F.when(F.col(ACTION).isin(clauses), default).otherwise(value)
        out.append(value.alias(c.name))
    return df.select(*out, *[F.col(k) for k in df.columns if k.lower() not in {c.name.lower() for c in columns}])


def _default(df: DataFrame, col: ColumnInfo) -> Column:
    from pyspark.sql import functions as F

    from ducklake_cli.engine.spark_types import spark_type
    from ducklake_cli.engine.writer import column_default

    got = column_default(df, col, QueryError(
        f"column {col.name} has DEFAULT {col.default_value}, which Spark cannot compute",
        hint="give the column a value in the INSERT"))
    return got if got is not None else F.lit(None).cast(spark_type(col))


def pending_frame(parts: Sequence[tuple[DataFrame, bool]], columns: Sequence[ColumnInfo]) -> DataFrame | None:
    """A script's new rows so far (`(frame, keeps row ids)`), shaped like the target view (file `PENDING_FILE`)."""
    from pyspark.sql import functions as F

    out = None
    for frame, keeps_ids in parts:
        rid = F.col(ROW_ID) if keeps_ids else F.lit(None).cast("bigint")
        part = frame.select(*[F.col(quote_name(c.name)) for c in columns],
                            F.lit(PENDING_FILE).cast("bigint").alias(FILE_ID),
                            F.lit(None).cast("bigint").alias(POSITION), rid.alias(ROW_ID))
        out = part if out is None else out.unionByName(part)
    return out
