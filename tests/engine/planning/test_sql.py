"""The SQL layer of `ducklake query`: table references, the view rewrite, filter extraction, view transpiling."""

from __future__ import annotations

import datetime as dt
import logging
import subprocess
import sys
from decimal import Decimal

import pytest
import sqlglot

from ducklake_cli.engine.planning.predicates import Predicate
from ducklake_cli.engine.planning.sql_rewrite import TableRef, parse_query, suggest, transpile_view, view_column_aliases
from ducklake_cli.errors import QueryError


def refs(sql: str) -> list[tuple[str | None, str | None, str, int | None, str | None]]:
    return [(r.catalog, r.schema, r.name, r.version, r.timestamp) for r in parse_query(sql).table_refs()]


def names(sql: str) -> list[str]:
    return [r.qualified for r in parse_query(sql).table_refs()]


def rewritten(sql: str) -> str:
    """The rewrite with views `__dl_1`, `__dl_2`, … in reference order; checked to parse again as Spark SQL."""
    parsed = parse_query(sql)
    out = parsed.rewrite({ref: f"__dl_{i}" for i, ref in enumerate(parsed.table_refs(), 1)})
    sqlglot.parse_one(out, read="spark")
    assert parse_query(out).table_refs() == [
        TableRef(None, None, f"__dl_{i}") for i in range(1, len(parsed.table_refs()) + 1)
    ]
    return out


def preds(sql: str, table: str = "t", **time_travel: object) -> list[Predicate]:
    schema, _, name = table.rpartition(".")
    ref = TableRef(None, schema or None, name, **time_travel)  # type: ignore[arg-type]
    return parse_query(sql).predicates_for(ref)


def p(column: str, op: str, *values: object) -> Predicate:
    return Predicate(column, op, values)  # type: ignore[arg-type]


# -- table references -------------------------------------------------------------------------------------------


def test_ref_forms_and_qualified_name() -> None:
    assert refs("SELECT * FROM t") == [(None, None, "t", None, None)]
    assert refs("SELECT * FROM s2.t") == [(None, "s2", "t", None, None)]
    assert refs("SELECT * FROM anything.main.t") == [("anything", "main", "t", None, None)]
    assert names("SELECT * FROM t JOIN s2.u ON t.id = u.id") == ["main.t", "s2.u"]


def test_quoted_identifiers_with_dots_spaces_and_backticks() -> None:
    sql = "SELECT * FROM `my.schema`.`odd name` JOIN `a``b` ON 1 = 1"
    assert refs(sql) == [(None, "my.schema", "odd name", None, None), (None, None, "a`b", None, None)]
    out = rewritten(sql)
    assert "__dl_1 AS `odd name`" in out and "__dl_2 AS `a``b`" in out


def test_mixed_case_names_share_one_key_and_keep_their_spelling() -> None:
    parsed = parse_query("SELECT * FROM Main.Orders o JOIN main.ORDERS p ON o.id = p.id")
    (ref,) = parsed.table_refs()
    assert ref.qualified == "Main.Orders"
    assert ref.key == TableRef(None, "main", "orders").key


def test_joins_subqueries_and_set_operations() -> None:
    sql = """SELECT * FROM a JOIN b ON a.id = b.id
             WHERE a.x IN (SELECT x FROM c) AND EXISTS (SELECT 1 FROM d WHERE d.id = a.id)
             UNION ALL SELECT * FROM (SELECT * FROM e) s
             INTERSECT SELECT * FROM f EXCEPT SELECT * FROM g"""
    assert names(sql) == [f"main.{n}" for n in "abcdefg"]


def test_ctes_are_not_tables() -> None:
    assert names("WITH x AS (SELECT * FROM t) SELECT * FROM x") == ["main.t"]
    assert names("WITH x AS (SELECT 1), y AS (SELECT * FROM x) SELECT * FROM y JOIN u") == ["main.u"]
    assert names("WITH X AS (SELECT 1) SELECT * FROM x") == []  # Spark resolves names case-insensitively


