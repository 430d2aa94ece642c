"""DuckLake 1.1's nested schemas, view column comments and `_ducklake_` column names (spec versions §3.2, §3.3,
§3.4, §3.8), on catalogs made by `ducklake create-catalog --format-version 1.1` and changed by `ducklake query` DDL
or by rows inserted by hand; and a 1.0 catalog refusing each of them in one line, unchanged. Metadata only: no
Spark."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from ducklake_cli.catalog.changes import parse_changes
from ducklake_cli.catalog.names import pick_entry, readings, shown_path
from ducklake_cli.errors import NotADuckLakeError
from ducklake_cli.lake import Lake
from ducklake_cli.ops.expire import ExpireCriteria, plan_expire
from tests.support.cli import run_main
from tests.support.spot import ALL_BACKENDS
from tests.support.tiers import backend_params

Cap = pytest.CaptureFixture[str]


def _create(capsys: Cap, root: Path, version: str) -> str:
    catalog = root / f"lake{version}.sqlite"
    code, _, err = run_main(capsys, "create-catalog", str(catalog), "--data-path", str(root / "data"),
                            "--format-version", version)
    assert code == 0, err
    return str(catalog)


def _ddl(capsys: Cap, catalog: str, sql: str) -> tuple[int, str, str]:
    return run_main(capsys, "query", catalog, sql, "--format", "json")


def _statements(capsys: Cap, catalog: str, sql: str) -> list[int | None]:
    """The snapshot of each statement of a DDL script that must succeed (None: nothing to do)."""
    code, out, err = _ddl(capsys, catalog, sql)
    assert code == 0, err
    return [s["snapshot_id"] for s in json.loads(out)["statements"]]


def _ok(capsys: Cap, catalog: str, sql: str) -> list[int]:
    """The snapshot of each statement of a DDL script where every statement commits."""
    sids = _statements(capsys, catalog, sql)
    assert None not in sids
    return [int(sid or 0) for sid in sids]


def _rows(catalog: str, sql: str) -> list[tuple[object, ...]]:
    con = sqlite3.connect(catalog)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _count(capsys: Cap, catalog: str, table: str, *more: str) -> int:
    code, out, err = run_main(capsys, "query", catalog, f"SELECT count(*) AS n FROM {table}", "--format", "json",
                              *more)
    assert code == 0, err
    return int(json.loads(out)[0]["n"])


def _changes(catalog: str, snapshot_id: int) -> str:
    return str(_rows(catalog, f"SELECT changes_made FROM ducklake_snapshot_changes WHERE snapshot_id = "
                              f"{snapshot_id}")[0][0])


@pytest.fixture
def v11(capsys: Cap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("DUCKLAKE_CATALOG", raising=False)
    return _create(capsys, tmp_path, "1.1")


@pytest.fixture
def v10(capsys: Cap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("DUCKLAKE_CATALOG", raising=False)
    catalog = _create(capsys, tmp_path, "1.0")
    _ok(capsys, catalog, "CREATE SCHEMA s; CREATE TABLE s.t (a INT); CREATE VIEW s.v AS SELECT a FROM s.t")
    return catalog


# ----- names, alone -----------------------------------------------------------------------------------------------

def test_dotted_names_nest_on_1_1_and_keep_1_0_readings() -> None:
    assert readings(["t"], nested=True) == [(("main",), "t")]
    assert readings(["a", "b", "t"], nested=True) == [(("a", "b"), "t"), (("b",), "t")]  # else a catalog part
    assert readings(["lake", "a", "b", "t"], nested=False) == [(("b",), "t")]
    assert shown_path(("sales", "europe"), quote=True) == "sales.europe"
    assert shown_path(("sales.europe",), quote=True) == '"sales.europe"'
    assert shown_path(("sales.europe",), quote=False) == "sales.europe"
    assert parse_changes('created_table:"a"."b"."c"."t",created_schema:"x.y"') == {
        "tables_created": ["a.b.c.t"], "schemas_created": ["x.y"]}


# ----- nested schemas ---------------------------------------------------------------------------------------------

def test_nested_schemas_three_deep_with_a_dropped_middle(capsys: Cap, v11: str) -> None:
    """a.b.c.t is visible while a, a.b and a.b.c are; after DROP SCHEMA a.b CASCADE it is gone at the latest snapshot
    and still there when travelling back; paths, parents and change strings as 1.1 writes them."""
    sids = _ok(capsys, v11, "CREATE SCHEMA sales; CREATE SCHEMA sales.europe; "
                            "CREATE SCHEMA IF NOT EXISTS sales.europe.north; "
                            "CREATE TABLE sales.europe.north.orders (id INT, row_id INT); "
                            "CREATE VIEW sales.europe.v AS SELECT id FROM sales.europe.north.orders")
    assert _statements(capsys, v11, "CREATE SCHEMA IF NOT EXISTS sales.europe") == [None]
    schemas = {r[0]: r for r in _rows(v11, "SELECT schema_name, schema_id, parent_schema_id, path, schema_uuid "
                                           "FROM ducklake_schema")}
    assert schemas["sales"][2] is None and schemas["sales"][3] == "sales/"
    assert schemas["europe"][2] == schemas["sales"][1] and schemas["europe"][3] == f"{schemas['europe'][4]}/"
    assert schemas["north"][2] == schemas["europe"][1]
    assert [_changes(v11, sid) for sid in sids] == [
        'created_schema:"sales"', 'created_schema:"sales"."europe"', 'created_schema:"sales"."europe"."north"',
        'created_table:"sales"."europe"."north"."orders"', 'created_view:"sales"."europe"."v"']
    assert _count(capsys, v11, "sales.europe.north.orders") == 0
    assert _count(capsys, v11, "lake.sales.europe.north.orders") == 0  # a leading catalog part
    lake = Lake.open(v11)
    try:
        with lake.reader() as r:
            t = r.find_table(sids[3], "SALES.Europe.north.orders")  # case-insensitive
            assert (t.schema_name, t.qualified_name) == ("sales.europe.north", "sales.europe.north.orders")
            schema_dir = next(sc for sc in r.schemas(sids[3]) if sc.name == "north")
            assert schema_dir.path == f"{schema_dir.schema_uuid}/"  # below the data path, not below its parent
    finally:
        lake.close()

    code, _, err = _ddl(capsys, v11, "DROP SCHEMA sales.europe")
    assert code == 1 and "CASCADE" in err and len(err.strip().splitlines()) == 1
    (dropped,) = _ok(capsys, v11, "DROP SCHEMA sales.europe CASCADE")
    changes = parse_changes(_changes(v11, dropped))
    assert sorted(changes) == ["schemas_dropped", "tables_dropped", "views_dropped"]
    assert len(changes["schemas_dropped"]) == 2  # europe and north
    code, _, err = run_main(capsys, "query", v11, "SELECT count(*) FROM sales.europe.north.orders")
    assert code != 0 and "does not exist" in err
    assert _count(capsys, v11, "sales.europe.north.orders", "--snapshot", str(dropped - 1)) == 0
    code, out, _ = run_main(capsys, "inspect", v11, "--format", "json")
    assert json.loads(out)["tables"] == [] and json.loads(out)["views"] == []
    code, out, _ = run_main(capsys, "inspect", v11, "--snapshot", str(dropped - 1), "--format", "json")
    assert [(t["schema"], t["table"]) for t in json.loads(out)["tables"]] == [("sales.europe.north", "orders")]
    assert json.loads(out)["views"] == ["sales.europe.v"]


def test_a_hidden_ancestor_hides_its_subtree_and_a_loop_is_refused(capsys: Cap, v11: str) -> None:
    """Rows inserted by hand (spec versions §3.4): a schema whose parent row ended is invisible with its tables;
    a parent chain that loops makes the catalog unusable, in one line."""
    (sid,) = _ok(capsys, v11, "CREATE SCHEMA a")
    _ok(capsys, v11, "CREATE SCHEMA a.b; CREATE TABLE a.b.t (x INT)")
    con = sqlite3.connect(v11)
    with con:
        con.execute("UPDATE ducklake_schema SET end_snapshot = ? WHERE schema_name = 'a'", (sid + 2,))
    con.close()
    lake = Lake.open(v11)
    try:
        with lake.reader() as r:
            assert [sc.shown for sc in r.schemas(sid + 1)] == ["main", "a", "a.b"]
            latest = r.latest_snapshot().snapshot_id
            assert [sc.shown for sc in r.schemas(latest)] == ["main"] and r.tables(latest) == []
        con = sqlite3.connect(v11)
        with con:
            con.execute("UPDATE ducklake_schema SET end_snapshot = NULL, parent_schema_id = "
                        "(SELECT schema_id FROM ducklake_schema WHERE schema_name = 'b') WHERE schema_name = 'a'")
        con.close()
        with lake.reader() as r, pytest.raises(NotADuckLakeError, match="loops"):
            r.schemas(r.latest_snapshot().snapshot_id)
    finally:
        lake.close()


def test_quoted_dotted_schema_is_one_top_level_name(capsys: Cap, v11: str) -> None:
    sids = _ok(capsys, v11, 'CREATE SCHEMA a; CREATE SCHEMA a.b; CREATE SCHEMA "a.b"; '
                            'CREATE TABLE a.b.t (x INT); CREATE TABLE "a.b".t (y INT, z INT)')
    assert _changes(v11, sids[2]) == 'created_schema:"a.b"'
    assert _changes(v11, sids[4]) == 'created_table:"a.b"."t"'
    assert _rows(v11, "SELECT parent_schema_id FROM ducklake_schema WHERE schema_name = 'a.b'") == [(None,)]
    lake = Lake.open(v11)
    try:
        with lake.reader() as r:
            latest = r.latest_snapshot().snapshot_id
            nested, top = r.find_table(latest, "a.b.t"), r.find_table(latest, '"a.b".t')
            assert nested.table_id != top.table_id and len(top.columns) == 2
            assert (nested.qualified_name, top.qualified_name) == ("a.b.t", '"a.b".t')
            tables = r.tables(latest)
            assert pick_entry(tables, ["a.b", "t"], nested=True) == top
    finally:
        lake.close()
    code, _, err = _ddl(capsys, v11, "CREATE SCHEMA x.y")  # the parent must exist
    assert code != 0 and "parent schema x does not exist" in err
    code, _, err = _ddl(capsys, v11, "CREATE TABLE q.r.t (x INT)")
    assert code != 0 and "schema q.r does not exist" in err


def test_drop_schema_without_cascade_only_when_empty(capsys: Cap, v11: str) -> None:
    _ok(capsys, v11, "CREATE SCHEMA a; CREATE SCHEMA a.b; CREATE SCHEMA a.c")
    code, _, err = _ddl(capsys, v11, "DROP SCHEMA a")  # holds schemas, though no table
    assert code == 1 and "2 schema(s)" in err
    (sid,) = _ok(capsys, v11, "DROP SCHEMA a.c")
    assert parse_changes(_changes(v11, sid)) == {"schemas_dropped": [str(_rows(
        v11, "SELECT schema_id FROM ducklake_schema WHERE schema_name = 'c'")[0][0])]}
    (sid,) = _ok(capsys, v11, "DROP SCHEMA a CASCADE")
    assert len(parse_changes(_changes(v11, sid))["schemas_dropped"]) == 2
    assert _rows(v11, "SELECT schema_name FROM ducklake_schema WHERE end_snapshot IS NULL") == [("main",)]


# ----- view column comments ---------------------------------------------------------------------------------------

def _view_columns(capsys: Cap, catalog: str, view: str, *more: str) -> dict[str, str | None]:
    code, out, err = run_main(capsys, "inspect", catalog, view, "--format", "json", *more)
    assert code == 0, err
    return {c["name"]: c["comment"] for c in json.loads(out)["columns"]}


def test_view_column_comments_set_changed_removed_and_seen_in_time(capsys: Cap, v11: str) -> None:
    """`COMMENT ON COLUMN v.c` writes `ducklake_view_column_tag` rows under the query's own column name (an alias
    maps to its position), ends the previous one, NULL removes it; inspect shows the comments at each snapshot."""
    _ok(capsys, v11, "CREATE TABLE t (a INT, b INT, c INT); CREATE VIEW v (x) AS SELECT a, b FROM t")
    first, second, third = _ok(capsys, v11, "COMMENT ON COLUMN v.x IS 'the a'; COMMENT ON COLUMN v.b IS 'bee'; "
                                            "COMMENT ON COLUMN main.v.X IS 'still a'")
    vid = _rows(v11, "SELECT view_id FROM ducklake_view")[0][0]
    assert _changes(v11, first) == f"altered_view:{vid}"
    assert _rows(v11, "SELECT column_name, begin_snapshot, end_snapshot, key, value FROM ducklake_view_column_tag "
                      "ORDER BY begin_snapshot") == [("a", first, third, "comment", "the a"),
                                                     ("b", second, None, "comment", "bee"),
                                                     ("a", third, None, "comment", "still a")]
    assert _view_columns(capsys, v11, "v") == {"x": "still a", "b": "bee"}
    assert _view_columns(capsys, v11, "v", "--snapshot", str(first)) == {"x": "the a", "b": None}
    (removed,) = _ok(capsys, v11, "COMMENT ON COLUMN v.b IS NULL")
    assert _rows(v11, f"SELECT value FROM ducklake_view_column_tag WHERE begin_snapshot = {removed}") == [(None,)]
    assert _view_columns(capsys, v11, "v") == {"x": "still a", "b": None}
    code, _, err = _ddl(capsys, v11, "COMMENT ON COLUMN v.nope IS 'x'")
    assert code == 1 and "no column nope" in err

    (renamed,) = _ok(capsys, v11, "ALTER VIEW v RENAME TO w")  # the comments are written again
    assert _rows(v11, f"SELECT column_name, value FROM ducklake_view_column_tag WHERE begin_snapshot = {renamed} "
                      "ORDER BY column_name") == [("a", "still a")]  # a removed comment is not written again
    assert _view_columns(capsys, v11, "w") == {"x": "still a", "b": None}
    (replaced,) = _ok(capsys, v11, "CREATE OR REPLACE VIEW w AS SELECT a FROM t")  # the old comments end
    assert _rows(v11, "SELECT count(*) FROM ducklake_view_column_tag WHERE end_snapshot IS NULL") == [(0,)]
    assert _view_columns(capsys, v11, "w") == {"a": None}
    _ok(capsys, v11, "COMMENT ON COLUMN w.a IS 'new'")
    (dropped,) = _ok(capsys, v11, "DROP VIEW w")
    assert _rows(v11, "SELECT end_snapshot FROM ducklake_view_column_tag WHERE value = 'new'") == [(dropped,)]
    assert replaced < dropped

    lake = Lake.open(v11)  # expiry: gone view column comments go with the snapshots that saw them
    try:
        plan_expire(lake, ExpireCriteria(keep_last=1)).apply(lake)
    finally:
        lake.close()
    assert _rows(v11, "SELECT count(*) FROM ducklake_view_column_tag") == [(0,)]


def test_comments_of_a_star_view_in_a_nested_schema(capsys: Cap, v11: str) -> None:
    _ok(capsys, v11, "CREATE SCHEMA a; CREATE SCHEMA a.b; CREATE TABLE a.b.t (k INT, v VARCHAR); "
                     "CREATE VIEW a.b.s (kk) AS SELECT * FROM a.b.t")
    _ok(capsys, v11, "COMMENT ON COLUMN a.b.s.kk IS 'key'; COMMENT ON COLUMN a.b.s.v IS 'value'")
    assert _rows(v11, "SELECT column_name, value FROM ducklake_view_column_tag ORDER BY column_name") == [
        ("k", "key"), ("v", "value")]
    assert _view_columns(capsys, v11, "a.b.s") == {"kk": "key", "v": "value"}  # the alias, then the rest


# ----- `_ducklake_` column names ----------------------------------------------------------------------------------

RESERVED = 'reserved by DuckLake for internal use: column names starting with "_ducklake_" are not allowed'


@pytest.mark.parametrize("sql", ["CREATE TABLE u (_ducklake_x INT)", "ALTER TABLE t ADD COLUMN _DuckLake_y INT",
                                 "ALTER TABLE t RENAME COLUMN a TO _ducklake_row_id"])
def test_ducklake_prefix_refused_on_1_1(capsys: Cap, v11: str, sql: str) -> None:
    _ok(capsys, v11, "CREATE TABLE t (a INT)")
    before = hashlib.sha256(Path(v11).read_bytes()).hexdigest()
    code, _, err = _ddl(capsys, v11, sql)
    assert code == 1 and RESERVED in err and len(err.strip().splitlines()) == 1
    assert hashlib.sha256(Path(v11).read_bytes()).hexdigest() == before


def test_plain_row_id_names_are_ordinary_on_1_1(capsys: Cap, v11: str) -> None:
    _ok(capsys, v11, "CREATE TABLE t (row_id INT, begin_snapshot INT); ALTER TABLE t ADD COLUMN end_snapshot INT; "
                     "ALTER TABLE t RENAME COLUMN row_id TO rid; ALTER TABLE t RENAME COLUMN rid TO row_id")
    assert _rows(v11, "SELECT count(*) FROM ducklake_inlined_data_tables") != [(0,)]  # and the table inlines


# ----- 1.0 refusals -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sql", ["CREATE SCHEMA s.n", "COMMENT ON COLUMN s.v.a IS 'x'"])
def test_1_0_refuses_what_needs_1_1_and_changes_nothing(capsys: Cap, v10: str, sql: str) -> None:
    before = hashlib.sha256(Path(v10).read_bytes()).hexdigest()
    code, _, err = _ddl(capsys, v10, f"CREATE TABLE s.first (a INT); {sql}")  # refused before the first commits
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "needs a DuckLake 1.1 catalog" in err and "upgrade --to 1.1" in err
    assert hashlib.sha256(Path(v10).read_bytes()).hexdigest() == before


def test_1_0_keeps_its_names_and_rules(capsys: Cap, v10: str) -> None:
    code, _, err = _ddl(capsys, v10, "CREATE TABLE x.s.t (a INT)")
    assert code == 1 and "too many parts" in err
    code, _, err = _ddl(capsys, v10, "CREATE TABLE s.u (_ducklake_x INT)")  # 1.0: an ordinary name
    assert code == 0, err
    code, _, err = _ddl(capsys, v10, "CREATE TABLE s.w (row_id INT)")  # 1.0: reserved while inlining is on
    assert code == 1 and "inlined data" in err
    assert _count(capsys, v10, "lake.s.t") == 0  # a catalog part is ignored, as before
    assert "parent_schema_id" not in {r[1] for r in _rows(v10, "PRAGMA table_info(ducklake_schema)")}


# ----- writing and reading data in nested schemas (Spark) ---------------------------------------------------------

@pytest.mark.spark
def test_write_and_read_a_table_in_a_nested_schema(capsys: Cap, v11: str, tmp_path: Path) -> None:
    """`write` into a.b.t (the schema must exist), read back through `query` by its nested name and through a view
    in the nested schema; a `_ducklake_` column from the input is refused, `row_id` is not."""
    src = tmp_path / "rows.csv"
    src.write_text("id,row_id\n1,10\n2,20\n")
    code, _, err = run_main(capsys, "write", v11, "a.b.t", "--from", str(src))
    assert code != 0 and "schema a.b does not exist" in err
    _ok(capsys, v11, "CREATE SCHEMA a; CREATE SCHEMA a.b")
    code, _, err = run_main(capsys, "write", v11, "a.b.t", "--from", str(src))
    assert code == 0, err
    (sid,) = _rows(v11, "SELECT max(snapshot_id) FROM ducklake_snapshot")[0]
    assert 'created_table:"a"."b"."t"' in _changes(v11, int(str(sid)))
    _ok(capsys, v11, "CREATE VIEW a.b.v AS SELECT id + row_id AS s FROM t")  # unqualified: the view's schema
    code, out, err = run_main(capsys, "query", v11, "SELECT t.id, v.s FROM a.b.t JOIN lake.a.b.v v ON v.s = "
                              "t.id + t.row_id ORDER BY t.id", "--format", "json")
    assert code == 0, err
    assert json.loads(out) == [{"id": 1, "s": 11}, {"id": 2, "s": 22}]
    _ok(capsys, v11, "CREATE VIEW w AS SELECT id FROM a.b.t")  # a view in main reading a nested table
    code, out, err = run_main(capsys, "query", v11, "SELECT sum(id) AS n FROM w", "--format", "json")
    assert code == 0 and json.loads(out) == [{"n": 3}], err
    bad = tmp_path / "bad.csv"
    bad.write_text("id,_ducklake_x\n1,2\n")
    code, _, err = run_main(capsys, "write", v11, "a.b.t", "--from", str(bad), "--evolve")
    assert code != 0 and RESERVED in err


def test_renames_in_a_nested_schema_name_the_full_path(capsys: Cap, v11: str) -> None:
    _ok(capsys, v11, "CREATE SCHEMA a; CREATE SCHEMA a.b; CREATE TABLE a.b.t (x INT); "
                     "CREATE VIEW a.b.v AS SELECT x FROM t")
    table, view = _ok(capsys, v11, "ALTER TABLE a.b.t RENAME TO t2; ALTER VIEW a.b.v RENAME TO v2")
    assert 'created_table:"a"."b"."t2"' in _changes(v11, table)
    assert _changes(v11, view) == 'created_view:"a"."b"."v2"'
    code, _, err = _ddl(capsys, v11, "ALTER TABLE a.b.t2 RENAME TO b.t3")
    assert code == 1 and "another schema" in err


def test_schema_options_name_a_nested_schema_by_its_path(capsys: Cap, v11: str) -> None:
    """`options --schema a.b` scopes the nested schema (a dotted path on 1.1), `"a.b"` the top-level one."""
    _ok(capsys, v11, 'CREATE SCHEMA a; CREATE SCHEMA a.b; CREATE SCHEMA "a.b"')
    code, _, err = run_main(capsys, "options", v11, "--schema", "a.b", "--set", "data_inlining_row_limit=0")
    assert code == 0, err
    nested, top = (_rows(v11, f"SELECT schema_id FROM ducklake_schema WHERE schema_name = '{n}'")[0][0]
                   for n in ("b", "a.b"))
    assert _rows(v11, "SELECT scope, scope_id FROM ducklake_metadata WHERE key = 'data_inlining_row_limit'") == [
        ("schema", nested)]
    code, _, err = run_main(capsys, "options", v11, "--schema", '"a.b"', "--set", "data_inlining_row_limit=0")
    assert code == 0, err
    assert ("schema", top) in _rows(v11, "SELECT scope, scope_id FROM ducklake_metadata WHERE scope = 'schema'")
    _ok(capsys, v11, "CREATE TABLE a.b.t (x INT)")
    assert _rows(v11, "SELECT count(*) FROM ducklake_inlined_data_tables") == [(0,)]  # the option applies there


# ----- every backend -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", backend_params(ALL_BACKENDS, default=("sqlite", "postgres")))
def test_nested_schemas_and_view_comments_on_every_backend(backend: str, capsys: Cap, tmp_path: Path,
                                                           request: pytest.FixtureRequest,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DUCKLAKE_CATALOG", raising=False)
    catalog = {"postgres": "pg_url", "mysql": "mysql_url"}.get(backend)
    catalog = request.getfixturevalue(catalog) if catalog else str(
        tmp_path / ("c.sqlite" if backend == "sqlite" else "c.ducklake"))
    code, _, err = run_main(capsys, "create-catalog", catalog, "--data-path", str(tmp_path / "data"),
                            "--format-version", "1.1")
    assert code == 0, err
    _ok(capsys, catalog, 'CREATE SCHEMA a; CREATE SCHEMA a.b; CREATE TABLE a.b.t (x INT); CREATE SCHEMA "a.b"; '
                         "CREATE VIEW a.b.v (y) AS SELECT x FROM a.b.t; COMMENT ON COLUMN a.b.v.y IS 'why'")
    (dropped,) = _ok(capsys, catalog, "DROP SCHEMA a CASCADE")
    lake = Lake.open(catalog)
    try:
        with lake.reader() as r:
            assert [sc.shown for sc in r.schemas(dropped)] == ["main", '"a.b"']
            (view,) = r.views(dropped - 1)
            assert (view.schema_name, view.column_comments()) == ("a.b", {"x": "why"})
            assert r.find_table(dropped - 1, "a.b.t").schema_path == ("a", "b")
    finally:
        lake.close()
