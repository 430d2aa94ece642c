"""Shared machinery of the destructive maintenance verbs: ages and thresholds, catalog paths, the plan → apply
protocol and the one report every verb returns (its JSON form is the cron-log summary documented in the README)."""

from __future__ import annotations

import calendar
import datetime as dt
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ducklake_cli.catalog.snapshots import timestamp_or_none
from ducklake_cli.errors import UsageError
from ducklake_cli.ops.results import Section

if TYPE_CHECKING:
    from ducklake_cli.catalog.options import Effective
    from ducklake_cli.lake import Lake

_UNITS: dict[str, tuple[int, float]] = {}  # unit → (months, seconds)
for _names, _value in (
    (("us", "usec", "usecs", "microsecond", "microseconds"), (0, 1e-6)),
    (("ms", "msec", "msecs", "millisecond", "milliseconds"), (0, 1e-3)),
    (("s", "sec", "secs", "second", "seconds"), (0, 1.0)),
    (("m", "min", "mins", "minute", "minutes"), (0, 60.0)),
    (("h", "hr", "hrs", "hour", "hours"), (0, 3600.0)),
    (("d", "day", "days"), (0, 86400.0)),
    (("w", "week", "weeks"), (0, 7 * 86400.0)),
    (("mon", "mons", "month", "months"), (1, 0.0)),
    (("y", "yr", "yrs", "year", "years"), (12, 0.0)),
):
    for _n in _names:
        _UNITS[_n] = _value
_TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*")


@dataclass(frozen=True)
class Age:
    """A duration such as `7d`, `12h`, `2w`, `30m` or DuckDB's `1 week 2 days` (months count on the calendar)."""

    text: str
    months: int
    seconds: float

    def before(self, now: dt.datetime) -> dt.datetime:
        """`now` minus this age."""
        when = now
        if self.months:
            total = when.year * 12 + (when.month - 1) - self.months
            year, month = divmod(total, 12)
            day = min(when.day, calendar.monthrange(year, month + 1)[1])
            when = when.replace(year=year, month=month + 1, day=day)
        return when - dt.timedelta(seconds=self.seconds)


def parse_age(text: str) -> Age | None:
    """An age like `7d`, `12h`, `2w`, `30m`, `1 week`, `2 days 12 hours`; None when `text` is not one."""
    pos, months, seconds, matched = 0, 0, 0.0, False
    body = text.strip().lower()
    while pos < len(body):
        m = _TOKEN.match(body, pos)
        if not m or m.group(2) not in _UNITS:
            return None
        unit_months, unit_seconds = _UNITS[m.group(2)]
        number = float(m.group(1))
        if unit_months and not number.is_integer():
            return None
        months += int(number) * unit_months
        seconds += number * unit_seconds
        pos, matched = m.end(), True
    return Age(text.strip(), months, seconds) if matched else None


def threshold(text: str, *, now: dt.datetime, what: str = "--older-than") -> dt.datetime:
    """An age (`7d`, `12h`, `2w`, `30m`, `1 week`) before `now`, or an ISO 8601 time (UTC when no zone)."""
    age = parse_age(text)
    if age is not None:
        return age.before(now)
    value = timestamp_or_none(text)
    if value is None:
        raise UsageError(
            f"{what} {text!r} is neither an age nor a time",
            hint="use an age such as 7d, 12h, 2w, 30m, '1 week', or an ISO time such as 2026-01-31T12:00:00Z",
        )
    return value


def option_threshold(found: Effective, *, now: dt.datetime) -> tuple[dt.datetime | None, str | None]:
    """The threshold a catalog option (an interval such as `1 week`, or its default) sets, and where it came from."""
    if found.value is None:
        return None, None
    age = parse_age(found.value)
    if age is None:
        raise UsageError(f"catalog option {found.key} = {found.value!r} is not an interval DuckLake understands",
                         hint="set it to something like '7 days' or '1 week'")
    source = f"default {found.value!r}" if found.source == "default" else f"option {found.key} = {found.value!r}"
    return age.before(now), source


# ----- catalog paths ---------------------------------------------------------------------------------------


# ----- the report and the plan protocol ---------------------------------------------------------------------


@dataclass(frozen=True)
class FileAction:
    """One file a verb schedules, deletes or leaves alone (with why)."""

    path: str
    action: str  # "schedule" | "delete" | "skip"
    bytes: int | None = None
    reason: str | None = None