def test_cte_named_like_a_lake_table() -> None:
    # Inside its own definition a non-recursive CTE name still means the table; qualified names never mean a CTE.
    assert names("WITH t AS (SELECT * FROM t WHERE x > 1) SELECT * FROM t") == ["main.t"]
    assert names("WITH t AS (SELECT 1 AS id) SELECT * FROM t JOIN main.t USING (id)") == ["main.t"]
    assert names("WITH t AS (SELECT 1 AS id) SELECT * FROM t") == []


def test_cte_scope_ends_with_its_query() -> None:
    sql = "SELECT * FROM (WITH x AS (SELECT 1 AS id) SELECT * FROM x) s JOIN x USING (id)"
    assert names(sql) == ["main.x"]
    shadowed = "WITH x AS (SELECT * FROM a) SELECT * FROM x WHERE id IN (WITH x AS (SELECT * FROM b) SELECT id FROM x)"
    assert names(shadowed) == ["main.a", "main.b"]


def test_recursive_cte_sees_itself() -> None:
    sql = "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r"
    assert names(sql) == []


def test_functions_values_and_literals_are_not_tables() -> None:
    assert names("SELECT * FROM range(10)") == []
    assert names("SELECT * FROM range(10) r JOIN t ON r.id = t.id") == ["main.t"]
    assert names("SELECT * FROM VALUES (1, 2) AS v(a, b)") == []
    assert names("SELECT 1") == []
    assert names("VALUES (1), (2)") == []
    assert names("SELECT * FROM t LATERAL VIEW explode(arr) e AS x") == ["main.t"]


def test_hints_are_not_tables() -> None:
    sql = "SELECT /*+ BROADCAST(b) */ * FROM a JOIN b ON a.id = b.id"
    assert names(sql) == ["main.a", "main.b"]
    assert rewritten(sql).startswith("SELECT /*+ BROADCAST(b) */ * FROM __dl_1 AS a JOIN __dl_2 AS b")


# -- time travel ----------------------------------------------------------------------------------------------


def test_version_and_timestamp_as_of() -> None:
    assert refs("SELECT * FROM t VERSION AS OF 3") == [(None, None, "t", 3, None)]
    assert refs("SELECT * FROM t FOR VERSION AS OF '4' x") == [(None, None, "t", 4, None)]
    ts = "2026-01-01 00:00:00"
    assert refs(f"SELECT * FROM t TIMESTAMP AS OF '{ts}'") == [(None, None, "t", None, ts)]
    assert refs(f"SELECT * FROM t FOR SYSTEM_TIME AS OF '{ts}'") == [(None, None, "t", None, ts)]
    assert refs(f"SELECT * FROM t TIMESTAMP AS OF TIMESTAMP '{ts}'") == [(None, None, "t", None, ts)]


def test_same_table_at_two_versions_is_two_refs_and_two_views() -> None:
    sql = "SELECT * FROM t VERSION AS OF 1 a JOIN t VERSION AS OF 2 b USING (id) JOIN t VERSION AS OF 1 c USING (id)"
    assert refs(sql) == [(None, None, "t", 1, None), (None, None, "t", 2, None)]
    assert rewritten(sql) == "SELECT * FROM __dl_1 AS a JOIN __dl_2 AS b USING (id) JOIN __dl_1 AS c USING (id)"


@pytest.mark.parametrize("clause", ["VERSION AS OF 'abc'", "VERSION AS OF -1", "TIMESTAMP AS OF now()",
                                    "TIMESTAMP AS OF 17"])
def test_time_travel_needs_literals(clause: str) -> None:
    with pytest.raises(QueryError, match="AS OF"):
        parse_query(f"SELECT * FROM t {clause}")


