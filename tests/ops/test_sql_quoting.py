"""One meaning for every SQL text (issue #24, item 1): the quoting corpus (`tests/support/quoting.py`: quoted names
with spaces, case, dots, reserved words and doubled quotes; doubled quotes, backslashes, escape and dollar strings,
unicode, literals joined across lines, quotes in comments) read by every entry point as DuckDB 1.5.5 reads it:

- reads: `Lake.sql()` for every case, `ducklake query` for some, on a DuckDB-built lake;
- changes on twin lakes (DuckDB on A, we on B, compared as DuckDB reads both): a `--file` script of one DELETE per
  case, a `run_change` script of one UPDATE per case (its value from the corpus too), INSERT/MERGE/CTAS, `ducklake
  delete --where`, `write --query` and the API's `delete`/`update`/`merge`;
- DDL (no Spark, SQLite, DuckDB-file and PostgreSQL catalogs): a view per case and a DEFAULT per literal, whose
  catalog rows equal DuckDB's; DuckDB reads our views as its own, and so does our reader.

Texts DuckDB refuses are refused too, in one line, changing nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ducklake_cli.api import connect
from ducklake_cli.errors import DuckLakeError
from ducklake_cli.ops.ddl import run_ddl
from tests.support.cli import run_main
from tests.support.ddl_twins import DdlTwins
from tests.support.dml_twins import Lakes, sort_key, step, twin_spots
from tests.support.oracle import oracle_connect, used
from tests.support.quoting import COLUMNS, CORPUS, ERRORS, LITERALS, insert, where
from tests.support.spot import ORACLE_BACKENDS, Spot

GROUPS = len(CORPUS) + 10  # a group of the base rows per case, and some for the other entry points
SETUP = (f"CREATE TABLE t ({COLUMNS})", insert(GROUPS))
CHECK_SQL = [3, 4, 12, 22]  # cases also run through `ducklake query` (a CLI run each)


def duck_ids(con: object, sql: str) -> list[int]:
    """The ids a DuckDB query returns, sorted."""
    return sorted(r[0] for r in con.execute(sql).fetchall())  # type: ignore[attr-defined]


@pytest.mark.spark
def test_reads_mean_what_duckdb_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every case selects the rows DuckDB selects, through `Lake.sql()` and `ducklake query`; refused texts are
    refused by both."""
    (tmp_path / "data").mkdir()
    a = Spot("sqlite", str(tmp_path / "cat.sqlite"), str(tmp_path / "cat.sqlite"), tmp_path / "data")
    con = oracle_connect()
    with used(con, a.attach("lk"), "lk") as duck:
        for sql in SETUP:
            duck.execute(sql)
        want = {c.name: duck_ids(duck, f"SELECT id FROM t WHERE grp = 0 AND {where(c.where)}") for c in CORPUS}
        for _, text, _ in ERRORS:
            with pytest.raises(Exception):  # noqa: B017 (any DuckDB error)
                duck.execute(f"SELECT id FROM t WHERE grp = 0 AND {where(text)}")
    lake = connect(a.catalog)
    try:
        # Every case in one query (a Spark job per case would cost seconds each).
        union = " UNION ALL ".join(f"SELECT {g} AS g, id FROM t WHERE grp = 0 AND {where(c.where)}"
                                   for g, c in enumerate(CORPUS))
        got: dict[str, list[int]] = {c.name: [] for c in CORPUS}
        for g, i in lake.sql(union).collect():
            got[CORPUS[g].name].append(i)
        got = {k: sorted(v) for k, v in got.items()}
        assert got == want, "\n".join(f"{n}: ours {got[n]}, DuckDB {want[n]}" for n in want if got[n] != want[n])
        assert all(want[c.name] for c in CORPUS if c.name != "fully_dq"), "a case that selects nothing tells little"
        for _, text, needle in ERRORS:
            with pytest.raises(DuckLakeError, match=needle):
                lake.sql(f"SELECT id FROM t WHERE grp = 0 AND {where(text)}").collect()
        # Spark's own backquotes stay identifiers.
        assert sorted(r[0] for r in lake.sql("SELECT id FROM t WHERE grp = 0 AND `k` IS NOT NULL").collect()) == \
            want["dq_ident_not_null"]
        # View bodies: a view per case (our DDL), read by our reader in one query.
        run_ddl(lake, [f"CREATE VIEW v{g} AS SELECT id FROM t WHERE grp = 0 AND {where(c.where)}"
                       for g, c in enumerate(CORPUS)])
        union = " UNION ALL ".join(f"SELECT {g} AS g, id FROM v{g}" for g in range(len(CORPUS)))
        views: dict[str, list[int]] = {c.name: [] for c in CORPUS}
        for g, i in lake.sql(union).collect():
            views[CORPUS[g].name].append(i)
        assert {k: sorted(v) for k, v in views.items()} == want
    finally:
        lake.close()
    for i in CHECK_SQL:
        c = CORPUS[i]
        code, out, err = run_main(capsys, "query", a.catalog, f"SELECT id FROM t WHERE grp = 0 AND {where(c.where)} "
                                  "ORDER BY id", "--format", "csv")
        assert code == 0, err
        assert [int(x) for x in out.split()[1:]] == want[c.name], c.name
    for name, text, needle in ERRORS:
        code, out, err = run_main(capsys, "query", a.catalog, f"SELECT id FROM t WHERE {where(text)}")
        assert code == 1 and needle in err and len(err.strip().splitlines()) == 1, (name, err)


