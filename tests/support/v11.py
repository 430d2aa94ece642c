"""DuckLake 1.1 acceptance helpers: a lake cloned and the clone upgraded to 1.1 by us, the two catalogs compared
row for row up to exactly what 1.1 changes (spec versions §2.6, §3), and the shape a 1.0 catalog must keep after
any of our writes (no 1.1 column, table, name, file or transform)."""

from __future__ import annotations

import ast
import contextlib
import re
import shutil
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import backend_for
from ducklake_cli.catalog.url import parse_catalog
from tests.support.catalog_dump import dump, run_sql, version_of
from tests.support.spot import Spot

# Rows of one catalog table: column -> value in `dump`'s text form ("NULL" for NULL).
Row = dict[str, str]
Dump = dict[str, list[Row]]

V11_TABLE_NAMES = frozenset(name for name, _, _ in s.V11_TABLES)
V11_COLUMN_NAMES = frozenset(column for _, column, _ in s.V11_COLUMNS)
_V11_BY_TABLE: dict[str, tuple[str, ...]] = {}
for _table, _column, _ in s.V11_COLUMNS:
    _V11_BY_TABLE[_table] = (*_V11_BY_TABLE.get(_table, ()), _column)
_RENAMED = dict(zip(s.INLINED_SYSTEM_V11, s.INLINED_SYSTEM_V10, strict=True))
_UUID_DIR = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/")
_DEFAULT_FIELDS = ("initial_default", "default_value", "default_value_type", "default_value_dialect")
# Values random or local by nature once our tool writes to both copies (new uuids, times, file names and sizes).
VOLATILE: dict[str, frozenset[str]] = {
    "ducklake_snapshot": frozenset({"snapshot_time"}),
    "ducklake_schema": frozenset({"schema_uuid"}),
    "ducklake_table": frozenset({"table_uuid"}),
    "ducklake_view": frozenset({"view_uuid"}),
    "ducklake_data_file": frozenset({"path", "file_size_bytes", "footer_size"}),
    "ducklake_delete_file": frozenset({"path", "file_size_bytes", "footer_size"}),
    "ducklake_files_scheduled_for_deletion": frozenset({"path", "schedule_start"}),
    "ducklake_table_stats": frozenset({"file_size_bytes"}),
}


# --------------------------------------------------------------------------------------------------------------
# cloning and upgrading


def clone(spot: Spot, dest: Path, *, stack: contextlib.ExitStack) -> Spot:
    """A private copy of `spot`'s catalog and data directory under `dest` (PostgreSQL: a new database made from the
    catalog's as a template, dropped when `stack` closes), its data path pointing at the copied data."""
    dest.mkdir(parents=True, exist_ok=True)
    data = dest / "data"
    if spot.data_path.exists():
        shutil.copytree(spot.data_path, data)
    else:
        data.mkdir()
    if spot.backend in ("sqlite", "duckdb"):
        target = str(dest / Path(spot.catalog).name)
        shutil.copyfile(spot.catalog, target)
        wal = Path(spot.catalog + ".wal")
        if wal.exists():
            shutil.copyfile(wal, target + ".wal")
    elif spot.backend == "postgres":
        target = stack.enter_context(pg_clone(spot.catalog))
    else:
        raise ValueError(f"cannot clone a {spot.backend} catalog")
    key = '"key"'
    run_sql(target, f"UPDATE {{q}} SET value = :v WHERE {key} = 'data_path' AND scope IS NULL",
            params={"v": f"{data}/"})
    return Spot(spot.backend, target, target, data)


@contextlib.contextmanager
def pg_clone(url: str) -> Iterator[str]:
    """A new PostgreSQL database copied from the one `url` names (`CREATE DATABASE … TEMPLATE`: byte for byte);
    its URL; dropped on exit. Nobody may be connected to the source meanwhile."""
    import psycopg
    from psycopg import sql

    from tests.support.services import _unique_name, _with_database, require_env

    admin = require_env("DUCKLAKE_TEST_PG")
    source_db = unquote(urlsplit(url).path.lstrip("/"))
    name = _unique_name("dlclone")
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name),
                                                                       sql.Identifier(source_db)))
    try:
        yield _with_database(admin, name)
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