# -- statement kinds and errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("sql", [
    "INSERT INTO t SELECT 1", "INSERT OVERWRITE t SELECT * FROM u", "CREATE TABLE t AS SELECT 1",
    "CREATE VIEW v AS SELECT 1", "DROP TABLE t", "DELETE FROM t WHERE x = 1", "UPDATE t SET x = 1",
    "MERGE INTO t USING u ON t.id = u.id WHEN MATCHED THEN DELETE", "ALTER TABLE t ADD COLUMN y INT",
    "TRUNCATE TABLE t", "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x",
])
def test_writes_are_rejected(sql: str) -> None:
    with pytest.raises(QueryError) as info:
        parse_query(sql)
    assert "is not supported here: query runs reads and the row changes" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("sql", ["SHOW TABLES", "EXPLAIN SELECT 1", "SET x = 1", "USE main", "CACHE TABLE t",
                                 "DESCRIBE FUNCTION abs"])
def test_other_statements_are_rejected(sql: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), pytest.raises(QueryError, match="supported"):
        parse_query(sql)
    assert not caplog.records  # sqlglot's "falling back to Command" warning stays quiet


def test_describe_reads_a_table_without_alias() -> None:
    assert names("DESCRIBE lake.main.t") == ["main.t"]
    assert rewritten("DESCRIBE main.t") == "DESCRIBE __dl_1"


def test_one_statement_only() -> None:
    assert names("SELECT * FROM t;") == ["main.t"]
    with pytest.raises(QueryError, match="one SQL statement, got 2"):
        parse_query("SELECT 1; SELECT 2")
    with pytest.raises(QueryError, match="got 0"):
        parse_query("  ")


@pytest.mark.parametrize(("sql", "where"), [
    ("SELECT * FROM", "line 1, column 13: Expected table name but got end of input"),
    ("SELECT * FROM t WHERE", "line 1, column 21: incomplete WHERE clause"),
    ("SELECT (1", "line 1, column 9: expected ')' after '1'"),
    ("SELECT 1 +", "incomplete expression after '+'"),
    ("SELEC 1", "line 1, column 7: unexpected '1'"),
    ("SELECT 'abc", "SQL syntax error: a quoted string or name is not closed"),
    ("SELECT *\nFROM t\nWHERE x = = 1", "line 3"),
])
def test_syntax_errors_are_one_short_line(sql: str, where: str) -> None:
    with pytest.raises(QueryError) as info:
        parse_query(sql)
    message = str(info.value)
    assert message.startswith("SQL syntax error") and where in message
    assert "\n" not in message and "\x1b" not in message and "<Token" not in message and len(message) < 200
    assert "<class" not in message and "Invalid expression" not in message  # sqlglot's wording, not the user's


# -- rewrite ----------------------------------------------------------------------------------------------------


def test_rewrite_aliases_views_with_the_table_name() -> None:
    assert rewritten("SELECT t.x FROM main.t") == "SELECT t.x FROM __dl_1 AS t"
    assert rewritten("SELECT x.a FROM lake.s2.t AS x") == "SELECT x.a FROM __dl_1 AS x"
    assert rewritten("SELECT x.a FROM t x WHERE x.a > 1") == "SELECT x.a FROM __dl_1 AS x WHERE x.a > 1"


def test_rewrite_drops_time_travel_and_keeps_the_rest() -> None:
    sql = ("SELECT a.id, count(*) AS n FROM t VERSION AS OF 3 AS a LEFT JOIN u TIMESTAMP AS OF '2026-01-01' "
           "ON a.id = u.id WHERE a.x > 1 GROUP BY a.id HAVING count(*) > 1 ORDER BY n DESC LIMIT 5")
    assert rewritten(sql) == ("SELECT a.id, COUNT(*) AS n FROM __dl_1 AS a LEFT JOIN __dl_2 AS u ON a.id = u.id "
                              "WHERE a.x > 1 GROUP BY a.id HAVING COUNT(*) > 1 ORDER BY n DESC LIMIT 5")


def test_rewrite_of_db_qualified_columns() -> None:
    sql = "SELECT lake.main.t.x, main.t.y, t.z FROM lake.main.t WHERE main.t.x = 1"
    assert rewritten(sql) == "SELECT t.x, t.y, t.z FROM __dl_1 AS t WHERE t.x = 1"
    assert rewritten("SELECT main.t.x, other.main.t.y FROM t") == "SELECT t.x, t.y FROM __dl_1 AS t"
    assert rewritten("SELECT s2.t.x FROM s2.t AS a, main.t") == "SELECT s2.t.x FROM __dl_1 AS a CROSS JOIN __dl_2 AS t"


