"""Column type changes (`ALTER TABLE … ALTER COLUMN … TYPE`) as DuckDB 1.5.5 allows them: every (from, to) pair of
DuckLake's types is tried with DuckDB and with us. We accept exactly what DuckDB accepts (a one-line refusal
otherwise, the catalog unchanged), write the catalog rows DuckDB writes (SQLite, DuckDB-file and PostgreSQL
catalogs), and read the values DuckDB reads afterwards: rows of files written under the old type, inlined rows,
and rows written since."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest

from ducklake_cli.api import connect
from ducklake_cli.catalog.columns import promotion_allowed
from ducklake_cli.engine.planning.ddl_render import parse_type
from ducklake_cli.errors import QueryError
from ducklake_cli.ops.ddl import run_ddl
from tests.support.cli import run_main
from tests.support.ddl_twins import DdlTwins
from tests.support.diff import compare_lake
from tests.support.dml_twins import twin_spots
from tests.support.oracle import attach_clause, oracle_connect
from tests.support.spot import ORACLE_BACKENDS, Spot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# DuckDB's spelling of every DuckLake primitive type, and decimals at the edges of DuckDB's rule (integer and
# fractional digits, the 38-digit cap).
PRIMITIVES = ("BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
              "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "VARCHAR", "BLOB", "DATE", "TIME", "TIME_NS", "TIMETZ",
              "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMPTZ", "UUID", "INTERVAL", "JSON",
              "VARIANT", "GEOMETRY")
DECIMALS = tuple(f"DECIMAL({p},{s})" for p, s in (
    (1, 0), (1, 1), (3, 0), (4, 1), (5, 0), (9, 2), (9, 9), (10, 0), (10, 2), (12, 2), (14, 2), (14, 4), (18, 3),
    (19, 0), (20, 0), (20, 2), (21, 2), (37, 1), (38, 0), (38, 2), (38, 37), (38, 38)))
# Types our DDL cannot spell yet (engine/planning/ddl_render.py): sources only.
UNSPELLED = frozenset({"VARIANT", "GEOMETRY"})


def ours(sql: str) -> str:
    """Our spelling of DuckDB's DDL: Spark SQL first, where TIMESTAMP has a time zone."""
    return re.sub(r"\bTIMESTAMP\b", "TIMESTAMP_NTZ", sql)


def _probe(con: duckdb.DuckDBPyConnection, sources: Sequence[str],
           targets: Sequence[str]) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """Each source type's DuckLake name as DuckDB records it, and the (source, target) pairs DuckDB's ALTER … TYPE
    accepts: one table per source, each ALTER tried in a transaction rolled back (nothing commits: seconds for
    thousands)."""
    con.execute("BEGIN")
    for i, t in enumerate(sources):
        con.execute(f"CREATE TABLE probe{i} (c {t})")
    con.execute("COMMIT")
    meta = con.execute("SELECT current_database()").fetchone()
    assert meta is not None
    recorded = dict(con.execute(
        f"SELECT t.table_name, c.column_type FROM __ducklake_metadata_{meta[0]}.ducklake_column c "
        f"JOIN __ducklake_metadata_{meta[0]}.ducklake_table t USING (table_id)").fetchall())
    names = {t: recorded[f"probe{i}"] for i, t in enumerate(sources)}
    accepted = set()
    for (i, old), new in itertools.product(enumerate(sources), targets):
        if old == new:
            continue
        con.execute("BEGIN")
        try:
            con.execute(f"ALTER TABLE probe{i} ALTER COLUMN c TYPE {new}")
            accepted.add((old, new))
        except duckdb.Error:
            pass
        con.execute("ROLLBACK")
    con.execute("BEGIN")
    for i in range(len(sources)):
        con.execute(f"DROP TABLE probe{i}")
    con.execute("COMMIT")
    return names, accepted


def test_promotion_rule_is_duckdbs(tmp_path: Path) -> None:
    """`promotion_allowed` says yes exactly where DuckDB's ALTER … TYPE does, for every pair of types."""
    con = oracle_connect()
    try:
        con.execute(attach_clause("duckdb", tmp_path / "cat.ducklake", tmp_path / "data"))
        con.execute("USE lake")
        names, accepted = _probe(con, PRIMITIVES + DECIMALS, PRIMITIVES + DECIMALS)
    finally:
        con.close()
    # the examples
    assert {("DECIMAL(12,2)", "DECIMAL(14,2)"), ("BIGINT", "HUGEINT"), ("TINYINT", "FLOAT")} <= accepted
    wrong = [f"{old} -> {new}: DuckDB {'accepts' if (old, new) in accepted else 'refuses'}"
             for old, new in itertools.product(names, names)
             if old != new and promotion_allowed(names[old], names[new]) != ((old, new) in accepted)]
    assert not wrong, f"{len(wrong)} pairs differ from DuckDB:\n" + "\n".join(wrong[:40])


