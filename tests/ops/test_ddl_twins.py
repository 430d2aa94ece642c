"""Twin lakes for DDL (issue #14 acceptance): each sequence runs through DuckDB 1.5.5 on one lake and through our
`run_ddl` on an identical one; the catalogs then match row for row (ids, snapshot ranges, change strings, schema
versions), DuckDB reads every snapshot of ours as it reads its own, and DuckDB keeps inserting and altering on
both. Metadata only: no Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.ddl_twins import DdlSequence, ddl, run_ddl_sequence
from tests.support.spot import ORACLE_BACKENDS
from tests.support.tiers import tiered

ROWS = ("CREATE TABLE t (a INTEGER, b VARCHAR, ts TIMESTAMP, s STRUCT(x INTEGER, y VARCHAR), f FLOAT)",
        "INSERT INTO t VALUES (1, 'one', TIMESTAMP '2020-01-01 10:00:00', {'x': 1, 'y': 'p'}, 1.5), "
        "(2, NULL, TIMESTAMP '2021-06-01 00:00:00', {'x': 2, 'y': NULL}, 2.5)")
FILES = ("CALL lk.set_option('data_inlining_row_limit', 0)", *ROWS)
MORE = "INSERT INTO t (a, b) VALUES (3, 'three')"

SEQUENCES = [
    DdlSequence("schemas", (), (
        ddl("CREATE SCHEMA s1"),
        ddl("CREATE SCHEMA IF NOT EXISTS s1"),
        ddl("CREATE TABLE s1.t (a INTEGER)", "CREATE TABLE s1.t (a INT)"),
        ddl("DROP SCHEMA IF EXISTS nope"),
        ddl("CREATE SCHEMA s2"),
        ddl("DROP SCHEMA s2"),
        ddl("DROP SCHEMA s1 CASCADE"),
        ddl("CREATE SCHEMA s1"),
    ), ("CREATE TABLE s1.u (x INTEGER)", "INSERT INTO s1.u VALUES (1)")),
    DdlSequence("create_types", (), (
        ddl("CREATE TABLE t (a INTEGER NOT NULL, b VARCHAR DEFAULT 'it''s', c STRUCT(x INTEGER, y VARCHAR[]), "
            "m MAP(VARCHAR, INTEGER), ts TIMESTAMPTZ, tn TIMESTAMP, d DECIMAL(10,2) DEFAULT 1.5, "
            "e BOOLEAN DEFAULT true, g INTEGER DEFAULT 1 + 2, u UINTEGER, h HUGEINT, bl BLOB, dt DATE, "
            "ti TIME, uu UUID, db DOUBLE DEFAULT -1, n INTEGER DEFAULT NULL)",
            "CREATE TABLE t (a INT NOT NULL, b STRING DEFAULT 'it''s', c STRUCT<x: INT, y: ARRAY<STRING>>, "
            "m MAP<STRING, INT>, ts TIMESTAMP, tn TIMESTAMP_NTZ, d DECIMAL(10,2) DEFAULT 1.5, "
            "e BOOLEAN DEFAULT true, g INT DEFAULT 1 + 2, u UINTEGER, h HUGEINT, bl BINARY, dt DATE, "
            "ti TIME, uu UUID, db DOUBLE DEFAULT -1, n INT DEFAULT NULL)"),
        ddl("CREATE TABLE IF NOT EXISTS t (a INTEGER)"),
    ), ("INSERT INTO t (a) VALUES (7)",)),
    DdlSequence("drop_table", FILES, (
        ddl("ALTER TABLE t SET SORTED BY (a)"),
        ddl("COMMENT ON TABLE t IS 'gone soon'"),
        ddl("DROP TABLE t"),
        ddl("DROP TABLE IF EXISTS t"),
    ), ("CREATE TABLE t (z INTEGER)", "INSERT INTO t VALUES (1)")),
    DdlSequence("drop_inlined_table", ROWS, (
        ddl("DROP TABLE t"),
    )),
    DdlSequence("rename_table", ROWS, (
        ddl("ALTER TABLE t RENAME TO u"),
        ddl("ALTER TABLE u RENAME TO u"),
        ddl("ALTER TABLE u RENAME TO t"),
    ), (MORE, "ALTER TABLE t ADD COLUMN z INTEGER")),
    DdlSequence("partition_changes", ROWS, (
        ddl("ALTER TABLE t SET PARTITIONED BY (a)"),
        ddl("ALTER TABLE t SET PARTITIONED BY (year(ts), month(ts), day(ts), hour(ts))"),
        ddl("ALTER TABLE t SET PARTITIONED BY (bucket(4, b), a)"),
        ddl("ALTER TABLE t RESET PARTITIONED BY"),
        ddl("ALTER TABLE t RESET PARTITIONED BY"),
        ddl("ALTER TABLE t SET PARTITIONED BY (year(ts))", "ALTER TABLE t SET PARTITIONED BY (years(ts))"),
    ), ("INSERT INTO t (a, ts) VALUES (5, TIMESTAMP '2022-02-02 02:00:00')",
        "ALTER TABLE t SET PARTITIONED BY (a)", MORE)),
    DdlSequence("partition_files", FILES, (
        ddl("ALTER TABLE t SET PARTITIONED BY (a, bucket(2, b))"),
    ), ("INSERT INTO t (a, b) VALUES (8, 'eight'), (9, 'nine')", "DELETE FROM t WHERE a = 1")),
    DdlSequence("create_partitioned", (), (
        ddl(("CREATE TABLE p (a INTEGER, ts TIMESTAMP)", "ALTER TABLE p SET PARTITIONED BY (year(ts), a)"),
            "CREATE TABLE p (a INT, ts TIMESTAMP_NTZ) PARTITIONED BY (year(ts), a)"),
    ), ("INSERT INTO p VALUES (1, TIMESTAMP '2020-01-01')",)),
    DdlSequence("sort_keys", ROWS, (
        ddl("ALTER TABLE t SET SORTED BY (a DESC, b ASC NULLS FIRST)"),
        ddl("ALTER TABLE t SET SORTED BY (a + 1 DESC NULLS FIRST, ts)"),
        ddl("ALTER TABLE t RESET SORTED BY"),
        ddl("ALTER TABLE t RESET SORTED BY"),
        ddl("ALTER TABLE t SET SORTED BY (b)"),
    ), (MORE, "ALTER TABLE t RESET SORTED BY")),
    DdlSequence("rename_sort_columns", ROWS, (
        ddl("ALTER TABLE t SET PARTITIONED BY (a)"),
        ddl("ALTER TABLE t SET SORTED BY (a DESC, f + 1)"),
        ddl("ALTER TABLE t RENAME COLUMN a TO c"),
        ddl("ALTER TABLE t RENAME COLUMN f TO \"G g\"", "ALTER TABLE t RENAME COLUMN f TO `G g`"),
        ddl("ALTER TABLE t RENAME COLUMN b TO d"),
        ddl("ALTER TABLE t RENAME COLUMN s.x TO z"),
        ddl("ALTER TABLE t RENAME COLUMN C TO a"),
    ), (MORE.replace("b)", "d)"), "ALTER TABLE t SET SORTED BY (a)")),
    DdlSequence("comments", ROWS, (
        ddl("COMMENT ON TABLE t IS 'first'"),
        ddl("COMMENT ON TABLE t IS 'second'"),
        ddl("COMMENT ON COLUMN t.a IS 'the a'"),
        ddl("COMMENT ON COLUMN main.t.b IS 'the b'"),
        ddl("COMMENT ON TABLE t IS NULL"),
        ddl("COMMENT ON COLUMN t.a IS 'again'"),
    ), (MORE, "COMMENT ON TABLE t IS 'by duckdb'")),
    DdlSequence("views", ROWS, (
        ddl("CREATE VIEW v AS SELECT a, b FROM t WHERE a > 1"),
        ddl("CREATE VIEW v2(x, y) AS SELECT a, b FROM t", "CREATE VIEW v2 (x, y) AS SELECT a, b FROM t"),
        ddl("CREATE OR REPLACE VIEW v AS SELECT a, count(*) AS n FROM t GROUP BY a"),
        ddl("ALTER VIEW v RENAME TO v3"),
        ddl("COMMENT ON VIEW v3 IS 'counts'"),
        ddl("DROP VIEW v2"),
        ddl("DROP VIEW IF EXISTS v2"),
        ddl("CREATE VIEW IF NOT EXISTS v3 AS SELECT 1"),
    ), (MORE, "CREATE VIEW w AS SELECT * FROM v3")),
    DdlSequence("views_in_schema", ROWS, (
        ddl("CREATE SCHEMA s"),
        ddl("CREATE VIEW s.v AS SELECT upper(b) AS ub, s.x FROM main.t"),
        ddl("CREATE VIEW s.w AS SELECT * FROM s.v WHERE ub LIKE 'O%'"),
        ddl("DROP SCHEMA s CASCADE"),
    )),
    DdlSequence("add_columns", ROWS, (
        ddl("ALTER TABLE t ADD COLUMN c INTEGER DEFAULT 7", "ALTER TABLE t ADD COLUMN c INT DEFAULT 7"),
        ddl("ALTER TABLE t ADD COLUMN d VARCHAR", "ALTER TABLE t ADD COLUMN d STRING"),
        ddl("ALTER TABLE t ADD COLUMN s.z INTEGER", "ALTER TABLE t ADD COLUMN s.z INT"),
        ddl("ALTER TABLE t ADD COLUMN l INTEGER[]", "ALTER TABLE t ADD COLUMN l ARRAY<INT>"),
        ddl(("ALTER TABLE t ADD COLUMN m INTEGER DEFAULT 1", "ALTER TABLE t ADD COLUMN n VARCHAR"),
            "ALTER TABLE t ADD COLUMNS (m INT DEFAULT 1, n STRING)"),
    ), (MORE, "ALTER TABLE t ADD COLUMN e INTEGER DEFAULT 1")),
    DdlSequence("nested_renames", ROWS, (
        ddl("ALTER TABLE t RENAME COLUMN s.x TO xx"),
        ddl("ALTER TABLE t RENAME COLUMN s TO st"),
        ddl("ALTER TABLE t RENAME COLUMN a TO aa"),
        ddl("ALTER TABLE t RENAME COLUMN st.y TO yy"),
    ), ("INSERT INTO t (aa) VALUES (4)", "ALTER TABLE t RENAME COLUMN aa TO a")),
    DdlSequence("drop_columns", FILES, (
        ddl("ALTER TABLE t DROP COLUMN s.y"),
        ddl("ALTER TABLE t DROP COLUMN f"),
        ddl("ALTER TABLE t DROP COLUMN IF EXISTS nope"),
    ), (MORE, "ALTER TABLE t DROP COLUMN b")),
    DdlSequence("type_promotion", ROWS, (
        ddl("ALTER TABLE t ALTER COLUMN a TYPE BIGINT"),
        ddl("ALTER TABLE t ALTER COLUMN f TYPE DOUBLE"),
        ddl("ALTER TABLE t ALTER COLUMN s TYPE STRUCT(x BIGINT, y VARCHAR)",
            "ALTER TABLE t ALTER COLUMN s TYPE STRUCT<x: BIGINT, y: STRING>"),
        ddl("ALTER TABLE t ALTER COLUMN ts TYPE TIMESTAMPTZ", "ALTER TABLE t ALTER COLUMN ts TYPE TIMESTAMP"),
    ), (MORE,)),
    DdlSequence("not_null_defaults", ROWS, (
        ddl("ALTER TABLE t ALTER COLUMN a SET NOT NULL"),
        ddl("ALTER TABLE t ALTER COLUMN a SET DEFAULT 9"),
        ddl("ALTER TABLE t ALTER COLUMN b SET DEFAULT 'bee'"),
        ddl("ALTER TABLE t ALTER COLUMN a DROP NOT NULL"),
        ddl("ALTER TABLE t ALTER COLUMN b DROP DEFAULT"),
    ), ("INSERT INTO t (f) VALUES (3.5)",)),
    DdlSequence("quoted_names", (), (
        ddl('CREATE TABLE "My T" ("B b" INTEGER, c VARCHAR)', "CREATE TABLE `My T` (`B b` INT, c STRING)"),
        ddl('ALTER TABLE "My T" SET SORTED BY ("B b" DESC)', "ALTER TABLE `My T` SET SORTED BY (`B b` DESC)"),
        ddl('ALTER TABLE "My T" SET PARTITIONED BY ("B b")', "ALTER TABLE `My T` SET PARTITIONED BY (`B b`)"),
        ddl('COMMENT ON COLUMN "My T"."B b" IS \'odd\'', "COMMENT ON COLUMN `My T`.`B b` IS 'odd'"),
        ddl('ALTER TABLE "My T" RENAME TO "Your T"', "ALTER TABLE `My T` RENAME TO `Your T`"),
    ), ('INSERT INTO "Your T" VALUES (1, \'x\')',)),
    DdlSequence("mixed_schema_life", (), (
        ddl("CREATE SCHEMA sales"),
        ddl("CREATE TABLE sales.orders (id BIGINT, day DATE, amount DECIMAL(12,2))",
            "CREATE TABLE sales.orders (id BIGINT, day DATE, amount DECIMAL(12,2))"),
        ddl("ALTER TABLE sales.orders SET PARTITIONED BY (month(day))"),
        ddl("ALTER TABLE sales.orders SET SORTED BY (id)"),
        ddl("COMMENT ON TABLE sales.orders IS 'orders'"),
        ddl("CREATE VIEW sales.big AS SELECT * FROM sales.orders WHERE amount > 100"),
        ddl("ALTER TABLE sales.orders RENAME TO orders2"),
        ddl("DROP VIEW sales.big"),
        ddl("DROP TABLE sales.orders2"),
        ddl("DROP SCHEMA sales"),
    ), ("CREATE SCHEMA sales", "CREATE TABLE sales.orders (id INTEGER)")),
    DdlSequence("no_inlining", ("CALL lk.set_option('data_inlining_row_limit', 0)",), (
        ddl("CREATE TABLE t (a INTEGER, ts TIMESTAMP)", "CREATE TABLE t (a INT, ts TIMESTAMP_NTZ)"),
        ddl("ALTER TABLE t SET PARTITIONED BY (day(ts))"),
        ddl("ALTER TABLE t RENAME TO u"),
    ), ("INSERT INTO u VALUES (1, TIMESTAMP '2020-01-01')",)),
    DdlSequence("table_then_view_names", ROWS, (
        ddl("CREATE VIEW tv AS SELECT a FROM t"),
        ddl("ALTER TABLE t RENAME TO t2"),
        ddl("CREATE OR REPLACE VIEW tv AS SELECT a FROM t2"),
    ), ("SELECT * FROM tv",)),
]

# Every sequence runs on SQLite; a representative few also on the DuckDB-file and PostgreSQL catalogs; the full tier
# (tests/support/tiers.py) runs every sequence on every catalog.
BACKEND_SEQUENCES = frozenset({"partition_changes", "views", "nested_renames"})
CASES = tiered([pytest.param(seq, backend, id=f"{seq.name}-{backend}") for backend in ORACLE_BACKENDS
                for seq in SEQUENCES], lambda case: case[1] == "sqlite" or case[0].name in BACKEND_SEQUENCES)


@pytest.mark.parametrize(("seq", "backend"), CASES)
def test_ddl_twins(seq: DdlSequence, backend: str, tmp_path: Path) -> None:
    """DuckDB and we record the same catalog for the same DDL; DuckDB reads and continues ours as its own."""
    run_ddl_sequence(seq, backend, tmp_path)
