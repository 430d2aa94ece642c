"""The one SQL dialect (no Spark): SQL's quoting over Spark's grammar, statements split as DuckDB splits them, and the
Spark text it becomes."""

from __future__ import annotations

import re

import duckdb
import pytest
import sqlglot

from ducklake_cli.engine.planning.dialect import DIALECT, split_statements, sql_text
from ducklake_cli.engine.planning.sql_rewrite import parse_query
from ducklake_cli.errors import QueryError


@pytest.mark.parametrize(("sql", "spark"), [
    ('SELECT "k" FROM t', "SELECT `k` FROM t"),
    ("SELECT 'it''s'", "SELECT 'it\\'s'"),
    ("SELECT 'a\\b'", "SELECT 'a\\\\b'"),
    ("SELECT 'x\"y'", "SELECT 'x\"y'"),
    ('SELECT "a""b", "my col", "select", "a.b" FROM "my t"', "SELECT `a\"b`, `my col`, `select`, `a.b` FROM `my t`"),
    ("SELECT `a b` FROM t", "SELECT `a b` FROM t"),
    ("SELECT E'a\\nb', E'it\\'s', E'\\x41'", "SELECT 'a\\nb', 'it\\'s', 'A'"),
    ("SELECT $$it's$$, $q$a\\b$q$", "SELECT 'it\\'s', 'a\\\\b'"),
    ("SELECT 'a'\n'b'", "SELECT 'ab'"),
    ("SELECT r'a\\b'", "SELECT 'a\\\\b'"),
    ("SELECT 'ünï', \"ünï\" FROM t", "SELECT 'ünï', `ünï` FROM t"),
])
def test_quotes_read_as_sql_reads_them(sql: str, spark: str) -> None:
    tree = sqlglot.parse_one(sql, read=DIALECT)
    assert tree.sql(dialect="spark") == spark
    assert sqlglot.parse_one(sql_text(tree), read=DIALECT) == tree  # our own text reads back the same


@pytest.mark.parametrize(("sql", "needle"), [
    ("SELECT 'a' 'b'", "two string literals in a row"),
    ("SELECT 'it", "not closed"),
    ('SELECT "k', "not closed"),
])
def test_what_duckdb_refuses_is_refused(sql: str, needle: str) -> None:
    with pytest.raises(duckdb.ParserException):
        duckdb.connect().execute(sql)
    with pytest.raises(QueryError, match=needle):
        parse_query(sql)


SCRIPTS = [
    "DELETE FROM t WHERE a = ';'; -- trailing",
    "SELECT 1; /* c; */ SELECT 2 -- end\n; -- end",
    "-- only a comment",
    "/* only */",
    "SELECT 1;;;SELECT 2;",
    "SELECT $$;$$; SELECT E'\\';'; SELECT 'it'';s'",
    'SELECT "a;b" FROM (SELECT 1 AS "a;b"); SELECT 2',
    "SELECT 1 -- ;\n; SELECT '--;'",
    "\n\n  SELECT 1  \n\n",
]


@pytest.mark.parametrize("script", SCRIPTS)
def test_scripts_split_as_duckdb_splits_them(script: str) -> None:
    """As many statements as DuckDB's own splitter finds, each the same statement to DuckDB's parser."""
    con = duckdb.connect()

    def tree(sql: str) -> str:
        text = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0]
        return re.sub(r'"query_location":\d+', "", text)

    ours = split_statements(script)
    theirs = con.extract_statements(script)
    assert len(ours) == len(theirs)
    for mine, st in zip(ours, theirs, strict=True):
        (again,) = con.extract_statements(mine)
        assert again.type == st.type
        assert tree(mine) == tree(st.query)
