"""Parsing row-level changes and the SELECTs that find their rows (no Spark)."""

from __future__ import annotations

import pytest

from ducklake_cli.engine.planning.dialect import split_statements
from ducklake_cli.engine.planning.dml_plan import (
    TARGET_VIEW,
    change_statements,
    is_change,
    merge_select,
    parse_change,
    target_predicates,
    update_select,
)
from ducklake_cli.errors import QueryError


@pytest.mark.parametrize("sql,kind", [
    ("DELETE FROM t WHERE id = 1", "delete"), ("delete from main.t", "delete"), ("TRUNCATE TABLE t", "delete"),
    ("UPDATE t SET v = 'x' WHERE id < 3", "update"),
    ("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", "merge"),
    ("INSERT INTO t VALUES (1, 'a')", "insert"), ("INSERT INTO t (id) SELECT 1", "insert"),
    ("INSERT OVERWRITE t SELECT * FROM u", "overwrite"), ("CREATE TABLE n AS SELECT 1 AS a", "create"),
])
def test_statement_kinds(sql: str, kind: str) -> None:
    assert is_change(sql)
    assert parse_change(sql).kind == kind


def test_queries_are_not_changes() -> None:
    assert not is_change("SELECT * FROM t")
    assert not is_change("WITH x AS (SELECT 1) SELECT * FROM x")


def test_ctas_partitioning_becomes_partition_by_items() -> None:
    st = parse_change("CREATE TABLE s.n PARTITIONED BY (region, year(ts), bucket(4, id)) AS SELECT * FROM t")
    assert (st.schema, st.table, st.partition_by) == ("s", "n", ("region", "year(ts)", "bucket(4, id)"))


@pytest.mark.parametrize("sql,message", [
    ("DELETE FROM t VERSION AS OF 3 WHERE id = 1", "time travel"),
    ("UPDATE t SET v = 1 FROM u WHERE t.id = u.id", "MERGE INTO"),
    ("MERGE INTO t USING (SELECT 1 AS id) ON t.id = id WHEN MATCHED THEN DELETE", "alias"),
    ("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN DELETE", "only INSERT"),
    ("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN INSERT *", "NOT MATCHED"),
    ("DELETE FROM t WHERE (", "syntax"),
])
def test_bad_statements_raise_one_line(sql: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        parse_change(sql)


def test_script_splits_statements() -> None:
    script = "DELETE FROM t WHERE id = 1;\n-- note\nUPDATE t SET v = 'x';\n"
    assert len(change_statements(split_statements(script))) == 2
    assert len(change_statements(split_statements("BEGIN;\nDELETE FROM t WHERE id = 1;\nCOMMIT;"))) == 1
    with pytest.raises(QueryError, match="ROLLBACK"):
        change_statements(split_statements("BEGIN; DELETE FROM t; ROLLBACK;"))


def test_update_select_keeps_unassigned_columns() -> None:
    sql = update_select(parse_change("UPDATE main.t SET v = upper(v) WHERE main.t.id = 1"), ["id", "v"])
    assert f"FROM {TARGET_VIEW} AS `t`" in sql
    assert "`t`.`id`" in sql and "UPPER(v) AS `v`" in sql and "WHERE t.id = 1" in sql


def test_merge_select_first_matching_clause_wins() -> None:
    st = parse_change("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.gone THEN DELETE "
                      "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    sql = merge_select(st, ["id", "v"])
    assert "LEFT OUTER JOIN" in sql
    assert sql.index("THEN 0") < sql.index("THEN 1") < sql.index("THEN 2")


def test_where_filters_prune_the_target() -> None:
    preds = target_predicates(parse_change("DELETE FROM t WHERE id >= 10 AND id < 20 AND v IN (SELECT v FROM u)"))
    assert {(p.column, p.op) for p in preds} >= {("id", ">="), ("id", "<")}


def test_assigning_an_unknown_column_is_refused() -> None:
    with pytest.raises(QueryError, match="no column nope"):
        update_select(parse_change("UPDATE t SET nope = 1"), ["id", "v"])
    with pytest.raises(QueryError, match="no column nope"):
        merge_select(parse_change("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, nope) "
                                  "VALUES (s.id, 1)"), ["id", "v"])


def test_merge_insert_values_without_columns_go_by_position() -> None:
    st = parse_change("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)")
    assert "THEN s.v END AS `v`" in merge_select(st, ["id", "v"])
    with pytest.raises(QueryError, match="gives 2 values for the 3 columns"):
        merge_select(st, ["id", "v", "w"])


def test_duckdb_merge_forms() -> None:
    """DuckDB's `USING (cols)` joins on equal columns and `INSERT BY NAME` inserts by name; its bare UPDATE/INSERT
    (every column by position) are refused in one line saying what to write (issue #26, item 3)."""
    st = parse_change("MERGE INTO t AS x USING s USING (id, \"k\") WHEN NOT MATCHED THEN INSERT BY NAME")
    assert st.on == 'x.id = s.id AND x."k" = s."k"' or st.on == "x.id = s.id AND x.k = s.k"
    assert st.clauses[0].star and st.clauses[0].action == "insert"
    with pytest.raises(QueryError, match="UPDATE SET \\*"):
        parse_change("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE")
    with pytest.raises(QueryError, match="INSERT \\*"):
        parse_change("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT")
