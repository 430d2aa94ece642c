"""DDL parsing: Spark spellings (and DuckDB's where Spark has none) into typed statements, with types, defaults,
sort expressions and view bodies rendered as DuckDB records them."""

from __future__ import annotations

import pytest

from ducklake_cli.catalog.partitions import PartitionRequest
from ducklake_cli.engine.planning import ddl_plan as p
from ducklake_cli.engine.planning import ddl_render as r
from ducklake_cli.errors import QueryError


@pytest.mark.parametrize(("text", "want"), [
    ("INT", "int32"), ("BIGINT", "int64"), ("LONG", "int64"), ("SMALLINT", "int16"), ("BYTE", "int8"),
    ("STRING", "varchar"), ("VARCHAR", "varchar"), ("BINARY", "blob"), ("BOOLEAN", "boolean"),
    ("FLOAT", "float32"), ("DOUBLE", "float64"), ("DATE", "date"), ("DECIMAL(10,2)", "decimal(10,2)"),
    ("TIMESTAMP", "timestamptz"), ("TIMESTAMP_NTZ", "timestamp"), ("TIMESTAMP_LTZ", "timestamptz"),
    ("TIMESTAMPTZ", "timestamptz"), ("UINTEGER", "uint32"), ("HUGEINT", "int128"), ("UUID", "uuid"),
    ("ARRAY<STRING>", "list(varchar)"), ("INT[]", "list(int32)"), ("MAP<STRING, BIGINT>", "map(varchar, int64)"),
    ("STRUCT<a: INT, b: ARRAY<DOUBLE>>", "struct(a int32, b list(float64))"),
    ("STRUCT(a INT, b VARCHAR)", "struct(a int32, b varchar)"), ("DATETIME", "timestamp"),
])
def test_types(text: str, want: str) -> None:
    """Spark TIMESTAMP is an instant (timestamptz), as engine/spark_types reads timestamptz back."""
    assert r.parse_type(text).text() == want


@pytest.mark.parametrize("text", ["DECIMAL", "NOPE", "STRUCT<>", "DECIMAL(50,2)", "INT[3]", "STRUCT(a INT[2])",
                                  "LIST(INT)"])
def test_bad_types(text: str) -> None:
    """Bare DECIMAL is refused: Spark and DuckDB give it different precision; DuckDB's fixed-size arrays have no
    DuckLake type, and its parser refuses LIST(…)."""
    with pytest.raises(QueryError):
        r.parse_type(text)


@pytest.mark.parametrize(("sql", "typ", "want"), [
    ("'x'", "varchar", ("x", "x", "literal")),
    ("'it''s'", "varchar", ("it's", "it's", "literal")),
    ("1.5", "decimal(10,2)", ("1.5", "1.50", "literal")),
    ("-1", "float64", ("-1", "-1.0", "literal")),
    ("NULL", "int32", ("NULL", None, "literal")),
    ("true", "boolean", ("CAST('t' AS BOOLEAN)", None, "expression")),
    ("1 + 2", "int32", ("(1 + 2)", None, "expression")),
])
def test_defaults(sql: str, typ: str, want: tuple[str, str | None, str]) -> None:
    """Constants are literals with the value cast for old rows; anything else an expression (DuckDB's rule)."""
    got = r.default_spec(sql, r.TypeSpec(typ))
    assert (got.value, got.initial, got.kind) == want


@pytest.mark.parametrize(("sql", "binds", "needle"), [
    ("(SELECT 1) + 1", False, "subquery"), ("row_number() OVER ()", False, "window"), ("?", False, "parameter"),
    ("a", True, "column names"), ("sum(1)", True, "aggregate"), ("nope()", True, "nope"),
])
def test_refused_defaults(sql: str, binds: bool, needle: str) -> None:
    """DuckDB's refusals: never a subquery, window or parameter; where it binds the default (CREATE TABLE) no
    column names, aggregates or names it cannot find."""
    with pytest.raises(QueryError, match=needle):
        r.default_spec(sql, r.TypeSpec("int32"), binds=binds)


def test_defaults_duckdb_binds() -> None:
    """What binds stays an expression; what only SET DEFAULT takes unbound is taken there."""
    assert r.default_spec("now()", r.TypeSpec("timestamptz"), binds=True).kind == "expression"
    assert r.default_spec("list_transform([1], x -> x + 1)", r.TypeSpec("int32"), binds=True).kind == "expression"
    assert r.default_spec("a + 1", r.TypeSpec("int32")).value == "(a + 1)"


