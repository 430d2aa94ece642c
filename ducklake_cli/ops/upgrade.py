"""`upgrade`: move an older DuckLake catalog to 1.0 or 1.1 as DuckDB's migration does — planned first, checked
before anything is written, backed up (a verified `copy-catalog`), migrated in one transaction, then verified."""

from __future__ import annotations

import datetime as dt
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text

from ducklake_cli.catalog import migrate as m
from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.url import CatalogTarget
from ducklake_cli.catalog.versions import (
    CURRENT,
    FormatVersion,
    Support,
    format_version,
    is_v11,
    order,
    read_version,
    refusal,
)
from ducklake_cli.errors import CommitConflictError, DuckLakeError, UnsupportedVersionError, UsageError
from ducklake_cli.lake import Lake
from ducklake_cli.ops.copy_catalog import copy_catalog
from ducklake_cli.ops.results import Section
from ducklake_cli.ops.verify import VerifyReport, verify

TARGETS = (CURRENT, s.LATEST_VERSION)
V11_WARNING = ("every client of this lake must read DuckLake 1.1 first (DuckDB 2.0 or later, ducklake): DuckDB 1.5 "
               "and older cannot attach it afterwards, and no tool lowers the version again")
ATTEMPTS = 3  # a catalog another client commits to while we back it up is backed up again this often


@dataclass(frozen=True)
class PlannedOp:
    """One operation of one step."""

    step: str
    action: str
    rows: int | None
    irreversible: bool


@dataclass(frozen=True)
class UpgradePlan:
    """Everything `upgrade` will do, decided read-only."""

    catalog: str
    backend: str
    found: str
    target: str
    ops: tuple[PlannedOp, ...]
    source: str  # the version the steps start from: `found`, or 1.1-dev1 for a 1.1 catalog without 1.1's columns
    notes: tuple[str, ...]
    attached_by_before: str
    attached_by_after: str
    transactional: bool
    backup: str | None
    restore: str | None
    snapshot_id: int
    target_ref: CatalogTarget = field(repr=False, compare=False)
    backup_ref: CatalogTarget | None = field(repr=False, compare=False)

    def is_empty(self) -> bool:
        """Already at the target version, with its tables."""
        return self.found == self.target and not self.ops

    def headline(self) -> str:
        """One line for people."""
        if self.is_empty():
            return f"{self.catalog} is already a DuckLake {self.target} catalog: nothing to do"
        return (f"upgrade {self.catalog} from DuckLake {self.found} to {self.target}: {len(self.ops)} change(s), "
                f"{sum(o.irreversible for o in self.ops)} irreversible; "
                + (f"backup to {self.backup}" if self.backup else "no backup"))

    def to_json(self) -> Any:
        """`{"catalog", "backend", "found", "target", "steps": [{"step", "action", "rows", "irreversible"}], "notes",
        "attached_by_before", "attached_by_after", "transactional", "backup", "restore", "snapshot_id"}`."""
        return {"catalog": self.catalog, "backend": self.backend, "found": self.found, "target": self.target,
                "steps": [{"step": o.step, "action": o.action, "rows": o.rows, "irreversible": o.irreversible}
                          for o in self.ops],
                "notes": list(self.notes), "attached_by_before": self.attached_by_before,
                "attached_by_after": self.attached_by_after, "transactional": self.transactional,
                "backup": self.backup, "restore": self.restore, "snapshot_id": self.snapshot_id}

    def sections(self) -> list[Section]:
        """Facts, the operations, the notes."""
        facts = (("catalog", self.catalog), ("backend", self.backend), ("found", self.found),
                 ("target", self.target), ("attached by now", self.attached_by_before),
                 ("attached by after", self.attached_by_after),
                 ("one transaction", "yes" if self.transactional else "no (MySQL commits each DDL statement)"),
                 ("backup", self.backup or "none (--no-backup)"), ("restore with", self.restore or "-"))
        ops = tuple((o.step, o.action, "-" if o.rows is None else o.rows, "yes" if o.irreversible else "")
                    for o in self.ops)
        return [Section("Upgrade", ("property", "value"), facts, csv=False),
                Section("Steps", ("step", "action", "rows", "irreversible"), ops),
                Section("Notes", ("note",), tuple((n,) for n in self.notes), csv=False, table=bool(self.notes))]


