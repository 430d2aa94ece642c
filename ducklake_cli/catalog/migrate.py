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


def _companions(conn: Connection, backend: Backend) -> list[tuple[str, list[str]]]:
    """Every registered inlined-data table with its columns in order (a registered table that is missing is a
    broken catalog: refused, as DuckDB's migration does)."""
    present = backend.list_tables(conn)
    out: list[tuple[str, list[str]]] = []
    names = [str(r[0]) for r in conn.execute(text(
        f"SELECT DISTINCT table_name FROM {_q(backend, 'ducklake_inlined_data_tables')} ORDER BY table_name"))]
    for name in names:
        if name not in present:
            raise UnsupportedVersionError(
                f"{backend.target.display()} registers the inlined-data table {name}, which does not exist; nothing "
                "was changed", hint="run `ducklake verify` and restore the catalog from a backup")
        out.append((name, backend.column_names(conn, name)))
    return out


def inlined_renames(conn: Connection, backend: Backend) -> list[tuple[str, str, str]]:
    """`(inlined table, old column, new column)` for every system column 1.1 renames (spec versions §2.6 step 1);
    refuses a table whose leading columns are neither 1.0's nor 1.1's names, or whose user columns take a new
    name."""
    out: list[tuple[str, str, str]] = []
    for name, cols in _companions(conn, backend):
        if len(cols) < 3:
            raise UnsupportedVersionError(
                f"inlined-data table {name} has an unexpected column layout ({', '.join(cols)}); nothing was "
                "changed", hint="run `ducklake verify`; flush or restore the table before upgrading")
        for pos, (old, new) in enumerate(zip(s.INLINED_SYSTEM_V10, s.INLINED_SYSTEM_V11, strict=True)):
            have = cols[pos]
            if have.lower() == new:
                continue
            if have.lower() != old:
                raise UnsupportedVersionError(
                    f"inlined-data table {name} has an unexpected column layout (column {pos + 1} is {have!r}); "
                    "nothing was changed", hint="run `ducklake verify`; flush or restore the table before upgrading")
            out.append((name, have, new))
        clash = [c for c in cols[3:] if c.lower() in s.INLINED_SYSTEM_V11]
        if clash:
            raise UnsupportedVersionError(
                f"inlined-data table {name} has a user column {clash[0]!r} colliding with a renamed system column; "
                "nothing was changed", hint="rename the column and flush the inlined data (`ducklake maintain "
                "flush`) before upgrading")
    return out


def _rename_inlined(conn: Connection, backend: Backend, tolerant: bool) -> int:
    renames = inlined_renames(conn, backend)
    for name, old, new in renames:
        conn.exec_driver_sql(f"ALTER TABLE {_q(backend, name)} RENAME COLUMN {backend.quote(old)} TO "
                             f"{backend.quote(new)}")
    return len(renames)


def _count_inlined_renames(conn: Connection, backend: Backend) -> int:
    return len(inlined_renames(conn, backend))


def _legacy_inlined_alters(conn: Connection, backend: Backend) -> list[str]:
    """The statements giving inlined-data tables of DuckLake 0.3 today's storage types (PostgreSQL only)."""
    if not backend.legacy_inlined_session_sql():
        return []
    from ducklake_cli.catalog.inlined import stored_type
    from ducklake_cli.catalog.reader import MetadataReader

    class Reader(MetadataReader):
        """Reads what 1.0 has: the plan runs this before 1.1's columns exist (a 1.1-dev1 may lack some)."""

        @property
        def v11(self) -> bool:
            return False

    reader = Reader(conn, backend)
    present = backend.list_tables(conn)
    begins = {int(t): int(b) for t, b in conn.execute(text(
        f"SELECT table_id, MIN(begin_snapshot) FROM {_q(backend, 'ducklake_table')} GROUP BY table_id")).all()}
    out: list[str] = []
    for table_id, name, version in conn.execute(text(
            f"SELECT table_id, table_name, schema_version FROM {_q(backend, 'ducklake_inlined_data_tables')} "
            "ORDER BY table_id, schema_version")).all():
        if name not in present:
            continue
        at = reader.schema_version_snapshot(int(table_id), int(version), begins.get(int(table_id), 0))
        found = reader.tables(at, table_ids=[int(table_id)])
        if found:
            columns = [(c.name, c.type, stored_type(c)) for c in found[0].columns]
            out += backend.legacy_inlined_types_sql(conn, str(name), columns)
    return out


def _legacy_inlined_types(conn: Connection, backend: Backend, tolerant: bool) -> int:
    """DuckLake 0.3's inlined strings, dates and timestamps in PostgreSQL's native types become what 0.4 and later
    store (spec versions §2.6 step 2)."""
    alters = _legacy_inlined_alters(conn, backend)
    if alters:
        for setting in backend.legacy_inlined_session_sql():
            conn.exec_driver_sql(setting)
        for alter in alters:
            conn.exec_driver_sql(alter)
    return len(alters)


