"""Many insert-only snapshots appended in one catalog transaction, their rows sent in bulk (large test and
benchmark lakes).

Each snapshot is staged by the same `Transaction` and `TableWrite` code as any commit, so the rows are the ones a
series of `ducklake write` commits would leave; only the sending differs: rows wait per catalog table and go out as
one executemany each, and table stats are merged once at the end instead of read and rewritten per snapshot.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select, update

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.models import LeafStats, NewDataFile, Snapshot, TableInfo
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.catalog.transaction import Transaction
from ducklake_cli.catalog.writes import TableWrite

if TYPE_CHECKING:
    from sqlalchemy import Connection, Table

    from ducklake_cli.catalog.backends import Backend


@dataclass(frozen=True)
class _RowIds:
    """The one table-stats field a staged snapshot's `TableWrite` reads: where its row ids start."""

    next_row_id: int


@dataclass
class _Appended:
    """What the staged snapshots added to one table so far."""

    table: TableInfo
    stats_row: Any  # the table's `ducklake_table_stats` row before the first staged snapshot (None: no row yet)
    records: int = 0
    file_bytes: int = 0
    leaf_stats: list[LeafStats] = field(default_factory=list)

    @property
    def next_row_id(self) -> int:
        """The first row id the next staged snapshot gives out."""
        base = int(self.stats_row.next_row_id or 0) if self.stats_row is not None else 0
        return base + self.records


class _Staged(Transaction):
    """One appended snapshot: ids and change entries as in any commit, its rows held back for the bulk send."""

    def __init__(self, bulk: BulkAppend, when: dt.datetime) -> None:
        super().__init__(bulk.conn, bulk.backend, bulk.latest)
        self.reader = bulk.reader  # catalog table names and inlined-table columns are read once for all snapshots
        self.now = when
        self._pending = bulk.pending

    def insert(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
        """Hold the rows until `BulkAppend.finish`."""
        self._pending.setdefault(table, []).extend(rows)


class BulkAppend:
    """Insert-only snapshots staged one after another on an open write connection; `finish` sends them."""

    def __init__(self, conn: Connection, backend: Backend) -> None:
        self.conn = conn
        self.backend = backend
        self.reader = MetadataReader(conn, backend)
        self.latest: Snapshot = self.reader.latest_snapshot()
        self.pending: dict[Table, list[Mapping[str, Any]]] = {}
        self._tables: dict[int, _Appended] = {}

    def insert_files(self, table: TableInfo, files: Sequence[NewDataFile], when: dt.datetime) -> int:
        """Stage a snapshot at time `when` that adds Parquet `files` (paths relative to the table directory)."""
        return self._snapshot(table, when, lambda w: w.add_files(files))

    def insert_inlined(self, table: TableInfo, values: Sequence[Sequence[tuple[str | None, Any]]],
                       stats: Sequence[LeafStats], when: dt.datetime) -> int:
        """Stage a snapshot at time `when` that inlines rows in the catalog (arguments as `TableWrite.add_inlined`;
        the rows themselves are inserted at once)."""
        return self._snapshot(table, when, lambda w: w.add_inlined(values, stats))

    def _snapshot(self, table: TableInfo, when: dt.datetime, add: Callable[[TableWrite], object]) -> int:
        appended = self._tables.get(table.table_id)
        if appended is None:
            ts = s.table_stats_t
            row = self.conn.execute(select(ts).where(ts.c.table_id == table.table_id)).first()
            appended = self._tables[table.table_id] = _Appended(table, row)
        tx = _Staged(self, when)
        write = TableWrite.with_stats(tx, appended.table, _RowIds(appended.next_row_id))
        add(write)
        if not write.wrote_file and write.records:
            tx.file_id()  # DuckDB advances next_file_id for inline-only commits (spec §4), as TableWrite.finish does
        tx.finish(author=None, message=None, extra_info=None)
        appended.table = write.table  # inlining may have created a new inlined-data table
        appended.records += write.records
        appended.file_bytes += write.file_bytes
        appended.leaf_stats.extend(write.leaf_stats or ())
        self.latest = Snapshot(tx.snapshot_id, tx.now, tx.schema_version, tx.next_catalog_id, tx.next_file_id)
        return tx.snapshot_id

    def retime(self, times: Mapping[int, dt.datetime]) -> None:
        """Move existing snapshots to other times (a generated history that lies in the past)."""
        snap = s.snapshot_t
        for snapshot_id, when in times.items():
            self.conn.execute(update(snap).where(snap.c.snapshot_id == snapshot_id)
                              .values(snapshot_time=self.backend.encode_timestamp(when)))

    def finish(self) -> None:
        """Send the staged rows (one executemany per catalog table), then merge each table's stats once."""
        for table, rows in self.pending.items():
            self.conn.execute(insert(table), list(rows))
        self.pending.clear()
        tx = Transaction(self.conn, self.backend, self.latest)  # runs the stats statements; commits no snapshot
        for a in self._tables.values():
            TableWrite.with_stats(tx, a.table, a.stats_row, records=a.records, new_row_ids=a.records,
                                  file_bytes=a.file_bytes,
                                  leaf_stats=a.leaf_stats, wrote_file=True).finish()
        self._tables.clear()