# Whether `upgrade_v11` goes through `ducklake upgrade --to 1.1` (else the migration step, run straight).
VIA_CLI = True


def upgrade_v11(catalog: str) -> None:
    """Upgrade a 1.0 catalog to 1.1 as a user would (`VIA_CLI`), or by the migration step alone."""
    if VIA_CLI:
        cli_upgrade_v11(catalog)
    else:
        migrate_v11(catalog)


def cli_upgrade_v11(catalog: str, to: str = s.LATEST_VERSION) -> None:
    """`ducklake upgrade CATALOG --to TO --yes --no-backup`, in this process; the catalog then has version TO."""
    from ducklake_cli.cli.app import main

    try:
        main(["upgrade", catalog, "--to", to, "--yes", "--no-backup", "--format", "json"])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 0, f"ducklake upgrade {catalog} --to {to} exited {code}"
    assert version_of(catalog) == to


def migrate_v11(catalog: str) -> None:
    """The 1.0 -> 1.1 migration step run straight in one catalog transaction (before `upgrade --to 1.1` existed)."""
    from ducklake_cli.catalog.migrate import migrate
    from ducklake_cli.lake import Lake

    lake = Lake.open(catalog)
    try:
        with lake.connection(write=True) as conn:
            migrate(conn, lake.backend, s.FORMAT_VERSION, s.LATEST_VERSION)
    finally:
        lake.close()
    assert version_of(catalog) == s.LATEST_VERSION


# --------------------------------------------------------------------------------------------------------------
# catalog dumps


def rows_of(catalog: str) -> Dump:
    """`catalog_dump.dump` with each row as a column -> text dict."""
    return {table: [dict(ast.literal_eval(r)) for r in rows] for table, rows in dump(catalog).items()}


def is_inlined_data(table: str) -> bool:
    """An inlined-data companion (not the inlined-deletion tables, which 1.1 leaves as they are)."""
    return table.startswith("ducklake_inlined_data_") and table != "ducklake_inlined_data_tables"


_WHOLE_HOUR_OFFSET = re.compile(r"(\d\d:\d\d:\d\d(?:\.\d+)?[+-]\d\d):00$")


def _text(value: str) -> str:
    """An inlined value in the text form 1.1 stores on PostgreSQL where 0.3 used the native type (spec versions §2.6
    step 2): text from bytea, a time zone offset as DuckDB writes it (`+00`, not Python's `+00:00`)."""
    if value.startswith(("b'", 'b"')):
        raw = ast.literal_eval(value)
        with contextlib.suppress(UnicodeDecodeError):
            return str(raw.decode())
    return _WHOLE_HOUR_OFFSET.sub(r"\1", value)


def _bool(value: str) -> bool | None:
    return None if value == "NULL" else value.lower() in ("1", "true", "t")


def _key(row: Row) -> str:
    return repr(sorted(row.items()))


def _retyped(d10: Dump) -> set[tuple[str, str]]:
    """(table_id, column_id) of columns whose type changed at some snapshot (repair §2.6 step 5 may clear them)."""
    types: dict[tuple[str, str], set[str]] = {}
    for r in d10.get("ducklake_column", []):
        types.setdefault((r["table_id"], r["column_id"]), set()).add(r["column_type"])
    return {k for k, v in types.items() if len(v) > 1}


def _lost_defaults(d10: Dump) -> set[tuple[str, str, str]]:
    """(table_id, column_id, begin_snapshot) of struct fields without a default in 1.0 (repair step 4 may fill)."""
    return {(r["table_id"], r["column_id"], r["begin_snapshot"]) for r in d10.get("ducklake_column", [])
            if r["parent_column"] != "NULL" and r["initial_default"] == "NULL"}


