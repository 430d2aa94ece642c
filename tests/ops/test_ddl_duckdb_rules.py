"""DDL that DuckDB 1.5.5 treats specially, on twin lakes (tests/support/write_twins.py: DuckDB on lake A, `ducklake
query` on lake B, every `ducklake_*` table compared row for row after each statement): changes to what already
holds (no snapshot, or one, as DuckDB decides), what DuckDB refuses (one line from us, nothing changed on either
side), and what users write to DuckDB that we accept too (CREATE OR REPLACE TABLE …). Metadata only: no Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.spot import ORACLE_BACKENDS
from tests.support.tiers import backend_params
from tests.support.write_twins import WriteTwins, write_twins

TABLE = ("CREATE TABLE t (a INTEGER, b VARCHAR, d DATE, n INTEGER NOT NULL, c INTEGER DEFAULT 5, "
         "s STRUCT(x INTEGER, y INTEGER))")
ROW = "INSERT INTO t VALUES (1, 'x', DATE '2020-01-02', 3, 4, {'x': 1, 'y': 2})"
OTHERS = ("CREATE TABLE u (k INTEGER)", "CREATE VIEW v AS SELECT a FROM t")
INLINED = (TABLE, ROW, *OTHERS)  # the row is inlined (DuckDB's default limit, 10)
FILES = ("CALL lk.set_option('data_inlining_row_limit', 0)", TABLE, ROW, *OTHERS)
NO_INLINING = "CALL lk.set_option('data_inlining_row_limit', 0)"
# The classes whose rows differ by catalog (no-ops, reserved names, replaced tables) run on every backend in the
# default tier; the rest on SQLite, and on every backend in the full tier (tests/support/tiers.py).
BACKENDS = backend_params(ORACLE_BACKENDS, default=ORACLE_BACKENDS)
SQLITE_FIRST = backend_params(ORACLE_BACKENDS)


# ----- 6. changes to what already holds -------------------------------------------------------------------------

def _no_ops(tw: WriteTwins) -> None:
    """What DuckDB commits nothing for (no snapshot, no inlined-data table)."""
    keys = "a, year(d), bucket(4, b)"
    tw.step(f"ALTER TABLE t SET PARTITIONED BY ({keys})")
    tw.unchanged(f"ALTER TABLE t SET PARTITIONED BY ({keys})")
    tw.unchanged("ALTER TABLE t SET PARTITIONED BY (A, YEAR(D), bucket(4, B))")  # names bind in any case
    tw.unchanged(f"ALTER TABLE t SET PARTITIONED BY ({keys})", "ALTER TABLE t SET PARTITIONED BY (a, years(d), "
                 "bucket('4', b))")
    tw.compare()
    tw.step("ALTER TABLE t SET PARTITIONED BY (year(d), a, bucket(4, b))")  # the same keys in another order
    tw.step("ALTER TABLE t RESET PARTITIONED BY")
    tw.unchanged("ALTER TABLE t RESET PARTITIONED BY")  # reset again
    tw.unchanged("ALTER TABLE u RESET PARTITIONED BY")  # never partitioned
    tw.unchanged("CREATE TABLE IF NOT EXISTS t (z INTEGER)")
    tw.unchanged("CREATE TABLE IF NOT EXISTS v (z INTEGER)")  # a view has the name
    tw.unchanged("CREATE VIEW IF NOT EXISTS t AS SELECT 1")  # a table has the name
    tw.unchanged("CREATE SCHEMA IF NOT EXISTS main")
    tw.unchanged("ALTER TABLE t ADD COLUMN IF NOT EXISTS A INTEGER")
    tw.unchanged("ALTER TABLE t DROP COLUMN IF EXISTS zz")
    tw.unchanged("DROP TABLE IF EXISTS nope")
    tw.unchanged("DROP VIEW IF EXISTS nope")
    tw.unchanged("DROP SCHEMA IF EXISTS nope", compare=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_ops_on_inlined_rows_match_duckdb(backend: str, tmp_path: Path) -> None:
    """A table whose rows are inlined: a no-op makes no snapshot and no inlined-data table, as in DuckDB."""
    with write_twins(backend, tmp_path) as tw:
        tw.setup(INLINED)
        _no_ops(tw)


@pytest.mark.parametrize("backend", SQLITE_FIRST)
def test_no_ops_on_files_match_duckdb(backend: str, tmp_path: Path) -> None:
    """The same on a table whose rows are in files (no inlining)."""
    with write_twins(backend, tmp_path) as tw:
        tw.setup(FILES)
        _no_ops(tw)


@pytest.mark.parametrize("backend", SQLITE_FIRST)
def test_changes_to_what_holds_that_duckdb_commits_match(backend: str, tmp_path: Path) -> None:
    """The rest of the class: DuckDB writes a snapshot for these although nothing changes, and so do we."""
    with write_twins(backend, tmp_path) as tw:
        tw.setup(INLINED)
        tw.step("ALTER TABLE t SET SORTED BY (a)")
        tw.step("ALTER TABLE t SET SORTED BY (a)")
        tw.step("ALTER TABLE u RESET SORTED BY")  # never sorted
        tw.step("ALTER TABLE t RESET SORTED BY")
        tw.step("ALTER TABLE t RESET SORTED BY")
        tw.step("ALTER TABLE t ALTER COLUMN c SET DEFAULT 5")
        tw.step("ALTER TABLE t ALTER COLUMN b DROP DEFAULT")
        tw.step("COMMENT ON TABLE t IS 'x'")
        tw.step("COMMENT ON TABLE t IS 'x'")
        tw.step("COMMENT ON COLUMN t.a IS 'y'")
        tw.step("COMMENT ON COLUMN t.a IS 'y'")
        tw.step("COMMENT ON VIEW v IS NULL")
        tw.step("ALTER TABLE t ALTER COLUMN a TYPE INTEGER", "ALTER TABLE t ALTER COLUMN a TYPE INT")
        tw.step("ALTER TABLE t ALTER COLUMN s TYPE STRUCT(x INTEGER, y INTEGER)")
        tw.step("ALTER TABLE t RENAME TO t")
        tw.step("ALTER VIEW v RENAME TO v")


def test_rename_column_to_itself_matches_duckdb(tmp_path: Path) -> None:
    """A new column version, schema version and inlined-data table; on a sorted table no new sort spec."""
    with write_twins("sqlite", tmp_path) as tw:
        tw.setup(INLINED)
        tw.step("ALTER TABLE t RENAME COLUMN a TO a")
        tw.step("ALTER TABLE t SET SORTED BY (a)")
        tw.step("ALTER TABLE t RENAME COLUMN a TO a")
        tw.step("ALTER TABLE t RENAME COLUMN s TO s")


# ----- 8. what DuckDB refuses -----------------------------------------------------------------------------------

RESERVED = ("row_id", "BEGIN_SNAPSHOT", "end_snapshot", "_ducklake_internal_snapshot_id", "_ducklake_internal_row_id")


@pytest.mark.parametrize("backend", BACKENDS)
def test_reserved_column_names_match_duckdb(backend: str, tmp_path: Path) -> None:
    """Top-level columns named like an inlined-data table's own are refused while the table would inline (the
    option where it lives), in CREATE TABLE, ADD COLUMN and RENAME COLUMN; struct fields never; with inlining off
    (lake, schema or table) DuckDB takes them and makes no inlined-data table."""
    with write_twins(backend, tmp_path) as tw:
        tw.setup((TABLE, "CREATE SCHEMA q", "CALL lk.set_option('data_inlining_row_limit', 0, schema => 'q')",
                  "CREATE TABLE w (a INTEGER)", "CALL lk.set_option('data_inlining_row_limit', 0, table_name => 'w')"))
        needle = "reserved by DuckLake for inlined data"
        tw.refused_all([
            *((f"CREATE TABLE r (k INTEGER, {name} INTEGER)", None, needle) for name in RESERVED),
            ("ALTER TABLE t ADD COLUMN row_id INTEGER", None, needle),
            ("ALTER TABLE t ADD COLUMN IF NOT EXISTS Row_Id INTEGER", None, needle),
            ("ALTER TABLE t ADD COLUMN row_id INTEGER", "ALTER TABLE t ADD COLUMNS (z INT, row_id INT)", needle),
            ("ALTER TABLE t RENAME COLUMN a TO end_snapshot", None, needle),
            ("CREATE OR REPLACE TABLE t (row_id INTEGER)", None, needle),
        ])
        tw.step("ALTER TABLE t ADD COLUMN s.row_id INTEGER")
        tw.step("ALTER TABLE t RENAME COLUMN s.x TO begin_snapshot")
        tw.step("CREATE TABLE r (s STRUCT(row_id INTEGER))")
        tw.step("CREATE TABLE q.r (row_id INTEGER, a INTEGER)")  # the schema does not inline
        tw.step("ALTER TABLE q.r RENAME COLUMN a TO _ducklake_internal_row_id")
        tw.step("ALTER TABLE w ADD COLUMN row_id INTEGER")  # the table does not inline
        tw.setup([NO_INLINING])
        tw.step("CREATE TABLE z (row_id INTEGER, begin_snapshot VARCHAR)")


def _text_refusals(tw: WriteTwins) -> None:
    tw.refused_all([
        ("ALTER TABLE t SET PARTITIONED BY (bucket(2147483648, a))", None, "cannot exceed 2147483647"),
        ("ALTER TABLE t SET PARTITIONED BY (bucket(-1, a))", None, "must be positive"),
        ("CREATE TABLE r (s VARCHAR COLLATE NOCASE)", None, "collations are not supported"),
        ("ALTER TABLE t ADD COLUMN z VARCHAR COLLATE NOACCENT", None, "collations are not supported"),
        ("ALTER TABLE t ALTER COLUMN b TYPE VARCHAR COLLATE NOCASE", None, "collations are not supported"),
        ("DROP TABLE IF EXISTS v", None, "main.v is a view"),
        ("DROP TABLE v", None, "main.v is a view"),
        ("DROP VIEW IF EXISTS t", None, "main.t is a table"),
        ("CREATE OR REPLACE TABLE v (i INTEGER)", None, "is a view"),
        ("CREATE OR REPLACE TABLE IF NOT EXISTS t (i INTEGER)", None, "cannot be used together"),
        ("CREATE TABLE r (s VARCHAR USING COMPRESSION ZSTD)", None, "compression"),
        ("CREATE TABLE r (a INTEGER AS (1), b INTEGER)", None, "generated columns"),
        ("CREATE TABLE r (a INTEGER GENERATED ALWAYS AS (1) VIRTUAL, b INTEGER)", None, "generated columns"),
        ("ALTER TABLE t ADD COLUMN z INTEGER AS (1)", None, "generated column"),
        ("CREATE TABLE r (i INTEGER PRIMARY KEY)", None, "PRIMARY KEY/UNIQUE"),
        ("CREATE TABLE r (i INTEGER UNIQUE)", None, "PRIMARY KEY/UNIQUE"),
        ("CREATE TABLE r (i INTEGER, PRIMARY KEY (i))", None, "PRIMARY KEY/UNIQUE"),
        ("CREATE TABLE r (i INTEGER, UNIQUE (i))", None, "PRIMARY KEY/UNIQUE"),
        ("CREATE TABLE r (i INTEGER CHECK (i > 0))", None, "CHECK constraints"),
        ("CREATE TABLE r (i INTEGER, CONSTRAINT c CHECK (i > 0))", None, "constraints"),
        ("CREATE TABLE r (i INTEGER REFERENCES u (k))", None, "FOREIGN KEY"),
        ("CREATE TABLE r (i INTEGER, FOREIGN KEY (i) REFERENCES u (k))", None, "FOREIGN KEY"),
        ("ALTER TABLE t ADD COLUMN z INTEGER UNIQUE", None, "cannot add constraints"),
        ("ALTER TABLE t ADD COLUMN z INTEGER CHECK (z > 0)", None, "cannot add constraints"),
        ("CREATE TABLE r (i INTEGER[3])", None, "fixed-size arrays"),
        ("CREATE TABLE r (s STRUCT(i INTEGER[2]))", None, "fixed-size arrays"),
        ("ALTER TABLE t ADD COLUMN z INTEGER[3]", None, "fixed-size arrays"),
        ("CREATE TABLE r (i LIST(INTEGER))", None, "INT[] or ARRAY<INT>"),
        ("CREATE TABLE r (i INTEGER DEFAULT (SELECT 1) + 1)", None, "subquery"),
        ("CREATE TABLE r (i INTEGER, j INTEGER DEFAULT i)", None, "column names"),
        ("CREATE TABLE r (i INTEGER DEFAULT row_number() OVER ())", None, "window function"),
        ("CREATE TABLE r (i INTEGER DEFAULT sum(1))", None, "aggregate"),
        ("CREATE TABLE r (i INTEGER DEFAULT no_such_function())", None, "no_such_function"),
        ("CREATE TABLE r (i INTEGER DEFAULT nextval('seq'))", None, "seq"),
        ("CREATE TABLE r (i INTEGER DEFAULT 1 + 'x')", None, "DEFAULT"),
        ("ALTER TABLE t ALTER COLUMN a SET DEFAULT (SELECT 1)", None, "subquery"),
        ("ALTER TABLE t ALTER COLUMN a SET DEFAULT count(*) OVER ()", None, "window function"),
        ("ALTER TABLE t ALTER COLUMN n SET NOT NULL", None, "already NOT NULL"),
        ("ALTER TABLE t ALTER COLUMN a DROP NOT NULL", None, "no NOT NULL constraint"),
        ("ALTER TABLE t ALTER COLUMN s.x SET NOT NULL", None, "top-level column"),
        ("ALTER TABLE t ALTER COLUMN s.x DROP NOT NULL", None, "top-level column"),
        ("ALTER TABLE t ALTER COLUMN s.x SET DEFAULT 1", None, "top-level column"),
        ("ALTER TABLE t ALTER COLUMN s.x DROP DEFAULT", None, "top-level column"),
        ("ALTER TABLE t RENAME COLUMN s.x TO x", None, "already exists"),
        ("ALTER TABLE t RENAME COLUMN s.x TO X", None, "already exists"),
        ("ALTER TABLE t ALTER COLUMN a TYPE BIGINT USING a + 1", None, "with an expression"),
        ("CREATE VIEW w (p, q) AS SELECT 1 AS x", None, "2 column aliases"),
        ("CREATE VIEW w (p, q) AS SELECT 1 AS x UNION ALL SELECT 2", None, "2 column aliases"),
    ])


@pytest.mark.parametrize("backend", SQLITE_FIRST)
def test_ddl_duckdb_refuses_is_refused(backend: str, tmp_path: Path) -> None:
    """Each is refused in one line and changes nothing, where DuckDB refuses it too."""
    with write_twins(backend, tmp_path) as tw:
        tw.setup(INLINED)
        _text_refusals(tw)


@pytest.mark.parametrize("backend", SQLITE_FIRST)
def test_set_default_expression_after_a_change_matches_duckdb(backend: str, tmp_path: Path) -> None:
    """DuckDB takes an expression default only for a column whose row began with its table's row (its
    `IsColumnCreatedWithTable`): not after the column changed, not for an added column, not after a rename of the
    table; a constant always."""
    with write_twins(backend, tmp_path) as tw:
        tw.setup(INLINED)
        tw.step("ALTER TABLE t ALTER COLUMN b SET DEFAULT upper('x')")
        tw.refused("ALTER TABLE t ALTER COLUMN b SET DEFAULT lower('y')", needle="only a constant default")
        tw.step("ALTER TABLE t ALTER COLUMN b SET DEFAULT 'z'")
        tw.step("ALTER TABLE t ADD COLUMN e INTEGER")
        tw.refused("ALTER TABLE t ALTER COLUMN e SET DEFAULT 1 + 1", needle="only a constant default")
        tw.step("ALTER TABLE t ALTER COLUMN a SET DEFAULT 1 + 1")
        tw.step("ALTER TABLE u RENAME TO u2")
        tw.refused("ALTER TABLE u2 ALTER COLUMN k SET DEFAULT 2 + 2", needle="only a constant default")
        tw.step("ALTER TABLE u2 ALTER COLUMN k SET DEFAULT 4")


# ----- 9. what users write to DuckDB ----------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_create_or_replace_table_matches_duckdb(backend: str, tmp_path: Path) -> None:
    """The old table (inlined rows, comment, partitioning, files) ends and a new one begins in one snapshot; a
    missing table is just created."""
    with write_twins(backend, tmp_path) as tw:
        # no view reads t: DuckDB 1.5.5 crashes replacing a table a view reads once an option was set
        tw.setup((TABLE, ROW, "COMMENT ON TABLE t IS 'old'", "ALTER TABLE t SET PARTITIONED BY (a)",
                  NO_INLINING, "CREATE TABLE f (a INTEGER)", "INSERT INTO f VALUES (1)",
                  "CALL lk.set_option('data_inlining_row_limit', 10)"))
        tw.step("CREATE OR REPLACE TABLE t (c INTEGER, e VARCHAR DEFAULT 'e')",
                "CREATE OR REPLACE TABLE t (c INT, e STRING DEFAULT 'e')")
        tw.step("CREATE OR REPLACE TABLE T (z INTEGER)")
        tw.step("CREATE OR REPLACE TABLE n (c INTEGER)")
        tw.step("CREATE OR REPLACE TABLE f (b VARCHAR)", "CREATE OR REPLACE TABLE f (b STRING)")
        tw.duck(tw.a, ["INSERT INTO f VALUES ('x')"])
        tw.duck(tw.b, ["INSERT INTO f VALUES ('x')"])
        tw.compare()


@pytest.mark.parametrize("backend", SQLITE_FIRST)
def test_column_clauses_duckdb_takes_match(backend: str, tmp_path: Path) -> None:
    """Column clauses DuckDB takes that we took differently or refused: a named NOT NULL, a NULL after NOT NULL
    (ignored), two defaults, DATETIME, a bucket count DuckDB casts, a struct field retyped through its path."""
    with write_twins(backend, tmp_path) as tw:
        tw.setup(())
        tw.step("CREATE TABLE r (a INTEGER CONSTRAINT nn NOT NULL, b INTEGER NOT NULL NULL, c INTEGER NULL NOT NULL, "
                "d INTEGER DEFAULT 1 DEFAULT 2, e DATETIME, s STRUCT(x INTEGER, y INTEGER))")
        tw.step("ALTER TABLE r SET PARTITIONED BY (bucket(4, a))", "ALTER TABLE r SET PARTITIONED BY (bucket(4.0, a))")
        tw.step("ALTER TABLE r ALTER COLUMN s TYPE STRUCT(x BIGINT, y INTEGER)", "ALTER TABLE r ALTER COLUMN s.x TYPE "
                "BIGINT")


@pytest.mark.spark
def test_create_or_replace_table_as_matches_duckdb(tmp_path: Path) -> None:
    """The old table ends and the new one begins with its rows in one snapshot; reserved names are refused."""
    with write_twins("sqlite", tmp_path) as tw:
        tw.setup((TABLE, ROW, "COMMENT ON TABLE t IS 'c'", NO_INLINING, "CREATE TABLE f (a INTEGER)",
                  "INSERT INTO f VALUES (1)", "CALL lk.set_option('data_inlining_row_limit', 10)"))
        tw.step("CREATE OR REPLACE TABLE t AS SELECT 2 AS z")
        tw.step("CREATE OR REPLACE TABLE n AS SELECT 3 AS c")
        tw.step("CREATE OR REPLACE TABLE f AS SELECT 'q' AS v")
        tw.refused("CREATE TABLE r AS SELECT 1 AS row_id", needle="reserved")
        tw.refused("CREATE OR REPLACE TABLE t AS SELECT 1 AS begin_snapshot", needle="reserved")
