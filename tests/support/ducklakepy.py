"""ducklakepy (PyPI, a third-party pure-Python DuckLake 1.1 implementation) as a second implementation of format 1.1:
migrate a 1.0 catalog to 1.1 in place, list its schemas and tables, read a table at a snapshot.

ducklakepy runs in its own venv, built once per machine in
``${XDG_CACHE_HOME:-~/.cache}/ducklake-cli/ducklakepy-venv`` (~10 s, from the registry pip is configured with) and
reused while its key (Python version, requirements) is unchanged (`tests/support/venvs.cached_venv`). Each call runs
this file as a script in that venv (``python -I``, so this module's own name never shadows the package), request as
JSON on stdin, result as JSON on stdout. Module-level imports are stdlib only for that reason.

Catalogs: a SQLite file, a PostgreSQL URL (``postgresql://…``), or a DuckDB file (``.ducklake``/``.duckdb``).
ducklakepy itself supports only SQLite and PostgreSQL; a DuckDB file is opened here through duckdb 1.5.5 and
duckdb-engine with a shim (`_duckdb_file_catalog`: ducklakepy's SQLite dialect, column reflection from
``information_schema``, inlined values read as the text DuckDB writes into a SQLite catalog). That is enough for the
migration and for reads, except of inlined VARIANT values. duckdb 1.5.5 keeps the file's storage version, so DuckDB
1.5.5 still opens the file (its ducklake extension then refuses the 1.1 catalog, as it should).

Rows are compared as `encode_arrow` texts: each value one JSON text, rows sorted (see its docstring); the same
function encodes DuckDB's rows (`duckdb_rows`, `duckdb_reads`), so both sides go through one code path. Known
differences: VARIANT (DuckDB 1.5.5 cannot export it to Arrow; ducklakepy returns its two raw buffers), and a struct
field DuckDB 1.5.5 renamed (it drops the field's defaults; the 1.1 migration restores them, so the older rows read
the default instead of NULL after migrating).
"""

from __future__ import annotations

import base64
import datetime as dt
import importlib.metadata
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

DUCKLAKEPY = "ducklakepy==0.1.0.dev0"
# What ducklakepy imports (numpy, pyarrow, pydantic, sqlalchemy), its PostgreSQL driver (the `postgres` extra), and
# duckdb + duckdb-engine (+ pytz for TIMESTAMPTZ) for DuckDB-file catalogs: at the main venv's versions.
_PINNED = ("numpy", "pyarrow", "pydantic", "sqlalchemy", "psycopg", "psycopg-binary", "duckdb", "duckdb-engine",
           "pytz")
_TIMEOUT = 300


# ---------------------------------------------------------------------------------------------------------------
# the venv


def _venv_env() -> dict[str, str]:
    from tests.support.venvs import clean_env

    return clean_env()


def requirements() -> list[str]:
    """ducklakepy pinned, and its dependencies at the main venv's versions."""
    return [DUCKLAKEPY, *(f"{name}=={importlib.metadata.version(name)}" for name in _PINNED)]


def ducklakepy_python() -> Path:
    """The ducklakepy venv's interpreter (built when missing)."""
    from tests.support.venvs import cached_venv

    return cached_venv("ducklakepy-venv", requirements())


# ---------------------------------------------------------------------------------------------------------------
# the calls (main venv side)


def catalog_url(catalog: str | os.PathLike[str]) -> str:
    """The SQLAlchemy URL the worker opens: ``sqlite:///…``, ``postgresql+psycopg://…`` or ``duckdb:///…`` (a DuckDB
    file, told from a SQLite one by its header; a file that does not exist yet by its extension)."""
    text = os.fspath(catalog)
    for scheme in ("postgresql://", "postgres://", "postgresql+psycopg://"):
        if text.startswith(scheme):
            return "postgresql+psycopg://" + text[len(scheme):]
    path = Path(text).resolve()
    try:
        head = path.read_bytes()[:16] if path.is_file() else b""
    except OSError:
        head = b""
    if head.startswith(b"SQLite format 3\0"):
        return f"sqlite:///{path}"
    if head[8:12] == b"DUCK" or (not head and path.suffix in (".ducklake", ".duckdb")):
        return f"duckdb:///{path}"
    return f"sqlite:///{path}"