def test_rewrite_keeps_a_cte_and_a_table_of_the_same_name_apart() -> None:
    sql = "WITH t AS (SELECT 1 AS id) SELECT * FROM t JOIN main.t ON t.id = main.t.id"
    assert rewritten(sql) == "WITH t AS (SELECT 1 AS id) SELECT * FROM t JOIN __dl_1 ON t.id = __dl_1.id"
    two = "SELECT main.t.x, s2.t.y FROM main.t JOIN s2.t ON main.t.id = s2.t.id"
    assert rewritten(two) == "SELECT __dl_1.x, t.y FROM __dl_1 JOIN __dl_2 AS t ON __dl_1.id = t.id"


def test_rewrite_inside_ctes_subqueries_and_unions() -> None:
    sql = ("WITH x AS (SELECT * FROM t) SELECT * FROM x WHERE id IN (SELECT id FROM u) "
           "UNION SELECT * FROM (SELECT * FROM t) s")
    assert rewritten(sql) == ("WITH x AS (SELECT * FROM __dl_1 AS t) SELECT * FROM x WHERE id IN "
                              "(SELECT id FROM __dl_2 AS u) UNION SELECT * FROM (SELECT * FROM __dl_1 AS t) AS s")


def test_rewrite_without_a_view_for_a_table_is_a_bug() -> None:
    with pytest.raises(ValueError, match="main.u"):
        parse_query("SELECT * FROM t, u").rewrite({TableRef(None, None, "t"): "v"})


def test_rewrite_leaves_the_parsed_query_unchanged() -> None:
    parsed = parse_query("SELECT * FROM t VERSION AS OF 2")
    parsed.rewrite({parsed.table_refs()[0]: "__v"})
    assert parsed.table_refs() == [TableRef(None, None, "t", 2)]


# -- predicates -------------------------------------------------------------------------------------------------


def test_comparisons_either_way_round() -> None:
    sql = "SELECT * FROM t WHERE a = 1 AND b < 2 AND c <= 3 AND d > 4 AND e >= 5 AND 6 < f AND 7 >= g AND 8 = h"
    assert preds(sql) == [p("a", "=", 1), p("b", "<", 2), p("c", "<=", 3), p("d", ">", 4), p("e", ">=", 5),
                          p("f", ">", 6), p("g", "<=", 7), p("h", "=", 8)]


def test_between_in_and_null_tests() -> None:
    sql = "SELECT * FROM t WHERE a BETWEEN 1 AND 10 AND b IN ('x', 'y') AND c IS NULL AND d IS NOT NULL"
    assert preds(sql) == [p("a", "between", 1, 10), p("b", "in", "x", "y"), p("c", "is_null"),
                          p("d", "is_not_null")]


def test_only_top_level_conjuncts_against_literals() -> None:
    sql = ("SELECT * FROM t WHERE (a = 1 OR b = 2) AND NOT c = 3 AND abs(d) = 4 AND e = f AND g + 1 = 2 "
           "AND h NOT IN (1) AND i NOT BETWEEN 1 AND 2 AND j IN (SELECT 1) AND k = NULL AND l <=> 1 "
           "AND m IN (1, n) AND o = rand() AND (p = 5 AND (q = 6)) AND r LIKE 'x%'")
    assert preds(sql) == [p("p", "=", 5), p("q", "=", 6)]