@pytest.mark.spark
def test_changes_mean_what_duckdb_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every case deletes (a `--file` script) and updates (a script) the rows DuckDB does; INSERT, MERGE, CTAS,
    `delete --where`, `write --query` and the API's changes leave what DuckDB leaves."""
    from pyspark.sql.functions import lit

    con = oracle_connect()
    with twin_spots("sqlite", tmp_path) as (a, b):
        lakes = Lakes(a, b, con)
        lakes.setup(SETUP)
        # A --file script of DELETEs, each over several cases (each case on its own group), split by our splitter.
        conds = [f"(grp = {g} AND {where(c.where)})" for g, c in enumerate(CORPUS)]
        deletes = [f"DELETE FROM t WHERE {' OR '.join(conds[i::4])}" for i in range(4)]
        lakes.duck(a, deletes)
        script = tmp_path / "deletes.sql"
        script.write_text(";\n".join(deletes) + ";\n-- the end\n", encoding="utf-8")
        code, _, err = run_main(capsys, "query", b.catalog, "--file", str(script))
        assert code == 0, err
        lakes.compare_duckdb(full=False)
        # One UPDATE setting `s` to each case's value where the case holds.
        arms = " ".join(f"WHEN grp = {g} AND {where(c.where)} THEN (\n{c.value}\n)" for g, c in enumerate(CORPUS))
        lakes.run(step(f"UPDATE t SET s = CASE {arms} END WHERE {' OR '.join(conds)}"))
        n = len(CORPUS)
        lakes.run(step(f"INSERT INTO t (grp, id, s, \"my col\", \"Case\") VALUES ({n}, 1, 'it''s', 1, 'a\\b'), "
                       f"({n}, 2, E'a\\tb', 2, $$q\"q$$), ({n}, 3, 'x'\n'y', 3, '\"')", loose_ids=True))
        lakes.run(step(f"MERGE INTO t USING (SELECT 1 AS id, 'it''s' AS \"Case\") AS src "
                       f"ON t.id = src.id AND t.grp = {n + 1} "
                       f"WHEN MATCHED AND t.s = 'it''s' THEN UPDATE SET \"Case\" = src.\"Case\" || ''''"))
        lakes.run(step(f"UPDATE t SET \"select\" = 9 WHERE grp = {n + 2} AND \"k\" = 'k' -- it's\n"))
        # `ducklake delete --where` (the example of the issue deleted every row), and a statement given as the
        # argument with a trailing comment.
        for i, c in enumerate((CORPUS[0], CORPUS[4], CORPUS[7])):
            cond = f"grp = {n + 3 + i} AND {where(c.where)}"
            lakes.duck(a, [f"DELETE FROM t WHERE {cond}"])
            code, _, err = run_main(capsys, "delete", b.catalog, "t", "--where", cond, "--yes")
            assert code == 0, err
        trailing = f"DELETE FROM t WHERE grp = {n + 9} AND \"k\" = 'k'; -- it's done"
        lakes.duck(a, [trailing])
        code, _, err = run_main(capsys, "query", b.catalog, trailing)
        assert code == 0, err
        lakes.compare_duckdb(full=False)
        # The API's delete/update/merge.
        lakes.duck(a, [f"DELETE FROM t WHERE grp = {n + 6} AND \"k\" IS NULL",
                       f"UPDATE t SET s = 'it''s', \"Case\" = '\\' WHERE grp = {n + 7} AND s = 'a\\b'",
                       f"UPDATE t SET s = 'it''s \"m\"' WHERE grp = {n + 7} AND \"ünï\" = 'x'"])
        lake = connect(b.catalog)
        try:
            lake.delete("t", f"grp = {n + 6} AND \"k\" IS NULL")
            lake.update("t", {"s": "'it''s'", "Case": "'\\'"}, f"grp = {n + 7} AND s = 'a\\b'")
            source = lake.sql(f"SELECT * FROM t WHERE grp = {n + 7} AND \"ünï\" = 'x'")
            lake.merge(source.withColumn("s", lit('it\'s "m"')), "t", on=["grp", "id"], when_not_matched=None)
        finally:
            lake.close()
        lakes.rows_only = True  # the API committed three snapshots where DuckDB committed one
        lakes.compare_duckdb(full=False)
        # CREATE TABLE AS and write --query read their SELECT the same way.
        select = f"SELECT id, \"k\", s FROM t WHERE grp = {n + 8} AND (s = 'it''s' OR \"k\" = '\"k\"')"
        lakes.duck(a, [f"CREATE TABLE c AS {select}", f"CREATE TABLE w AS {select}"])
        lakes.ours(b, [f"CREATE TABLE c AS {select}"])
        code, _, err = run_main(capsys, "write", b.catalog, "w", "--query", select, "--mode", "create")
        assert code == 0, err
        for table in ("c", "w"):
            got, want = (sorted(_rows(con, spot, table), key=sort_key) for spot in (b, a))
            assert got == want and len(want) == 2, table
    con.close()


