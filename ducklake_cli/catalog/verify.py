"""Catalog-side health checks (`ducklake verify`): the SQL behind them and the consistency rules of the snapshot,
schema-version, id and lifetime sequences. Each finding is a `Finding`; the op turns them into its problems."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.queries import batches, visible
from ducklake_cli.catalog.stats import NO_BOUNDS, encode_stat, stat_key
from ducklake_cli.catalog.types import DECIMAL_TYPE, FLOAT_TYPES, INT_TYPES

if TYPE_CHECKING:
    from sqlalchemy import Connection, Table

    from ducklake_cli.catalog.backends import Backend
    from ducklake_cli.catalog.models import Snapshot

EXAMPLES = 5  # rows named per broken rule: enough to find them, never thousands of lines
INLINED_COLUMNS = s.INLINED_SYSTEM_V10  # 1.0's; 1.1's are `s.INLINED_SYSTEM_V11` (spec versions §3.3)
# Ids drawn from next_catalog_id (spec §5.2) and from next_file_id (name mappings share the file counter).
_CATALOG_IDS = (("ducklake_schema", "schema_id"), ("ducklake_table", "table_id"), ("ducklake_view", "view_id"),
                ("ducklake_partition_info", "partition_id"), ("ducklake_sort_info", "sort_id"),
                ("ducklake_macro", "macro_id"))
_FILE_IDS = (("ducklake_data_file", "data_file_id"), ("ducklake_delete_file", "delete_file_id"),
             ("ducklake_column_mapping", "mapping_id"))
# Spec tables whose rows live from begin_snapshot to end_snapshot, with the key named in findings.
_LIFETIMES = (("ducklake_schema", "schema_id"), ("ducklake_table", "table_id"), ("ducklake_view", "view_id"),
              ("ducklake_column", "column_id"), ("ducklake_data_file", "data_file_id"),
              ("ducklake_delete_file", "delete_file_id"), ("ducklake_partition_info", "partition_id"),
              ("ducklake_sort_info", "sort_id"), ("ducklake_tag", "object_id"), ("ducklake_macro", "macro_id"))


@dataclass(frozen=True)
class Finding:
    """One broken rule of the catalog: a problem kind, the table it concerns (id) if any, and what is wrong."""

    kind: str
    detail: str
    table_id: int | None = None


@dataclass(frozen=True)
class InlinedRef:
    """A `ducklake_inlined_data_tables` row."""

    table_id: int
    table_name: str
    schema_version: int


def inlined_refs(conn: Connection, table_ids: Sequence[int]) -> list[InlinedRef]:
    """The inlined-data tables registered for the tables, whether or not they exist."""
    t = s.inlined_tables_t
    if not table_ids:
        return []
    rows = conn.execute(select(t.c.table_id, t.c.table_name, t.c.schema_version)
                        .where(t.c.table_id.in_(list(table_ids))).order_by(t.c.table_id, t.c.schema_version)).all()
    return [InlinedRef(int(r[0]), str(r[1]), int(r[2])) for r in rows]


def inlined_findings(conn: Connection, backend: Backend, refs: Iterable[InlinedRef], *,
                     version: str | None = None) -> list[Finding]:
    """Registered inlined-data tables that are missing, or lack the columns every reader selects (checked from
    an empty result's column names: no rows are read or counted): the catalog `version`'s names (1.1: `_ducklake_`
    ones); a 1.1-dev1 catalog's, or any when the version is not given, may have either set."""
    from ducklake_cli.catalog.versions import is_v11

    wanted = None if version in (None, "1.1-dev1") else s.inlined_system_columns(is_v11(version))
    existing = backend.list_tables(conn)
    out: list[Finding] = []
    for ref in refs:
        if ref.table_name not in existing:
            out.append(Finding("missing_inlined_table", f"inlined-data table {ref.table_name} (schema version "
                                                        f"{ref.schema_version}) is registered but does not exist",
                               ref.table_id))
            continue
        names = {str(k).lower() for k in backend.column_names(conn, ref.table_name)}
        sets = [wanted] if wanted else [s.INLINED_SYSTEM_V11, s.INLINED_SYSTEM_V10]
        lacking = min(([c for c in cols if c not in names] for cols in sets), key=len)
        if lacking:
            out.append(Finding("broken_inlined_table", f"inlined-data table {ref.table_name} lacks the column(s) "
                                                       f"{', '.join(lacking)}", ref.table_id))
    return out


BATCH = 50_000  # file rows per fetch: memory stays bounded on a lake with millions of files
# A live file row: (file id, table id, path, path_is_relative, recorded bytes, rows, format, encryption_key, data
# file id, mapping id); a delete file's rows are its delete_count, its data file id the file it deletes from, and it
# has no mapping id (None).
FILE_ROW = ("file_id", "table_id", "path", "path_is_relative", "size", "rows", "format", "encryption_key",
            "data_file_id", "mapping_id")


def live_file_rows(conn: Connection, snapshot_id: int, table_ids: Sequence[int], *,
                   batch: int = BATCH) -> Iterator[tuple[str, Sequence[Any]]]:
    """`("data" | "delete", rows)`: the data files, then the delete files, live at a snapshot for the tables (each
    ordered by id), as plain tuples laid out as `FILE_ROW`, streamed in batches."""
    if not table_ids:
        return
    d, x = s.data_file_t, s.delete_file_t
    ids = list(table_ids)
    data = select(d.c.data_file_id, d.c.table_id, d.c.path, d.c.path_is_relative, d.c.file_size_bytes,
                  d.c.record_count, d.c.file_format, d.c.encryption_key, d.c.data_file_id, d.c.mapping_id) \
        .where(visible(d, snapshot_id), d.c.table_id.in_(ids)).order_by(d.c.data_file_id)
    deletes = select(x.c.delete_file_id, x.c.table_id, x.c.path, x.c.path_is_relative, x.c.file_size_bytes,
                     x.c.delete_count, x.c.format, x.c.encryption_key, x.c.data_file_id) \
        .where(visible(x, snapshot_id), x.c.table_id.in_(ids)).order_by(x.c.delete_file_id)
    for kind, statement in (("data", data), ("delete", deletes)):
        for rows in batches(conn, statement, batch):
            yield kind, rows


def column_ids_ever(conn: Connection, table_ids: Sequence[int]) -> dict[int, set[int]]:
    """Every column id each table ever had (any snapshot, nested ones included)."""
    t = s.column_t
    out: dict[int, set[int]] = defaultdict(set)
    if not table_ids:
        return out
    for tid, cid in conn.execute(select(t.c.table_id, t.c.column_id).distinct().where(
            t.c.table_id.in_(list(table_ids)))).all():
        out[int(tid)].add(int(cid))
    return out


def sequence_findings(snapshots: Sequence[Snapshot]) -> list[Finding]:
    """Along snapshot ids: times never go back (equal is fine), schema versions and the next ids never decrease."""
    out: list[Finding] = []
    for prev, cur in zip(snapshots, snapshots[1:], strict=False):
        where = f"snapshot {cur.snapshot_id} (after {prev.snapshot_id})"
        if cur.snapshot_time < prev.snapshot_time:
            out.append(Finding("snapshot_order", f"{where} has an earlier time: {cur.snapshot_time.isoformat()} < "
                                                 f"{prev.snapshot_time.isoformat()}"))
        if cur.schema_version < prev.schema_version:
            out.append(Finding("schema_version_order", f"{where} has a lower schema version: "
                                                       f"{cur.schema_version} < {prev.schema_version}"))
        for name in ("next_catalog_id", "next_file_id"):
            a, b = getattr(prev, name), getattr(cur, name)
            if b < a:
                out.append(Finding("next_id", f"{where} has a lower {name}: {b} < {a}"))
    return out[:EXAMPLES * 4]


def schema_version_findings(conn: Connection, snapshots: Sequence[Snapshot]) -> list[Finding]:
    """Each `ducklake_schema_versions` row agrees with its snapshot (rows of expired snapshots are left by DuckDB
    and fine) and names no snapshot after the latest."""
    by_id = {sn.snapshot_id: sn.schema_version for sn in snapshots}
    latest = max(by_id) if by_id else -1
    t = s.schema_versions_t
    out: list[Finding] = []
    for begin, version, tid in conn.execute(select(t.c.begin_snapshot, t.c.schema_version, t.c.table_id)).all():
        if begin is None or version is None:
            continue
        if int(begin) > latest:
            out.append(Finding("future_snapshot", f"ducklake_schema_versions names snapshot {begin}, after the "
                                                  f"latest ({latest})", tid))
        elif int(begin) in by_id and by_id[int(begin)] != int(version):
            out.append(Finding("schema_version_mismatch", f"ducklake_schema_versions says snapshot {begin} has "
                                                          f"schema version {version}; the snapshot says "
                                                          f"{by_id[int(begin)]}", tid))
    return out[:EXAMPLES * 2]


def _max_id(conn: Connection, existing: set[str], name: str, column: str) -> int | None:
    if name not in existing:
        return None
    t: Table = s.T[name]
    value = conn.execute(select(func.max(t.c[column]))).scalar()
    return int(value) if value is not None else None


def next_id_findings(conn: Connection, backend: Backend, latest: Snapshot) -> list[Finding]:
    """The latest snapshot's next_catalog_id and next_file_id lie above every id already used."""
    existing = backend.list_tables(conn)
    out: list[Finding] = []
    for counter, sources in (("next_catalog_id", _CATALOG_IDS), ("next_file_id", _FILE_IDS)):
        bound = getattr(latest, counter)
        for name, column in sources:
            used = _max_id(conn, existing, name, column)
            if used is not None and used >= bound:
                out.append(Finding("next_id", f"{name}.{column} {used} is not below the latest snapshot's "
                                              f"{counter} ({bound}): the next commit would reuse it"))
    return out


def lifetime_findings(conn: Connection, backend: Backend, latest_id: int) -> list[Finding]:
    """Rows that end before they begin, or name a snapshot after the latest (a begin or end naming an expired
    snapshot is normal: DuckDB keeps such rows while a remaining snapshot sees them)."""
    existing = backend.list_tables(conn)
    out: list[Finding] = []
    for name, key in _LIFETIMES:
        if name not in existing:
            continue
        t: Table = s.T[name]
        has_table = "table_id" in t.c
        cols = [t.c[key], t.c.begin_snapshot, t.c.end_snapshot, *([t.c.table_id] if has_table else [])]
        backwards = conn.execute(select(*cols).where(t.c.end_snapshot < t.c.begin_snapshot).limit(EXAMPLES)).all()
        for r in backwards:
            out.append(Finding("lifetime", f"{name} row {key}={r[0]} ends (snapshot {r[2]}) before it begins "
                                           f"(snapshot {r[1]})", int(r[3]) if has_table else None))
        ahead = conn.execute(select(*cols).where(or_(t.c.begin_snapshot > latest_id, t.c.end_snapshot > latest_id))
                             .limit(EXAMPLES)).all()
        for r in ahead:
            out.append(Finding("future_snapshot", f"{name} row {key}={r[0]} names snapshot "
                                                  f"{max(v for v in (r[1], r[2]) if v is not None)}, after the "
                                                  f"latest ({latest_id})", int(r[3]) if has_table else None))
    return out


# ----- recorded min/max against a footer's --------------------------------------------------------------------

_TEMPORAL = {"date": (dt.date,), "time": (dt.time,), "timestamp": (dt.datetime,), "timestamptz": (dt.datetime,),
             "timestamp_s": (dt.datetime,), "timestamp_ms": (dt.datetime,), "timestamp_us": (dt.datetime,)}
_PREFIXED = frozenset({"varchar", "blob", "json"})  # some writers cut these footer bounds to a prefix
_UNCHECKED = frozenset({"uuid", "timestamp_ns", "time_ns", "variant", "geometry"})


def _footer_key(value: Any, ducklake_type: str) -> Any:
    """A footer statistic as `stat_key` orders the column type, or None when it cannot be compared."""
    if value is None:
        return None
    if ducklake_type in _TEMPORAL:
        if not isinstance(value, _TEMPORAL[ducklake_type]) or (
                ducklake_type == "date" and isinstance(value, dt.datetime)):
            return None
    elif ducklake_type == "boolean":
        if not isinstance(value, bool):
            return None
    elif ducklake_type in INT_TYPES:
        if not isinstance(value, int) or isinstance(value, bool):
            return None
    elif ducklake_type in FLOAT_TYPES:
        if not isinstance(value, int | float) or math.isnan(float(value)):
            return None
    elif DECIMAL_TYPE.fullmatch(ducklake_type):
        if not isinstance(value, Decimal | int):
            return None
    elif ducklake_type == "blob":
        if not isinstance(value, bytes | bytearray):
            return None
        return bytes(value)
    elif ducklake_type in ("varchar", "json"):
        if isinstance(value, bytes | bytearray):
            return bytes(value)
        return value.encode("utf-8") if isinstance(value, str) else None
    else:
        return None
    return stat_key(encode_stat(value, ducklake_type), ducklake_type)


def _float32(value: Any) -> Any:
    import numpy as np

    return float(np.float32(value)) if isinstance(value, float) else value


def bound_problem(recorded_min: str | None, recorded_max: str | None, footer_min: Any, footer_max: Any,
                  ducklake_type: str, physical_type: str, *, may_truncate: bool = False) -> str | None:
    """Why a file's recorded bounds exclude values its footer says it holds (readers would prune it wrongly), or
    None; a bound that cannot be compared (unparsable, a type without bounds, no footer statistic) is no problem.
    Compared after casting both to the column type; a float file column is compared in single precision.
    `may_truncate`: the file's writer may have cut string footer bounds to a prefix (DuckDB and we write them
    whole)."""
    if ducklake_type in NO_BOUNDS or ducklake_type in _UNCHECKED:
        return None
    single = ducklake_type in FLOAT_TYPES and (physical_type == "FLOAT" or ducklake_type == "float32")
    wrong: list[str] = []
    for recorded, found, upper in ((recorded_min, footer_min, False), (recorded_max, footer_max, True)):
        a, b = stat_key(recorded, ducklake_type), _footer_key(found, ducklake_type)
        if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
            continue
        if single:
            a, b = _float32(a), _float32(b)
        if may_truncate and not upper and ducklake_type in _PREFIXED and isinstance(a, bytes) \
                and isinstance(b, bytes) and b and a.startswith(b):
            continue  # a footer min cut to a prefix by its writer is below the true min
        try:
            bad = a < b if upper else a > b
        except TypeError:
            continue
        if bad:
            side = "max" if upper else "min"
            wrong.append(f"recorded {side} {recorded!r} {'below' if upper else 'above'} the file's {side} {found!r}")
    return "; ".join(wrong) or None