def test_literal_kinds() -> None:
    sql = ("SELECT * FROM t WHERE a = -5 AND b = 1.50 AND c = 1e3 AND d = 'it''s' AND e = TRUE AND f = false "
           "AND g = DATE '2024-01-01' AND h = TIMESTAMP '2024-01-01 10:30:00' AND i = CAST('5' AS BIGINT) "
           "AND j = 7L AND k = CAST(1.005 AS DECIMAL(10, 2)) AND l = 2.5D AND m = CAST(0.1 AS FLOAT) "
           "AND n = -(-2) AND o = CAST('2024-02-03' AS DATE) AND q = 12345678901234567890 AND r = 3BD")
    assert preds(sql) == [
        p("a", "=", -5), p("b", "=", Decimal("1.50")), p("c", "=", 1000.0), p("d", "=", "it's"),
        p("e", "=", True), p("f", "=", False), p("g", "=", dt.date(2024, 1, 1)),
        p("h", "=", dt.datetime(2024, 1, 1, 10, 30)), p("i", "=", 5), p("j", "=", 7),
        p("k", "=", Decimal("1.01")), p("l", "=", 2.5), p("m", "=", 0.10000000149011612), p("n", "=", 2),
        p("o", "=", dt.date(2024, 2, 3)), p("q", "=", 12345678901234567890), p("r", "=", Decimal("3")),
    ]
    assert isinstance(preds(sql)[0].values[0], int) and isinstance(preds(sql)[2].values[0], float)


def test_casts_that_are_not_certain_are_not_extracted() -> None:
    sql = ("SELECT * FROM t WHERE a = CAST('x' AS INT) AND b = CAST(1.5 AS INT) AND c = CAST('2024-1-1' AS DATE) "
           "AND d = CAST(TRUE AS INT) AND e = CAST('NaN' AS DOUBLE) AND f = X'00' AND g = INTERVAL 1 DAY")
    assert preds(sql) == []


def test_column_qualification() -> None:
    assert preds("SELECT * FROM t WHERE t.a = 1 AND main.t.b = 2 AND lake.main.t.c = 3 AND a2 = 4") == [
        p("a", "=", 1), p("b", "=", 2), p("c", "=", 3), p("a2", "=", 4)]
    assert preds("SELECT * FROM T WHERE t.A = 1 AND T.b = 2") == [p("a", "=", 1), p("b", "=", 2)]
    # An alias hides the table's name; other qualifiers belong to other sources (or struct fields).
    assert preds("SELECT * FROM t AS x WHERE x.a = 1 AND t.b = 2 AND y.c = 3 AND d = 4") == [
        p("a", "=", 1), p("d", "=", 4)]
    # Unqualified columns are only ours when the SELECT reads nothing else.
    assert preds("SELECT * FROM t JOIN u ON t.id = u.id WHERE a = 1 AND t.b = 2", "t") == [p("b", "=", 2)]
    assert preds("SELECT * FROM t LATERAL VIEW explode(arr) e AS a WHERE a = 1 AND t.b = 2") == [p("b", "=", 2)]
    assert preds("SELECT * FROM s2.t WHERE s2.t.a = 1 AND main.t.b = 2", "s2.t") == [p("a", "=", 1)]


def test_outer_joins() -> None:
    on_clause = "SELECT * FROM a LEFT JOIN b ON a.id = b.id AND b.x = 1 AND a.y = 2"
    assert preds(on_clause, "a") == [] and preds(on_clause, "b") == []
    where = "SELECT * FROM a LEFT JOIN b ON a.id = b.id WHERE b.x = 1 AND b.y IS NULL AND a.z IS NULL"
    assert preds(where, "a") == [p("z", "is_null")]
    assert preds(where, "b") == [p("x", "=", 1)]  # IS NULL holds on NULL-extended rows: not usable for b
    right = "SELECT * FROM a RIGHT JOIN b ON a.id = b.id WHERE a.x IS NULL AND a.y = 1 AND b.z IS NULL"
    assert preds(right, "a") == [p("y", "=", 1)] and preds(right, "b") == [p("z", "is_null")]
    full = "SELECT * FROM a FULL JOIN b ON a.id = b.id WHERE a.x IS NULL AND b.y IS NULL AND a.z > 0"
    assert preds(full, "a") == [p("z", ">", 0)] and preds(full, "b") == []
    later = "SELECT * FROM a JOIN b ON a.id = b.id RIGHT JOIN c ON b.id = c.id WHERE b.x IS NULL AND a.y IS NULL"
    assert preds(later, "a") == [] and preds(later, "b") == []