def _call(op: str, catalog: str | os.PathLike[str], **args: Any) -> Any:
    request = {"op": op, "url": catalog_url(catalog), **args}
    done = subprocess.run([str(ducklakepy_python()), "-I", __file__], input=json.dumps(request), capture_output=True,
                          text=True, timeout=_TIMEOUT, check=False, env=_venv_env())
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except ValueError:
        answer = {}
    if done.returncode != 0 or "result" not in answer:
        raise DucklakepyError(op, str(answer.get("error", f"exit {done.returncode}")), done.stderr)
    return answer["result"]


class DucklakepyError(RuntimeError):
    """A ducklakepy call failed; `error` is its exception as ``module.Class: first line of the message``, `stderr`
    the worker's (with the traceback)."""

    def __init__(self, op: str, error: str, stderr: str) -> None:
        self.error, self.stderr = error, stderr
        super().__init__(f"ducklakepy {op} failed: {error}\n{stderr[-4000:]}")


def ducklakepy_migrate(catalog: str | os.PathLike[str]) -> tuple[str, str]:
    """Migrate the catalog in place to 1.1 with ducklakepy (its ``automatic_migration``: one transaction); the
    version strings before and after. A 1.1 catalog is left as it is."""
    result = _call("migrate", catalog)
    return str(result["before"]), str(result["after"])


def ducklakepy_schemas(catalog: str | os.PathLike[str], snapshot: int | None = None) -> list[str]:
    """The schemas live at `snapshot` (latest: None) as ducklakepy spells them: nested ones dotted (``a.b``), a name
    holding a dot double-quoted; sorted."""
    return [str(s) for s in _call("schemas", catalog, snapshot=snapshot)]


def ducklakepy_tables(catalog: str | os.PathLike[str], snapshot: int | None = None) -> list[str]:
    """``schema.table`` for every table live at `snapshot` (latest: None), schemas spelled as `ducklakepy_schemas`
    does; sorted."""
    return [str(t) for t in _call("tables", catalog, snapshot=snapshot)]


def ducklakepy_read(catalog: str | os.PathLike[str], schema: str, table: str, snapshot: int | None = None,
                    data_path: str | os.PathLike[str] | None = None) -> list[tuple[str, ...]]:
    """The table's rows at `snapshot` (latest: None) as ducklakepy reads them, `encode_arrow`-encoded and sorted.
    `data_path`: where the files are (default: the catalog's ``data_path`` row). The catalog is opened at its own
    version (1.0 or 1.1), never migrated."""
    path = None if data_path is None else os.fspath(data_path)
    rows = _call("read", catalog, schema=schema, table=table, snapshot=snapshot, data_path=path)
    return [tuple(row) for row in rows]


def ducklakepy_reads(catalog: str | os.PathLike[str], data_path: str | os.PathLike[str] | None = None,
                     ) -> dict[int, dict[str, list[tuple[str, ...]]]]:
    """Every table at every snapshot, as ducklakepy reads them in one process: snapshot id → ``schema.table`` (as
    `ducklakepy_tables` spells it) → rows as `ducklakepy_read` returns them. The catalog is never migrated."""
    path = None if data_path is None else os.fspath(data_path)
    reads = _call("reads", catalog, data_path=path)
    return {int(sid): {name: [tuple(row) for row in rows] for name, rows in tables.items()}
            for sid, tables in reads.items()}


def duckdb_reads(con: duckdb.DuckDBPyConnection, alias: str = "lake") -> dict[int, dict[str, list[tuple[str, ...]]]]:
    """`ducklakepy_reads` as DuckDB reads the lake attached as `alias` (``AT (VERSION => …)``): the same shape, so the
    two compare with ``==``. Top-level schemas only (what a 1.0 catalog has)."""
    from tests.support.legacy_build import tables_at

    meta = f"__ducklake_metadata_{alias}"
    query = f"SELECT snapshot_id FROM {meta}.ducklake_snapshot ORDER BY 1"
    snapshots = [int(r[0]) for r in con.execute(query).fetchall()]
    return {sid: {f"{s}.{t}": duckdb_rows(con, f'SELECT * FROM {alias}."{s}"."{t}" AT (VERSION => {sid})')
                  for s, t in tables_at(con, sid, meta)}
            for sid in snapshots}