def _count_legacy_inlined(conn: Connection, backend: Backend) -> int:
    return len(_legacy_inlined_alters(conn, backend))


_MISSING_VERSIONS = (
    "FROM {idt} i JOIN {sn} cur ON i.schema_version <= cur.schema_version "
    "JOIN {sn} prev ON prev.snapshot_id = cur.snapshot_id - 1 AND prev.schema_version < i.schema_version "
    "WHERE NOT EXISTS (SELECT 1 FROM {sv} v WHERE v.table_id = i.table_id AND v.schema_version = i.schema_version) "
    "AND (SELECT COUNT(*) FROM {sv} w WHERE w.table_id = i.table_id AND w.begin_snapshot <= cur.snapshot_id) > 1")


def _missing_versions(conn: Connection, backend: Backend) -> list[tuple[int, int, int]]:
    """`(snapshot, schema version, table)` rows `ducklake_schema_versions` lacks for an inlined-data table: the
    commit that stepped the global schema version over the inlined table's version (spec versions §2.6 step 3)."""
    sql = _MISSING_VERSIONS.format(idt=_q(backend, "ducklake_inlined_data_tables"),
                                   sn=_q(backend, "ducklake_snapshot"), sv=_q(backend, "ducklake_schema_versions"))
    rows = conn.execute(text(f"SELECT MIN(cur.snapshot_id), i.schema_version, i.table_id {sql} "
                             "GROUP BY i.table_id, i.schema_version")).all()
    return [(int(a), int(b), int(c)) for a, b, c in rows]


def _repair_schema_versions(conn: Connection, backend: Backend, tolerant: bool) -> int:
    missing = _missing_versions(conn, backend)
    if missing:
        conn.execute(text(f"INSERT INTO {_q(backend, 'ducklake_schema_versions')}(begin_snapshot, schema_version, "
                          "table_id) VALUES (:b, :v, :t)"), [{"b": b, "v": v, "t": t} for b, v, t in missing])
    return len(missing)


def _count_missing_versions(conn: Connection, backend: Backend) -> int:
    return len(_missing_versions(conn, backend))


_LOST_DEFAULTS = ("FROM {col} c WHERE c.parent_column IS NOT NULL AND c.initial_default IS NULL AND EXISTS ("
                  "SELECT 1 FROM {col} p WHERE p.table_id = c.table_id AND p.column_id = c.column_id "
                  "AND p.begin_snapshot < c.begin_snapshot AND p.initial_default IS NOT NULL)")


def _repair_struct_defaults(conn: Connection, backend: Backend, tolerant: bool) -> int:
    """Struct fields whose default an older writer lost on RENAME get it back from their latest earlier row (spec
    versions §2.6 step 4)."""
    col = _q(backend, "ducklake_column")
    rows = conn.execute(text(f"SELECT c.table_id, c.column_id, c.begin_snapshot {_LOST_DEFAULTS.format(col=col)}"))
    updates = []
    for table_id, column_id, begin in rows.all():
        src = conn.execute(text(
            f"SELECT initial_default, default_value, default_value_type, default_value_dialect FROM {col} "
            "WHERE table_id = :t AND column_id = :c AND begin_snapshot < :b AND initial_default IS NOT NULL "
            "ORDER BY begin_snapshot DESC LIMIT 1"), {"t": table_id, "c": column_id, "b": begin}).one()
        updates.append({"t": table_id, "c": column_id, "b": begin, "i": src[0], "d": src[1], "k": src[2],
                        "l": src[3]})
    if updates:
        conn.execute(text(
            f"UPDATE {col} SET initial_default = :i, default_value = :d, default_value_type = :k, "
            "default_value_dialect = :l WHERE table_id = :t AND column_id = :c AND begin_snapshot = :b"), updates)
    return len(updates)


def _count_lost_defaults(conn: Connection, backend: Backend) -> int:
    return _scalar(conn, f"SELECT COUNT(*) {_LOST_DEFAULTS.format(col=_q(backend, 'ducklake_column'))}")


_RETYPED = ("SELECT table_id, column_id FROM {col} GROUP BY table_id, column_id "
            "HAVING COUNT(DISTINCT column_type) > 1")


def _clear_retyped_bounds(conn: Connection, backend: Backend, tolerant: bool) -> int:
    """Bounds of columns whose type ever changed are cleared: an older writer may have kept them in the old type,
    which re-parses to a narrower bound (spec versions §2.6 step 5; NULL bounds cost only pruning)."""
    retyped = _RETYPED.format(col=_q(backend, "ducklake_column"))
    done = 0
    for table in ("ducklake_table_column_stats", "ducklake_file_column_stats"):
        done += conn.execute(text(
            f"UPDATE {_q(backend, table)} SET min_value = NULL, max_value = NULL WHERE "
            "(min_value IS NOT NULL OR max_value IS NOT NULL) AND EXISTS (SELECT 1 FROM "
            f"({retyped}) r WHERE r.table_id = {_q(backend, table)}.table_id AND "
            f"r.column_id = {_q(backend, table)}.column_id)")).rowcount or 0
    return done