# ----- the ALTER through `ducklake query`, catalogs compared with DuckDB's ---------------------------------------

# Sources: every type DuckDB can store (TIME_NS it cannot write to Parquet, so it is never promoted from files),
# nested ones too; targets: every type we can spell, a few decimals, and nested changes.
ALTER_SOURCES = (*[t for t in PRIMITIVES if t != "JSON"], "DECIMAL(4,1)", "DECIMAL(12,2)", "DECIMAL(18,3)",
                 "DECIMAL(38,2)")
ALTER_TARGETS = (*[t for t in PRIMITIVES if t not in UNSPELLED], "DECIMAL(4,1)", "DECIMAL(14,2)", "DECIMAL(14,4)",
                 "DECIMAL(38,0)", "DECIMAL(38,2)")
NESTED = {
    "INTEGER[]": ("BIGINT[]", "DECIMAL(12,2)[]", "VARCHAR[]", "INTEGER", "JSON"),
    "MAP(INTEGER, FLOAT)": ("MAP(BIGINT, DOUBLE)", "MAP(INTEGER, JSON)", "MAP(VARCHAR, FLOAT)", "INTEGER[]"),
    "STRUCT(a INTEGER, b DATE)": ("STRUCT(a BIGINT, b TIMESTAMP, c VARCHAR)", "STRUCT(a HUGEINT)",
                                  "STRUCT(a VARCHAR, b DATE)", "STRUCT(b TIMESTAMPTZ, a INTEGER)", "JSON"),
    "STRUCT(s STRUCT(x TINYINT), l SMALLINT[])": ("STRUCT(s STRUCT(x DECIMAL(9,2)), l FLOAT[])",
                                                  "STRUCT(s STRUCT(x UTINYINT), l SMALLINT[])"),
}
COLUMNS_PER_TABLE = 16


def _alter_pairs(backend: str) -> list[tuple[str, str]]:
    """The pairs tried through `ducklake query` (the test above holds the rule to DuckDB's for every pair; these
    check the way there: spellings, catalog rows, inlined-data tables, refusals): the issue's examples, a promotion
    to every type some type is promoted to, nested changes, and refusals; on SQLite also each source's widest
    promotion and a refusal (CI time: each ALTER is a commit on both sides)."""
    pairs = [("DECIMAL(12,2)", "DECIMAL(14,2)"), ("BIGINT", "HUGEINT"), ("TINYINT", "FLOAT")]
    sources = [s for s in ALTER_SOURCES if backend != "postgres" or s != "TIME_NS"]
    for target in ALTER_TARGETS:
        if not any(t == target for _, t in pairs):
            pairs += [(s, target) for s in sources if s != target and _allowed(s, target)][:1]
    for src in sources:
        verdicts = [(t, _allowed(src, t)) for t in ALTER_TARGETS if t != src]
        widest, refused = next(t for t, ok in reversed(verdicts) if ok), next(t for t, ok in verdicts if not ok)
        tried = [widest, refused] if backend == "sqlite" else [refused] if src in ("INTEGER", "UUID") else []
        pairs += [(src, t) for t in tried if (src, t) not in pairs]
    return pairs + [(src, target) for src, targets in NESTED.items() for target in targets]


def _allowed(src: str, target: str) -> bool:
    return promotion_allowed(_lake_type(src), _lake_type(target))


