"""Views stored in the lake (DuckDB SQL, as DuckDB stores it in `ducklake_view`) read as DuckDB reads them, or fail
with one line naming the DuckDB construct Spark has no form for; differential on SQLite, DuckDB and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ducklake_cli
from ducklake_cli.errors import QueryError
from ducklake_cli.ops.query import run_query
from tests.support.built_lakes import BuiltLakes
from tests.support.cli import run_main
from tests.support.oracle import oracle_connect
from tests.support.spot import ORACLE_BACKENDS, Spot
from tests.support.tiers import backend_params

pytestmark = pytest.mark.spark

# name (with DuckDB column aliases), body: each reads equal to DuckDB through `SELECT * FROM name`.
WORKING = [
    ("v_alias(a)", "SELECT 42 AS x, 84 AS y"),
    ('v_alias_all(p, "Q q")', "SELECT id, v FROM t"),
    ("v_order_all", "SELECT id, v, s FROM t ORDER BY ALL"),
    ("v_at", "SELECT * FROM t AT (VERSION => 2)"),
    ("v_at_ts", "SELECT id FROM t AT (TIMESTAMP => '2100-01-01 00:00:00'::TIMESTAMP)"),
    ("v_lambda", "SELECT id, list_transform(l, x -> x + 1) AS m FROM t"),
    ("v_lambda_new", "SELECT id, list_transform(l, lambda x: x * 3) AS m, list_filter(l, lambda y: y > 2) AS f FROM t"),
    ("v_comprehension", "SELECT id, [x * 2 FOR x IN l] AS lc FROM t"),
    ("v_list_value", "SELECT id, list_value(id, v) AS lv, l[1] AS first, array_length(l) AS n FROM t"),
    ("v_struct_map", "SELECT id, {'k': id, 'w': s} AS st, MAP {'a': id} AS mp, struct_pack(z := v) AS sp FROM t"),
    ("v_qualify", "SELECT id FROM t QUALIFY row_number() OVER (ORDER BY id DESC) <= 2"),
    ("v_group_all", "SELECT v % 3 AS k, count(*) AS n, sum(id) AS total FROM t GROUP BY ALL"),
    ("v_cte", "WITH big AS (SELECT * FROM t WHERE id > 1) SELECT id, s FROM big"),
    ("v_join", "SELECT a.id, b.v FROM t a JOIN t b ON a.id = b.id + 1"),
    ("v_window", "SELECT id, sum(v) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS w FROM t"),
    ("v_union", "SELECT id FROM t UNION ALL SELECT 100 UNION SELECT 101"),
    ("v_text", "SELECT id, CAST(id AS VARCHAR) || '-' || s AS c, upper(s) AS u, s LIKE 'a%' AS a, "
               "CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS parity FROM t"),
    ("v_math", "SELECT id, v // 2 AS h, v % 3 AS m, 2 ** id AS p, round(v / 3, 2) AS r FROM t"),
    ("v_count_star", "SELECT count(*) AS n FROM t"),
    ("v_values", "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) t2(x, y)"),
    ("v_on_view(c)", "SELECT a + 1 FROM v_alias"),
    ("v_struct_field", "SELECT id, st.k AS k FROM v_struct_map"),
    ("v_unnest", "SELECT unnest(l) AS u FROM t"),
    ("v_exclude", "SELECT * EXCLUDE (l) FROM t"),
]

# name, body, the words the one-line error must contain.
FAILING = [
    ("f_columns", "SELECT COLUMNS('i.*') FROM t", "COLUMNS("),
    ("f_replace", "SELECT * REPLACE (id + 1 AS id) FROM t", "REPLACE"),
    ("f_by_name", "SELECT 1 AS a UNION ALL BY NAME SELECT 2 AS a", "BY NAME"),
    ("f_reduce", "SELECT list_reduce(l, (x, y) -> x + y) AS r FROM t", "list_reduce"),
    ("f_at_expr", "SELECT * FROM t AT (TIMESTAMP => now() + INTERVAL 1 DAY)", "AT (TIMESTAMP"),
    ("f_hugeint", "SELECT id::HUGEINT AS h FROM t", "HUGEINT"),
    ("f_asof", "SELECT a.id FROM t a ASOF JOIN t b ON a.id >= b.id", "ASOF"),
    ("f_function", "SELECT jaro_winkler_similarity(s, 'abc') AS j FROM t", "jaro"),
]


def _build(spot: Spot) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, list[str]]]:
    """The lake with its views, and DuckDB's rows and column names of each working view."""
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        con.execute("USE lake")
        con.execute("CREATE TABLE t (id INTEGER, v BIGINT, s VARCHAR, l INTEGER[])")
        con.execute("INSERT INTO t VALUES (1, 10, 'ab', [1, 2, 3]), (2, 20, NULL, [4]), (3, NULL, 'cd', [])")
        con.execute("INSERT INTO t VALUES (4, 40, 'a''x', NULL), (5, 7, 'zz', [5, NULL])")  # snapshot 3
        for name, body in WORKING + [(n, b) for n, b, _ in FAILING]:
            con.execute(f"CREATE VIEW {name} AS {body}")
        rows, cols = {}, {}
        for name, _ in WORKING:
            bare = name.split("(")[0]
            cur = con.execute(f"SELECT * FROM {bare}")
            cols[bare] = [d[0] for d in cur.description]
            rows[bare] = cur.fetchall()
        con.execute("USE memory")
        con.execute("DETACH lake")
        return rows, cols
    finally:
        con.close()


