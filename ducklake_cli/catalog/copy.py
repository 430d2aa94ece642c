"""Copy every `ducklake_*` table of one catalog into an empty one on any backend, in batches, with each backend's
own column types, and verify the copy row for row (an order-free digest of the normalised rows per table)."""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, Table, insert, select

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import Backend, backend_for
from ducklake_cli.catalog.create import create_table_sql
from ducklake_cli.catalog.inlined import stored_type, to_duckdb_text
from ducklake_cli.catalog.migrate import (
    add_v11_tables,
    catalog_layout,
    check_layout,
    effective_version,
    migrate,
    missing_v11,
)
from ducklake_cli.catalog.models import ColumnInfo
from ducklake_cli.catalog.queries import FileQueries, as_bool, batches
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.catalog.schema import build_tables
from ducklake_cli.catalog.types import INT_TYPES
from ducklake_cli.catalog.url import CatalogTarget
from ducklake_cli.catalog.versions import IN_PLACE, is_v11, read_version, refusal
from ducklake_cli.errors import CatalogExistsError, NotADuckLakeError

_MOD = 1 << 128
_INLINED_DELETE = re.compile(re.escape(s.INLINED_DELETE_PREFIX) + r"\d+$")
_DELETE_COLUMNS = ("file_id", "row_id", "begin_snapshot")
# Spec tables holding a path that may be absolute (path_is_relative false).
_PATH_TABLES = {"ducklake_schema", "ducklake_table", "ducklake_data_file", "ducklake_delete_file",
                "ducklake_files_scheduled_for_deletion"}


@dataclass
class Digest:
    """Row count and an order-free sum of row hashes: equal digests mean equal multisets of rows."""

    rows: int = 0
    total: int = 0

    def add(self, row: Sequence[Any]) -> None:
        """Count one normalised row."""
        h = hashlib.blake2b(repr(tuple(row)).encode("utf-8"), digest_size=16).digest()
        self.rows += 1
        self.total = (self.total + int.from_bytes(h, "big")) % _MOD


@dataclass
class TableCopy:
    """One copied table: rows read from the source and the two digests."""

    name: str
    source: Digest = field(default_factory=Digest)
    copy: Digest = field(default_factory=Digest)

    @property
    def matches(self) -> bool:
        """Whether the destination holds exactly the source's rows."""
        return self.source == self.copy


@dataclass(frozen=True)
class InlinedPlan:
    """An inlined-data table and the DuckLake columns it stores (as the table was at its schema version)."""

    name: str
    columns: tuple[ColumnInfo, ...]
    physical: tuple[str, ...]
    sqlite_sql: str | None = None  # a SQLite source's own CREATE TABLE: a SQLite copy gets it and the stored values
    system: tuple[str, str, str] = s.INLINED_SYSTEM_V10  # row id, begin, end columns (1.1: `_ducklake_` names)


@dataclass(frozen=True)
class CopyPlan:
    """What a copy will create and fill, decided from the source before anything is written."""

    version: str
    layout: s.Layout  # the source version's spec tables (those present), created alike in the copy
    inlined: tuple[InlinedPlan, ...]
    inlined_deletes: tuple[str, ...]
    old_data_path: str

    @property
    def spec(self) -> tuple[str, ...]:
        """The spec tables, in creation order."""
        return tuple(name for name, _, _ in self.layout)

    def table_names(self) -> list[str]:
        """Every table the destination gets, spec tables first."""
        return [*self.spec, *(p.name for p in self.inlined), *self.inlined_deletes]


