"""Double-quoted SQL names as DuckDB writes them: splitting a text at a separator outside quotes, and qualified
names (`schema."table.with.dots"`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar


def split_outside_quotes(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside double quotes; the parts keep their quotes (`""` inside quotes is one quote).
    An unterminated quote runs to the end (the text then holds an odd number of quotes)."""
    parts: list[str] = []
    current: list[str] = []
    i, quoted = 0, False
    while i < len(text):
        ch = text[i]
        if ch == '"' and quoted and text[i + 1:i + 2] == '"':
            current.append('""')
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        if ch == sep and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def _unquote(part: str) -> str:
    """Quotes removed, `""` inside quotes read as one quote."""
    out: list[str] = []
    i, quoted = 0, False
    while i < len(part):
        if part[i] == '"':
            if quoted and part[i + 1:i + 2] == '"':
                out.append('"')
                i += 1
            else:
                quoted = not quoted
        else:
            out.append(part[i])
        i += 1
    return "".join(out)


def split_qualified(name: str) -> list[str]:
    """`a."b.c"."d""e"` → `[a, b.c, d"e]`: dots split parts except inside double quotes (`""` is a quote)."""
    return [_unquote(p) for p in split_outside_quotes(name, ".")]


def inlining_reserved(name: str) -> str:
    """DuckDB's refusal of a column named like an inlined-data table's own columns (`row_id`, `begin_snapshot`, …)
    while data inlining is on: one line."""
    return f'column name "{name}" is reserved by DuckLake for inlined data while data inlining is on'


def shown_path(parts: Sequence[str], *, quote: bool) -> str:
    """A dotted full name as printed: with `quote` (DuckLake 1.1, where dots nest), a part holding a dot or a quote
    is double-quoted, so `"sales.europe"` (one schema) and `sales.europe` (nested) print apart."""
    return ".".join('"' + p.replace('"', '""') + '"' if quote and ("." in p or '"' in p) else p for p in parts)


def readings(parts: Sequence[str], *, nested: bool) -> list[tuple[tuple[str, ...], str]]:
    """The `(schema path, name)` readings of a dotted table or view name, most specific first: one part lives in
    `main`; on 1.0 the schema is the part before the name (a leading catalog part is ignored); on 1.1 (`nested`)
    every part before the name is a schema level, else the first part is a catalog name."""
    if len(parts) == 1:
        return [(("main",), parts[0])]
    if not nested:
        return [((parts[-2],), parts[-1])]
    out = [(tuple(parts[:-1]), parts[-1])]
    if len(parts) >= 3:
        out.append((tuple(parts[1:-1]), parts[-1]))
    return out


class Entry(Protocol):
    """A table or view: its schema's full name and its own name."""

    @property
    def schema_path(self) -> tuple[str, ...]: ...
    @property
    def name(self) -> str: ...


E = TypeVar("E", bound=Entry)


def pick_entry(entries: Sequence[E], parts: Sequence[str], *, nested: bool) -> E | None:
    """The entry a dotted name names: per reading, the exact match, else the one case-insensitive match."""
    for path, name in readings(parts, nested=nested):
        exact = [e for e in entries if e.schema_path == path and e.name == name]
        if exact:
            return exact[0]
        low = (tuple(p.lower() for p in path), name.lower())
        folded = [e for e in entries if (tuple(p.lower() for p in e.schema_path), e.name.lower()) == low]
        if len(folded) == 1:
            return folded[0]
    return None


def reserved_v11(name: str) -> str:
    """DuckLake 1.1's refusal of a user column named with the prefix of inlined-data tables' own columns."""
    return (f'column name "{name}" is reserved by DuckLake for internal use: column names starting with '
            '"_ducklake_" are not allowed')
