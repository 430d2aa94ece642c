"""Row-level differential comparison: a table as DuckDB's ducklake extension returns it vs. our Spark DataFrame.

Both sides are turned into *canonical rows* (tuples of hashable values) and compared as multisets:

* DuckDB renders some types in SQL first, so the canonical value is DuckDB's own text: ``CAST(x AS VARCHAR)``
  for every type our reader returns as a Spark string although DuckDB has a typed value — derived from
  ``ducklake_cli.engine.spark_types.spark_type`` (today UUID, INTERVAL, TIME, TIME_NS, TIMETZ, HUGEINT, UHUGEINT),
  also inside STRUCT/LIST/MAP — and TIMESTAMP_NS is cast to TIMESTAMP (µs, DuckDB's truncation toward zero).
* Python values are then normalised by column type, identically on both sides:
  - float/double: NaN → the ``NAN`` sentinel (so NaN equals NaN), -0.0 → 0.0; other floats as they are;
  - BOOLEAN → ``Bool.TRUE`` / ``Bool.FALSE`` (which, unlike ``True``/``False``, differ from 1 and 0);
  - TIMESTAMPTZ / Spark ``TimestampType`` → aware ``datetime`` in UTC (PySpark hands back naive local time);
  - TIMESTAMP / ``TimestampNTZType``, DATE, Decimal, int, bool, str kept (``Decimal('1.50') == Decimal('1.5')``,
    and HUGEINT/UBIGINT ints compare equal to Spark's integral Decimals);
  - BLOB / ``bytearray`` → ``bytes``;
  - STRUCT / ``Row`` → ``Struct``: (field, value) pairs in declared order (field order is part of the type);
  - LIST / array → tuple; MAP / dict → ``MapPairs``: the frozenset of its (key, value) pairs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import enum
import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import duckdb
import pytest

import ducklake_cli
from tests.support.oracle import oracle_connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType

    from tests.support.spot import Spot

TableRows = tuple[list[str], list[tuple[Any, ...]]]

UTC = dt.UTC
# DuckDB type ids (DuckDBPyType.id) cast to TIMESTAMP before comparing (Spark has µs only).
_AS_TIMESTAMP = frozenset({"timestamp_ns"})


@functools.cache
def rendered_type_ids() -> frozenset[str]:
    """DuckDB type ids (``DuckDBPyType.id``) our reader returns as text: DuckLake types that ``spark_type`` maps
    to ``StringType`` although DuckDB has a non-text type for them. Compared through DuckDB's VARCHAR cast."""
    from pyspark.sql.types import StringType

    from ducklake_cli.catalog.models import ColumnInfo
    from ducklake_cli.catalog.types import DUCKDB_TYPES
    from ducklake_cli.engine.spark_types import spark_type

    ids = set()
    for lake_type, duck_name in DUCKDB_TYPES.items():
        if duck_name in ("VARCHAR", "JSON"):
            continue
        col = ColumnInfo(column_id=1, name="x", type=lake_type, nulls_allowed=True, initial_default=None,
                         default_value=None, default_value_type=None, parent_column=None, column_order=1,
                         begin_snapshot=0)
        if isinstance(spark_type(col), StringType):
            ids.add(duckdb.sqltype(duck_name).id)
    return frozenset(ids)


class _NaN:
    """The one canonical NaN: equal to itself, hashable, sorts by its repr like everything else."""

    _instance: _NaN | None = None

    def __new__(cls) -> _NaN:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NaN"


NAN = _NaN()


class Bool(enum.Enum):
    """Canonical booleans: unlike ``True``/``False`` they do not compare equal to the integers 1 and 0, so a
    BOOLEAN column read back as numbers (or vice versa) shows up as a difference."""

    FALSE = False
    TRUE = True

    def __repr__(self) -> str:
        return "true" if self.value else "false"