def plan_copy(conn: Connection, backend: Backend, *, spec_only: bool = False) -> CopyPlan:
    """Read the source's version, tables and the columns of its inlined-data tables; refuse versions this tool
    cannot read, a catalog whose tables do not match its version, and `ducklake_*` tables this tool cannot type.
    An older version's inlined tables are typed from a migrated copy of its spec tables made here."""
    version = read_version(conn, backend)
    refused = refusal(version, where=backend.target.display(), writing=False)
    if refused is not None:
        raise refused
    assert version is not None
    version = effective_version(conn, backend, version)  # a fork's column-less `1.1` is copied as a 1.1-dev1
    check_layout(conn, backend, version)
    present = backend.list_tables(conn)
    t = s.metadata_t
    old_root = conn.execute(select(t.c.value).where(t.c.key == "data_path", t.c.scope.is_(None))).scalar() or ""
    spec_layout = catalog_layout(conn, backend, version)
    deletes = sorted(n for n in present if _INLINED_DELETE.match(n))
    plan = CopyPlan(version, spec_layout, (), tuple(deletes), old_root)
    if spec_only:
        return plan
    # 1.0 and 1.1 passed check_layout; a 1.1-dev1 is read in place only with every 1.1 addition.
    if version in IN_PLACE and (version != "1.1-dev1" or not missing_v11(conn, backend)):
        inlined = plan_inlined(conn, backend, conn, backend, present)
    else:
        with tempfile.TemporaryDirectory(prefix="ducklake-plan-") as tmp:
            meta, mb = migrated_spec_copy(conn, backend, plan, Path(tmp) / "catalog.sqlite")
            try:
                with meta.connect() as mconn:
                    inlined = plan_inlined(conn, backend, mconn, mb, present)
            finally:
                meta.dispose()
    known = {name for name, _, _ in spec_layout} | {p.name for p in inlined} | set(deletes)
    unknown = sorted(n for n in present if n.startswith("ducklake_") and n not in known)
    if unknown:
        raise NotADuckLakeError(f"cannot copy {len(unknown)} unknown catalog table(s): {', '.join(unknown[:5])}; "
                                "nothing was changed", hint="the catalog may come from a newer DuckLake version")
    return replace(plan, inlined=tuple(inlined))


def plan_inlined(conn: Connection, backend: Backend, meta: Connection, meta_backend: Backend,
                 present: set[str]) -> list[InlinedPlan]:
    """The inlined-data tables of `conn` with their DuckLake columns, read from `meta` (a 1.0 catalog with the
    same rows: the source itself, or its migrated copy)."""
    reader = MetadataReader(meta, meta_backend)
    inlined: list[InlinedPlan] = []
    it, tt = s.inlined_tables_t, s.table_t
    begins = {int(r.table_id): int(r.begin_snapshot) for r in meta.execute(select(tt.c.table_id, tt.c.begin_snapshot))}
    queries = FileQueries(conn, backend)
    for r in meta.execute(select(it).order_by(it.c.table_id, it.c.schema_version)).all():
        if r.table_name not in present or any(p.name == r.table_name for p in inlined):
            continue
        at = reader.schema_version_snapshot(int(r.table_id), int(r.schema_version),
                                            begins.get(int(r.table_id), 0))
        versions = reader.tables(at, table_ids=[int(r.table_id)])
        if not versions:
            raise NotADuckLakeError(f"cannot copy {r.table_name}: table {r.table_id} has no columns at snapshot {at}")
        columns = tuple(versions[0].columns)
        physical = tuple(queries.inlined_column_names(r.table_name, columns))
        own = (conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                                    (r.table_name,)).scalar() if backend.name == "sqlite" else None)
        inlined.append(InlinedPlan(r.table_name, columns, physical, own, queries.inlined_system(r.table_name)))
    return inlined


def migrated_spec_copy(conn: Connection, backend: Backend, plan: CopyPlan, path: Path) -> tuple[Engine, Backend]:
    """A new SQLite catalog at `path` holding the source's spec tables migrated to 1.0 (no inlined tables yet); a
    1.1 string's tables get what 1.1 adds and lacks there."""
    db = backend_for(CatalogTarget(backend="sqlite", path=path))
    engine = db.create_engine(read_only=False)
    with engine.begin() as dst:
        create_tables(dst, db, replace(plan, inlined=(), inlined_deletes=()), [])
        for name in plan.spec:
            copy_spec_table(conn, backend, dst, db, plan, name, new_root=None, batch=5000)
        if is_v11(plan.version):
            add_v11_tables(dst, db)
        else:
            migrate(dst, db, plan.version)
    return engine, db


def migrated_copy(conn: Connection, backend: Backend, path: Path) -> str:
    """Copy a catalog of an older version into a new SQLite file at `path` and migrate the copy to 1.0 (how an
    older catalog is read in place: the source is only read); returns the source's version."""
    plan = plan_copy(conn, backend, spec_only=True)
    engine, db = migrated_spec_copy(conn, backend, plan, path)
    try:
        with engine.begin() as dst:
            present = backend.list_tables(conn)
            inlined = plan_inlined(conn, backend, dst, db, present)
            full = replace(plan, layout=[], inlined=tuple(inlined))
            create_tables(dst, db, full, [])
            for p in full.inlined:
                copy_inlined_table(conn, backend, dst, db, p, batch=5000)
            for name in full.inlined_deletes:
                copy_inlined_deletes(conn, backend, dst, db, name, batch=5000)
    finally:
        engine.dispose()
    return plan.version


