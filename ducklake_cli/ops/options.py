"""`options`: list the catalog options in effect for the lake, a schema or a table, and set or unset them as
DuckDB's `ducklake_set_option` does (no snapshot; one catalog transaction)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog import options as o
from ducklake_cli.catalog.models import LakeMetadata, SchemaInfo, TableInfo
from ducklake_cli.errors import DuckLakeError, NotFoundError, UsageError
from ducklake_cli.ops.results import Section, jsonable

if TYPE_CHECKING:
    from ducklake_cli.catalog.reader import MetadataReader
    from ducklake_cli.lake import Lake

_SCOPE_NAMES = {None: "GLOBAL", o.SCHEMA: "SCHEMA", o.TABLE: "TABLE"}
_SOURCE_NAMES = {"global": "GLOBAL", "schema": "SCHEMA", "table": "TABLE", "default": "DEFAULT"}


@dataclass(frozen=True)
class OptionRow:
    """One option as `ducklake_options()` shows it; scope DEFAULT marks a built-in default (no row stored)."""

    option_name: str
    value: str | None
    scope: str
    scope_entry: str | None
    description: str


@dataclass(frozen=True)
class OptionList:
    """The options in effect for the lake (every stored row and the defaults), a schema or a table."""

    scope: str
    scope_entry: str | None
    options: tuple[OptionRow, ...]

    def to_json(self) -> Any:
        """`{"scope": …, "scope_entry": …, "options": [{option_name, value, scope, scope_entry, description}]}`."""
        return jsonable(self)

    def sections(self) -> list[Section]:
        """One row per option (descriptions: JSON only, to keep the table narrow)."""
        return [options_section(self.options)]


def options_section(rows: Sequence[OptionRow], title: str = "Options") -> Section:
    """A table of options: name, value, scope and scope entry."""
    return Section(title, ("option", "value", "scope", "scope_entry"),
                   tuple((r.option_name, r.value, r.scope, r.scope_entry) for r in rows))


@dataclass(frozen=True)
class OptionChange:
    """What `options --set/--unset` did to one option row."""

    option_name: str
    scope: str
    scope_entry: str | None
    old_value: str | None
    new_value: str | None
    action: str  # "set", "unset" or "unchanged"


@dataclass(frozen=True)
class OptionChanges:
    """The result of `options --set/--unset` (the catalog is changed only when every item is valid)."""

    changes: tuple[OptionChange, ...]

    def to_json(self) -> Any:
        """`{"changes": [{option_name, scope, scope_entry, old_value, new_value, action}]}`."""
        return jsonable(self)

    def sections(self) -> list[Section]:
        """One row per option named."""
        return [Section("Options changed", ("option", "scope", "scope_entry", "old", "new", "action"),
                        tuple((c.option_name, c.scope, c.scope_entry, c.old_value, c.new_value, c.action)
                              for c in self.changes))]


@dataclass(frozen=True)
class _Scope:
    scope: str | None  # the `scope` column
    scope_id: int | None
    entry: str | None  # `schema` or `schema.table`, as DuckDB's scope_entry
    schema_id: int | None = None


def _find_schema(reader: MetadataReader, snapshot_id: int, name: str) -> SchemaInfo:
    schemas = reader.schemas(snapshot_id)
    if reader.v11:  # a dotted path of nested schemas, else a top-level schema named by the whole string
        from ducklake_cli.catalog.names import split_qualified
        from ducklake_cli.catalog.reader import pick_schema

        nested = pick_schema(schemas, split_qualified(name))
        if nested is not None:
            return nested
        schemas = [sc for sc in schemas if sc.parent_schema_id is None]
    exact = [sc for sc in schemas if sc.name == name]
    folded = [sc for sc in schemas if sc.name.lower() == name.lower()]
    found = exact or (folded if len(folded) == 1 else [])
    if not found:
        raise NotFoundError(f"schema {name} does not exist",
                            hint=f"schemas: {', '.join(sc.shown for sc in schemas)}")
    return found[0]


def _scope(reader: MetadataReader, *, schema: str | None, table: str | None) -> _Scope:
    if schema is not None and table is not None:
        raise UsageError("--schema and --table cannot be used together", hint="name the table as SCHEMA.TABLE")
    if schema is None and table is None:
        return _Scope(None, None, None)
    sid = reader.latest_snapshot().snapshot_id
    if table is not None:
        t = reader.find_table(sid, table)
        return _Scope(o.TABLE, t.table_id, f"{t.schema_name}.{t.name}", t.schema_id)
    sc = _find_schema(reader, sid, schema or "")
    return _Scope(o.SCHEMA, sc.schema_id, sc.shown, sc.schema_id)


def _entries(reader: MetadataReader) -> dict[tuple[str, int], str]:
    """Scope entries by (scope, id) for every schema and table at the latest snapshot."""
    sid = reader.latest_snapshot().snapshot_id
    out: dict[tuple[str, int], str] = {(o.SCHEMA, sc.schema_id): sc.shown for sc in reader.schemas(sid)}
    out.update({(o.TABLE, t.table_id): f"{t.schema_name}.{t.name}" for t in reader.tables(sid)})
    return out


def _description(key: str) -> str:
    spec = o.OPTIONS.get(key)
    return spec.description if spec else _FIXED_DESCRIPTIONS.get(key, "")


_FIXED_DESCRIPTIONS = {
    "version": "DuckLake format version of the catalog.", "created_by": "The program that created the lake.",
    "data_path": "Where the lake's data files live.", "encrypted": "Whether data files are encrypted.",
}


def lake_options(meta: LakeMetadata, entries: Mapping[tuple[str, int], str], *,
                 fixed: bool = True) -> tuple[OptionRow, ...]:
    """Every option of the lake: the fixed keys, each option's global value (or default) and every scoped row."""
    rows: list[OptionRow] = []
    if fixed:
        rows += [OptionRow("version", meta.version, "GLOBAL", None, _description("version")),
                 OptionRow("created_by", meta.created_by, "GLOBAL", None, _description("created_by")),
                 OptionRow("data_path", meta.data_path, "GLOBAL", None, _description("data_path")),
                 OptionRow("encrypted", "true" if meta.encrypted else "false", "GLOBAL", None,
                           _description("encrypted"))]
    for key in sorted({*o.OPTIONS, *(v.key for v in meta.options)}):
        eff = o.effective(meta, key)
        rows.append(OptionRow(key, eff.value, _SOURCE_NAMES[eff.source], None, _description(key)))
        scoped = sorted((v for v in meta.options if v.key == key and v.scope is not None),
                        key=lambda v: (v.scope != o.SCHEMA, entries.get((v.scope or "", v.scope_id or 0), "")))
        rows += [OptionRow(key, v.value, _SCOPE_NAMES.get(v.scope, (v.scope or "").upper()),
                           entries.get((v.scope or "", v.scope_id or 0), f"#{v.scope_id}"), _description(key))
                 for v in scoped]
    return tuple(rows)


