"""The change-feed table functions in a query's SQL (`table_changes('t', 1, 5)`, DuckDB's five-argument
`ducklake_table_changes(…)` and their insertions/deletions twins): found and read from the parsed statement."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sqlglot import exp

from ducklake_cli.errors import QueryError

_T = exp.DataType.Type
_TIMESTAMPS = (_T.TIMESTAMP, _T.TIMESTAMPTZ, _T.TIMESTAMPLTZ, _T.TIMESTAMPNTZ)


# The change-feed table functions `query` knows, and which feed each returns (DuckDB's names and its macros').
FEED_FUNCTIONS = {
    "table_changes": "changes", "table_insertions": "insertions", "table_deletions": "deletions",
    "ducklake_table_changes": "changes", "ducklake_table_insertions": "insertions",
    "ducklake_table_deletions": "deletions",
}


@dataclass(frozen=True)
class FeedRef:
    """A change-feed table function in FROM: `table_changes('t', start, end)` or DuckDB's five-argument
    `ducklake_table_changes(catalog, schema, table, start, end)`; bounds are snapshot ids or time literals."""

    kind: str  # changes | insertions | deletions
    table: str  # as written: `t` or `schema.t`
    start: int | str
    end: int | str


def feed_nodes(root: exp.Expr) -> Iterator[exp.Table]:
    """Every change-feed table function in FROM or a join, in source order."""
    for node in root.find_all(exp.Table):
        if isinstance(node.this, exp.Anonymous) and node.this.name.lower() in FEED_FUNCTIONS:
            yield node


def feed_ref(node: exp.Table) -> FeedRef:
    fn = node.this
    name = fn.name.lower()
    args = [a.unnest() for a in fn.expressions]
    want = 5 if name.startswith("ducklake_") else 3
    usage = (f"{name}(catalog, schema, table, start, end)" if want == 5 else f"{name}(table, start, end)")
    if len(args) != want:
        raise QueryError(f"{usage} takes {want} arguments, got {len(args)}")

    def text(e: exp.Expr, what: str) -> str:
        if isinstance(e, exp.Literal) and e.is_string:
            return str(e.this)
        raise QueryError(f"{usage}: {what} must be a string literal, got {e.sql('spark')}")

    def bound(e: exp.Expr, what: str) -> int | str:
        if isinstance(e, exp.Cast) and e.to.this in _TIMESTAMPS:  # TIMESTAMP '…'
            e = e.this.unnest()
        if isinstance(e, exp.Literal):
            value = str(e.this).strip()
            if not e.is_string and value.isdigit():
                return int(value)
            if e.is_string and value:
                return int(value) if value.isdigit() else value
        raise QueryError(f"{usage}: {what} must be a snapshot id or a time literal, got {e.sql('spark')}")

    if want == 5:
        schema, table = text(args[1], "schema"), text(args[2], "table")
        qualified = f"{schema}.{table}"
    else:
        qualified = text(args[0], "table")
    return FeedRef(FEED_FUNCTIONS[name], qualified, bound(args[-2], "start"), bound(args[-1], "end"))