def _rows(con: object, spot: Spot, table: str) -> list[tuple[object, ...]]:
    with used(con, spot.attach("lk"), "lk") as duck:  # type: ignore[arg-type]
        return [tuple(r) for r in duck.execute(f"SELECT * FROM {table}").fetchall()]


VIEWS = [f"CREATE VIEW v{g} AS SELECT id, \"k\", s FROM t WHERE grp = 0 AND {where(c.where)}"
         for g, c in enumerate(CORPUS) if c.name != "concat"]  # Spark's concat is stored as DuckDB's ||
DEFAULTS = [f"ALTER TABLE t ADD COLUMN d{i} VARCHAR DEFAULT {value}" for i, value in enumerate(LITERALS)]
COMMENTS = ["COMMENT ON TABLE t IS 'it''s a \"table\"'", "COMMENT ON COLUMN t.\"my col\" IS $$a\\b$$"]


@pytest.mark.parametrize("backend", ORACLE_BACKENDS)
def test_views_and_defaults_store_what_duckdb_stores(backend: str, tmp_path: Path) -> None:
    """A view per case, a DEFAULT per literal and comments: the catalog rows equal DuckDB's, and after DuckDB inserts
    the base rows into both lakes, DuckDB reads every table and view of ours as of its own."""
    assert len(LITERALS) >= 20
    con = oracle_connect()
    with twin_spots(backend, tmp_path) as (a, b):
        twins = DdlTwins(a, b, con)
        twins.setup(SETUP[:1])
        # One DuckDB transaction (a snapshot per statement ours): snapshots, and view ids DuckDB hands out
        # backwards within a transaction, are not compared.
        twins.duck(a, [*VIEWS, *DEFAULTS, *COMMENTS])
        lake = connect(b.catalog)
        try:
            run_ddl(lake, [*VIEWS, *DEFAULTS, *COMMENTS])
        finally:
            lake.close()
        got, want = twins.catalog(b), twins.catalog(a)
        for table in ("ducklake_view", "ducklake_column", "ducklake_tag", "ducklake_column_tag"):
            strip = [sorted(tuple(f for f in r if f[0] not in ("begin_snapshot", "view_id")) for r in rows)
                     for rows in (got[table], want[table])]
            assert strip[0] == strip[1], f"{table}: ours {strip[0]}\n DuckDB {strip[1]}"
        for spot in (a, b):
            twins.duck(spot, [insert(1)])
        assert twins.latest(b) == twins.latest(a)
        with twins.attached(b) as duck:
            empty = [v for v in VIEWS if not duck.execute(f"SELECT * FROM {v.split()[2]}").fetchall()]
        assert len(empty) <= 1, empty
    con.close()