@dataclass(frozen=True)
class UpgradeResult:
    """What `upgrade` did: the plan as run, rows rewritten per step, the backup and the health check after."""

    plan: UpgradePlan
    rewritten: dict[str, int]
    verified: VerifyReport

    def headline(self) -> str:
        """One line for people."""
        health = ("verify: healthy" if self.verified.healthy
                  else f"verify found {len(self.verified.problems)} problem(s): run `ducklake verify`")
        backup = f"; backup: {self.plan.backup} (restore: {self.plan.restore})" if self.plan.backup else ""
        return (f"upgraded {self.plan.catalog} from DuckLake {self.plan.found} to {self.plan.target}; "
                f"{health}{backup}")

    def to_json(self) -> Any:
        """The plan's JSON with `"applied": true`, `"rewritten"` rows per step and `"verify"` (as `verify`'s)."""
        return {**self.plan.to_json(), "applied": True, "rewritten": self.rewritten,
                "verify": self.verified.to_json()}

    def sections(self) -> list[Section]:
        """The plan's sections, then rows rewritten per step."""
        return [*self.plan.sections(),
                Section("Rewritten", ("step", "rows"), tuple(self.rewritten.items()))]


def _attached_by_after(target: str) -> str:
    known = format_version(target)
    assert known is not None
    return known.attached_by


def default_backup(target: CatalogTarget, found: str, now: dt.datetime) -> CatalogTarget:
    """Beside a catalog file, with the same backend; for a server catalog, a SQLite file in the working
    directory. The name carries the version and the time."""
    stamp = now.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    if target.path is not None:
        name = f"{target.path.stem}.v{found}-backup-{stamp}{target.path.suffix or '.db'}"
        return CatalogTarget(backend=target.backend, path=target.path.with_name(name))
    where = "-".join(p for p in (target.database, target.metadata_schema) if p) or "catalog"
    return CatalogTarget(backend="sqlite", path=Path.cwd() / f"ducklake-{where}.v{found}-backup-{stamp}.sqlite")


def _restore_command(target: CatalogTarget, backup: CatalogTarget) -> str:
    if target.path is not None and backup.path is not None and backup.backend == target.backend:
        return f"cp {shlex.quote(str(backup.path))} {shlex.quote(str(target.path))}"
    dest = "" if target.metadata_schema is None else f" --dest-metadata-schema {shlex.quote(target.metadata_schema)}"
    source = str(backup.path) if backup.path is not None else backup.display()
    return (f"drop the catalog's ducklake_* tables, then: ducklake copy-catalog {shlex.quote(source)} "
            f"{shlex.quote(target.display())}{dest}")


def _check_upgradable(version: str | None, to: str, where: str) -> FormatVersion:
    known = format_version(version)
    if known is None or known.support in (Support.TOO_OLD, Support.LEGACY_DEV):
        refused = refusal(version, where=where, writing=True)
        assert refused is not None
        raise refused
    if order(known.version) > order(to):
        raise UnsupportedVersionError(f"{where} is a DuckLake {known.version} catalog: newer than {to}, and a "
                                      "catalog cannot be downgraded; nothing was changed")
    return known