def v10_form(d11: Dump, d10: Dump, *, data_path: bool = True, volatile: bool = False,
             upgraded: Dump | None = None) -> tuple[Dump, Dump, list[str]]:
    """Both dumps in one comparable form, normalising exactly what a 1.1 catalog may hold differently from its 1.0
    twin (spec versions §2.6, §3): the version row, 1.1's columns and table, the renamed inlined system columns,
    the repairs (missing schema_versions rows, struct-field defaults, bounds of retyped columns), PostgreSQL's
    inlined text re-stored as bytea (compared as text on both sides), and a delete file
    written since the upgrade as a multi-snapshot Puffin container where 1.0 writes Parquet (§3.6). Also the data
    path (two copies) and, when `volatile`, uuids, times, file names and sizes (both written by us). Returns
    (normalised 1.1, normalised 1.0, problems found in 1.1's own values: rows existing before the upgrade must
    have NULL 1.1 columns; rows written since, i.e. not in `upgraded`, the 1.1 catalog's dump right after the
    upgrade, must carry row_group_count and exactness)."""
    problems: list[str] = []
    retyped, lost = _retyped(d10), _lost_defaults(d10)
    sv10 = {(r["table_id"], r["schema_version"]) for r in d10.get("ducklake_schema_versions", [])}
    inlined = {(r["table_id"], r["schema_version"]) for r in d11.get("ducklake_inlined_data_tables", [])}
    before = _row_ids(upgraded) if upgraded is not None else None
    out11: Dump = {}
    out10: Dump = {}
    for table in sorted(set(d11) | set(d10)):
        rows11 = [dict(r) for r in d11.get(table, [])]
        rows10 = [dict(r) for r in d10.get(table, [])]
        if table in V11_TABLE_NAMES:
            if table in d10:
                problems.append(f"the 1.0 catalog has 1.1's table {table}")
            continue  # 1.1 only; its rows are checked by the tests that write them
        added = _V11_BY_TABLE.get(table, ())
        if is_inlined_data(table):  # §2.6 step 2 (PostgreSQL): 0.3's native text columns are stored as bytea
            for r in (*rows11, *rows10):
                r.update({k: _text(v) for k, v in r.items()})
        for r in rows11:
            if is_inlined_data(table):
                for new, old in _RENAMED.items():
                    if new in r:
                        r[old] = r.pop(new)
            new_row = _written_since(table, r, before) if added else False
            for col in added:
                value = r.pop(col, None)
                if value is None:
                    problems.append(f"{table} lacks 1.1's column {col}")
                elif new_row is False and value != "NULL":
                    problems.append(f"{table}.{col} = {value} on a row from before the upgrade: {r}")
                elif new_row and value == "NULL" and _expects(table, col, r):
                    problems.append(f"{table}.{col} is NULL on a row written after the upgrade (1.1 writes it): {r}")
            if table == "ducklake_metadata" and r.get("key") == "version" and r.get("scope") == "NULL":
                if r["value"] != s.LATEST_VERSION:
                    problems.append(f"version is {r['value']}, not {s.LATEST_VERSION}")
                r["value"] = s.FORMAT_VERSION
        for r in (*rows11, *rows10):
            if data_path and table == "ducklake_metadata" and r.get("key") == "data_path" and r.get("scope") == "NULL":
                r["value"] = "<data_path>"
            if volatile:
                for col in VOLATILE.get(table, ()):
                    if col in r:
                        r[col] = "<volatile>"
                if table in ("ducklake_schema", "ducklake_table") and _UUID_DIR.fullmatch(r.get("path", "")):
                    r["path"] = "<uuid>/"  # the directory of a schema or table whose name is not plain
        for r in rows10:
            stray = V11_COLUMN_NAMES & r.keys() if table in _V11_BY_TABLE else set()
            if stray or (is_inlined_data(table) and set(_RENAMED) & r.keys()):
                problems.append(f"the 1.0 catalog's {table} has 1.1's columns")
        if table == "ducklake_delete_file" and before is not None:  # §3.6: what 1.0 writes as Parquet instead
            containers = {r["delete_file_id"] for r in rows11 if r["format"] == "puffin" and r["partial_max"] != "NULL"
                          and _written_since(table, r, before)}
            for r in (*rows11, *rows10):
                if r["delete_file_id"] in containers:
                    r["format"] = "<multi-snapshot deletes>"
        if table == "ducklake_schema_versions":  # repair step 3: rows only 1.1 has, for inlined tables
            extra = [r for r in rows11 if (r["table_id"], r["schema_version"]) not in sv10]
            for r in extra:
                if (r["table_id"], r["schema_version"]) not in inlined:
                    problems.append(f"1.1 has a schema_versions row 1.0 lacks, not for an inlined table: {r}")
            rows11 = [r for r in rows11 if r not in extra]
        if table == "ducklake_column":  # repair step 4: defaults of struct fields given back
            for r in (*rows11, *rows10):
                if (r["table_id"], r["column_id"], r["begin_snapshot"]) in lost:
                    for f in _DEFAULT_FIELDS:
                        r[f] = "<repairable>"
        if table in ("ducklake_file_column_stats", "ducklake_table_column_stats"):  # repair step 5: bounds cleared
            _clear_like(rows11, rows10, retyped)
        out11[table] = sorted(rows11, key=_key)
        out10[table] = sorted(rows10, key=_key)
    return out11, out10, problems