def test_semi_and_anti_joined_tables_get_nothing() -> None:
    sql = "SELECT * FROM a LEFT ANTI JOIN b ON a.id = b.id AND b.x = 1 WHERE a.y = 2"
    assert preds(sql, "a") == [p("y", "=", 2)] and preds(sql, "b") == []
    assert preds("SELECT * FROM a LEFT SEMI JOIN b ON a.id = b.id WHERE a.y = 2", "b") == []


def test_only_the_select_that_reads_the_table() -> None:
    assert preds("SELECT * FROM (SELECT * FROM t) s WHERE s.x = 1") == []
    assert preds("SELECT * FROM (SELECT * FROM t WHERE y = 2) s WHERE s.x = 1") == [p("y", "=", 2)]
    assert preds("WITH c AS (SELECT * FROM t WHERE y > 2) SELECT * FROM c WHERE x = 1") == [p("y", ">", 2)]
    assert preds("SELECT * FROM u WHERE u.id IN (SELECT id FROM t WHERE k = 'a') AND x = 1") == [p("k", "=", "a")]
    assert preds("SELECT * FROM t WHERE x = 1 UNION ALL SELECT * FROM u WHERE x = 2") == [p("x", "=", 1)]
    assert preds("SELECT * FROM (t JOIN u ON t.id = u.id) WHERE t.x = 1") == []  # nested join: no guess


def test_every_reading_of_one_view_must_agree() -> None:
    assert preds("SELECT * FROM t a JOIN t b ON a.id = b.id WHERE a.x = 1") == []
    assert preds("SELECT * FROM t a JOIN t b ON a.id = b.id WHERE a.x = 1 AND b.x = 1 AND b.y = 2") == [
        p("x", "=", 1)]
    assert preds("SELECT * FROM t WHERE x = 1 UNION SELECT * FROM t WHERE x = 1 AND y = 3") == [p("x", "=", 1)]
    # Different snapshots are different views, each with its own filters.
    two = "SELECT * FROM t VERSION AS OF 1 a, t VERSION AS OF 2 b WHERE a.x = 1 AND b.y = 2"
    assert preds(two, version=1) == [p("x", "=", 1)] and preds(two, version=2) == [p("y", "=", 2)]
    assert preds(two) == []


def test_samples_and_pivots_get_nothing() -> None:
    assert preds("SELECT * FROM t TABLESAMPLE (5 ROWS) WHERE x = 1") == []
    assert preds("SELECT * FROM t PIVOT (sum(v) FOR k IN ('a', 'b')) WHERE x = 1") == []


def test_predicates_for_an_unknown_ref_is_empty() -> None:
    assert preds("SELECT * FROM t WHERE x = 1", "u") == []


# -- plain count ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sql", "table", "column"), [
    ("SELECT count(*) FROM t", "main.t", "count(1)"),
    ("select COUNT(1) from s2.t x", "s2.t", "count(1)"),
    ("SELECT count(*) AS n FROM lake.main.t LIMIT 10", "main.t", "n"),
    ("SELECT count(*) Total FROM t VERSION AS OF 4", "main.t", "Total"),
])
def test_plain_count(sql: str, table: str, column: str) -> None:
    parsed = parse_query(sql)
    ref = parsed.plain_count()
    assert ref is not None and ref.qualified == table
    assert parsed.plain_count_alias() == column
    if "VERSION" in sql:
        assert ref.version == 4


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM t WHERE x = 1", "SELECT count(*) FROM t GROUP BY x", "SELECT count(*) FROM t, u",
    "SELECT count(*) FROM t JOIN u ON t.id = u.id", "SELECT count(DISTINCT x) FROM t", "SELECT count(x) FROM t",
    "SELECT count(2) FROM t", "SELECT count(*) FROM t LIMIT 0", "SELECT count(*) FROM t LIMIT 1 OFFSET 1",
    "SELECT count(*) FROM range(5)", "SELECT count(*) FROM (SELECT * FROM t)", "SELECT count(*), 1 FROM t",
    "WITH t AS (SELECT 1) SELECT count(*) FROM t", "SELECT count(*) + 1 FROM t", "SELECT count(*)",
    "SELECT count(*) FROM t HAVING count(*) > 1", "SELECT count(*) FROM t TABLESAMPLE (1 ROWS)",
    "SELECT count(*) FROM t UNION ALL SELECT count(*) FROM t", "SELECT count(*) OVER () FROM t",
    "SELECT DISTINCT count(*) FROM t", "SELECT count(*) FROM t LATERAL VIEW explode(a) e AS y",
])
def test_not_a_plain_count(sql: str) -> None:
    assert parse_query(sql).plain_count() is None