def reserved_columns(conn: Connection, lake: Lake) -> list[str]:
    """`schema.table.column` of live user columns named with 1.1's reserved `_ducklake_` prefix (any case)."""
    b = lake.backend
    rows = conn.execute(text(
        f"SELECT sc.schema_name, t.table_name, c.column_name FROM {b.qualify('ducklake_column')} c "
        f"JOIN {b.qualify('ducklake_table')} t ON t.table_id = c.table_id AND t.end_snapshot IS NULL "
        f"JOIN {b.qualify('ducklake_schema')} sc ON sc.schema_id = t.schema_id AND sc.end_snapshot IS NULL "
        "WHERE c.end_snapshot IS NULL ORDER BY t.table_id, c.column_id")).all()
    return [f"{r[0]}.{r[1]}.{r[2]}" for r in rows if str(r[2]).lower().startswith(s.RESERVED_PREFIX_V11)]


def _check_reserved(conn: Connection, lake: Lake, where: str) -> None:
    """1.1 reserves `_ducklake_` column names: a catalog using one is refused before anything is written."""
    found = reserved_columns(conn, lake)
    if found:
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        raise UnsupportedVersionError(
            f"{where} has column(s) named with DuckLake 1.1's reserved prefix _ducklake_: {', '.join(found[:3])}{more};"
            " nothing was changed", hint="rename them (ALTER TABLE … RENAME COLUMN), flush inlined data (`ducklake "
            "maintain flush`), then upgrade")


def plan_upgrade(target: CatalogTarget, *, to: str = CURRENT, backup: CatalogTarget | None = None,
                 no_backup: bool = False, now: dt.datetime | None = None) -> UpgradePlan:
    """Read the catalog and plan its upgrade to `to`; refuses what cannot be upgraded (nothing is written)."""
    if to not in TARGETS:
        raise UsageError(f"--to {to}: this ducklake upgrades to {' or '.join(TARGETS)}",
                         hint="1.0 is attached by DuckDB 1.5.2+ and 2.0; 1.1 by DuckDB 2.0 only")
    where = target.display()
    lake = Lake(target, read_only=True)
    try:
        with lake.connection(consistent=True) as conn:
            known = _check_upgradable(read_version(conn, lake.backend), to, where)
            found = known.version
            # A `1.1` without 1.1's columns (a fork's, written before they existed) is finished like a 1.1-dev1.
            source = m.effective_version(conn, lake.backend, found) if to == s.LATEST_VERSION else found
            m.check_layout(conn, lake.backend, source)
            if is_v11(to) and source != to:
                _check_reserved(conn, lake, where)
            steps = m.path(source, to) if source != to else []
            # A later step's rewrites read tables the earlier steps change: they are counted when they run.
            ops = tuple(
                planned for i, (st, _) in enumerate(steps) for planned in (
                    *(PlannedOp(f"{st.source} -> {st.target}", op.describe(),
                                None if i and isinstance(op, m.Rewrite) else m.op_rows(conn, lake.backend, op),
                                isinstance(op, m.DropColumn) or (isinstance(op, m.Rewrite) and op.irreversible))
                      for op in st.ops),
                    PlannedOp(f"{st.source} -> {st.target}", f"set the version to '{st.target}'", 1, False)))
            snapshot_id = _latest_snapshot(conn, lake)
        transactional = lake.backend.transactional_ddl
    finally:
        lake.close()
    if no_backup and not transactional and steps:
        raise UsageError("--no-backup is refused on MySQL: its DDL cannot roll back, so the backup is the way back",
                         hint="drop --no-backup, or pass --backup PATH")
    backup_ref = None if no_backup or not steps else backup or default_backup(target, found, now or
                                                                               dt.datetime.now(dt.UTC))
    notes = [V11_WARNING] if steps and is_v11(to) else []
    notes += [n for st, _ in steps for n in st.notes]
    if steps:
        older = "DuckDB 1.5" if is_v11(to) else "DuckDB 1.4"
        notes.append(f"stop every writer first: {older} and older cannot attach the result, and a commit that "
                     "lands while the upgrade runs makes it start again")
    if steps and not transactional:
        notes.append("MySQL commits each DDL statement at once: a failure part-way leaves the catalog partly "
                     "migrated; restore it from the backup (below) and run again")
    return UpgradePlan(
        where, target.backend, found, to, ops, source, tuple(notes), known.attached_by, _attached_by_after(to),
        transactional,
        None if backup_ref is None else (str(backup_ref.path) if backup_ref.path else backup_ref.display()),
        None if backup_ref is None else _restore_command(target, backup_ref), snapshot_id, target, backup_ref)