def check_empty(conn: Connection, backend: Backend, *, any_table: bool) -> None:
    """Refuse a destination holding DuckLake tables (`any_table`: holding any table at all, for a file)."""
    found = sorted(n for n in backend.list_tables(conn) if any_table or n.startswith("ducklake_"))
    if found:
        raise CatalogExistsError(
            f"the destination {backend.target.display()} is not empty ({len(found)} table(s), e.g. {found[0]}); "
            "nothing was changed", hint="copy into a new file, an empty database or another --metadata-schema")


def create_tables(conn: Connection, backend: Backend, plan: CopyPlan, created: list[str]) -> None:
    """Create every spec table, inlined-data table and inlined-deletion table with the backend's types."""
    schema_sql = backend.create_schema_sql()
    if schema_sql and plan.layout:
        conn.exec_driver_sql(schema_sql)
    for name, columns, pk in plan.layout:
        conn.exec_driver_sql(create_table_sql(backend, name, columns, pk))
        created.append(name)
    for p in plan.inlined:
        if p.sqlite_sql and backend.name == "sqlite":
            conn.exec_driver_sql(p.sqlite_sql)
            created.append(p.name)
            continue
        cols = "".join(f", {backend.quote(c.name)} {backend.inlined_column_type(c.type, stored_type(c))}"
                       for c in p.columns)
        row_id, begin, end = p.system
        conn.exec_driver_sql(f"CREATE TABLE {backend.qualify(p.name)}({row_id} BIGINT, {begin} BIGINT, "
                             f"{end} BIGINT{cols})")
        created.append(p.name)
    for name in plan.inlined_deletes:
        conn.exec_driver_sql(f"CREATE TABLE {backend.qualify(name)}(file_id BIGINT, row_id BIGINT, "
                             "begin_snapshot BIGINT)")
        created.append(name)


def drop_tables(conn: Connection, backend: Backend, names: Sequence[str]) -> None:
    """Drop tables a failed copy created (backends whose DDL does not roll back)."""
    for name in reversed(names):
        conn.exec_driver_sql(f"DROP TABLE IF EXISTS {backend.qualify(name)}")