class Struct(tuple):  # type: ignore[type-arg]
    """A STRUCT value: ((field, value), ...) in declared field order."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k}: {v!r}" for k, v in self) + "}"


class MapPairs(frozenset):  # type: ignore[type-arg]
    """A MAP value: the set of its (key, value) pairs (keys are unique), so entry order does not matter and
    equal keys of different Python types (int vs. integral Decimal) still match. Shown sorted by key."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "map{" + ", ".join(f"{k!r}: {v!r}" for k, v in sorted(self, key=lambda kv: repr(kv[0]))) + "}"


def _float(value: float) -> Any:
    if math.isnan(value):
        return NAN
    return value + 0.0  # -0.0 → 0.0


def _map_pairs(pairs: Iterable[tuple[Any, Any]]) -> MapPairs:
    return MapPairs(pairs)


# --------------------------------------------------------------------------------------------------
# DuckDB side


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _needs_sql(t: duckdb.DuckDBPyType) -> bool:
    if t.id in rendered_type_ids() or t.id in _AS_TIMESTAMP:
        return True
    if t.id in ("struct", "list", "map"):
        return any(_needs_sql(child) for _, child in t.children)
    return False


def _sql_expr(expr: str, t: duckdb.DuckDBPyType, depth: int = 0) -> str:
    """SQL turning ``expr`` (of type ``t``) into its canonical DuckDB form (see the module docstring)."""
    if not _needs_sql(t):
        return expr
    if t.id in rendered_type_ids():
        return f"CAST({expr} AS VARCHAR)"
    if t.id in _AS_TIMESTAMP:
        return f"CAST({expr} AS TIMESTAMP)"
    var = f"x{depth}"
    if t.id == "struct":
        fields = ", ".join(
            f"{_quote(name)} := {_sql_expr(f'struct_extract({expr}, {_sql_str(name)})', child, depth + 1)}"
            for name, child in t.children
        )
        return f"CASE WHEN {expr} IS NULL THEN NULL ELSE struct_pack({fields}) END"
    if t.id == "list":
        (_, child), = t.children
        return f"list_transform({expr}, lambda {var}: {_sql_expr(var, child, depth + 1)})"
    # map: rebuild from converted key and value lists (same order, so pairs stay together)
    (_, key_t), (_, value_t) = t.children
    keys = f"list_transform(map_keys({expr}), lambda {var}: {_sql_expr(var, key_t, depth + 1)})"
    values = f"list_transform(map_values({expr}), lambda {var}: {_sql_expr(var, value_t, depth + 1)})"
    return f"CASE WHEN {expr} IS NULL THEN NULL ELSE map({keys}, {values}) END"


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def canonical_duckdb(value: Any, t: duckdb.DuckDBPyType) -> Any:
    """Canonical form of a Python value DuckDB returned for a column of type ``t`` (after ``_sql_expr``)."""
    if value is None:
        return None
    tid = t.id
    if tid in ("float", "double"):
        return _float(value)
    if tid == "boolean":
        return Bool(value)
    if tid == "timestamp with time zone":
        return value.astimezone(UTC)
    if tid == "blob":
        return bytes(value)
    if tid == "struct":
        return Struct((name, canonical_duckdb(value[name], child)) for name, child in t.children)
    if tid == "list":
        (_, child), = t.children
        return tuple(canonical_duckdb(v, child) for v in value)
    if tid == "map":
        (_, key_t), (_, value_t) = t.children
        if isinstance(value, dict):
            items: Iterable[tuple[Any, Any]] = value.items()
        else:  # DuckDB returns {'key': [...], 'value': [...]} when keys are unhashable in Python
            items = zip(value["key"], value["value"], strict=True)
        return _map_pairs((canonical_duckdb(k, key_t), canonical_duckdb(v, value_t)) for k, v in items)
    return value