# -- DuckLake views ---------------------------------------------------------------------------------------------


def test_view_with_the_catalog_placeholder() -> None:
    spark = transpile_view("SELECT id FROM {DUCKLAKE_CATALOG}.s2.a WHERE (id > 3)")
    assert spark == "SELECT id FROM lake.s2.a WHERE (id > 3)"
    assert names(spark) == ["s2.a"]
    assert transpile_view("SELECT * FROM {DUCKLAKE_CATALOG}.s2.a", catalog_name="my lake") == \
        'SELECT * FROM "my lake".s2.a'


def test_view_catalog_dot_table_means_main() -> None:
    spark = transpile_view("SELECT {DUCKLAKE_CATALOG}.b.id FROM {DUCKLAKE_CATALOG}.b", schema="s2")
    assert spark == "SELECT b.id FROM lake.main.b"
    assert rewritten(spark) == "SELECT b.id FROM __dl_1 AS b"


def test_view_unqualified_tables_resolve_in_the_view_schema() -> None:
    spark = transpile_view("WITH c AS (SELECT * FROM a) SELECT * FROM c JOIN main.b USING (id)", schema="s2")
    assert spark == "WITH c AS (SELECT * FROM s2.a) SELECT * FROM c JOIN main.b USING (id)"


def test_view_duckdb_syntax_becomes_spark_syntax() -> None:
    sql = ('SELECT id, CAST("name" AS VARCHAR) AS n, list_value(1, 2) AS l, (id // 2) AS h, [10, 20][1] AS f '
           "FROM a WHERE name ILIKE 'x%' QUALIFY (row_number() OVER (ORDER BY id) = 1)")
    spark = transpile_view(sql)
    assert 'CAST("name" AS STRING)' in spark and "ARRAY(1, 2)" in spark and "DIV" in spark
    assert "TRY_ELEMENT_AT(ARRAY(10, 20), 1)" in spark and "QUALIFY" not in spark
    assert names(spark) == ["main.a"]


@pytest.mark.parametrize(("sql", "reason"), [
    ("SELECT CAST(x AS HUGEINT) FROM a", "INT128"),
    ("SELECT CAST(x AS UBIGINT) FROM a", "UBIGINT"),
    ("SELECT CAST(x AS TIME) FROM a", "TIME"),
    ("SELECT * FROM memory.main.t", "catalog memory"),
    ("SELECT * FROM a ASOF JOIN b USING (ts)", "ASOF JOIN"),
    ("SELECT * FROM a POSITIONAL JOIN b", "POSITIONAL JOIN"),
    ("SELECT * FROM", "SQL syntax error"),
    ("SELECT 1; SELECT 2", "not a single SELECT"),
])
def test_view_that_spark_cannot_run(sql: str, reason: str) -> None:
    with pytest.raises(QueryError) as info:
        transpile_view(sql, view="s2.v")
    assert str(info.value).startswith("view s2.v cannot be translated to Spark SQL: ")
    assert reason in str(info.value) and "\n" not in str(info.value)


# -- helpers ----------------------------------------------------------------------------------------------------


def test_suggest() -> None:
    known = ["main.orders", "main.customers", "s2.Orders_2024"]
    assert suggest("main.order", known) == ["main.orders"]
    assert suggest("MAIN.CUSTOMER", known) == ["main.customers"]
    assert suggest("main.zzz", known) == []