# What identifies a row of a 1.1-extended table (table stats change in place: not judged).
_ROW_ID = {"ducklake_data_file": ("data_file_id",), "ducklake_delete_file": ("delete_file_id",),
           "ducklake_file_column_stats": ("data_file_id", "column_id"),
           "ducklake_schema": ("schema_id", "begin_snapshot")}


def _row_ids(d: Dump) -> dict[str, set[tuple[str, ...]]]:
    return {t: {tuple(r[c] for c in cols) for r in d.get(t, [])} for t, cols in _ROW_ID.items()}


def _written_since(table: str, row: Row, old: dict[str, set[tuple[str, ...]]] | None) -> bool | None:
    """Whether a row of a 1.1-extended table was written after the upgrade (None: unknown; without `old`, every
    row is from before). By id, not begin_snapshot: a replacing delete file keeps its first snapshot."""
    if old is None:
        return False
    if table not in _ROW_ID:
        return None
    return tuple(row[c] for c in _ROW_ID[table]) not in old[table]


def _expects(table: str, column: str, row: Row) -> bool:
    """Whether a 1.1 writer fills `column` on this new row (spec versions §3.1, §3.5): row_group_count on data
    files and Parquet delete files, exactness wherever the bound is set."""
    if column == "row_group_count":
        return table == "ducklake_data_file" or row.get("format", "parquet") in ("parquet", "NULL")
    if column in ("min_is_exact", "max_is_exact"):
        return row[column.replace("_is_exact", "_value")] != "NULL"
    return False  # parent_schema_id is NULL for top-level schemas


def _clear_like(rows11: list[Row], rows10: list[Row], retyped: set[tuple[str, str]]) -> None:
    """Where 1.1 cleared a retyped column's bound and 1.0 kept it, clear 1.0's too (nothing else may differ)."""
    def ident(r: Row) -> str:
        return _key({k: v for k, v in r.items() if k not in ("min_value", "max_value")})

    cleared = Counter(ident(r) for r in rows11 if (r["table_id"], r["column_id"]) in retyped
                      and r["min_value"] == "NULL" and r["max_value"] == "NULL")
    for r in rows10:
        i = ident(r)
        if (r["table_id"], r["column_id"]) in retyped and cleared[i] > 0:
            cleared[i] -= 1
            r["min_value"] = r["max_value"] = "NULL"


def diff_dumps(got: Mapping[str, list[Row]], want: Mapping[str, list[Row]], *, show: int = 4) -> list[str]:
    """Per table, the rows only one side has (as sorted column lists), for an assertion message."""
    out = []
    for table in sorted(set(got) | set(want)):
        a = Counter(_key(r) for r in got.get(table, []))
        b = Counter(_key(r) for r in want.get(table, []))
        only_a, only_b = sorted((a - b).elements()), sorted((b - a).elements())
        if only_a or only_b or (table in got) != (table in want):
            out.append(f"{table}: {len(only_a)} rows only in 1.1, {len(only_b)} only in 1.0"
                       + "".join(f"\n    1.1: {r}" for r in only_a[:show])
                       + "".join(f"\n    1.0: {r}" for r in only_b[:show]))
    return out


