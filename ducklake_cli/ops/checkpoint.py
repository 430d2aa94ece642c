"""`maintain checkpoint`: every maintenance step in DuckDB's CHECKPOINT order, each with the catalog's defaults —
flush, expire, compact, rewrite, cleanup, orphans (spec §7)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ducklake_cli.ops.maintenance import MaintenanceReport, Plan

if TYPE_CHECKING:
    from ducklake_cli.lake import Lake

STEPS = ("flush", "expire", "compact", "rewrite", "cleanup", "orphans")


def _planners(table: str | None, now: dt.datetime) -> list[tuple[str, Callable[[Lake], Plan]]]:
    from ducklake_cli.ops.cleanup import plan_cleanup, plan_orphans
    from ducklake_cli.ops.expire import plan_expire
    from ducklake_cli.ops.flush import plan_flush
    from ducklake_cli.ops.rewrite import plan_compact, plan_rewrite

    return [("flush", lambda lake: plan_flush(lake, table=table)),
            ("expire", lambda lake: plan_expire(lake, now=now)),
            ("compact", lambda lake: plan_compact(lake, table=table)),
            ("rewrite", lambda lake: plan_rewrite(lake, table=table)),
            ("cleanup", lambda lake: plan_cleanup(lake, now=now)),
            ("orphans", lambda lake: plan_orphans(lake, now=now))]


class CheckpointPlan(Plan):
    """The six steps; each is planned on the state the previous one left, so a dry run shows the first plan
    of each step against today's catalog."""

    verb = "checkpoint"

    def __init__(self, lake: Lake, *, table: str | None, now: dt.datetime) -> None:
        self.planners = _planners(table, now)
        self.catalog = lake.target.display()
        self.first = [(name, make(lake)) for name, make in self.planners]

    def _combine(self, reports: list[tuple[str, MaintenanceReport]], dry_run: bool) -> MaintenanceReport:
        files = tuple(f for _, r in reports for f in r.files)
        snapshot_ids = tuple(i for _, r in reports for i in r.snapshot_ids)
        steps: dict[str, Any] = {name: r.to_json() for name, r in reports}
        notes = tuple(f"{name}: {r.headline()}" for name, r in reports)
        return MaintenanceReport("checkpoint", self.catalog, dry_run, snapshot_ids=snapshot_ids, files=files,
                                 notes=notes, extra={"steps": steps})

    def report(self) -> MaintenanceReport:
        """Each step's plan on the current catalog."""
        return self._combine([(name, p.report()) for name, p in self.first], True)

    def is_empty(self) -> bool:
        """Every step has nothing to do."""
        return all(p.is_empty() for _, p in self.first)

    def question(self) -> str:
        """The confirmation question."""
        return "checkpoint: flush, expire, compact, rewrite, cleanup and orphans as planned — go ahead?"

    def apply(self, lake: Lake) -> MaintenanceReport:
        """Run the steps in order, re-planning each on the catalog the previous step left."""
        done = []
        for name, make in self.planners:
            plan = make(lake)
            if not plan.is_empty():
                done.append((name, plan.apply(lake)))
        return self._combine(done, False)


def plan_checkpoint(lake: Lake, *, table: str | None = None, now: dt.datetime | None = None) -> CheckpointPlan:
    """The checkpoint plan (read-only until applied)."""
    return CheckpointPlan(lake, table=table, now=now or dt.datetime.now(dt.UTC))
