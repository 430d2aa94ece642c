"""The quoting corpus: SQL texts that mean one thing in DuckDB and the SQL standard and, read as Spark SQL, another
(`"k"` a string, `'it''s'` two literals, `\\` an escape). Every entry point of the tool must read them as DuckDB does.

A case is a WHERE condition over table `t` (`CORPUS`), valid in DuckDB; `ERRORS` are texts DuckDB refuses, which we
must refuse too. `ROWS` holds the values that tell the readings apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.oracle import sql_str

COLUMNS = ('grp INTEGER, id INTEGER, k VARCHAR, s VARCHAR, "my col" INTEGER, "Case" VARCHAR, "a.b" INTEGER, '
           '"select" INTEGER, "ünï" VARCHAR, "q""t" INTEGER')
NAMES = 'grp, id, k, s, "my col", "Case", "a.b", "select", "ünï", "q""t"'

# (k, s): keys and strings whose readings differ between SQL's quoting and Spark's.
_VALUES: list[tuple[str | None, str | None]] = [
    ("k", "it's"),
    (None, 'it\'s "q" 5'),
    ("K", "its"),
    ('"k"', "a\\b"),
    ("k", "a\\\\b"),
    ("x'y", '"k"'),
    ("", "tab\there"),
    ("ab", "a\nb"),
    ("é", "café"),
    ("k x", ""),
    (None, None),
    ("'k'", "'"),
    ("k", "\\"),
    ("\\k", "%_"),
    ("k;", "a\\%"),
    ("-- k", "it"),
]


def insert(groups: int) -> str:
    """DuckDB's INSERT of the base rows, once in each of `groups` groups."""
    return f"INSERT INTO t ({NAMES}) VALUES " + ", ".join(r for g in range(groups) for r in rows(g))


def rows(grp: int) -> list[str]:
    """The base rows as SQL tuples, in group `grp`."""
    out = []
    for i, (k, s) in enumerate(_VALUES, start=1):
        lit = [sql_str(v) if v is not None else "NULL" for v in (k, s)]
        out.append(f"({grp}, {i}, {lit[0]}, {lit[1]}, {i % 3}, {sql_str('AaB'[i % 3])}, {i % 2}, {i % 4}, "
                   f"{sql_str(['é', 'ü', 'x'][i % 3])}, {i % 5})")
    return out


@dataclass(frozen=True)
class Case:
    """One condition over `t` and, for UPDATE, a value to set `s` to (SQL text)."""

    name: str
    where: str
    value: str = "'it''s'"


CORPUS = [
    Case("dq_ident_not_null", '"k" IS NOT NULL'),
    Case("dq_ident_case", '"K" IS NOT NULL', "'K''s'"),
    Case("plain", "k = 'k'", "E'a\\nb'"),
    Case("dq_inside_literal", "\"k\" = '\"k\"'", "$$q\"q$$"),
    Case("doubled_quote", "s = 'it''s'", "'a\\b'"),
    Case("doubled_and_dq", "s = 'it''s \"q\" 5'", "'x' || ''''"),
    Case("no_quote", "s = 'its'", "\"k\" || 'x'"),
    Case("backslash", "s = 'a\\b'", "'\\'"),
    Case("two_backslashes", "s = 'a\\\\b'", "'\\\\'"),
    Case("lone_backslash", "s = '\\'", "k || '\\' || s"),
    Case("escape_string", "s = E'a\\\\b'", "E'it\\'s'"),
    Case("escape_string_newline", "s = E'a\\nb'", "E'\\x41'"),
    Case("dollar_quoted", "s = $$it's$$", "$t$it's \"x\"$t$"),
    Case("spaces_in_name", '"my col" = 2', "'\"'"),
    Case("case_in_name", "\"Case\" = 'A'", "\"Case\""),
    Case("dot_in_name", '"a.b" = 1', "'a.b'"),
    Case("reserved_name", '"select" = 1', "'select'"),
    Case("unicode_name", "\"ünï\" = 'é'", "'ünï'"),
    Case("doubled_dq_name", '"q""t" = 2', "'q\"t'"),
    Case("qualified_dq", 't."k" IS NOT NULL', "t.\"s\""),
    Case("fully_dq", '"t"."k" IS NULL', "NULL"),
    Case("adjacent_across_lines", "s = 'it'\n'''s'", "'a'\n'b'"),
    Case("line_comment_quote", "k = 'k' -- it's a \"comment\"", "'c'"),
    Case("block_comment_quote", "/* \"k\" IS NULL or it's */ k = 'k'", "/* ' */ 'd'"),
    Case("comment_after_quote", "k = 'k' /* ' */", "'e' -- '"),
    Case("unicode_literal", "s = 'café'", "'naïve'"),
    Case("tab_literal", "s = 'tab\there'", "'t\tb'"),
    Case("newline_literal", "s = 'a\nb'", "'n\nl'"),
    Case("empty_literal", "s = ''", "''"),
    Case("quote_only", "s = ''''", "''''''"),
    Case("quoted_value", "k = '''k'''", "'''q'''"),
    Case("in_list", "s IN ('it''s', 'its', '\"k\"')", "'in'"),
    Case("concat", "s = concat('it', '''s')", "concat(k, '''')"),
    Case("pipes", "\"k\" || 'x' = 'kx'", "s || '!'"),
    Case("semicolon_in_literal", "k = 'k;'", "';'"),
    Case("dashes_in_literal", "k = '-- k'", "'--'"),
    Case("length_backslash", "length(s) = 3 AND s LIKE 'a%'", "'len'"),
    Case("like_backslash", "s LIKE 'a\\%'", "'like'"),
    Case("like_underscore_backslash", "k LIKE '\\_'", "'_'"),
    Case("null_or", "s <> 'it''s' OR s IS NULL", "'no'"),
]

# Texts DuckDB refuses (the condition part): we refuse them too, naming the problem, and change nothing.
ERRORS = [
    ("unknown_dq_name", '"nope" IS NULL', "nope"),
    ("adjacent_one_line", "s = 'it' 's'", "string literals"),
    ("unterminated", "s = 'it", "not closed"),
    ("unterminated_name", '"k = 1', "not closed"),
]


# Constant values, each quoted in a way the readings tell apart (DEFAULTs take only constants).
LITERALS = [c.value for c in CORPUS if c.name not in ("no_quote", "lone_backslash", "case_in_name", "qualified_dq",
                                                      "doubled_and_dq", "concat", "pipes")]


def where(case_where: str) -> str:
    """A condition as it goes after `WHERE … AND`: on lines of its own, so that a trailing `--` comment ends there."""
    return f"(\n{case_where}\n)"
