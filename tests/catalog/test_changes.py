"""Change strings (spec §5.3) as DuckDB writes and parses them."""

from __future__ import annotations

import pytest

from ducklake_cli.catalog.changes import format_changes, parse_changes, quote_name
from ducklake_cli.errors import ChangeParseError


def test_parse_like_ducklake_snapshots() -> None:
    assert parse_changes('created_table:"main"."t",inlined_insert:2') == {
        "tables_created": ["main.t"], "inlined_insert": ["2"],
    }
    assert parse_changes('created_schema:"a""b,c"') == {"schemas_created": ['a"b,c']}
    assert parse_changes(None) == {}


def test_round_trip_quoting() -> None:
    text = format_changes([("created_table", quote_name("s", 'we"ird')), ("inserted_into_table", 7)])
    assert text == 'created_table:"s"."we""ird",inserted_into_table:7'
    assert parse_changes(text) == {"tables_created": ['s.we"ird'], "tables_inserted_into": ["7"]}
    assert format_changes([]) is None


@pytest.mark.parametrize("bad", ["created_table:t", "bogus:1", "inserted_into_table:x", 'created_schema:"x'])
def test_rejects_what_duckdb_rejects(bad: str) -> None:
    with pytest.raises(ChangeParseError):
        parse_changes(bad)