def assert_same_but_v11(catalog11: str, catalog10: str, *, volatile: bool = False,
                        upgraded: Dump | None = None) -> None:
    """The 1.1 catalog equals the 1.0 one row for row, except where 1.1 must differ (`v10_form`)."""
    n11, n10, problems = v10_form(rows_of(catalog11), rows_of(catalog10), volatile=volatile, upgraded=upgraded)
    diffs = diff_dumps(n11, n10)
    assert not problems and not diffs, "1.1 copy vs 1.0 copy:\n" + "\n".join([*problems[:8], *diffs])


def latest_snapshot(catalog: str) -> int:
    """The newest snapshot id."""
    return int(run_sql(catalog, "SELECT max(snapshot_id) FROM " + _q(catalog, "ducklake_snapshot"))[0][0])


def snapshot_ids(catalog: str) -> list[int]:
    """Every snapshot id, oldest first."""
    return [int(r[0]) for r in run_sql(catalog, "SELECT snapshot_id FROM " + _q(catalog, "ducklake_snapshot")
                                       + " ORDER BY snapshot_id")]


def _q(catalog: str, table: str) -> str:
    return backend_for(parse_catalog(catalog)).qualify(table)


# --------------------------------------------------------------------------------------------------------------
# the 1.0 shape


def v10_shape_problems(catalog: str, data_path: Path) -> list[str]:
    """Everything in a catalog (and its data path) that a 1.0 catalog must not hold: a version other than '1.0',
    1.1's columns or table, inlined companions with 1.1's system column names, a Puffin container (multi-snapshot
    deletion vectors) or an epoch partition transform."""
    backend = backend_for(parse_catalog(catalog))
    engine = backend.create_engine(read_only=True)
    problems: list[str] = []
    try:
        with engine.connect() as conn:
            tables = {t for t in backend.list_tables(conn) if t.startswith("ducklake_")}
            problems += [f"has 1.1's table {t}" for t in sorted(tables & V11_TABLE_NAMES)]
            for table, cols in _V11_BY_TABLE.items():
                have = set(backend.column_names(conn, table))
                problems += [f"{table} has 1.1's column {c}" for c in cols if c in have]
            for t in sorted(tables):
                if is_inlined_data(t):
                    first = [c.lower() for c in backend.column_names(conn, t)[:3]]
                    if tuple(first) != s.INLINED_SYSTEM_V10:
                        problems.append(f"{t} starts with {first}, not 1.0's {list(s.INLINED_SYSTEM_V10)}")
    finally:
        engine.dispose()
    version = version_of(catalog)
    if version != s.FORMAT_VERSION:
        problems.append(f"version is {version!r}")
    transforms = run_sql(catalog, "SELECT DISTINCT transform FROM " + _q(catalog, "ducklake_partition_column"))
    problems += [f"partition transform {t!r}" for (t,) in transforms if str(t).lower().startswith("epoch_")]
    for f in sorted(data_path.rglob("*")) if data_path.exists() else []:
        if f.is_file():
            with f.open("rb") as fh:
                head = fh.read(4)
            if head == b"PFA1":
                problems.append(f"{f.relative_to(data_path)} is a Puffin container (1.1's multi-snapshot vectors)")
    return problems


def puffin_files(data_path: Path) -> list[Path]:
    """Every `.puffin` file under the data path."""
    return sorted(data_path.rglob("*.puffin")) if data_path.exists() else []


def catalog_bytes(spot: Spot) -> Any:
    """What must not change when a command is refused: the file's bytes (file catalogs) or the whole dump."""
    if spot.backend in ("sqlite", "duckdb"):
        return Path(spot.catalog).read_bytes()
    return dump(spot.catalog)