def effective_options(meta: LakeMetadata, *, table_id: int | None = None, schema_id: int | None = None,
                      entries: Mapping[tuple[str, int], str]) -> tuple[OptionRow, ...]:
    """Each option's value for one schema or table (table scope, schema scope, global, default) and its source."""
    rows = []
    for key in sorted(o.OPTIONS):
        eff = o.effective(meta, key, table_id=table_id, schema_id=schema_id)
        entry = (entries.get((o.TABLE, table_id or 0)) if eff.source == "table"
                 else entries.get((o.SCHEMA, schema_id or 0)) if eff.source == "schema" else None)
        rows.append(OptionRow(key, eff.value, _SOURCE_NAMES[eff.source], entry, _description(key)))
    return tuple(rows)


def list_options(lake: Lake, *, schema: str | None = None, table: str | None = None) -> OptionList:
    """The options in effect: for the lake (every row and default), or for one schema or table."""
    with lake.reader() as r:
        meta = r.metadata()
        where = _scope(r, schema=schema, table=table)
        entries = _entries(r)
    if where.scope is None:
        return OptionList("GLOBAL", None, lake_options(meta, entries))
    rows = effective_options(meta, table_id=where.scope_id if where.scope == o.TABLE else None,
                             schema_id=where.schema_id, entries=entries)
    return OptionList(_SCOPE_NAMES[where.scope], where.entry, rows)


def _checked(assignments: Mapping[str, str], unset: Sequence[str], scope: str | None) -> tuple[
        list[tuple[str, str]], list[str]]:
    """Every --set normalised and every --unset key checked, before anything is written."""
    from ducklake_cli.ops.maintenance import parse_age

    sets: list[tuple[str, str]] = []
    for key, text in assignments.items():
        spec, stored = o.normalise(key, text)
        o.check_scope(spec, scope)
        if spec.kind == "interval" and parse_age(stored) is None:
            raise DuckLakeError(f"option {spec.key}: {text!r} is not an interval ducklake can read",
                                hint="use e.g. '7 days', '1 week', '12h' or '2 days 12 hours'")
        sets.append((spec.key, stored))
    gone = [o.spec(key).key for key in unset]
    both = {k for k, _ in sets} & set(gone)
    if both:
        raise UsageError(f"option {sorted(both)[0]} is both set and unset")
    if len({k for k, _ in sets}) != len(sets):
        raise UsageError("an option is set twice")
    return sets, gone


def change_options(lake: Lake, *, assignments: Mapping[str, str], unset: Sequence[str] = (),
                   schema: str | None = None, table: str | None = None) -> OptionChanges:
    """Set (UPDATE or INSERT) and unset (DELETE) options at one scope in one catalog transaction, without a
    snapshot; nothing is written unless every item is valid."""
    if not assignments and not unset:
        raise UsageError("nothing to change", hint="pass --set KEY=VALUE or --unset KEY")
    from ducklake_cli.catalog.reader import MetadataReader

    with lake.connection(write=True) as conn:
        reader = MetadataReader(conn, lake.backend)
        meta = reader.metadata()
        where = _scope(reader, schema=schema, table=table)
        sets, gone = _checked(assignments, unset, where.scope)
        current = {v.key: v.value for v in meta.options if v.scope == where.scope and v.scope_id == where.scope_id}
        scope_name = _SCOPE_NAMES[where.scope]
        changes = []
        for key, stored in sets:
            old = current.get(key)
            if old != stored:
                o.write_option(conn, key, stored, where.scope, where.scope_id)
            changes.append(OptionChange(key, scope_name, where.entry, old, stored,
                                        "unchanged" if old == stored else "set"))
        for key in gone:
            if key in current:  # (a driver's rowcount is not reliable on every backend)
                o.delete_option(conn, key, where.scope, where.scope_id)
            changes.append(OptionChange(key, scope_name, where.entry, current.get(key), None,
                                        "unset" if key in current else "unchanged"))
    return OptionChanges(tuple(changes))


def table_entries(tables: Sequence[TableInfo], schemas: Sequence[SchemaInfo]) -> dict[tuple[str, int], str]:
    """Scope entries from tables and schemas already read (for `inspect`)."""
    out: dict[tuple[str, int], str] = {(o.SCHEMA, sc.schema_id): sc.shown for sc in schemas}
    out.update({(o.TABLE, t.table_id): f"{t.schema_name}.{t.name}" for t in tables})
    return out
