"""Twin lakes (issue #13 acceptance): each change sequence runs once through DuckDB 1.5.5 and once through our
`run_change` on two identical DuckDB-built lakes; after every step both lakes show the same snapshots with the
same `changes`, and at every snapshot the same rows and row ids, as DuckDB reads them; at the end our reader
agrees too. Then DuckDB changes our result and we change DuckDB's (cross-over), compared the same way.

One Spark session for the module; tables are small (two or three files of ≤100 rows) so that the whole module
stays within a few minutes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.dml_twins import Sequence_, run_sequence, step
from tests.support.spot import ORACLE_BACKENDS
from tests.support.tiers import tiered

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

# Two 100-row files: ids 0..99 (row ids 0..99) and 100..199 (row ids 100..199).
TWO_FILES = (
    "CREATE TABLE t (id INTEGER, v VARCHAR)",
    "INSERT INTO t SELECT i, 'v' || i FROM range(0, 100) r(i)",
    "INSERT INTO t SELECT i, 'v' || i FROM range(100, 200) r(i)",
)
# A source table for MERGE: ids 1, 2 match file 0, 150 matches file 1, 1000 is new.
SRC = (
    "CREATE TABLE src (id INTEGER, v VARCHAR)",
    "INSERT INTO src VALUES (1, 'm1'), (2, 'del'), (150, 'm150'), (1000, 'new')",
)
CROSS = (
    step("DELETE FROM t WHERE id % 7 = 3 OR id IN (4, 104)"),
    step("UPDATE t SET v = v || '!' WHERE id % 13 = 2"),
)
UPSERT = ("MERGE INTO t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
          "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)")
PARTITIONED = (
    "CREATE TABLE p (id INTEGER, region VARCHAR, v INTEGER)",
    "ALTER TABLE p SET PARTITIONED BY (region)",
    "INSERT INTO p SELECT i, ['eu', 'us', 'ap'][i % 3 + 1], i * 10 FROM range(0, 90) r(i)",
    "INSERT INTO p SELECT i, ['eu', 'us'][i % 2 + 1], i * 10 FROM range(90, 150) r(i)",
)
NESTED = (
    "CREATE TABLE n (id INTEGER, s STRUCT(a INTEGER, b VARCHAR), l INTEGER[])",
    "INSERT INTO n SELECT i, {'a': i, 'b': 'b' || i}, [i, i + 1] FROM range(0, 50) r(i)",
    "INSERT INTO n SELECT i, CASE WHEN i % 5 <> 0 THEN {'a': i, 'b': NULL} END, "
    "CASE WHEN i % 7 <> 0 THEN [i] END FROM range(50, 100) r(i)",
)
# DEFAULTs as DuckDB stores them: literals (a BLOB escape, a VARCHAR, an INTEGER) and an expression (the DATE).
DEFAULTS = (
    r"CREATE TABLE t (id INTEGER, v VARCHAR DEFAULT 'dv', f BLOB DEFAULT '\x01a', "
    "g DATE DEFAULT DATE '2020-01-02', n INTEGER DEFAULT 7)",
    "INSERT INTO t (id, v) SELECT i, 'v' || i FROM range(0, 50) r(i)",
    "CREATE TABLE src (id INTEGER, v VARCHAR)",
    "INSERT INTO src VALUES (1, 'm1'), (3000, 'new'), (3001, 'new2')",
)
# Sorted by v descending, then id.
SORTED = (
    "CREATE TABLE t (id INTEGER, v VARCHAR)",
    "ALTER TABLE t SET SORTED BY (v DESC, id)",
    "INSERT INTO t SELECT i, 'v' || (i * 7 % 100) FROM range(0, 100) r(i)",
)

SEQUENCES = [
    Sequence_("delete_none_some_all", TWO_FILES, (
        step("DELETE FROM t WHERE id > 1000"),
        step("DELETE FROM t WHERE id BETWEEN 10 AND 39"),
        step("DELETE FROM t WHERE id >= 100"),  # a clean file: ended
    ), CROSS),
    # 3 inlined, 20 in a 2-column file, 20 more replacing it by a 3-column file, 10 inlined again beside it,
    # then the rest of the file (which has inlined deletes: another merged delete file, not ended).
    Sequence_("repeated_deletes_one_file", TWO_FILES, (
        step("DELETE FROM t WHERE id IN (1, 2, 3)"),
        step("DELETE FROM t WHERE id BETWEEN 10 AND 29"),
        step("DELETE FROM t WHERE id BETWEEN 30 AND 49"),
        step("DELETE FROM t WHERE id BETWEEN 50 AND 59"),
        step("DELETE FROM t WHERE id < 100"),
    ), CROSS),
    # Files DuckDB already gave a 2-column and a 3-column delete file and inlined deletes.
    Sequence_("duckdb_delete_files", (
        *TWO_FILES,
        "DELETE FROM t WHERE id BETWEEN 10 AND 29",
        "DELETE FROM t WHERE id BETWEEN 30 AND 49",
        "DELETE FROM t WHERE id BETWEEN 120 AND 139",
        "DELETE FROM t WHERE id IN (150, 151)",
    ), (
        step("DELETE FROM t WHERE id BETWEEN 60 AND 79"),
        step("DELETE FROM t WHERE id BETWEEN 140 AND 145"),
        step("DELETE FROM t WHERE id BETWEEN 160 AND 199"),
        step("DELETE FROM t WHERE id < 100"),  # only file deletes on file 0: ended
        step("DELETE FROM t WHERE id >= 100"),  # file 1 has inlined deletes: merged delete file
    ), CROSS),
    Sequence_("puffin_deletion_vectors", (
        *TWO_FILES,
        "CALL lk.set_option('write_deletion_vectors', true)",
        "DELETE FROM t WHERE id BETWEEN 10 AND 29",
        "DELETE FROM t WHERE id BETWEEN 120 AND 139",
    ), (
        step("DELETE FROM t WHERE id BETWEEN 30 AND 49", duck_replaces_dv=True),
        step("DELETE FROM t WHERE id IN (1, 2)"),
        step("DELETE FROM t WHERE id >= 100"),
    ), CROSS),
    Sequence_("puffin_then_parquet", (
        *TWO_FILES,
        "CALL lk.set_option('write_deletion_vectors', true)",
        "DELETE FROM t WHERE id BETWEEN 10 AND 29",
        "CALL lk.set_option('write_deletion_vectors', false)",
    ), (
        step("DELETE FROM t WHERE id BETWEEN 30 AND 49"),
        step("UPDATE t SET v = 'u' WHERE id BETWEEN 50 AND 69"),
    ), CROSS),
    Sequence_("inlined_rows", (
        *TWO_FILES,
        "INSERT INTO t VALUES (1000, 'a')",
        "INSERT INTO t VALUES (1001, 'b')",
        "INSERT INTO t VALUES (1002, 'c')",
        "INSERT INTO t VALUES (1003, 'd')",
    ), (
        step("DELETE FROM t WHERE id = 1000"),
        step("UPDATE t SET v = 'cc' WHERE id = 1002"),
        step("DELETE FROM t WHERE id IN (1001, 5, 150)"),
        step("DELETE FROM t WHERE id >= 1000"),
    ), CROSS),
    Sequence_("inlined_table_only", (
        "CREATE TABLE t (id INTEGER, v VARCHAR)",
        "INSERT INTO t VALUES (1, 'a')",
        "INSERT INTO t VALUES (2, 'b')",
        "INSERT INTO t VALUES (3, 'c')",
    ), (
        step("UPDATE t SET v = v || v WHERE id >= 2"),
        step("DELETE FROM t WHERE id = 1"),
        step("INSERT INTO t VALUES (4, 'd')"),
        step("DELETE FROM t"),
    ), CROSS),
    # Small (inlined) and large (file) updates, updates of inlined versions and of update-written files.
    Sequence_("updates", TWO_FILES, (
        step("UPDATE t SET v = 'u1' WHERE id IN (5, 6, 7)"),
        step("UPDATE t SET v = 'u2' WHERE id BETWEEN 120 AND 149"),
        step("UPDATE t SET v = 'u3' WHERE id IN (5, 6)"),
        step("UPDATE t SET v = 'u4' WHERE id BETWEEN 120 AND 129"),
        step("UPDATE t SET id = id + 1000 WHERE id BETWEEN 40 AND 45 OR id BETWEEN 180 AND 185"),
        step("DELETE FROM t WHERE id BETWEEN 130 AND 149"),
        step("UPDATE t SET v = 'r' || rowid WHERE rowid IN (8, 9)"),
        step("DELETE FROM t WHERE t.rowid = 10 OR rowid > 197"),
    ), CROSS),
    Sequence_("partitioned", PARTITIONED, (
        step("DELETE FROM p WHERE region = 'eu' AND id < 40"),
        step("UPDATE p SET region = 'ap' WHERE region = 'us' AND id < 60"),
        step("UPDATE p SET region = 'eu' WHERE id IN (1, 2)"),
        step("UPDATE p SET v = v + 1 WHERE id % 4 = 0"),
        step("DELETE FROM p WHERE region = 'ap'"),
    ), (
        step("DELETE FROM p WHERE id % 5 = 1"),
        step("UPDATE p SET region = 'us', v = 0 WHERE region = 'eu' AND id > 100"),
    ), table="p"),
    Sequence_("nested_columns", NESTED, (
        step("DELETE FROM n WHERE s.a < 5"),
        step("UPDATE n SET s = {'a': s.a + 100, 'b': s.b} WHERE id BETWEEN 20 AND 39",
             ours=["UPDATE n SET s = named_struct('a', s.a + 100, 'b', s.b) WHERE id BETWEEN 20 AND 39"]),
        step("UPDATE n SET l = [id, id * 10, NULL] WHERE id IN (45, 46)",
             ours=["UPDATE n SET l = array(id, id * 10, NULL) WHERE id IN (45, 46)"]),
        step("DELETE FROM n WHERE l IS NULL OR s IS NULL"),
    ), (
        step("DELETE FROM n WHERE id % 3 = 0"),
        step("UPDATE n SET l = NULL WHERE id BETWEEN 60 AND 79"),
    ), table="n"),
    # MERGE, one clause kind at a time (DuckDB allows one UPDATE/DELETE action besides NOT MATCHED INSERT).
    Sequence_("merge_update_insert", (*TWO_FILES, *SRC), (
        step(UPSERT),
        step("MERGE INTO t USING src s ON t.id = s.id WHEN MATCHED AND s.v <> 'del' THEN UPDATE SET v = s.v || '2'"),
    ), CROSS),
    Sequence_("merge_delete_insert", (*TWO_FILES, *SRC), (
        step("MERGE INTO t USING src s ON t.id = s.id WHEN MATCHED AND s.v = 'del' THEN DELETE "
             "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"),
        step("MERGE INTO t USING src s ON t.id = s.id WHEN MATCHED THEN DELETE"),
    ), CROSS),
    Sequence_("merge_not_matched_by_source", (*TWO_FILES, *SRC), (
        step("MERGE INTO t USING src s ON t.id = s.id WHEN NOT MATCHED BY SOURCE AND t.id >= 190 THEN DELETE"),
        step("MERGE INTO t USING src s ON t.id = s.id "
             "WHEN NOT MATCHED BY SOURCE AND t.id BETWEEN 20 AND 49 THEN UPDATE SET v = 'orphan'"),
        step("MERGE INTO t USING src s ON t.id = s.id "
             "WHEN NOT MATCHED AND s.v = 'new' THEN INSERT (id, v) VALUES (s.id, s.v || '!')"),
    ), CROSS),
    # 70 matches and 20 new rows: the 20 inserted rows' ids depend on row order (compared as a set from here).
    Sequence_("merge_upsert_large", (
        *TWO_FILES,
        "CREATE TABLE src AS SELECT i::INTEGER AS id, 'n' || i AS v FROM range(130, 220) r(i)",
    ), (
        step(UPSERT, loose_ids=True),
        step("MERGE INTO t USING src s ON t.id = s.id WHEN MATCHED AND t.id < 145 THEN DELETE"),
    ), CROSS),
    # Our multi-action MERGE against DuckDB running the same changes as separate statements (latest rows only).
    Sequence_("merge_all_clauses", (*TWO_FILES, *SRC), (
        step("INSERT INTO t SELECT id, v FROM src WHERE id NOT IN (SELECT id FROM t)",
             "DELETE FROM t WHERE id IN (SELECT id FROM src WHERE v = 'del')",
             "UPDATE t SET v = s.v FROM src s WHERE t.id = s.id AND s.v <> 'del'",
             "DELETE FROM t WHERE id >= 190 AND id NOT IN (SELECT id FROM src)",
             ours=["MERGE INTO t USING src s ON t.id = s.id "
                   "WHEN MATCHED AND s.v = 'del' THEN DELETE "
                   "WHEN MATCHED THEN UPDATE SET v = s.v "
                   "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v) "
                   "WHEN NOT MATCHED BY SOURCE AND t.id >= 190 THEN DELETE"],
             rows_only=True),
    ), CROSS),
    Sequence_("inlined_inserts", TWO_FILES, (
        step("INSERT INTO t (v, id) VALUES ('a', 1000)"),
        step("INSERT INTO t VALUES (1001, 'b'), (1002, 'c'), (1003, 'd')"),
        step("INSERT INTO t SELECT id + 2000, v FROM t WHERE id < 10"),
        step("DELETE FROM t WHERE id IN (1001, 2003)"),
        step("INSERT INTO t SELECT id + 3000, v FROM t WHERE id < 11", loose_ids=True),
    ), CROSS),
    # One script = one transaction = one snapshot (DuckDB: BEGIN; …; COMMIT).
    Sequence_("multi_statement_script", TWO_FILES, (
        step("INSERT INTO t VALUES (1000, 'a')",
             "DELETE FROM t WHERE id BETWEEN 10 AND 24",
             "UPDATE t SET v = 'u' WHERE id BETWEEN 150 AND 169"),
        step("DELETE FROM t WHERE id BETWEEN 30 AND 35", "DELETE FROM t WHERE id BETWEEN 40 AND 45"),
        step("DELETE FROM t WHERE id BETWEEN 50 AND 65", "DELETE FROM t WHERE id IN (70, 71)",
             "UPDATE t SET v = 'w' WHERE id IN (100, 101)"),
    ), CROSS),
    Sequence_("delete_everything", (
        *TWO_FILES,
        "DELETE FROM t WHERE id BETWEEN 10 AND 29",
        "DELETE FROM t WHERE id IN (150, 151)",
        "INSERT INTO t VALUES (1000, 'a')",
    ), (
        step("DELETE FROM t"),
        step("INSERT INTO t VALUES (1, 'again')"),
    ), CROSS),
    # Columns an INSERT or a MERGE's INSERT clause does not name (or gives DEFAULT) get their DEFAULT.
    Sequence_("defaults", DEFAULTS, (
        step("INSERT INTO t (id) VALUES (1000)",
             "INSERT INTO t (v, id) SELECT v || 'x', id + 2000 FROM t WHERE id < 30",
             "INSERT INTO t VALUES (1001, DEFAULT, DEFAULT, DATE '2021-02-03', 5), (1002, 'q', NULL, DEFAULT, DEFAULT)",
             "INSERT INTO t (n, id) VALUES (DEFAULT, 1003)", loose_ids=True),
        step("MERGE INTO t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
             "WHEN NOT MATCHED AND s.v = 'new' THEN INSERT (id) VALUES (s.id) "
             "WHEN NOT MATCHED THEN INSERT VALUES (s.id, DEFAULT, DEFAULT, DATE '2021-01-01', DEFAULT)",
             loose_ids=True),
    ), our_reader=False),
    # Each INSERT statement is sorted as DuckDB sorts it: its row ids (file position, or inlined order) show it.
    # (DuckDB sorts neither UPDATE nor MERGE output; a MERGE's inserted row ids are loose anyway.)
    Sequence_("sorted_inserts", SORTED, (
        step("INSERT INTO t SELECT id + 1000, 'w' || (id * 13 % 100) FROM t WHERE id < 40"),
        step("INSERT INTO t VALUES (2000, 'a'), (2001, 'z'), (2002, NULL), (2003, 'm')",
             "INSERT INTO t VALUES (2004, 'b'), (2005, 'y'), (2006, 'c')"),
    ), our_reader=False),
]


# Every sequence runs on SQLite. On the DuckDB-file and PostgreSQL catalogs the default tier runs the two whose
# catalog writes go through the backend hooks (inlined rows and inlined deletions, and updates: inlined and file
# ones, delete files replaced); the full tier (tests/support/tiers.py) runs every sequence on every catalog.
BACKEND_SEQUENCES = frozenset({"inlined_rows", "updates"})
CASES = tiered([pytest.param(seq, backend, id=f"{seq.name}-{backend}") for backend in ORACLE_BACKENDS
                for seq in SEQUENCES], lambda case: case[1] == "sqlite" or case[0].name in BACKEND_SEQUENCES)


@pytest.mark.parametrize(("seq", "backend"), CASES)
def test_twins(seq: Sequence_, backend: str, tmp_path: Path, spark: SparkSession) -> None:
    """DuckDB and we make the same snapshots from the same lake, and each can continue the other's lake."""
    run_sequence(seq, backend, tmp_path)