def duckdb_rows(con: duckdb.DuckDBPyConnection, query: str) -> list[tuple[str, ...]]:
    """DuckDB's rows for `query`, encoded and sorted as `ducklakepy_read` returns them (through Arrow, so both sides
    share `encode_arrow`). A top-level TIMETZ column is taken at UTC first: DuckDB's Arrow export drops the offset
    (an inlined ``10:00+05`` would read ``10:00``, the same value from a file ``05:00``), where ducklakepy, like a
    Parquet file, gives the UTC time of day."""
    result = con.execute(query)
    zoned = [name for name, kind, *_ in result.description or () if str(kind) == "TIME WITH TIME ZONE"]
    if zoned:
        utc = ", ".join(f"timezone('UTC', {_ident(n)}) AS {_ident(n)}" for n in zoned)
        result = con.execute(f"SELECT * REPLACE ({utc}) FROM ({query})")
    return encode_arrow(result.to_arrow_table())


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# ---------------------------------------------------------------------------------------------------------------
# the encoding (both sides)


def encode_arrow(table: pa.Table) -> list[tuple[str, ...]]:
    """Rows of an Arrow table as tuples of JSON texts (one per column, compact, keys in field order), sorted.

    Per Arrow type: null → ``null``; bool, integers → JSON; floats → JSON (``NaN``, ``Infinity``, ``-0.0`` kept);
    decimal → its digits as a JSON string at its scale (``"1.20"``), an integer when the scale is 0 (so DuckDB's
    HUGEINT as decimal128(38, 0) and ducklakepy's as decimal256(76, 0) agree); string → string; binary →
    ``{"$blob": base64}``; fixed_size_binary(16) (ducklakepy's UUID, and DuckDB's lossless one) → the UUID's
    canonical string, as DuckDB exports a UUID by default; date → ``"2024-02-01"``; time → ``"10:00:00.5"``
    (fraction without trailing zeros); timestamp → ``"2024-02-01 10:00:00.5"``, one with a time zone converted to
    UTC and suffixed ``+00`` (so the unit and the zone name do not matter); a value beyond a Python datetime
    (DuckDB's ±infinity) → ``{"$<unit>": int}``; month_day_nano interval → ``{"months": m, "days": d, "nanos":
    n}``; list → array; struct → object in field order; map → array of ``[key, value]`` pairs; dictionary →
    its values; an extension type → its storage."""
    columns = [_encode_array(col.combine_chunks()) for col in table.columns]
    text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    rows = [tuple(text(v) for v in row) for row in zip(*columns, strict=True)] if columns else [()] * table.num_rows
    return sorted(rows)