def duckdb_table_rows(con: duckdb.DuckDBPyConnection, source: str, *, with_rowid: bool = False) -> TableRows:
    """Column names and canonical rows of ``SELECT * [, rowid] FROM <source>`` (``source`` is SQL, e.g.
    ``lake."main"."t" AT (VERSION => 3)``)."""
    probe = con.sql(f"SELECT * FROM {source} LIMIT 0")
    names = list(probe.columns)
    exprs = [_sql_expr(_quote(n), t) for n, t in zip(names, probe.types, strict=True)]
    if with_rowid:
        names.append("rowid")
        exprs.append("rowid")
    rel = con.sql(f"SELECT {', '.join(exprs)} FROM {source}")
    types = list(rel.types)
    rows = [tuple(canonical_duckdb(v, t) for v, t in zip(row, types, strict=True)) for row in rel.fetchall()]
    return names, rows


ORACLE_ALIAS = "oracle_lake"


@contextlib.contextmanager
def oracle_lake(spot: Spot) -> Iterator[duckdb.DuckDBPyConnection]:
    """An oracle connection with the lake attached READ_ONLY as ``ORACLE_ALIAS``; detached and closed after,
    so a DuckDB catalog file is released before the code under test opens it."""
    with contextlib.closing(oracle_connect()) as con:
        con.execute(spot.attach(ORACLE_ALIAS, "READ_ONLY"))
        try:
            yield con
        finally:
            con.execute(f"DETACH {ORACLE_ALIAS}")


def tables_at(con: duckdb.DuckDBPyConnection, snapshot_id: int) -> list[tuple[str, str]]:
    """(schema, table) of every table live at ``snapshot_id``, from the catalog's validity ranges (spec §1.1)."""
    meta = _quote(f"__ducklake_metadata_{ORACLE_ALIAS}")
    live = "{0}.begin_snapshot <= $1 AND ({0}.end_snapshot IS NULL OR {0}.end_snapshot > $1)"
    rows = con.execute(
        f"SELECT s.schema_name, t.table_name FROM {meta}.ducklake_table t "
        f"JOIN {meta}.ducklake_schema s ON s.schema_id = t.schema_id "
        f"WHERE {live.format('t')} AND {live.format('s')} ORDER BY 1, 2",
        [snapshot_id],
    ).fetchall()
    return [(str(schema), str(table)) for schema, table in rows]


def duckdb_snapshot_rows(
    spot: Spot,
    snapshot_id: int,
    *,
    with_rowid: bool = False,
    con: duckdb.DuckDBPyConnection | None = None,
) -> dict[str, TableRows]:
    """Every table live at ``snapshot_id`` ("schema.table" → (column names, canonical rows)), each read with
    ``SELECT * FROM oracle_lake.s.t AT (VERSION => n)``.

    ``con`` is a connection from ``oracle_lake(spot)`` (to reuse one attach for many snapshots); without it,
    one is opened and closed here. (Not ``ATTACH … (SNAPSHOT_VERSION n)``: in DuckDB 1.5.5 that fails on
    tables whose column type was later widened — it casts today's table stats to the old type, e.g. "Could
    not convert string '58000000000000' to INT32" — while ``AT (VERSION => n)`` reads them fine.)
    """
    if con is None:
        with oracle_lake(spot) as own:
            return duckdb_snapshot_rows(spot, snapshot_id, with_rowid=with_rowid, con=own)
    return {
        f"{schema}.{table}": duckdb_table_rows(
            con, f"{ORACLE_ALIAS}.{_quote(schema)}.{_quote(table)} AT (VERSION => {int(snapshot_id)})",
            with_rowid=with_rowid,
        )
        for schema, table in tables_at(con, snapshot_id)
    }


def duckdb_lake_rows(
    spot: Spot, snapshot_ids: Iterable[int], *, with_rowid: bool = False
) -> dict[int, dict[str, TableRows]]:
    """``duckdb_snapshot_rows`` for several snapshots over one oracle connection, closed afterwards."""
    with oracle_lake(spot) as con:
        return {sid: duckdb_snapshot_rows(spot, sid, with_rowid=with_rowid, con=con) for sid in snapshot_ids}


# --------------------------------------------------------------------------------------------------
# Spark side


def _local_to_utc(value: dt.datetime) -> dt.datetime:
    # PySpark turns TimestampType into naive *local* time (datetime.fromtimestamp); undo that exactly.
    if value.tzinfo is not None:
        return value.astimezone(UTC)
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):  # year 1 / 9999 edges; only exact when local time is UTC
        return value.replace(tzinfo=UTC)


