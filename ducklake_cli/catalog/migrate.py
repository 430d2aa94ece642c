"""The migration steps between DuckLake catalog versions, as DuckDB's extension runs them (spec versions §2), and
the table layout of every older version, derived from the 1.0 layout by undoing the steps.

Each step is data (columns added, tables created and renamed, a column dropped) plus the row rewrites DuckDB does,
so one description serves the plan (`ducklake upgrade --dry-run`), the migration itself, and reading an old catalog
(a private copy migrated in memory). A tolerant run re-runs a step whose parts may already exist, as DuckDB does for
the `-dev1` strings."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import text

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.create import create_table_sql
from ducklake_cli.errors import UnsupportedVersionError

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ducklake_cli.catalog.backends import Backend

Columns = list[tuple[str, str]]


@dataclass(frozen=True)
class AddColumn:
    """`ALTER TABLE … ADD COLUMN` (existing rows get the default, NULL without one)."""

    table: str
    column: str
    kind: str
    default: str | None = None  # SQL literal

    def describe(self) -> str:
        """One line for the plan."""
        fill = f" = {self.default}" if self.default not in (None, "NULL") else " (NULL)"
        return f"add column {self.table}.{self.column}{fill}"


@dataclass(frozen=True)
class CreateTable:
    """A new, empty table."""

    table: str
    columns: Columns

    def describe(self) -> str:
        """One line for the plan."""
        return f"create table {self.table}"


@dataclass(frozen=True)
class RenameTable:
    """A table renamed."""

    old: str
    new: str

    def describe(self) -> str:
        """One line for the plan."""
        return f"rename table {self.old} to {self.new}"


@dataclass(frozen=True)
class DropColumn:
    """A column dropped (irreversible: its values are gone)."""

    table: str
    column: str
    kind: str

    def describe(self) -> str:
        """One line for the plan."""
        return f"drop column {self.table}.{self.column}"


@dataclass(frozen=True)
class Rewrite:
    """Rows rewritten by a query; `count` says how many a run would touch."""

    summary: str
    table: str
    apply: Callable[[Connection, Backend, bool], int]
    count: Callable[[Connection, Backend], int]
    irreversible: bool = False

    def describe(self) -> str:
        """One line for the plan."""
        return self.summary


Op = AddColumn | CreateTable | RenameTable | DropColumn | Rewrite


@dataclass(frozen=True)
class Step:
    """One migration step from `source` to `target`."""

    source: str
    target: str
    ops: tuple[Op, ...]
    notes: tuple[str, ...] = field(default=())


def _q(backend: Backend, table: str) -> str:
    return backend.qualify(table)


def _scalar(conn: Connection, sql: str) -> int:
    return int(conn.execute(text(sql)).scalar() or 0)


# ----- the row rewrites -----------------------------------------------------------------------------------------

def _backfill_schema_versions(conn: Connection, backend: Backend, tolerant: bool) -> int:
    """One row per distinct global schema version with the first snapshot that has it (only into an empty table
    when re-run)."""
    sv, sn = _q(backend, "ducklake_schema_versions"), _q(backend, "ducklake_snapshot")
    if tolerant and _scalar(conn, f"SELECT COUNT(*) FROM {sv}"):
        return 0
    return conn.execute(text(f"INSERT INTO {sv}(begin_snapshot, schema_version) SELECT MIN(snapshot_id), "
                             f"schema_version FROM {sn} GROUP BY schema_version")).rowcount or 0


def _count_schema_versions(conn: Connection, backend: Backend) -> int:
    return _scalar(conn, f"SELECT COUNT(DISTINCT schema_version) FROM {_q(backend, 'ducklake_snapshot')}")


def _literal_defaults(conn: Connection, backend: Backend, tolerant: bool) -> int:
    col = _q(backend, "ducklake_column")
    return conn.execute(text(f"UPDATE {col} SET default_value_type = 'literal' "
                             "WHERE default_value_type IS NULL")).rowcount or 0


def _count_columns(conn: Connection, backend: Backend) -> int:
    return _scalar(conn, f"SELECT COUNT(*) FROM {_q(backend, 'ducklake_column')}")


_PARTIAL_MAX = re.compile(r"partial_max:(\d+)")
_BIGINT_MAX = (1 << 63) - 1


def _partial_max(conn: Connection, backend: Backend, tolerant: bool) -> int:
    """`partial_max:<N>` inside `partial_file_info` becomes the `partial_max` column; other encodings are lost
    with the column, as in DuckDB."""
    df = _q(backend, "ducklake_data_file")
    if tolerant and "partial_file_info" not in backend.column_names(conn, "ducklake_data_file"):
        return 0
    rows = conn.execute(text(f"SELECT data_file_id, partial_file_info FROM {df} "
                             "WHERE partial_file_info LIKE '%partial_max:%'")).all()
    updates = []
    for file_id, info in rows:
        found = _PARTIAL_MAX.search(str(info))
        value = int(found.group(1)) if found else None
        updates.append({"id": file_id, "v": value if value is not None and value <= _BIGINT_MAX else None})
    if updates:
        conn.execute(text(f"UPDATE {df} SET partial_max = :v WHERE data_file_id = :id"), updates)
    return len(updates)


def _count_partial(conn: Connection, backend: Backend) -> int:
    return _scalar(conn, f"SELECT COUNT(*) FROM {_q(backend, 'ducklake_data_file')} "
                         "WHERE partial_file_info IS NOT NULL")


def _per_table_schema_versions(conn: Connection, backend: Backend, tolerant: bool) -> int:
    """Each global schema-version row becomes a row per table alive at its snapshot (a table row ending there
    counts too, as in DuckDB); the global rows are then deleted."""
    sv, t = _q(backend, "ducklake_schema_versions"), _q(backend, "ducklake_table")
    added = conn.execute(text(
        f"INSERT INTO {sv}(table_id, begin_snapshot, schema_version) "
        f"SELECT t.table_id, sv.begin_snapshot, sv.schema_version FROM {sv} sv JOIN {t} t "
        "ON sv.begin_snapshot BETWEEN t.begin_snapshot AND COALESCE(t.end_snapshot, sv.begin_snapshot) "
        "WHERE sv.table_id IS NULL")).rowcount or 0
    conn.execute(text(f"DELETE FROM {sv} WHERE table_id IS NULL"))
    return added


def _count_global_schema_versions(conn: Connection, backend: Backend) -> int:
    return _scalar(conn, f"SELECT COUNT(*) FROM {_q(backend, 'ducklake_schema_versions')}")


def _spec_columns(name: str) -> Columns:
    return list(next(cols for n, cols, _ in s.SPEC_TABLES if n == name))


def _created(name: str) -> CreateTable:
    return CreateTable(name, _spec_columns(name))


STEPS: tuple[Step, ...] = (
    Step("0.2", "0.3", (
        AddColumn("ducklake_name_mapping", "is_partition", s.BOOLEAN, "false"),
        AddColumn("ducklake_snapshot_changes", "author", s.VARCHAR, "NULL"),
        AddColumn("ducklake_snapshot_changes", "commit_message", s.VARCHAR, "NULL"),
        AddColumn("ducklake_snapshot_changes", "commit_extra_info", s.VARCHAR, "NULL"),
        CreateTable("ducklake_schema_versions", [("begin_snapshot", s.BIGINT), ("schema_version", s.BIGINT)]),
        Rewrite("fill ducklake_schema_versions: one row per schema version, at its first snapshot",
                "ducklake_schema_versions", _backfill_schema_versions, _count_schema_versions),
        RenameTable("ducklake_file_column_statistics", "ducklake_file_column_stats"),
        AddColumn("ducklake_file_column_stats", "extra_stats", s.VARCHAR, "NULL"),
        AddColumn("ducklake_table_column_stats", "extra_stats", s.VARCHAR, "NULL"),
    )),
    Step("0.3", "0.4", (
        _created("ducklake_macro"),
        _created("ducklake_macro_impl"),
        _created("ducklake_macro_parameters"),
        AddColumn("ducklake_column", "default_value_type", s.VARCHAR, "'literal'"),
        Rewrite("set ducklake_column.default_value_type = 'literal' where it is NULL", "ducklake_column",
                _literal_defaults, _count_columns),
        AddColumn("ducklake_column", "default_value_dialect", s.VARCHAR, "NULL"),
        _created("ducklake_sort_info"),
        _created("ducklake_sort_expression"),
        _created("ducklake_file_variant_stats"),
        AddColumn("ducklake_schema_versions", "table_id", s.BIGINT),
        AddColumn("ducklake_data_file", "partial_max", s.BIGINT),
        AddColumn("ducklake_delete_file", "partial_max", s.BIGINT),
        Rewrite("copy 'partial_max:<N>' from ducklake_data_file.partial_file_info into partial_max",
                "ducklake_data_file", _partial_max, _count_partial),
        DropColumn("ducklake_data_file", "partial_file_info", s.VARCHAR),
        Rewrite("split global ducklake_schema_versions rows into one row per table, then delete the global rows",
                "ducklake_schema_versions", _per_table_schema_versions, _count_global_schema_versions,
                irreversible=True),
    ), notes=("irreversible: ducklake_data_file.partial_file_info is dropped after 'partial_max:<N>' is copied "
              "out of it; any other content of that column is lost, as in DuckDB's migration",)),
    Step("0.4", "1.0", ()),
)
_DEV_STEP = {"0.3-dev1": "0.2", "0.4-dev1": "0.3"}  # a dev string re-runs the step that produced it, tolerantly


def path(source: str, target: str = s.FORMAT_VERSION) -> list[tuple[Step, bool]]:
    """The steps from `source` to `target`, each with whether it runs tolerantly (dev strings)."""
    out: list[tuple[Step, bool]] = []
    current, tolerant = _DEV_STEP.get(source, source), source in _DEV_STEP
    for step in STEPS:
        if step.source == current and current != target:
            out.append((step, tolerant))
            current, tolerant = step.target, False
    if current != target:
        raise ValueError(f"no migration path from {source} to {target}")
    return out


def layout(version: str) -> s.Layout:
    """The catalog tables and columns of one version (1.0's, with every later step undone)."""
    tables: dict[str, Columns] = {name: list(cols) for name, cols, _ in s.SPEC_TABLES}
    keys = {name: pk for name, _, pk in s.SPEC_TABLES}
    base = _DEV_STEP.get(version, version)
    for step in reversed(STEPS):
        if _order(step.source) < _order(base):
            break
        for op in reversed(step.ops):
            if isinstance(op, AddColumn):
                tables[op.table] = [c for c in tables[op.table] if c[0] != op.column]
            elif isinstance(op, CreateTable):
                del tables[op.table]
            elif isinstance(op, RenameTable):
                tables[op.old] = tables.pop(op.new)
                keys[op.old] = keys.pop(op.new, None)
            elif isinstance(op, DropColumn):
                tables[op.table].append((op.column, op.kind))
    return [(name, cols, keys.get(name)) for name, cols in tables.items()]


def _order(version: str) -> int:
    return [st.source for st in STEPS].index(version) if version != s.FORMAT_VERSION else len(STEPS)


def _required(version: str) -> list[tuple[tuple[str, ...], list[str]]]:
    """(the names a table may have, the columns it must have) for a catalog of `version`. A `-dev1` catalog may
    hold any part of the step it stands in: only what both ends of that step have is required, a renamed table
    under either name."""
    if version not in _DEV_STEP:
        return [((name,), [c for c, _ in cols]) for name, cols, _ in layout(version)]
    step = next(st for st in STEPS if st.source == _DEV_STEP[version])
    renamed = {op.old: op.new for op in step.ops if isinstance(op, RenameTable)}
    after = {name: {c for c, _ in cols} for name, cols, _ in layout(step.target)}
    return [((name, renamed[name]) if name in renamed else (name,),
             [c for c, _ in cols if c in after.get(renamed.get(name, name), set())])
            for name, cols, _ in layout(step.source) if renamed.get(name, name) in after]


def catalog_layout(conn: Connection, backend: Backend, version: str) -> s.Layout:
    """The tables of this catalog as its version has them; a `-dev1` catalog's as they are (what the step it
    stands in left: tables under their old or new name, with the columns of either end that exist)."""
    if version not in _DEV_STEP:
        return layout(version)
    step = next(st for st in STEPS if st.source == _DEV_STEP[version])
    present = backend.list_tables(conn)
    kinds = {(name, c): k for v in (step.source, step.target) for name, cols, _ in layout(v) for c, k in cols}
    keys = {name: pk for v in (step.source, step.target) for name, _, pk in layout(v)}
    out: s.Layout = []
    for name in dict.fromkeys(n for v in (step.source, step.target) for n, _, _ in layout(v)):
        if name in present:
            have = backend.column_names(conn, name)
            out.append((name, [(c, kinds[(name, c)]) for c in have if (name, c) in kinds], keys.get(name)))
    return out


def missing_columns(conn: Connection, backend: Backend, version: str) -> list[str]:
    """`table.column` (or `table`) the version's layout has and the catalog lacks: a catalog whose version string
    does not match its tables (a fork, a half-migrated catalog)."""
    present = backend.list_tables(conn)
    out: list[str] = []
    for names, cols in _required(version):
        name = next((n for n in names if n in present), None)
        if name is None:
            out.append(names[0])
            continue
        have = {c.lower() for c in backend.column_names(conn, name)}
        out += [f"{name}.{c}" for c in cols if c.lower() not in have]
    return out


def check_layout(conn: Connection, backend: Backend, version: str) -> None:
    """Refuse a catalog whose tables do not match its version string (nothing is read or changed)."""
    missing = missing_columns(conn, backend, version)
    if missing:
        raise UnsupportedVersionError(
            f"{backend.target.display()} says DuckLake {version} but lacks {', '.join(missing[:4])}; nothing was "
            "read or changed", hint="a fork's or a half-migrated catalog: restore it from a backup, or copy or "
            "migrate it with the tool that wrote it")


def _exists(conn: Connection, backend: Backend, table: str, column: str | None = None) -> bool:
    if table not in backend.list_tables(conn):
        return False
    return column is None or column.lower() in {c.lower() for c in backend.column_names(conn, table)}


def _fault(point: str) -> None:
    """Test-only fault injection: `DUCKLAKE_FAULT_AT=<point>` kills the process there (checks the upgrade's
    crash safety against a real SIGKILL)."""
    if os.environ.get("DUCKLAKE_FAULT_AT") == point:
        os.kill(os.getpid(), signal.SIGKILL)


def run_op(conn: Connection, backend: Backend, op: Op, *, tolerant: bool) -> int:
    """Apply one operation; returns the rows it rewrote (0 for DDL). Tolerant: skip what is already done."""
    if isinstance(op, AddColumn):
        if tolerant and _exists(conn, backend, op.table, op.column):
            return 0
        default = f" DEFAULT {op.default}" if op.default is not None else ""
        conn.exec_driver_sql(f"ALTER TABLE {_q(backend, op.table)} ADD COLUMN {backend.quote(op.column)} "
                             f"{backend.ddl_types[op.kind]}{default}")
    elif isinstance(op, CreateTable):
        if tolerant and _exists(conn, backend, op.table):
            return 0
        conn.exec_driver_sql(create_table_sql(backend, op.table, op.columns, None))
    elif isinstance(op, RenameTable):
        if tolerant and not _exists(conn, backend, op.old):
            return 0
        conn.exec_driver_sql(backend.rename_table_sql(op.old, op.new))
    elif isinstance(op, DropColumn):
        if tolerant and not _exists(conn, backend, op.table, op.column):
            return 0
        conn.exec_driver_sql(f"ALTER TABLE {_q(backend, op.table)} DROP COLUMN {backend.quote(op.column)}")
    else:
        return op.apply(conn, backend, tolerant)
    return 0


def set_version(conn: Connection, backend: Backend, version: str) -> None:
    """The catalog's version string (DuckDB's statement: every `version` row)."""
    conn.execute(text(f"UPDATE {_q(backend, 'ducklake_metadata')} SET value = :v "
                      f"WHERE {backend.quote('key')} = 'version'"), {"v": version})


def migrate(conn: Connection, backend: Backend, source: str, target: str = s.FORMAT_VERSION) -> dict[str, int]:
    """Run every step from `source` to `target` on the open transaction; rows rewritten per step."""
    done: dict[str, int] = {}
    for step, tolerant in path(source, target):
        rows = 0
        for i, op in enumerate(step.ops):
            _fault(f"{step.source}-{step.target}:{i}")
            rows += run_op(conn, backend, op, tolerant=tolerant)
        set_version(conn, backend, step.target)
        _fault(f"{step.source}-{step.target}:done")
        done[f"{step.source} -> {step.target}"] = rows
    return done


def op_rows(conn: Connection, backend: Backend, op: Op) -> int | None:
    """Rows one operation touches on this catalog (None: a new table or a rename, no rows)."""
    if isinstance(op, Rewrite):  # a table an earlier step creates has no rows yet
        return op.count(conn, backend) if _exists(conn, backend, op.table) else 0
    if isinstance(op, AddColumn | DropColumn) and _exists(conn, backend, op.table):
        return _scalar(conn, f"SELECT COUNT(*) FROM {_q(backend, op.table)}")
    return None
