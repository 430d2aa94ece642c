"""One table's live data files at a snapshot, filtered by their column stats inside the catalog's SQL.

Query planning asks for the files a conjunction of column tests may match. The catalog answers in one query: files
that provably match none are left out there, and each returned file says whether its stats alone prove it may
match (`sure`), so the planner decides only the rest in Python (engine/planning/prune.py, the exact rules). The SQL
is never narrower than those rules: a stats text SQL cannot read exactly (not a plain integer, see
`Backend.plain_int`) decides nothing here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import and_, case, func, literal, or_, select

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import byte_order
from ducklake_cli.catalog.queries import batches, visible

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement

    from ducklake_cli.catalog.reader import MetadataReader

TestOp = Literal["=", "<", "<=", ">", ">=", "between", "in", "is_null", "is_not_null"]
# Per stats column joined: min, max, null count, value count, contains NaN (in this order after the file columns).
STATS_FIELDS = ("min_value", "max_value", "null_count", "value_count", "contains_nan")
FILE_FIELDS = ("data_file_id", "path", "path_is_relative", "record_count", "file_size_bytes", "row_id_start",
               "begin_snapshot", "partial_max", "mapping_id", "partition_id", "encryption_key")
_ROWS_PER_FETCH = 20_000


@dataclass(frozen=True)
class StatsTest:
    """`column op values` decided from a file's stats row.

    `kind`: "int" compares bounds stored as plain integers with integer literals; "date" and "timestamp" compare
    bounds stored as canonical text (`YYYY-MM-DD`, `YYYY-MM-DD HH:MM:SS[.fraction without trailing zeros]`, a real
    date and time) with literals rendered the same way, bytewise: in that form text order is time order. Each
    literal is given as the range (lowest, highest) of its readings in the column's type (a literal a reader may
    cast more than one way).
    `keyed` lists the partition ids whose specs key the column: a file of one is never `sure` (its keys may prune it).
    """

    column_id: int
    op: TestOp
    values: tuple[tuple[Any, Any], ...] = ()
    keyed: tuple[int, ...] = ()
    kind: Literal["int", "date", "timestamp"] = "int"


def live_files(reader: MetadataReader, snapshot_id: int, table_id: int, *, stats_columns: Sequence[int] = (),
               tests: Sequence[StatsTest] = (), complete: bool = False) -> Iterator[tuple[Any, ...]]:
    """Rows (FILE_FIELDS, then STATS_FIELDS per `stats_columns` entry, then `sure`) of the data files live at S that
    the tests do not rule out, by data file id. `sure` is 1 only when `complete` (the tests are the whole filter)
    and every test's stats prove the file may match."""
    d = s.data_file_t
    joins: Any = d
    stats: dict[int, Any] = {}
    for i, cid in enumerate(dict.fromkeys([*stats_columns, *(t.column_id for t in tests)])):
        st = s.file_column_stats_t.alias(f"st{i}")
        stats[cid] = st
        joins = joins.outerjoin(st, and_(st.c.data_file_id == d.c.data_file_id, st.c.table_id == table_id,
                                         st.c.column_id == cid))
    ruled_out = [case((_ruled_out(reader, stats[t.column_id], t), 1), else_=0) for t in tests]
    sure: ColumnElement[Any] = literal(0)
    if complete and tests:
        sure = case((and_(*(_proven(reader, d, stats[t.column_id], t) for t in tests)), 1), else_=0)
    columns = [*(d.c[f] for f in FILE_FIELDS),
               *(stats[cid].c[f] for cid in stats_columns for f in STATS_FIELDS), sure]
    query = (select(*columns).select_from(joins)
             .where(d.c.table_id == table_id, visible(d, snapshot_id),
                    *([sum(ruled_out[1:], ruled_out[0]) == 0] if ruled_out else []))
             .order_by(d.c.data_file_id))
    for part in batches(reader.conn, query, _ROWS_PER_FETCH):
        yield from part


def live_file_count(reader: MetadataReader, snapshot_id: int, table_id: int) -> int:
    """How many data files of the table are live at S."""
    d = s.data_file_t
    return int(reader.conn.execute(
        select(func.count()).where(d.c.table_id == table_id, visible(d, snapshot_id))).scalar_one())


def _bounds(reader: MetadataReader, st: Any, t: StatsTest) -> tuple[ColumnElement[Any], ColumnElement[Any]]:
    """The stats row's min and max as SQL compares them with the test's literals (NULL where it cannot)."""
    if t.kind == "int":
        return reader.backend.plain_int(st.c.min_value), reader.backend.plain_int(st.c.max_value)
    return _time_text(reader, st.c.min_value, t.kind), _time_text(reader, st.c.max_value, t.kind)