class _Changed(Exception):
    """Another client committed between the backup and the migration."""


def _remove(backup: CatalogTarget) -> None:
    if backup.path is not None:
        for leftover in (backup.path, backup.path.with_name(backup.path.name + ".wal")):
            leftover.unlink(missing_ok=True)


def _latest_snapshot(conn: Connection, lake: Lake) -> int:
    return int(conn.execute(text(f"SELECT MAX(snapshot_id) FROM {lake.backend.qualify('ducklake_snapshot')}"))
               .scalar() or 0)


def _backed_up_snapshot(backup: CatalogTarget) -> int:
    lake = Lake(backup, read_only=True)
    try:
        with lake.connection() as conn:
            return _latest_snapshot(conn, lake)
    finally:
        lake.close()


def _migrate(plan: UpgradePlan, expected_snapshot: int) -> dict[str, int]:
    """The migration in one transaction, after locking out writers and re-checking that the catalog is the one
    planned (and backed up); `check_rights` ran before the backup."""
    lake = Lake(plan.target_ref)
    try:
        with lake.connection(write=True) as conn:
            lock = lake.backend.lock_snapshots_sql()
            if lock:
                conn.exec_driver_sql(lock)
            version = read_version(conn, lake.backend)
            if version != plan.found or _latest_snapshot(conn, lake) != expected_snapshot:
                raise _Changed
            return m.migrate(conn, lake.backend, plan.source, plan.target)
    finally:
        lake.close()


def check_rights(plan: UpgradePlan) -> None:
    """Refuse, before the backup, a catalog this connection may not alter (read-only, missing rights)."""
    lake = Lake(plan.target_ref, read_only=True)
    try:
        with lake.connection() as conn:
            why = lake.backend.migration_refusal(conn)
    finally:
        lake.close()
    if why:
        raise DuckLakeError(f"cannot upgrade {plan.catalog}: {why}; nothing was changed")


def apply_upgrade(plan: UpgradePlan) -> UpgradeResult:
    """Back up (verified), migrate in one transaction, verify the result. A commit by another client between the
    backup and the migration starts over (new backup), at most `ATTEMPTS` times."""
    check_rights(plan)
    for _ in range(ATTEMPTS):
        expected = plan.snapshot_id
        if plan.backup_ref is not None:
            copy_catalog(plan.target_ref, plan.backup_ref)
            expected = _backed_up_snapshot(plan.backup_ref)
        try:
            rewritten = _migrate(plan, expected)
            break
        except _Changed:
            if plan.backup_ref is not None:
                _remove(plan.backup_ref)
            plan = plan_upgrade(plan.target_ref, to=plan.target, backup=plan.backup_ref,
                                no_backup=plan.backup_ref is None)
            if plan.is_empty():
                raise CommitConflictError(f"{plan.catalog} was upgraded by another client meanwhile; nothing was "
                                          "changed here") from None
        except BaseException:
            if plan.transactional and plan.backup_ref is not None:
                _remove(plan.backup_ref)  # the migration rolled back: the catalog is its own backup
            raise
    else:
        raise CommitConflictError(f"{plan.catalog} kept changing while it was being upgraded ({ATTEMPTS} attempts); "
                                  "nothing was changed", hint="stop the writers and run `ducklake upgrade` again")
    with Lake.open(plan.target_ref, read_only=True) as lake:
        report = verify(lake)
    return UpgradeResult(plan, rewritten, report)
