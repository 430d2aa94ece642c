"""The `changes_made` strings of `ducklake_snapshot_changes` (spec §5.3): parse and write."""

from __future__ import annotations

from collections.abc import Iterable

from ducklake_cli.catalog.names import split_outside_quotes
from ducklake_cli.errors import ChangeParseError

# Token → key of DuckDB's `ducklake_snapshots().changes` map, in the order DuckDB writes tokens.
CHANGE_KEYS: dict[str, str] = {
    "dropped_schema": "schemas_dropped",
    "dropped_table": "tables_dropped",
    "dropped_view": "views_dropped",
    "created_schema": "schemas_created",
    "created_table": "tables_created",
    "created_view": "views_created",
    "created_scalar_macro": "scalar_macros_created",
    "created_table_macro": "table_macros_created",
    "dropped_scalar_macro": "scalar_macros_dropped",
    "dropped_table_macro": "table_macros_dropped",
    "inserted_into_table": "tables_inserted_into",
    "deleted_from_table": "tables_deleted_from",
    "altered_table": "tables_altered",
    "altered_view": "views_altered",
    "inlined_insert": "inlined_insert",
    "inlined_delete": "inlined_delete",
    "inline_flush": "flushed_inlined",
    "flushed_inlined": "flushed_inlined",
    "merge_adjacent": "merge_adjacent",
    "compacted_table": "merge_adjacent",
    "rewrite_delete": "rewrite_delete",
}


def _split(text: str) -> list[str]:
    """Split on commas outside double quotes."""
    if text.count('"') % 2:
        raise ChangeParseError(f"unterminated quote in change string {text!r}")
    return split_outside_quotes(text, ",")


def _unquote_name(value: str) -> str:
    """`"main"."t"` → `main.t` (DuckDB's map shows qualified names unquoted)."""
    names, buf, i = [], [], 0
    if not value.startswith('"'):
        raise ChangeParseError(f"unquoted name {value!r} in change string")
    while i < len(value):
        if value[i] != '"':
            raise ChangeParseError(f"malformed quoted name {value!r}")
        i += 1
        while i < len(value):
            if value[i] == '"':
                if i + 1 < len(value) and value[i + 1] == '"':
                    buf.append('"')
                    i += 2
                    continue
                break
            buf.append(value[i])
            i += 1
        i += 1
        names.append("".join(buf))
        buf = []
        if i < len(value):
            if value[i] != ".":
                raise ChangeParseError(f"malformed quoted name {value!r}")
            i += 1
    return ".".join(names)


def parse_changes(text: str | None) -> dict[str, list[str]]:
    """Parse a change string into DuckDB's map form, e.g. `{"tables_created": ["main.t"]}`."""
    out: dict[str, list[str]] = {}
    if not text:
        return out
    for entry in _split(text):
        kind, sep, value = entry.partition(":")
        if not sep or kind not in CHANGE_KEYS:
            raise ChangeParseError(f"unknown change {entry!r}")
        if kind.startswith("created_"):
            value = _unquote_name(value)
        elif not value.isdigit():
            raise ChangeParseError(f"change {entry!r} needs a numeric id")
        out.setdefault(CHANGE_KEYS[kind], []).append(value)
    return out


def quote_name(*parts: str) -> str:
    """SQL double-quote each part and join with dots: `"main"."t"`."""
    return ".".join('"' + p.replace('"', '""') + '"' for p in parts)


def format_changes(entries: Iterable[tuple[str, str | int]]) -> str | None:
    """Write `(token, value)` pairs as a change string; None when there are none (spec: empty → NULL)."""
    items = list(entries)
    for kind, _ in items:
        if kind not in CHANGE_KEYS:
            raise ChangeParseError(f"unknown change kind {kind!r}")
    return ",".join(f"{kind}:{value}" for kind, value in items) or None
