"""Double-quoted SQL names as DuckDB writes them: splitting a text at a separator outside quotes, and qualified
names (`schema."table.with.dots"`)."""

from __future__ import annotations


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