def _alter_tables(backend: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """The pairs as columns of a few tables (a column per pair, of its source type). DuckDB 1.5.5 cannot make a
    TIME_NS column on a PostgreSQL catalog (its inlined-data table names a type PostgreSQL lacks)."""
    pairs = _alter_pairs(backend)
    return [(f"t{i}", pairs[at:at + COLUMNS_PER_TABLE]) for i, at in enumerate(range(0, len(pairs), COLUMNS_PER_TABLE))]


@pytest.mark.parametrize("backend", ORACLE_BACKENDS)
def test_alter_type_through_query_matches_duckdb(backend: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """DuckDB runs each ALTER on one lake, we on its twin: what DuckDB accepts we commit through `ducklake query`
    with the same catalog rows; what it refuses we refuse in one line (exit 1), changing nothing; DuckDB then reads
    and keeps writing both lakes alike (SQLite)."""
    tables = _alter_tables(backend)
    con = oracle_connect()
    try:
        with twin_spots(backend, tmp_path) as (a, b):
            twins = DdlTwins(a, b, con)
            creates = [f"CREATE TABLE {name} (" + ", ".join(f"c{j} {src}" for j, (src, _) in enumerate(pairs)) + ")"
                       for name, pairs in tables]
            # the tables each in a snapshot of their own (DuckDB lists several in a snapshot's changes in no fixed
            # order), then a row in each, inlined: each ALTER makes a new inlined-data table
            rows = [f"INSERT INTO {name} DEFAULT VALUES" for name, _ in tables]
            twins.setup([*creates, "BEGIN", *rows, "COMMIT"])
            accepted: list[str] = []
            refused: list[str] = []
            with twins.attached(a) as duck:
                for name, pairs in tables:
                    for j, (_, target) in enumerate(pairs):
                        sql = f"ALTER TABLE {name} ALTER COLUMN c{j} TYPE {target}"
                        try:
                            duck.execute(sql)
                            accepted.append(ours(sql))
                        except duckdb.Error:
                            refused.append(ours(sql))
            script = tmp_path / "promote.sql"
            script.write_text(";\n".join(accepted) + ";\n")
            code, _, err = run_main(capsys, "query", b.catalog, "--file", str(script))
            assert code == 0, err
            twins.compare_catalogs()

            lake = connect(b.catalog)
            try:
                for sql in refused:  # what `ducklake query` runs for DDL, without a process per statement
                    with pytest.raises(QueryError) as info:
                        run_ddl(lake, [sql])
                    assert "\n" not in str(info.value), sql
            finally:
                lake.close()
            for sql in refused[::12]:  # the CLI's refusal: exit 1, one line on stderr
                code, out, err = run_main(capsys, "query", b.catalog, sql)
                assert (code, out, len(err.strip().splitlines())) == (1, "", 1), (sql, err)
            twins.compare_catalogs()  # the refusals changed nothing

            if backend == "sqlite":  # (the same catalog rows on the others; DuckDB reads many versions slowly)
                for spot in (a, b):
                    twins.duck(spot, [f"INSERT INTO {name} SELECT * FROM {name}" for name, _ in tables])
                assert twins.latest(b) == twins.latest(a)
    finally:
        con.close()
    least = (50, 30) if backend == "sqlite" else (25, 5)
    assert len(accepted) > least[0] and len(refused) > least[1]  # the pairs really were tried


# ----- values after the change: DuckDB's reads and ours --------------------------------------------------------

# Edge values per source type, stored before the change (and a row of NULLs). Chosen so that DuckDB can read every
# one after each accepted change: HUGEINT's extremes overflow DECIMAL(38,2), text that is not JSON fails VARCHAR →
# JSON, dates before 1677 fail DATE → TIMESTAMP_NS, and Parquet holds no negative INTERVAL (DuckDB errors, so do we).
VALUES: dict[str, tuple[str, ...]] = {
    "BOOLEAN": ("true", "false"),
    "TINYINT": ("-128", "127"), "SMALLINT": ("-32768", "32767"), "INTEGER": ("-2147483648", "2147483647"),
    "BIGINT": ("-9223372036854775808", "9223372036854775807"), "UTINYINT": ("255", "0"),
    "USMALLINT": ("65535",), "UINTEGER": ("4294967295",), "UBIGINT": ("18446744073709551615",),
    "HUGEINT": ("-100000000000000000000", "12345678901234567890123"), "UHUGEINT": ("100000000000000000000",),
    "FLOAT": ("1.1", "-3.4e38", "'nan'", "'-inf'", "16777217", "-0.0", "1e20", "1e-7"),
    "DOUBLE": ("1.1", "1e300", "'nan'", "'inf'", "-0.0", "1e20", "123456789.125", "5e-324", "1e-6"),
    "DECIMAL(4,1)": ("-999.9", "12.5", "0"), "DECIMAL(9,2)": ("-9999999.99", "1.50", "100"),
    "DECIMAL(18,3)": ("123456789012345.678", "-0.005", "0.015"),
    "DECIMAL(38,2)": ("123456789012345678901234567890123456.78", "0.10"),
    "VARCHAR": ("'{\"a\": 1}'", "' [1, 2] '", "'\"x\"'", "'null'", "'1e400'"),
    "BLOB": ("'\\xAA\\x00'::BLOB", "'a\"b''c\\x5C'::BLOB"),
    "DATE": ("DATE '2020-02-29'", "DATE '1900-03-04'"),
    "TIME": ("TIME '12:34:56.789'", "TIME '00:00:00'"), "TIMETZ": ("'12:34:56+02'::TIMETZ",),
    "TIMESTAMP": ("TIMESTAMP '2020-01-01 10:00:00.123456'", "TIMESTAMP '1960-01-01 00:00:00.12'"),
    "TIMESTAMPTZ": ("TIMESTAMPTZ '2020-01-01 10:00:00.5+00'",),
    "TIMESTAMP_S": ("TIMESTAMP_S '2020-01-01 10:00:01'",), "TIMESTAMP_MS": ("TIMESTAMP_MS '1969-12-31 23:59:59.001'",),
    "TIMESTAMP_NS": ("TIMESTAMP_NS '2020-01-01 10:00:01.123456789'",),
    "UUID": ("'8f5e4c3a-0000-4000-8000-000000000001'::UUID",),
    "INTERVAL": ("INTERVAL '1 year 2 days 3 seconds'", "INTERVAL '0 seconds'"),
}
# Inlined rows keep what the reader's inlined decoding keeps: microseconds (scan_plan decodes TIMESTAMP_NS to µs).
INLINED = {"TIMESTAMP_NS": ("TIMESTAMP_NS '2020-01-01 10:00:01.123456'",)}
READ_TARGETS = (*[t for t in PRIMITIVES if t not in UNSPELLED], "DECIMAL(4,1)", "DECIMAL(9,2)", "DECIMAL(12,2)",
                "DECIMAL(14,4)", "DECIMAL(18,3)", "DECIMAL(20,2)", "DECIMAL(38,0)", "DECIMAL(38,2)")
# Targets only the fallback reader reads: a table holding one is read by it entirely.
FALLBACK_TARGETS = frozenset({"HUGEINT", "UHUGEINT", "TIMESTAMP_NS", "TIME_NS"})
# Nested promotions (list element, map key and value, struct fields) with edge values.
NESTED_VALUES = {
    "INTEGER[]": ("BIGINT[]", ("[-2147483648, NULL, 7]", "[]")),
    "DECIMAL(9,2)[]": ("DOUBLE[]", ("[-9999999.99, 0.1]",)),
    "MAP(UTINYINT, FLOAT)": ("MAP(INTEGER, DOUBLE)", ("MAP {255: 1.1, 0: NULL}",)),
    "STRUCT(a INTEGER, b FLOAT)": ("STRUCT(a BIGINT, b DOUBLE, c VARCHAR)", ("{'a': -7, 'b': 1.1}",)),
}


def _read_tables(accepted: set[tuple[str, str]], tmp: Path) -> dict[str, list[tuple[str, str]]]:
    """Every pair DuckDB accepts for which VALUES has values, grouped into tables by how the scan reads the files
    written before the change (a file's columns are read one way): Spark's own widening (`scan._spark_reads`, the
    type DuckDB writes for the source checked), the fallback reader's conversions, a table the fallback reader reads
    whole; and the nested changes."""
    import pyarrow.parquet as pq

    from ducklake_cli.catalog.models import ColumnInfo
    from ducklake_cli.engine.scan import _spark_reads

    con = duckdb.connect()
    written = {}
    for i, src in enumerate(VALUES):
        con.execute(f"COPY (SELECT NULL::{src} AS c) TO '{tmp / f'w{i}.parquet'}'")
        written[src] = pq.read_schema(tmp / f"w{i}.parquet").field("c").type
    con.close()
    tables: dict[str, list[tuple[str, str]]] = {"widened": [], "converted": [], "fallback": [], "nested": []}
    for src, target in itertools.product(VALUES, READ_TARGETS):
        if (src, target) not in accepted:
            continue
        col = ColumnInfo(1, "c", _lake_type(target), True, None, None, None, None, 1, 0)
        if target in FALLBACK_TARGETS:
            tables["fallback"].append((src, target))
        else:
            tables["widened" if _spark_reads(written[src], col) else "converted"].append((src, target))
    tables["fallback"] += tables["widened"]  # Spark's widenings done by the fallback reader too
    tables["nested"] = [(src, target) for src, (target, _) in NESTED_VALUES.items()]
    widened = tables.pop("widened")  # ours to change: a few columns a table (see OUR_CHANGES)
    for i, at in enumerate(range(0, len(widened), COLUMNS_PER_TABLE)):
        tables[f"widened{i}"] = widened[at:at + COLUMNS_PER_TABLE]
    return tables


def _lake_type(duckdb_type: str) -> str:
    """The DuckLake type our DDL makes of a DuckDB spelling (what DuckDB records for those we cannot spell)."""
    return duckdb_type.lower() if duckdb_type in UNSPELLED else parse_type(ours(duckdb_type)).text()


def _insert(table: str, pairs: Sequence[tuple[str, str]], first_key: int, values: Mapping[str, Sequence[str]]) -> str:
    """Rows of edge values, one column per pair (its source's i-th value, else NULL), and a row of NULLs."""
    count = max(len(values.get(src, VALUES.get(src, ()))) for src, _ in pairs) + 1
    rows = []
    for i in range(count):
        cells = []
        for src, _ in pairs:
            held = values.get(src, VALUES.get(src, ()))
            cells.append(held[i] if i < len(held) else "NULL")
        rows.append(f"({first_key + i}, {', '.join(cells)})")
    return f"INSERT INTO {table} VALUES {', '.join(rows)}"


# The tables whose changes we make (`ducklake query`, a snapshot each); DuckDB makes the others' in one transaction
# (the same catalog rows: the test above), as its reads slow down with the square of a table's schema versions.
OUR_CHANGES = ("widened", "nested")  # name prefixes


@pytest.mark.spark
def test_promoted_columns_read_like_duckdb(tmp_path: Path, spark: SparkSession,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A lake built by DuckDB, every accepted promotion made: DuckDB and our reader read the same values, from files
    written under the old types, inlined rows, and rows written under the new ones."""
    nested = {src: vals for src, (_, vals) in NESTED_VALUES.items()}
    spot = Spot("sqlite", str(tmp_path / "cat.sqlite"), str(tmp_path / "cat.sqlite"), tmp_path / "data")
    spot.data_path.mkdir()
    con = oracle_connect()
    try:
        con.execute(spot.attach("lk"))
        con.execute("USE lk")
        tables = _read_tables(_probe(con, tuple(VALUES), READ_TARGETS)[1], tmp_path)
        alters = {name: [f"ALTER TABLE {name} ALTER COLUMN c{j} TYPE {target}" for j, (_, target) in enumerate(pairs)]
                  for name, pairs in tables.items()}
        con.execute("CALL lk.set_option('data_inlining_row_limit', 0)")
        for name, pairs in tables.items():
            con.execute(f"CREATE TABLE {name} (k INTEGER, " + ", ".join(
                f"c{j} {src}" for j, (src, _) in enumerate(pairs)) + ")")
            con.execute(_insert(name, pairs, 0, nested))  # a file
        con.execute("CALL lk.set_option('data_inlining_row_limit', 1000)")
        for name, pairs in tables.items():
            con.execute(_insert(name, pairs, 100, {**nested, **INLINED}))  # inlined
        con.execute("BEGIN")
        for name in tables:
            for sql in () if name.startswith(OUR_CHANGES) else alters[name]:
                con.execute(sql)
        con.execute("COMMIT")
        con.execute("USE memory")
        con.execute("DETACH lk")

        script = tmp_path / "promote.sql"
        script.write_text("".join(ours(sql) + ";\n" for name in tables if name.startswith(OUR_CHANGES)
                                  for sql in alters[name]))
        code, _, err = run_main(capsys, "query", spot.catalog, "--file", str(script))
        assert code == 0, err

        con.execute(spot.attach("lk"))
        for name in tables:  # rows written under the new types: inlined, then a file
            con.execute(f"INSERT INTO lk.{name} SELECT k + 1000, * EXCLUDE (k) FROM lk.{name} WHERE k < 100")
        con.execute("CALL lk.set_option('data_inlining_row_limit', 0)")
        for name in tables:
            con.execute(f"INSERT INTO lk.{name} SELECT k + 2000, * EXCLUDE (k) FROM lk.{name} WHERE k < 100")
        latest = con.execute("SELECT max(snapshot_id) FROM __ducklake_metadata_lk.ducklake_snapshot").fetchone()
        con.execute("DETACH lk")
    finally:
        con.close()
    assert latest is not None
    assert sum(len(p) for p in tables.values()) > 200
    compare_lake(spot, spark, "type promotions", [latest[0]])