def test_uses_rowid() -> None:
    assert parse_query("SELECT rowid, x FROM t").uses_rowid()
    assert parse_query("SELECT * FROM t WHERE t.ROWID < 5").uses_rowid()
    assert not parse_query("SELECT * FROM t").uses_rowid()


def test_no_pyspark_import() -> None:
    code = "import sys, ducklake_cli.engine.planning.sql_rewrite; assert 'pyspark' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_view_count_star_becomes_count() -> None:
    assert "COUNT(*)" in transpile_view("SELECT count_star() AS n FROM {DUCKLAKE_CATALOG}.main.t").upper()


@pytest.mark.parametrize(("duckdb", "spark"), [
    # DuckDB's stored forms (as `ducklake_view.sql` holds them) -> Spark SQL
    ("SELECT * FROM t ORDER BY COLUMNS(*)", "SELECT * FROM main.t ORDER BY ALL NULLS LAST"),
    ("SELECT * FROM t AT (VERSION => 2)", "SELECT * FROM main.t VERSION AS OF 2"),
    ("SELECT * FROM t AT (TIMESTAMP => CAST('2026-01-01 00:00:00' AS TIMESTAMP))",
     "SELECT * FROM main.t TIMESTAMP AS OF '2026-01-01 00:00:00'"),
    ("SELECT list_transform(l, (x -> (x + 1))) AS m FROM t", "SELECT TRANSFORM(l, x -> x + 1) AS m FROM main.t"),
    ("SELECT main.list_apply(l, (lambda x: (x * 2))) AS m FROM t", "SELECT TRANSFORM(l, x -> x * 2) AS m FROM main.t"),
    ("SELECT list_filter(l, (lambda x: (x > 'lambda y: 1'))) AS m FROM t",
     "SELECT FILTER(l, x -> x > 'lambda y: 1') AS m FROM main.t"),
    ("SELECT main.struct_pack(k := 1) AS st, main.\"map\"(main.list_value('a'), main.list_value(1)) AS mp",
     "SELECT STRUCT(1 AS k) AS st, MAP_FROM_ARRAYS(ARRAY('a'), ARRAY(1)) AS mp"),
    ("SELECT l[1], l[-1], l[(i + 1)], m['k'] FROM t",
     "SELECT TRY_ELEMENT_AT(l, 1), TRY_ELEMENT_AT(l, -1), TRY_ELEMENT_AT(l, (i + 1)), m['k'] FROM main.t"),
    ("SELECT (j -> '$.a') AS x FROM t", "SELECT (GET_JSON_OBJECT(j, '$.a')) AS x FROM main.t"),
    ("SELECT * EXCLUDE (l) FROM t", "SELECT * EXCEPT (l) FROM main.t"),
])
def test_view_duckdb_forms_spark_runs(duckdb: str, spark: str) -> None:
    assert transpile_view(duckdb) == spark


@pytest.mark.parametrize(("sql", "construct"), [
    ("SELECT COLUMNS('i.*') FROM t", "COLUMNS(...)"),
    ("SELECT * REPLACE (1 AS l) FROM t", "REPLACE"),
    ("(SELECT 1 AS a) UNION ALL BY NAME (SELECT 2 AS a)", "BY NAME"),
    ("SELECT list_reduce(l, ((x, y) -> (x + y))) FROM t", "list_reduce"),
    ("SELECT * FROM t AT (TIMESTAMP => (now() - to_days(1)))", "AT (TIMESTAMP"),
    ("SELECT l[1:2] FROM t", "slice"),
])
def test_view_constructs_spark_lacks_are_named(sql: str, construct: str) -> None:
    with pytest.raises(QueryError) as info:
        transpile_view(sql, view="main.v")
    assert construct in str(info.value) and "\n" not in str(info.value)


def test_view_column_aliases() -> None:
    assert view_column_aliases('"a"') == ["a"]
    assert view_column_aliases('"p","Q q"') == ["p", "Q q"]
    assert view_column_aliases('"we""ird, x","b"') == ['we"ird, x', "b"]
    assert view_column_aliases("") == view_column_aliases(None) == []