def _normaliser(backend: Backend, kinds: list[tuple[str, str]]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """A spec row in one comparable form whatever backend it came from."""
    def norm(row: Sequence[Any]) -> tuple[Any, ...]:
        out: list[Any] = []
        for (_, kind), v in zip(kinds, row, strict=True):
            if v is None:
                out.append(None)
            elif kind == s.BIGINT:
                out.append(int(v))
            elif kind == s.BOOLEAN:
                out.append(as_bool(v))
            elif kind == s.TIMESTAMPTZ:
                ts = backend.decode_timestamp(v)
                out.append(ts.isoformat() if ts else None)
            elif kind == s.UUID:
                out.append(str(v).lower())
            else:
                out.append(str(v))
        return tuple(out)
    return norm


def _rewriter(name: str, old_root: str, new_root: str | None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The change --data-path makes to one row: the global data_path, and absolute paths under the old root."""
    if new_root is None:
        return lambda row: row

    def rewrite(row: dict[str, Any]) -> dict[str, Any]:
        if name == "ducklake_metadata" and row["key"] == "data_path" and row["scope"] is None:
            return {**row, "value": new_root}
        if (name in _PATH_TABLES and old_root and as_bool(row.get("path_is_relative")) is False
                and isinstance(row.get("path"), str) and row["path"].startswith(old_root)):
            return {**row, "path": new_root + row["path"][len(old_root):]}
        return row
    return rewrite


def _insert(conn: Connection, backend: Backend, table: Table, kinds: list[tuple[str, str]],
            rows: list[dict[str, Any]]) -> None:
    """Insert a batch of spec rows: executemany, or on DuckDB one INSERT … SELECT from Arrow (executemany there
    runs one statement per row: ~3,000 rows/s)."""
    if not rows:
        return
    if backend.name != "duckdb":
        conn.execute(insert(table), rows)
        return
    import pyarrow as pa

    arrow = {s.BIGINT: pa.int64(), s.BOOLEAN: pa.bool_(), s.TIMESTAMPTZ: pa.timestamp("us", tz="UTC")}
    batch = pa.table({col: pa.array([r[col] for r in rows], type=arrow.get(kind, pa.string())) for col, kind in kinds})
    raw = conn.connection.driver_connection
    cols = ", ".join(backend.quote(c) for c, _ in kinds)
    assert raw is not None
    raw.register("__ducklake_copy_batch", batch)
    try:
        raw.execute(f"INSERT INTO {backend.qualify(table.name)}({cols}) SELECT {cols} FROM __ducklake_copy_batch")
    finally:
        raw.unregister("__ducklake_copy_batch")


def copy_spec_table(src: Connection, sb: Backend, dst: Connection, db: Backend, plan: CopyPlan, name: str, *,
                    new_root: str | None, batch: int) -> TableCopy:
    """Stream one spec table (of the plan's version) across, counting what was written."""
    kinds = next(cols for n, cols, _ in plan.layout if n == name)
    table: Table = build_tables([(name, kinds, None)])[1][name]
    cols = [c for c, _ in kinds]
    out = TableCopy(name)
    src_norm, dst_norm = _normaliser(sb, kinds), _normaliser(db, kinds)
    rewrite = _rewriter(name, plan.old_data_path, new_root)
    for rows in batches(src, select(table), batch):
        staged = []
        for r in rows:
            row = rewrite(dict(zip(cols, r, strict=True)))
            out.source.add(src_norm([row[c] for c in cols]))
            for (col, kind) in kinds:
                if kind == s.TIMESTAMPTZ and row[col] is not None:
                    ts = sb.decode_timestamp(row[col])
                    row[col] = db.encode_timestamp(ts) if ts is not None else None
                elif kind == s.UUID and row[col] is not None:
                    row[col] = str(row[col])
                elif kind == s.BOOLEAN and row[col] is not None:
                    row[col] = as_bool(row[col])
            staged.append(row)
        _insert(dst, db, table, kinds, staged)
    for rows in batches(dst, select(table), batch):
        for r in rows:
            out.copy.add(dst_norm(tuple(r)))
    return out


def _canonical(rows: Sequence[Sequence[Any]], columns: Sequence[ColumnInfo]) -> list[list[tuple[str | None, Any]]]:
    """Inlined values (raw storage form, any backend) → per value DuckDB's canonical text and the native value
    integers, booleans and blobs are stored as; one in-process DuckDB query per batch does the casts."""
    import duckdb
    import pyarrow as pa

    if not columns:
        return [[] for _ in rows]
    data = {f"v{i}": pa.array([to_duckdb_text(r[i], c.type) for r in rows], type=pa.string())
            for i, c in enumerate(columns)}
    selects = []
    for i, c in enumerate(columns):
        typed = f"CAST(v{i} AS {stored_type(c)})"
        selects.append(f"CAST({typed} AS VARCHAR)")
        if c.type in INT_TYPES or c.type == "boolean":
            selects.append(typed)
        elif c.type == "blob":
            selects.append(f"CAST(v{i} AS BLOB)")
        else:
            selects.append("NULL")
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.register("source", pa.table(data))
        found = con.execute(f"SELECT {', '.join(selects)} FROM source").fetchall()
    finally:
        con.close()
    return [[(r[2 * i], r[2 * i + 1]) for i in range(len(columns))] for r in found]


def _inlined_select(conn: Connection, backend: Backend, name: str, physical: Sequence[str],
                    columns: Sequence[ColumnInfo], system: Sequence[str]) -> Any:
    from sqlalchemy import text

    exprs = "".join(", " + backend.inlined_value_sql(backend.quote(n), c) for n, c in zip(physical, columns,
                                                                                          strict=True))
    return text(f"SELECT {', '.join(system)}{exprs} FROM {backend.qualify(name)}")


def copy_inlined_table(src: Connection, sb: Backend, dst: Connection, db: Backend, plan: InlinedPlan, *,
                       batch: int) -> TableCopy:
    """Stream one inlined-data table across, each value re-encoded for the destination's column types (SQLite to
    SQLite: the rows as stored)."""
    from sqlalchemy import text

    if plan.sqlite_sql and sb.name == db.name == "sqlite":
        return _copy_stored_rows(src, sb, dst, db, plan.name, batch=batch)
    out = TableCopy(plan.name)
    cols = plan.columns
    names = ", ".join(db.quote(c.name) for c in cols)
    for rows in batches(src, _inlined_select(src, sb, plan.name, plan.physical, cols, plan.system), batch):
        values = _canonical([tuple(r)[3:] for r in rows], cols)
        groups: dict[str, list[dict[str, Any]]] = {}
        for r, vals in zip(rows, values, strict=True):
            params: dict[str, Any] = {"r": r[0], "b": r[1], "e": r[2]}
            exprs = []
            for i, (c, (txt, raw)) in enumerate(zip(cols, vals, strict=True)):
                expr, value = db.inlined_value(c.type, txt, raw)
                exprs.append(expr.replace(":v", f":v{i}"))
                params[f"v{i}"] = value
            sql = (f"INSERT INTO {db.qualify(plan.name)}({', '.join(plan.system)}"
                   f"{', ' + names if names else ''}) VALUES (:r, :b, :e{''.join(', ' + e for e in exprs)})")
            groups.setdefault(sql, []).append(params)
            out.source.add((int(r[0]), r[1], r[2], *(t for t, _ in vals)))
        for sql, params_list in groups.items():
            dst.execute(text(sql), params_list)
    physical = [c.name for c in cols]
    for rows in batches(dst, _inlined_select(dst, db, plan.name, physical, cols, plan.system), batch):
        values = _canonical([tuple(r)[3:] for r in rows], cols)
        for r, vals in zip(rows, values, strict=True):
            out.copy.add((int(r[0]), r[1], r[2], *(t for t, _ in vals)))
    return out


def _copy_stored_rows(src: Connection, sb: Backend, dst: Connection, db: Backend, name: str, *,
                      batch: int) -> TableCopy:
    """Every row of a table exactly as stored, into the same table of another database of the same kind."""
    from sqlalchemy import text

    out = TableCopy(name)
    insert_sql: str | None = None
    for rows in batches(src, text(f"SELECT * FROM {sb.qualify(name)}"), batch):
        staged = [tuple(r) for r in rows]
        if insert_sql is None and staged:
            insert_sql = f"INSERT INTO {db.qualify(name)} VALUES ({', '.join('?' for _ in staged[0])})"
        for row in staged:
            out.source.add(row)
        if staged and insert_sql is not None:
            dst.exec_driver_sql(insert_sql, staged)
    for rows in batches(dst, text(f"SELECT * FROM {db.qualify(name)}"), batch):
        for r in rows:
            out.copy.add(tuple(r))
    return out


def copy_inlined_deletes(src: Connection, sb: Backend, dst: Connection, db: Backend, name: str, *,
                         batch: int) -> TableCopy:
    """Stream one inlined file-deletion table across."""
    from sqlalchemy import text

    out = TableCopy(name)
    cols = ", ".join(_DELETE_COLUMNS)
    ins = text(f"INSERT INTO {db.qualify(name)}({cols}) VALUES (:f, :r, :b)")
    for rows in batches(src, text(f"SELECT {cols} FROM {sb.qualify(name)}"), batch):
        staged = [{"f": r[0], "r": r[1], "b": r[2]} for r in rows]
        for r in rows:
            out.source.add(tuple(None if v is None else int(v) for v in r))
        dst.execute(ins, staged)
    for rows in batches(dst, text(f"SELECT {cols} FROM {db.qualify(name)}"), batch):
        for r in rows:
            out.copy.add(tuple(None if v is None else int(v) for v in r))
    return out


def copy_rows(src: Connection, sb: Backend, dst: Connection, db: Backend, plan: CopyPlan, *,
              new_root: str | None, batch: int) -> list[TableCopy]:
    """Fill the created tables from the source; each table's copy is read back and digested."""
    out = [copy_spec_table(src, sb, dst, db, plan, name, new_root=new_root, batch=batch) for name in plan.spec]
    out += [copy_inlined_table(src, sb, dst, db, p, batch=batch) for p in plan.inlined]
    out += [copy_inlined_deletes(src, sb, dst, db, n, batch=batch) for n in plan.inlined_deletes]
    return out