def test_statements() -> None:
    """Each form parses into its typed statement."""
    st = p.parse_ddl("CREATE TABLE IF NOT EXISTS s.t (a INT NOT NULL, b STRING DEFAULT 'x' COMMENT 'bee', "
                     "ts TIMESTAMP) PARTITIONED BY (a, years(ts), bucket(4, b)) COMMENT 'tee'")
    assert isinstance(st, p.CreateTable) and st.if_not_exists and st.comment == "tee"
    assert str(st.table) == "s.t" and st.columns[0].not_null and st.columns[1].comment == "bee"
    assert st.partition == (PartitionRequest("a", "identity"), PartitionRequest("ts", "year"),
                            PartitionRequest("b", "bucket(4)", 4))
    assert p.parse_ddl("DROP SCHEMA IF EXISTS s CASCADE") == p.DropSchema("s", True, True)
    assert p.parse_ddl("ALTER TABLE t RENAME COLUMN s.x TO y") == p.RenameColumn(p.Name(None, "t"), ("s", "x"), "y")
    assert p.parse_ddl("ALTER TABLE t ALTER COLUMN s.x TYPE BIGINT") == \
        p.AlterColumnType(p.Name(None, "t"), ("s", "x"), r.TypeSpec("int64"))
    assert p.parse_ddl("ALTER TABLE t RESET PARTITIONED BY") == p.SetPartition(p.Name(None, "t"), ())
    assert p.parse_ddl("ALTER TABLE t RESET SORTED BY") == p.SetSort(p.Name(None, "t"), ())
    sort = p.parse_ddl("ALTER TABLE t SET SORTED BY (a + 1 DESC NULLS FIRST, `B b`)")
    assert isinstance(sort, p.SetSort)
    assert [(k.expression, k.direction, k.null_order) for k in sort.keys] == [
        ("(a + 1)", "DESC", "NULLS_FIRST"), ('"B b"', "ASC", "NULLS_LAST")]
    assert p.parse_ddl("COMMENT ON COLUMN s.t.a IS NULL") == p.Comment("column", p.Name("s", "t"), ("a",), None)
    assert p.parse_ddl("ALTER TABLE t ALTER COLUMN a COMMENT 'x'") == \
        p.Comment("column", p.Name(None, "t"), ("a",), "x")
    view = p.parse_ddl("CREATE OR REPLACE VIEW v (x, y) AS SELECT a, b FROM t WHERE a > 1")
    assert view == p.CreateView(p.Name(None, "v"), "SELECT a, b FROM t WHERE (a > 1)", ("x", "y"), True, False,
                                ((None, "t"),))
    assert p.parse_ddl("ALTER VIEW v RENAME TO w") == p.RenameView(p.Name(None, "v"), "w")
    replace = p.parse_ddl("CREATE OR REPLACE TABLE t (a INT CONSTRAINT nn NOT NULL, b INT NOT NULL NULL, c INT NULL)")
    assert isinstance(replace, p.CreateTable) and replace.or_replace
    assert [c.not_null for c in replace.columns] == [True, True, False]  # DuckDB ignores a NULL constraint
    bucket = p.parse_ddl("ALTER TABLE t SET PARTITIONED BY (bucket(4.0, a), bucket('8', b))")
    assert isinstance(bucket, p.SetPartition)
    assert [k.transform for k in bucket.keys] == ["bucket(4)", "bucket(8)"]


def test_is_ddl() -> None:
    """CREATE TABLE … AS stays a data change; everything else CREATE/DROP/ALTER/COMMENT is DDL."""
    assert p.is_ddl("create table t (a int)")
    assert p.is_ddl("ALTER TABLE t SET SORTED BY (a)")
    assert p.is_ddl("COMMENT ON TABLE t IS 'x'")
    assert not p.is_ddl("CREATE TABLE t AS SELECT 1")
    assert not p.is_ddl("CREATE TABLE t PARTITIONED BY (a) AS SELECT 1 AS a")
    assert not p.is_ddl("SELECT 1")
    assert not p.is_ddl("DELETE FROM t")


@pytest.mark.parametrize(("sql", "needle"), [
    ("ALTER TABLE t SET PARTITIONED BY (s.p)", "nested"),
    ("ALTER TABLE t SET SORTED BY (s.p)", "unqualified"),
    ("CREATE TABLE t (a INT", "missing"),
    ("DROP FUNCTION f", "only DROP SCHEMA"),
    ("CREATE OR REPLACE TABLE IF NOT EXISTS t (a INT)", "cannot be used together"),
    ("ALTER TABLE t SET PARTITIONED BY (bucket(2147483648, a))", "cannot exceed 2147483647"),
    ("ALTER TABLE t SET PARTITIONED BY (bucket(4.5, a))", "whole number"),
    ("ALTER TABLE t SET PARTITIONED BY (bucket(0, a))", "positive"),
    ("CREATE TABLE t (s VARCHAR COLLATE NOCASE)", "collations"),
    ("CREATE TABLE t (s VARCHAR USING COMPRESSION zstd)", "compression"),
    ("CREATE TABLE t (a INT GENERATED ALWAYS AS (1))", "generated"),
    ("CREATE TABLE t (a INT AS (1))", "generated"),
    ("CREATE TABLE t (a INT UNIQUE)", "PRIMARY KEY/UNIQUE"),
    ("CREATE TABLE t (a INT, PRIMARY KEY (a))", "PRIMARY KEY/UNIQUE"),
    ("CREATE TABLE t (a INT CHECK (a > 0))", "CHECK"),
    ("CREATE TABLE t (a INT REFERENCES u (b))", "FOREIGN KEY"),
    ("CREATE TABLE t (a INT, FOREIGN KEY (a) REFERENCES u (b))", "FOREIGN KEY"),
    ("CREATE TABLE t (a INT CONSTRAINT c)", "needs a constraint"),
    ("ALTER TABLE t ADD COLUMN a INT UNIQUE", "cannot add constraints"),
    ("ALTER TABLE t ADD COLUMN a INT AS (1)", "generated column cannot be added"),
    ("ALTER TABLE t ALTER COLUMN a TYPE BIGINT USING a + 1", "with an expression"),
    ("ALTER TABLE t ALTER COLUMN a SET DATA TYPE VARCHAR COLLATE NOCASE", "collations"),
    ("ALTER TABLE t ALTER COLUMN s.x SET NOT NULL", "top-level column"),
    ("ALTER TABLE t ALTER COLUMN s.x DROP DEFAULT", "top-level column"),
    ("CREATE TABLE t (a INT DEFAULT (SELECT 1))", "subquery"),
    ("CREATE VIEW v (a, b, c) AS SELECT 1, 2", "3 column aliases"),
])
def test_errors(sql: str, needle: str) -> None:
    """Every refusal is one line naming the problem."""
    with pytest.raises(QueryError, match=needle):
        p.parse_ddl(sql)