def canonical_spark(value: Any, t: DataType) -> Any:
    """Canonical form of a value of Spark type ``t`` as ``DataFrame.collect()`` returns it."""
    from pyspark.sql import types as T

    if value is None:
        return None
    if isinstance(t, T.FloatType | T.DoubleType):
        return _float(value)
    if isinstance(t, T.BooleanType):
        return Bool(value)
    if isinstance(t, T.TimestampType):
        return _local_to_utc(value)
    if isinstance(t, T.BinaryType):
        return bytes(value)
    if isinstance(t, T.StructType):
        return Struct((f.name, canonical_spark(v, f.dataType)) for f, v in zip(t.fields, value, strict=True))
    if isinstance(t, T.ArrayType):
        return tuple(canonical_spark(v, t.elementType) for v in value)
    if isinstance(t, T.MapType):
        return _map_pairs((canonical_spark(k, t.keyType), canonical_spark(v, t.valueType)) for k, v in value.items())
    return value


def spark_rows(df: DataFrame) -> list[tuple[Any, ...]]:
    """All rows of ``df`` (one ``collect()``), canonicalised by the DataFrame's schema."""
    fields = df.schema.fields
    return [tuple(canonical_spark(v, f.dataType) for v, f in zip(row, fields, strict=True)) for row in df.collect()]


def spark_table_rows(df: DataFrame) -> TableRows:
    """Column names and canonical rows of a DataFrame."""
    return list(df.columns), spark_rows(df)


# --------------------------------------------------------------------------------------------------
# comparison


def _fmt_row(row: Sequence[Any], columns: Sequence[str] | None) -> str:
    if columns and len(columns) == len(row):
        return "(" + ", ".join(f"{c}={v!r}" for c, v in zip(columns, row, strict=True)) + ")"
    return repr(tuple(row))