def _encode_array(array: pa.Array) -> list[Any]:
    """The array's values as JSON-able Python values (`encode_arrow`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = array.type
    if isinstance(t, pa.ExtensionType):
        return _encode_array(array.storage)
    if pa.types.is_dictionary(t):
        return _encode_array(array.dictionary_decode())
    if pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        fields = [_encode_array(array.field(i)) for i in range(t.num_fields)]
        valid = array.is_valid().to_pylist()
        return [dict(zip(names, values, strict=True)) if ok else None
                for ok, *values in zip(valid, *fields, strict=True)]
    if pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        if pa.types.is_map(t):  # as the list of its entries, each {"key": k, "value": v}
            array = pa.ListArray.from_arrays(array.offsets, array.values, mask=array.is_null())
        flat = _encode_array(pc.list_flatten(array))
        if pa.types.is_map(t):
            flat = [list(entry.values()) for entry in flat]
        out: list[Any] = []
        start = 0
        for length in pc.list_value_length(array).to_pylist():  # None for a null list
            out.append(None if length is None else flat[start:start + length])
            start += length or 0
        return out
    if pa.types.is_timestamp(t) or pa.types.is_date64(t):
        unit = "ms" if pa.types.is_date64(t) else t.unit
        zoned = pa.types.is_timestamp(t) and t.tz is not None
        return [None if v is None else _timestamp_text(v, unit, zoned) for v in pc.cast(array, pa.int64()).to_pylist()]
    if pa.types.is_date32(t):
        return [None if v is None else _date_text(v) for v in pc.cast(array, pa.int32()).to_pylist()]
    if pa.types.is_time(t):
        return [None if v is None else _time_text(v, t.unit) for v in pc.cast(array, pa.int64()).to_pylist()]
    if pa.types.is_duration(t):
        return [None if v is None else {f"${t.unit}": v} for v in pc.cast(array, pa.int64()).to_pylist()]
    if pa.types.is_decimal(t):
        return [None if v is None else (int(v) if t.scale == 0 else format(v, "f")) for v in array.to_pylist()]
    if pa.types.is_fixed_size_binary(t) and t.byte_width == 16:
        return [None if v is None else str(uuid.UUID(bytes=v)) for v in array.to_pylist()]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) \
            or pa.types.is_binary_view(t):
        return [None if v is None else {"$blob": base64.b64encode(v).decode()} for v in array.to_pylist()]
    if pa.types.is_interval(t):
        return [None if v is None else {"months": v.months, "days": v.days, "nanos": v.nanoseconds}
                for v in array.to_pylist()]
    return list(array.to_pylist())


_UNITS = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_EPOCH = dt.datetime(1970, 1, 1)


def _fraction(ticks: int, unit: str) -> str:
    digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[unit]
    return ("." + str(ticks).rjust(digits, "0")).rstrip("0").rstrip(".") if digits and ticks else ""


def _timestamp_text(value: int, unit: str, zoned: bool) -> Any:
    seconds, ticks = divmod(value, _UNITS[unit])
    try:
        stamp = _EPOCH + dt.timedelta(seconds=seconds)
    except OverflowError:
        return {f"${unit}": value}
    return stamp.strftime("%Y-%m-%d %H:%M:%S").rjust(19, "0") + _fraction(ticks, unit) + ("+00" if zoned else "")


def _date_text(days: int) -> Any:
    try:
        return (dt.date(1970, 1, 1) + dt.timedelta(days=days)).isoformat()
    except OverflowError:
        return {"$days": days}


def _time_text(value: int, unit: str) -> str:
    seconds, ticks = divmod(value, _UNITS[unit])
    hours, rest = divmod(seconds, 3600)
    return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}" + _fraction(ticks, unit)


# ---------------------------------------------------------------------------------------------------------------
# the worker (runs in the ducklakepy venv: `python -I this_file`, request on stdin)


def _open(url: str, data_path: str | None, *, migrate: bool = False) -> Any:
    """A ducklakepy catalog on `url`: at the catalog's own version (1.0/1.1), or migrated to 1.1 when it is older
    (`migrate`, ducklakepy's ``automatic_migration``). `data_path` None: the catalog's ``data_path`` row."""
    from ducklakepy import DuckLakeCatalog

    if data_path is None:
        data_path = str(_metadata_value(url, "data_path"))
    if not data_path.endswith("/"):
        data_path += "/"
    if url.startswith("duckdb:"):
        return _duckdb_file_catalog(url, data_path, migrate)
    return DuckLakeCatalog("lake", url=url, data_path=data_path, automatic_migration=migrate)


def _duckdb_file_catalog(url: str, data_path: str, migrate: bool) -> Any:
    """ducklakepy on a DuckDB-file catalog, which it does not support: its SQLite dialect over duckdb-engine, whose
    column reflection (PostgreSQL's, asking ``pg_collation``) is replaced by ``information_schema``'s, companion
    tables built from it rather than reflected whole (SQLAlchemy's PostgreSQL reflection of keys and indexes), and
    inlined values selected as the text DuckDB writes into a SQLite catalog (``DuckDBFileDialect``)."""
    from ducklakepy import DuckLakeCatalog
    from ducklakepy import types as t
    from ducklakepy.catalog._dialect import SQLiteDialect
    from sqlalchemy import Column, MetaData, String, Table, cast, create_engine, text
    from sqlalchemy.exc import NoSuchTableError
    from sqlalchemy.types import NullType

    engine = create_engine(url)

    def get_columns(conn: Any, table_name: str, schema: str | None = None, **_: Any) -> list[dict[str, Any]]:
        query = text("SELECT column_name, is_nullable FROM information_schema.columns "
                     "WHERE table_name = :t AND table_schema = :s ORDER BY ordinal_position")
        rows = conn.execute(query, {"t": table_name, "s": schema or "main"}).all()
        return [{"name": n, "type": NullType(), "nullable": nullable == "YES", "default": None} for n, nullable in rows]

    engine.dialect.get_columns = get_columns  # type: ignore[method-assign,assignment]

    native = (t.BooleanType, t.Int8Type, t.Int16Type, t.Int32Type, t.Int64Type, t.UInt8Type, t.UInt16Type,
              t.UInt32Type, t.Float32Type, t.Float64Type, t.VarcharType, t.BlobType, t.VariantType)

    class DuckDBFileDialect(SQLiteDialect):
        def inlined_value_column(self, column: Any, field_type: Any) -> Any:
            # DuckDB holds inlined values natively; all but these are read as the text DuckDB writes into a SQLite
            # catalog (its VARCHAR cast), which ducklakepy decodes. A VARIANT stays native, and fails.
            return column if isinstance(field_type, native) else cast(column, String)

    class DuckDBFileCatalog(DuckLakeCatalog):
        def _inlined_table(self, conn: Any, name: str) -> Any:
            cached = self._inlined_table_cache.get(name)
            if cached is None:
                columns = [Column(c["name"], NullType()) for c in get_columns(conn, name, self._metadata_schema)]
                if not columns:
                    raise NoSuchTableError(name)  # what SQLAlchemy's reflection raises
                cached = self._inlined_table_cache[name] = Table(name, MetaData(), *columns,
                                                                 schema=self._metadata_schema)
            return cached

    return DuckDBFileCatalog("lake", url=url, data_path=data_path, engine=engine, dialect=DuckDBFileDialect(),
                             automatic_migration=migrate)


def _metadata_value(engine: Any, key: str) -> Any:
    """The global ``ducklake_metadata`` value of `key`, read with plain SQL (`engine`: an engine or a URL)."""
    from sqlalchemy import create_engine, text

    own = isinstance(engine, str)
    if own:
        engine = create_engine(engine)
    try:
        with engine.connect() as conn:
            query = text("SELECT value FROM ducklake_metadata WHERE key = :key AND scope IS NULL")
            return conn.execute(query, {"key": key}).scalar_one()
    finally:
        if own:
            engine.dispose()


def _serve(request: dict[str, Any]) -> Any:
    from ducklakepy.table import TableIdentifier

    op, url = request["op"], request["url"]
    if op == "migrate":
        before = _metadata_value(url, "version")
        catalog = _open(url, "/", migrate=True)
        try:
            catalog.spec_version()  # opening migrates
            return {"before": before, "after": _metadata_value(catalog.engine, "version")}
        finally:
            catalog.close()
    catalog = _open(url, request.get("data_path"))
    try:
        snapshot = request.get("snapshot")
        snap = None if snapshot is None else catalog.snapshot_by_id(snapshot)
        if op == "schemas":
            return sorted(catalog.list_namespaces(snapshot=snap))
        if op == "tables":
            return sorted(f"{ident.namespace}.{ident.name}" for ident in _tables_at(catalog, snap))
        if op == "reads":
            return {str(s.snapshot_id): _reads_at(catalog, s) for s in catalog.snapshots()}
        if op == "read":
            table = catalog.load_table(TableIdentifier(request["schema"], request["table"]), snapshot=snap)
            return encode_arrow(table.to_arrow())
        raise ValueError(f"unknown op {op!r}")
    finally:
        catalog.close()


def _tables_at(catalog: Any, snap: Any) -> list[Any]:
    """The identifiers of every table live at `snap` (None: latest), in every schema."""
    return [ident for ns in catalog.list_namespaces(snapshot=snap) for ident in catalog.list_tables(ns, snapshot=snap)]


def _reads_at(catalog: Any, snap: Any) -> dict[str, list[tuple[str, ...]]]:
    return {f"{ident.namespace}.{ident.name}": encode_arrow(catalog.load_table(ident, snapshot=snap).to_arrow())
            for ident in _tables_at(catalog, snap)}


def _main(lines: Iterable[str]) -> int:
    try:
        result = _serve(json.loads("".join(lines)))
    except Exception as exc:  # reported as one line on stdout, the traceback on stderr
        import traceback

        traceback.print_exc()
        message = (str(exc).strip().splitlines() or [""])[0]
        sys.stdout.write("\n" + json.dumps({"error": f"{type(exc).__module__}.{type(exc).__name__}: {message}"}))
        return 1
    sys.stdout.write("\n" + json.dumps({"result": result}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.stdin))
