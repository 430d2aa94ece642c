"""Time travel: which snapshot a read looks at (an id, the newest at a time, or the latest), and the one parser of
the ISO 8601 times that name one."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ducklake_cli.errors import UsageError

if TYPE_CHECKING:
    from ducklake_cli.catalog.models import Snapshot
    from ducklake_cli.catalog.reader import MetadataReader


def timestamp_or_none(text: str) -> dt.datetime | None:
    """An ISO 8601 time or date (`Z` allowed; naive values are UTC); None when `text` is not one."""
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def parse_timestamp(text: str, what: str) -> dt.datetime:
    """An ISO 8601 time given for `what` (an option such as `--as-of`); naive values are UTC."""
    value = timestamp_or_none(text)
    if value is None:
        raise UsageError(f"{what} {text!r} is not an ISO 8601 time (e.g. 2026-01-31 or 2026-01-31T12:00:00Z)")
    return value


@dataclass(frozen=True)
class SnapshotSelector:
    """Which snapshot to look at: an id, the newest at or before a time, or (both None) the latest."""

    snapshot_id: int | None = None
    as_of: dt.datetime | None = None

    def __post_init__(self) -> None:
        if self.snapshot_id is not None and self.as_of is not None:
            raise UsageError("give either a snapshot id or a time, not both")

    def resolve(self, reader: MetadataReader) -> Snapshot:
        """The chosen snapshot (an error names what does not exist)."""
        if self.snapshot_id is not None:
            return reader.snapshot(self.snapshot_id)
        if self.as_of is not None:
            return reader.snapshot_at(self.as_of)
        return reader.latest_snapshot()


LATEST = SnapshotSelector()
