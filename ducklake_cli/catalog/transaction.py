"""One `Transaction` commits exactly one snapshot (spec §5.1): ids, change string, rows, optimistic retries."""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select, text

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.changes import CHANGE_KEYS, format_changes, parse_changes
from ducklake_cli.catalog.models import Snapshot
from ducklake_cli.catalog.reader import MetadataReader
from ducklake_cli.errors import CommitConflictError, DuckLakeError

if TYPE_CHECKING:
    from sqlalchemy import Connection, Table

    from ducklake_cli.catalog.backends import Backend

MAX_RETRIES = 10
RETRY_WAIT_S = 0.1
RETRY_BACKOFF = 1.5
# Error texts that mean "another writer got there first" (DuckDB's list, plus SQLite/MySQL lock wording).
_RETRYABLE = ("primary key", "unique", "duplicate", "conflict", "concurrent", "database is locked", "deadlock",
              "could not serialize", "lock wait timeout")
_ORDER = {kind: i for i, kind in enumerate(CHANGE_KEYS)}


class Transaction:
    """The snapshot being built: new ids, change entries and catalog rows, all in one database transaction."""

    def __init__(self, conn: Connection, backend: Backend, latest: Snapshot) -> None:
        self.conn = conn
        self.backend = backend
        self.reader = MetadataReader(conn, backend)
        self.latest = latest
        self.snapshot_id = latest.snapshot_id + 1
        self.next_catalog_id = latest.next_catalog_id
        self.next_file_id = latest.next_file_id
        self.schema_changed = False
        self.versioned_tables: set[int] = set()  # tables with a `ducklake_schema_versions` row in this snapshot
        self.inlined_made: dict[int, str] = {}  # table id → the inlined-data table an ALTER made in this snapshot
        self.now = dt.datetime.now(dt.UTC)
        self._changes: list[tuple[str, str]] = []

    @property
    def v11(self) -> bool:
        """Whether this catalog takes DuckLake 1.1's rows and columns (never written into a 1.0 catalog)."""
        return self.reader.v11

    @property
    def schema_version(self) -> int:
        """The schema version this snapshot will carry."""
        return self.latest.schema_version + (1 if self.schema_changed else 0)

    def catalog_id(self) -> int:
        """A new schema/table/view/partition id."""
        self.next_catalog_id += 1
        return self.next_catalog_id - 1

    def file_id(self) -> int:
        """A new data file, delete file or name-mapping id."""
        self.next_file_id += 1
        return self.next_file_id - 1

    def change(self, kind: str, value: str | int) -> None:
        """Record one change entry (duplicates are written once)."""
        entry = (kind, str(value))
        if entry not in self._changes:
            self._changes.append(entry)

    @property
    def has_changes(self) -> bool:
        """Whether anything was staged."""
        return bool(self._changes)

    def insert(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert rows into a spec table."""
        if rows:
            self.conn.execute(insert(table), list(rows))

    def execute(self, statement: Any, params: Any = None) -> Any:
        """Run one statement inside the transaction."""
        return self.conn.execute(statement, params) if params is not None else self.conn.execute(statement)

    def execute_text(self, sql: str, params: Any = None) -> Any:
        """Run raw SQL (dynamic inlined-data tables)."""
        return self.conn.execute(text(sql), params) if params is not None else self.conn.execute(text(sql))

    def changes_since(self, snapshot_id: int) -> dict[str, set[str]]:
        """What other writers committed after `snapshot_id`, in DuckDB's change-map form."""
        sc = s.snapshot_changes_t
        rows = self.conn.execute(select(sc.c.changes_made).where(sc.c.snapshot_id > snapshot_id)).scalars().all()
        out: dict[str, set[str]] = {}
        for row in rows:
            for key, values in parse_changes(row).items():
                out.setdefault(key, set()).update(values)
        return out

    def finish(self, *, author: str | None, message: str | None, extra_info: str | None) -> None:
        """Write the snapshot row and its change string (the primary key on snapshot_id detects races)."""
        changes = format_changes(sorted(self._changes, key=lambda e: _ORDER[e[0]]))
        self.insert(s.snapshot_t, [{
            "snapshot_id": self.snapshot_id, "snapshot_time": self.backend.encode_timestamp(self.now),
            "schema_version": self.schema_version, "next_catalog_id": self.next_catalog_id,
            "next_file_id": self.next_file_id,
        }])
        self.insert(s.snapshot_changes_t, [{
            "snapshot_id": self.snapshot_id, "changes_made": changes, "author": author,
            "commit_message": message, "commit_extra_info": extra_info,
        }])


class _NothingToCommit(Exception):
    """`build` staged no change: leave the catalog exactly as it was."""


def _retryable(exc: Exception) -> bool:
    low = str(getattr(exc, "orig", exc)).lower()
    return any(word in low for word in _RETRYABLE)


def commit(
    connect: Callable[[], Any],
    backend: Backend,
    build: Callable[[Transaction], None],
    *,
    author: str | None = None,
    message: str | None = None,
    extra_info: str | None = None,
    max_retries: int = MAX_RETRIES,
    sleep: Callable[[float], None] = time.sleep,
) -> int | None:
    """Run `build` in a fresh transaction and commit one snapshot; retry on write races with jittered backoff.

    `connect()` returns a context manager yielding a connection that commits on success (`Lake.connection`).
    `build` raises `CommitConflictError` for a logical conflict (not retried). Returns the new snapshot id, or
    None when `build` staged nothing (nothing is written then).
    """
    from sqlalchemy.exc import DBAPIError

    for attempt in range(max_retries + 1):
        try:
            with connect() as conn:
                tx = Transaction(conn, backend, MetadataReader(conn, backend).latest_snapshot())
                build(tx)
                if not tx.has_changes:
                    raise _NothingToCommit  # rolls the connection's transaction back
                tx.finish(author=author, message=message, extra_info=extra_info)
            return tx.snapshot_id
        except _NothingToCommit:
            return None
        except (DBAPIError, DuckLakeError) as exc:
            # A DuckDB file locked by another writer surfaces as our error with the driver's as its cause.
            cause = exc if isinstance(exc, DBAPIError) else exc.__cause__
            if not isinstance(cause, DBAPIError) or not _retryable(cause):
                raise
            if attempt == max_retries:
                raise CommitConflictError(
                    f"could not commit after {max_retries} retries: other writers kept committing first or held "
                    "the catalog locked", hint="retry later; nothing was changed") from exc
            sleep(RETRY_WAIT_S * random.uniform(0.5, 1.0) * RETRY_BACKOFF ** attempt)
    raise DuckLakeError("unreachable")  # pragma: no cover