@dataclass(frozen=True)
class MaintenanceReport:
    """What a maintenance verb will do (`dry_run`) or did: the JSON summary for cron logs."""

    verb: str
    catalog: str
    dry_run: bool
    snapshot_ids: tuple[int, ...] = ()
    files: tuple[FileAction, ...] = ()
    tables_removed: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # verb-specific counters, merged into the JSON

    def _of(self, action: str) -> list[FileAction]:
        return [f for f in self.files if f.action == action]

    @property
    def snapshots_expired(self) -> int:
        """Snapshots removed (or to be removed)."""
        return len(self.snapshot_ids)

    @property
    def files_scheduled(self) -> int:
        """Files put on `ducklake_files_scheduled_for_deletion`."""
        return len(self._of("schedule"))

    @property
    def files_deleted(self) -> int:
        """Files removed from storage."""
        return len(self._of("delete"))

    @property
    def bytes_freed(self) -> int:
        """Bytes of the files removed from storage."""
        return sum(f.bytes or 0 for f in self._of("delete"))

    @property
    def bytes_scheduled(self) -> int:
        """Bytes of the files scheduled for deletion (freed by a later cleanup)."""
        return sum(f.bytes or 0 for f in self._of("schedule"))

    def is_empty(self) -> bool:
        """Nothing to change."""
        return not (self.snapshot_ids or self.tables_removed or self._of("schedule") or self._of("delete"))

    def headline(self) -> str:
        """One line for people: what was (or would be) done."""
        verb = "would" if self.dry_run else "did"
        if self.verb == "expire":
            parts = [f"{self.verb}: {verb} expire {self.snapshots_expired} snapshot(s)"]
        elif "rows_flushed" in self.extra:
            parts = [f"{self.verb}: {verb} move {self.extra['rows_flushed']} inlined row(s) into Parquet"]
        elif "files_rewritten" in self.extra:
            parts = [f"{self.verb}: {verb} rewrite {self.extra['files_rewritten']} file(s) in "
                     f"{self.extra['groups']} group(s)"]
        elif "steps" in self.extra:
            parts = [f"{self.verb}: {verb} run {', '.join(self.extra['steps']) or 'nothing'}"]
        else:
            parts = [f"{self.verb}: {verb} delete {self.files_deleted} file(s) ({_size(self.bytes_freed)})"]
        if self.files_scheduled:
            parts.append(f"schedule {self.files_scheduled} file(s) ({_size(self.bytes_scheduled)}) for deletion")
        skipped = len(self._of("skip"))
        if skipped:
            parts.append(f"skip {skipped} file(s)")
        return ", ".join(parts)

    def to_json(self) -> Any:
        """`{verb, catalog, dry_run, snapshots_expired, files_scheduled, files_deleted, bytes_freed,
        bytes_scheduled, snapshot_ids, tables_removed, files[{path, action, bytes, reason}], notes}`."""
        out: dict[str, Any] = {
            "verb": self.verb, "catalog": self.catalog, "dry_run": self.dry_run,
            "snapshots_expired": self.snapshots_expired, "files_scheduled": self.files_scheduled,
            "files_deleted": self.files_deleted, "bytes_freed": self.bytes_freed,
            "bytes_scheduled": self.bytes_scheduled, "snapshot_ids": list(self.snapshot_ids),
            "tables_removed": list(self.tables_removed),
            "files": [{"path": f.path, "action": f.action, "bytes": f.bytes, "reason": f.reason} for f in self.files],
            "notes": list(self.notes),
        }
        out.update(self.extra)
        return out

    def sections(self) -> list[Section]:
        """Summary, files and snapshots tables (the files table is what `--format csv` prints)."""
        title = "Plan" if self.dry_run else "Done"  # a plan shown before --yes applies it is no dry run
        summary = Section(f"{self.verb}: {title}", ("snapshots expired", "files scheduled", "files deleted",
                                                    "bytes freed", "bytes scheduled"),
                          ((self.snapshots_expired, self.files_scheduled, self.files_deleted, self.bytes_freed,
                            self.bytes_scheduled),), csv=False)
        out = [summary]
        if self.snapshot_ids:
            out.append(Section("Snapshots", ("snapshot ids",), ((_id_ranges(self.snapshot_ids),),), csv=False))
        if self.tables_removed:
            out.append(Section("Tables removed from the catalog", ("table",),
                               tuple((t,) for t in self.tables_removed), csv=False))
        out.append(Section("Files", ("action", "path", "bytes", "reason"),
                           tuple((f.action, f.path, f.bytes, f.reason) for f in self.files)))
        if self.notes:
            out.append(Section("Notes", ("note",), tuple((n,) for n in self.notes), csv=False))
        return out


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"


def _id_ranges(ids: Iterable[int]) -> str:
    """`1-4, 7, 9-12`."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(ids):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


class Plan(ABC):
    """A destructive verb's plan: built read-only, rendered by `--dry-run`, applied once confirmed.
    `apply` re-checks the catalog in its own transaction, so a plan that went stale never over-deletes."""

    verb: ClassVar[str]

    @abstractmethod
    def report(self) -> MaintenanceReport:
        """What applying would do (a dry-run report)."""

    @abstractmethod
    def apply(self, lake: Lake) -> MaintenanceReport:
        """Carry the plan out and report what was done."""

    def is_empty(self) -> bool:
        """Nothing to do: the CLI neither asks nor applies."""
        return self.report().is_empty()

    def question(self) -> str:
        """The confirmation question."""
        return f"{self.report().headline().replace('would ', '')} — go ahead?"