def _norm(value: Any) -> Any:
    """Spark Rows and DuckDB dicts/maps as comparable plain values."""
    if hasattr(value, "asDict"):
        return {k: _norm(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        if set(value) == {"key", "value"} and isinstance(value["key"], list):
            return {_norm(k): _norm(v) for k, v in zip(value["key"], value["value"], strict=True)}
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]
    return value


def _sorted(rows: Any) -> list[Any]:
    return sorted((_norm(r) for r in rows), key=repr)


# A view is one catalog row, stored alike on every backend (tests/ops/test_sql_quoting.py checks the stored text on
# each): SQLite in the default tier, every catalog in the full tier.
@pytest.mark.parametrize("spot", backend_params(ORACLE_BACKENDS), indirect=True)
def test_views_read_as_duckdb_or_name_what_fails(spot: Spot, spark: Any) -> None:
    expected, columns = _build(spot)
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake:
        for name, rows in expected.items():
            got = run_query(lake, f"SELECT * FROM {name}")
            assert list(got.columns) == columns[name], name
            assert _sorted(got.rows) == _sorted(rows), name
        assert run_query(lake, "SELECT a FROM v_alias").rows == ((42,),)
        for name, _, words in FAILING:
            with pytest.raises(QueryError) as err:
                run_query(lake, f"SELECT * FROM {name}")
            text = str(err.value)
            assert words.lower() in text.lower() and name in text and "\n" not in text, text


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_untranslatable_view_is_one_line_exit_1(spot: Spot, spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    _build(spot)
    code, _, err = run_main(capsys, "query", spot.catalog, "SELECT * FROM f_replace")
    assert code == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) <= 2 and "REPLACE" in lines[0] and "Traceback" not in err, err


def test_views_and_views_on_views(tmp_path: Path, built_lakes: BuiltLakes, spark: Any) -> None:
    spot = built_lakes.copy("catalog_example", tmp_path / "lake")[0]
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        con.execute("CREATE VIEW lake.small AS SELECT id, full_name FROM t WHERE id < 100")
        con.execute("CREATE VIEW lake.small_count AS SELECT count(*) AS n, max(id) AS top FROM small")
        expected = con.execute("SELECT * FROM lake.small_count").fetchall()
        names = sorted(con.execute("SELECT full_name FROM lake.small WHERE id < 10").fetchall())
        con.execute("DETACH lake")
    finally:
        con.close()
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake:
        assert list(run_query(lake, "SELECT * FROM small_count").rows) == [tuple(r) for r in expected]
        got = run_query(lake, "SELECT full_name FROM main.small WHERE id < 10").rows
        assert sorted(got) == [tuple(r) for r in names]


# Statements naming the virtual rowid: DuckDB's `*` never expands to it; each equal to DuckDB's result.
ROWID_QUERIES = [
    "SELECT rowid, * FROM t",
    "SELECT t.*, rowid FROM t WHERE rowid > 0",
    "SELECT * FROM t a JOIN u b ON a.rowid = b.id",
    "SELECT * FROM v_rowid",
    "SELECT rowid, * FROM r",
    "SELECT sum(id) AS s, count(*) AS n FROM r",
    "SELECT rowid, * FROM own",
]


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_rowid_star_and_file_registered_twice(spot: Spot, spark: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ducklake_cli import api

    registered = spot.data_path.parent / "r.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32())}), registered)
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        con.execute("USE lake")
        con.execute("CREATE TABLE t (id INTEGER, s VARCHAR)")
        con.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        con.execute("CREATE TABLE u (id BIGINT)")
        con.execute("INSERT INTO u VALUES (0), (2)")
        con.execute("CREATE TABLE own (rowid INTEGER, x INTEGER)")  # a real rowid column shadows the virtual one
        con.execute("INSERT INTO own VALUES (7, 1)")
        con.execute("CREATE VIEW v_rowid AS SELECT rowid AS r, * FROM t")
        con.execute("CREATE TABLE r (id INTEGER)")
        for _ in range(2):  # DuckDB registers the same file twice: each copy gets its own row ids
            con.execute(f"CALL ducklake_add_data_files('lake', 'r', '{registered}')")
        expected = {}
        for q in ROWID_QUERIES:
            cur = con.execute(q)
            expected[q] = ([d[0] for d in cur.description], cur.fetchall())
        con.execute("USE memory")
        con.execute("DETACH lake")
    finally:
        con.close()
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake:
        for q, (columns, rows) in expected.items():
            got = run_query(lake, q)
            assert list(got.columns) == columns, q
            assert _sorted(got.rows) == _sorted(rows), q
    with api.connect(str(spot.catalog)) as lk:  # a delete writes each copy's own deletes
        lk.delete("r", "id = 1")
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        assert con.execute("SELECT rowid, id FROM lake.r ORDER BY rowid").fetchall() == [(1, 2), (3, 2)]
    finally:
        con.close()
