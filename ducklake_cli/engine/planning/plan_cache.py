"""What a lake has already planned for a committed snapshot, kept for its next statements.

A committed snapshot never changes (spec §2: every change is a new snapshot), so a table's scan plan at snapshot N
and the DataFrame built from it are the same every time N is read: a session that runs several statements (an API
user, a notebook, the benchmark) plans each table at each snapshot once, as Spark lists a table's files once for a
temp view. What is not kept: which snapshot is the latest and what `VERSION`/`TIMESTAMP AS OF` means (asked of the
catalog every time, so an expired snapshot still fails), and anything planned inside a row-level change.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

# Entries kept per kind, least recently used first out: plans hold their inlined rows (small by the inlining limit).
MAX_ENTRIES = 256


class PlanCache:
    """Scan plans by (snapshot, table, pushed-down predicates) and the Spark DataFrames built from them."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, build: Callable[[], T], valid: Callable[[T], bool] = lambda _: True) -> T:
        """The value kept under `key` (if `valid` says it still is), else `build()`'s, kept; a key that cannot be
        hashed is never kept."""
        try:
            hash(key)
        except TypeError:
            return build()
        if key in self._items and valid(self._items[key]):
            self._items.move_to_end(key)
            return self._items[key]
        value = build()
        self._items[key] = value
        while len(self._items) > self.max_entries:
            self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        """Forget everything (a new Spark session, a closed lake)."""
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