def _time_text(reader: MetadataReader, text: ColumnElement[Any], form: str) -> ColumnElement[Any]:
    """A DATE/TIMESTAMP stats text when canonical and a real date and time (bytewise comparable), else NULL."""
    from sqlalchemy import Integer

    def part(start: int, length: int) -> ColumnElement[Any]:
        return reader.backend.to_int(func.substr(text, start, length), Integer())

    y, m, d = part(1, 4), part(6, 2), part(9, 2)
    leap = or_(and_(y % 4 == 0, y % 100 != 0), y % 400 == 0)
    days = case((m.in_([1, 3, 5, 7, 8, 10, 12]), 31), (m.in_([4, 6, 9, 11]), 30), (leap, 29), else_=28)
    clock = literal(True) if form == "date" else and_(part(12, 2) <= 23, part(15, 2) <= 59, part(18, 2) <= 59)
    valid = and_(y >= 1, m.between(1, 12), d >= 1, d <= days, clock)
    return case((reader.backend.text_form(text, form), case((valid, byte_order(text)))))


def _ruled_out(reader: MetadataReader, st: Any, t: StatsTest) -> ColumnElement[bool]:
    """True only when the file's stats row proves no row matches (NULL or false otherwise)."""
    has = st.c.data_file_id.is_not(None)
    if t.op == "is_null":
        return and_(has, st.c.null_count == 0)
    if t.op == "is_not_null":
        return and_(has, st.c.value_count == 0)
    lo, hi = _bounds(reader, st, t)
    v = t.values  # each literal's readings as (lowest, highest): a file is out when every reading is
    miss: ColumnElement[bool]
    if t.op == "=":
        miss = or_(lo > v[0][1], hi < v[0][0])
    elif t.op == "<":
        miss = lo >= v[0][1]
    elif t.op == "<=":
        miss = lo > v[0][1]
    elif t.op == ">":
        miss = hi <= v[0][0]
    elif t.op == ">=":
        miss = hi < v[0][0]
    elif t.op == "between":
        miss = or_(hi < v[0][0], lo > v[1][1])
    else:  # in
        miss = and_(*(or_(lo > x[1], hi < x[0]) for x in v))
    if t.kind != "int":  # a time bound SQL cannot read may be one the rules cannot either: they then keep the file
        readable = and_(or_(st.c.min_value.is_(None), lo.is_not(None)), or_(st.c.max_value.is_(None), hi.is_not(None)))
        miss = and_(miss, readable)
    return and_(has, or_(st.c.value_count == 0, miss))


def _proven(reader: MetadataReader, d: Any, st: Any, t: StatsTest) -> ColumnElement[bool]:
    """True only when the file's stats prove a row may match and no partition key of the column can say otherwise."""
    unkeyed = or_(d.c.partition_id.is_(None), d.c.partition_id.not_in(t.keyed)) if t.keyed else literal(True)
    no_stats = st.c.data_file_id.is_(None)
    if t.op == "is_null":
        return and_(unkeyed, or_(no_stats, st.c.null_count.is_(None), st.c.null_count != 0))
    not_all_null = or_(st.c.value_count.is_(None), st.c.value_count != 0)
    if t.op == "is_not_null":
        return and_(unkeyed, or_(no_stats, not_all_null))
    lo, hi = _bounds(reader, st, t)
    no_lo, no_hi = st.c.min_value.is_(None), st.c.max_value.is_(None)

    def within(low: Any, high: Any) -> ColumnElement[bool]:
        return and_(or_(no_lo, lo <= high), or_(no_hi, hi >= low))

    v = t.values  # a file may match when some reading does: the lowest reading for `<`, one reading for `=`
    may: ColumnElement[bool]
    if t.op == "=":
        may = within(v[0][0], v[0][0])
    elif t.op == "<":
        may = or_(no_lo, lo < v[0][1])
    elif t.op == "<=":
        may = or_(no_lo, lo <= v[0][1])
    elif t.op == ">":
        may = or_(no_hi, hi > v[0][0])
    elif t.op == ">=":
        may = or_(no_hi, hi >= v[0][0])
    elif t.op == "between":
        may = within(v[0][0], v[1][1])
    else:  # in
        may = or_(*(within(x[0], x[0]) for x in v))
    return and_(unkeyed, or_(no_stats, and_(not_all_null, may)))