def _count_retyped_bounds(conn: Connection, backend: Backend) -> int:
    retyped = _RETYPED.format(col=_q(backend, "ducklake_column"))
    return sum(_scalar(conn, f"SELECT COUNT(*) FROM {_q(backend, t)} x JOIN ({retyped}) r ON r.table_id = "
                             "x.table_id AND r.column_id = x.column_id WHERE x.min_value IS NOT NULL OR "
                             "x.max_value IS NOT NULL")
               for t in ("ducklake_table_column_stats", "ducklake_file_column_stats"))


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
    Step("1.0", "1.1", (
        Rewrite("rename the inlined-data tables' row_id, begin_snapshot, end_snapshot to _ducklake_row_id, "
                "_ducklake_begin_snapshot, _ducklake_end_snapshot", "ducklake_inlined_data_tables",
                _rename_inlined, _count_inlined_renames, irreversible=True),
        # Columns before the row repairs: a DuckDB file cannot ALTER a table this transaction already updated.
        *(AddColumn(table, column, kind) for table, column, kind in s.V11_COLUMNS),
        *(CreateTable(name, cols) for name, cols, _ in s.V11_TABLES),
        Rewrite("PostgreSQL: store DuckLake 0.3's inlined strings, dates and timestamps as 0.4 and later do",
                "ducklake_inlined_data_tables", _legacy_inlined_types, _count_legacy_inlined),
        Rewrite("add the ducklake_schema_versions rows older writers left out for inlined-data tables",
                "ducklake_schema_versions", _repair_schema_versions, _count_missing_versions),
        Rewrite("give renamed struct fields back the defaults older writers lost", "ducklake_column",
                _repair_struct_defaults, _count_lost_defaults),
        Rewrite("clear the min/max bounds of columns whose type changed (older writers kept the old type's)",
                "ducklake_table_column_stats", _clear_retyped_bounds, _count_retyped_bounds),
    ), notes=("irreversible: DuckDB 1.5 and older cannot read a 1.1 catalog (its inlined-data tables' system "
              "columns are renamed), and no tool lowers the version again; every client must support DuckLake 1.1 "
              "(DuckDB 2.0) first",)),
)
# A dev string re-runs the step that produced it, tolerantly.
_DEV_STEP = {"0.3-dev1": "0.2", "0.4-dev1": "0.3", "1.1-dev1": "1.0"}


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
    """The catalog tables and columns of one version (1.1's, with every later step undone)."""
    tables: dict[str, Columns] = {name: list(cols) for name, cols, _ in s.SPEC_TABLES_V11}
    keys = {name: pk for name, _, pk in s.SPEC_TABLES_V11}
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
    return [st.source for st in STEPS].index(version) if version != s.LATEST_VERSION else len(STEPS)


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


def missing_v11(conn: Connection, backend: Backend) -> list[str]:
    """`table.column` (or `table`) of what DuckLake 1.1 adds that the catalog lacks: a 1.1 version string does not
    prove them (a nightly's `1.1-dev1` grew them over time; a fork wrote `1.1` before they existed). Probes only the
    tables 1.1 changes."""
    present = backend.list_tables(conn)
    out: list[str] = []
    wanted: dict[str, list[str]] = {}
    for table, column, _ in s.V11_COLUMNS:
        wanted.setdefault(table, []).append(column)
    for table, columns in wanted.items():
        have = {c.lower() for c in backend.column_names(conn, table)} if table in present else set()
        out += [f"{table}.{c}" for c in columns if c not in have]
    return out + [name for name, _, _ in s.V11_TABLES if name not in present]


def effective_version(conn: Connection, backend: Backend, version: str) -> str:
    """The version whose tables the catalog has: a `1.1` without 1.1's additions (a fork's) is a `1.1-dev1`."""
    return "1.1-dev1" if version == s.LATEST_VERSION and missing_v11(conn, backend) else version


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


def add_v11_tables(conn: Connection, backend: Backend) -> None:
    """The columns and tables of DuckLake 1.1 a catalog lacks, and the version `1.1` (no row rewrites: for a private
    copy of spec tables only, so a 1.1 reader can read it)."""
    step = next(st for st in STEPS if st.target == s.LATEST_VERSION)
    for op in step.ops:
        if isinstance(op, AddColumn | CreateTable):
            run_op(conn, backend, op, tolerant=True)
    set_version(conn, backend, s.LATEST_VERSION)


def op_rows(conn: Connection, backend: Backend, op: Op) -> int | None:
    """Rows one operation touches on this catalog (None: a new table or a rename, no rows)."""
    if isinstance(op, Rewrite):  # a table an earlier step creates has no rows yet
        return op.count(conn, backend) if _exists(conn, backend, op.table) else 0
    if isinstance(op, AddColumn | DropColumn) and _exists(conn, backend, op.table):
        return _scalar(conn, f"SELECT COUNT(*) FROM {_q(backend, op.table)}")
    return None