def _closest(row: tuple[Any, ...], candidates: Sequence[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    same_len = [c for c in candidates if len(c) == len(row)]
    if not same_len:
        return None
    best = max(same_len, key=lambda c: sum(1 for a, b in zip(row, c, strict=True) if a == b))
    return best if any(a == b for a, b in zip(row, best, strict=True)) else None


_ERROR_LINE = re.compile(r"^(?:: |Caused by: )?[\w.$]*(?:Error|Exception)\b.*")


def describe_error(exc: BaseException, limit: int = 400) -> str:
    """One line for an exception from a Spark read: its type and first line, plus the informative lines
    buried in a Py4J/Python-worker trace (the JVM exception, its root cause, the Python worker's error)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    parts = [f"{type(exc).__name__}: {lines[0] if lines else ''}"[:limit]]
    found = [m.group(0) for line in lines[1:] if not line.startswith("at ") and (m := _ERROR_LINE.match(line))]
    causes = [line for line in found if line.startswith("Caused by: ")]
    python = [line for line in found if not line.startswith((": ", "Caused by: "))]
    for extra in (found[:1], causes[-1:], python[-1:]):
        for line in extra:
            if line[:limit] not in parts:
                parts.append(line[:limit])
    return " | ".join(parts)


def multiset_diff(
    expected: Iterable[tuple[Any, ...]], actual: Iterable[tuple[Any, ...]]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(rows missing from actual, rows unexpected in actual), each with multiplicity, sorted by repr."""
    exp, act = Counter(expected), Counter(actual)
    missing = sorted((exp - act).elements(), key=repr)
    extra = sorted((act - exp).elements(), key=repr)
    return missing, extra


def assert_same_multiset(
    expected: Iterable[tuple[Any, ...]],
    actual: Iterable[tuple[Any, ...]],
    context: str,
    *,
    columns: Sequence[str] | None = None,
    show: int = 5,
) -> None:
    """Fail with a readable diff unless both hold the same rows with the same multiplicities.

    The message names the context, the row counts, the first ``show`` rows on each side, and for each missing
    row the columns in which the most similar unexpected row differs.
    """
    expected, actual = list(expected), list(actual)
    missing, extra = multiset_diff(expected, actual)
    if not missing and not extra:
        return
    lines = [f"{context}: rows differ (DuckDB {len(expected)} rows, ours {len(actual)} rows; "
             f"{len(missing)} missing from ours, {len(extra)} unexpected in ours)"]
    if missing:
        lines.append(f"  missing from ours (first {min(show, len(missing))}):")
        for row in missing[:show]:
            lines.append("    - " + _fmt_row(row, columns))
            near = _closest(row, extra)
            if near is not None:
                diffs = [
                    f"{columns[i] if columns and i < len(columns) else f'#{i}'}: DuckDB {a!r} vs ours {b!r}"
                    for i, (a, b) in enumerate(zip(row, near, strict=True)) if a != b
                ]
                lines.append("      closest of ours differs in " + "; ".join(diffs))
    if extra:
        lines.append(f"  unexpected in ours (first {min(show, len(extra))}):")
        lines.extend("    + " + _fmt_row(row, columns) for row in extra[:show])
    raise AssertionError("\n".join(lines))


def assert_same_table(expected: TableRows, actual: TableRows, context: str) -> None:
    """Same column names (in order) and the same multiset of rows."""
    exp_cols, exp_rows = expected
    act_cols, act_rows = actual
    assert act_cols == exp_cols, f"{context}: columns differ\n  DuckDB: {exp_cols}\n  ours:   {act_cols}"
    assert_same_multiset(exp_rows, act_rows, context, columns=exp_cols)


__all__ = [
    "NAN",
    "ORACLE_ALIAS",
    "Bool",
    "MapPairs",
    "Struct",
    "TableRows",
    "assert_same_multiset",
    "assert_same_table",
    "canonical_duckdb",
    "canonical_spark",
    "describe_error",
    "duckdb_lake_rows",
    "duckdb_snapshot_rows",
    "duckdb_table_rows",
    "multiset_diff",
    "oracle_lake",
    "rendered_type_ids",
    "spark_rows",
    "spark_table_rows",
    "tables_at",
]


MAX_REPORTED = 8  # differences shown in one failure


def compare_lake(
    spot: Spot, spark: SparkSession, scenario: str, snapshots: list[int], *, with_rowid: bool = False
) -> None:
    """Compare every table at every given snapshot; fail once with all differences found."""
    expected = duckdb_lake_rows(spot, snapshots, with_rowid=with_rowid)  # oracle closed again before we open
    compare_reads(expected, spot.catalog, spark, f"[{spot.backend}] {scenario}", with_rowid=with_rowid)


def compare_reads(expected: Mapping[int, Mapping[str, TableRows]], catalog: str, spark: SparkSession, label: str, *,
                  with_rowid: bool = False) -> None:
    """Our reads of `catalog` against the expected rows of each table ("schema.table") at each snapshot; fail once
    with all differences found."""
    failures: list[str] = []
    compared = 0
    with ducklake_cli.connect(catalog, read_only=True) as lake:
        for sid, tables in expected.items():
            for name, want in tables.items():
                context = f"{label}: {name} @ snapshot {sid}" + (" +rowid" if with_rowid else "")
                compared += 1
                try:
                    df = lake.table(name, snapshot=sid, spark=spark, with_rowid=with_rowid)
                    assert_same_table(want, spark_table_rows(df), context)
                except AssertionError as exc:
                    failures.append(str(exc))
                except Exception as exc:  # report every table, not just the first that raises
                    failures.append(f"{context}: {describe_error(exc)}")
    assert compared, f"{label}: DuckDB shows no table at snapshots {sorted(expected)}"
    if failures:
        shown = "\n\n".join(failures[:MAX_REPORTED])
        more = f"\n\n… and {len(failures) - MAX_REPORTED} more" if len(failures) > MAX_REPORTED else ""
        pytest.fail(f"{len(failures)} of {compared} (table, snapshot) reads differ from DuckDB:\n\n{shown}{more}",
                    pytrace=False)
