"""The one SQL dialect every SQL text of the tool is read in: Spark SQL's grammar with SQL's (and DuckDB's) quoting.

`"name"` is an identifier (as is Spark's `` `name` ``), `'it''s'` is one string with one quote, a backslash in a
string is a backslash; `E'a\\n'` strings take backslash escapes and `$$…$$` strings take nothing, as in DuckDB. Two
string literals in a row are one string only when a line break separates them (SQL's rule, which DuckDB follows);
on one line they are a syntax error. Everything the planning layer parses or writes back as text is in this
dialect; only the statement finally handed to Spark is written in Spark's own (`to_spark`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.parser import build_var_map
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType

from ducklake_cli.errors import QueryError


class AdjacentStrings(TokenError):
    """Two string literals on one line: SQL joins literals only across a line break."""


_STRINGS = frozenset({TokenType.STRING, TokenType.BYTE_STRING, TokenType.HEREDOC_STRING, TokenType.RAW_STRING})


class DuckLakeSQL(Spark):
    """Spark SQL read with SQL's quoting: double quotes name things, doubled quotes escape them."""

    class Tokenizer(Spark.Tokenizer):
        """Spark's tokens with DuckDB's string and identifier quoting."""

        QUOTES = ["'"]
        IDENTIFIERS = ['"', "`"]
        STRING_ESCAPES = ["'"]
        BYTE_STRINGS = [("e'", "'"), ("E'", "'")]  # DuckDB's escape strings: E'tab\there'
        BYTE_STRING_ESCAPES = ["'", "\\"]
        HEREDOC_STRINGS = ["$"]
        HEREDOC_TAG_IS_IDENTIFIER = True
        HEREDOC_STRING_ALTERNATIVE = TokenType.PARAMETER
        RAW_STRINGS = [("r'", "'"), ("R'", "'")]  # Spark's raw strings, kept
        NUMERIC_ESCAPES = {"x": (16, 1, 2, 0xFF), "0": (8, 1, 3, 0o777)}  # E'\x41': DuckDB's byte escapes
        NUMERIC_ESCAPES_ARE_BYTES = True
        DROP_UNKNOWN_ESCAPES = True  # E'\q' is 'q'

        def tokenize(self, sql: str) -> list[Token]:
            """Tokens, every kind of string literal a plain string once read; string literals separated by a line
            break are one string (SQL's rule, a constant in DuckDB), on one line they are refused."""
            out: list[Token] = []
            for tok in super().tokenize(sql):
                if tok.token_type not in _STRINGS:
                    out.append(tok)
                    continue
                prev = out[-1] if out else None
                if prev is not None and prev.token_type is TokenType.STRING:
                    if "\n" not in sql[prev.end + 1:tok.start]:
                        raise AdjacentStrings(f"two string literals in a row at line {tok.line}, column {tok.col}: "
                                              "join them with || or put a line break between them")
                    out[-1] = Token(TokenType.STRING, prev.text + tok.text, prev.line, prev.col, prev.start, tok.end,
                                    prev.comments + tok.comments)
                    continue
                out.append(Token(TokenType.STRING, tok.text, tok.line, tok.col, tok.start, tok.end, tok.comments))
            return out


    class Parser(SparkParser):
        """Spark's grammar with DuckDB's literals: `{'k': v}` is a struct and `MAP {k: v}` a map (Spark reads `{…}`
        as a query parameter and had `MAP {…}` become a struct)."""

        MAP_KEYS_ARE_ARBITRARY_EXPRESSIONS = True
        PLACEHOLDER_PARSERS = {k: v for k, v in SparkParser.PLACEHOLDER_PARSERS.items() if k is not TokenType.L_BRACE}
        NO_PAREN_FUNCTION_PARSERS = {**SparkParser.NO_PAREN_FUNCTION_PARSERS,
                                     "MAP": lambda self: self._parse_duckdb_map()}

        def _parse_duckdb_map(self) -> exp.Expr | None:
            """`MAP {k: v, …}` as Spark's `map(k, v, …)`; `map(…)` stays Spark's function, a bare `map` a column."""
            if self._match(TokenType.L_PAREN, advance=False):
                return build_var_map(self._parse_wrapped_csv(self._parse_assignment))
            if not self._match(TokenType.L_BRACE, advance=False):
                return exp.column(self._prev.text)
            struct = self._parse_bracket()
            pairs = struct.expressions if isinstance(struct, exp.Struct) else []
            return self.expression(exp.VarMap(keys=exp.Array(expressions=[p.this for p in pairs]),
                                              values=exp.Array(expressions=[p.expression for p in pairs])))


DIALECT = DuckLakeSQL


def sql_text(node: exp.Expr) -> str:
    """`node` as text in this dialect (what the planning layer passes around, and shows users)."""
    return node.sql(dialect=DIALECT)


def tokens(sql: str) -> list[Token]:
    """The tokens of `sql` (semicolons kept); a string or name left open is a `QueryError`."""
    try:
        with quiet_sqlglot():
            return DuckLakeSQL().tokenize(sql)
    except SqlglotError as exc:
        raise QueryError(syntax_message(exc)) from None


def split_statements(sql: str) -> list[str]:
    """The statements of a script as written, split as DuckDB splits them: on semicolons outside strings, names and
    comments; statements that hold nothing but comments or whitespace are dropped."""
    out: list[str] = []
    first: Token | None = None
    last: Token | None = None
    for tok in [*tokens(sql), None]:
        if tok is None or tok.token_type is TokenType.SEMICOLON:
            if first is not None and last is not None:  # from the first token: leading comments dropped
                out.append(sql[first.start:last.end + 1])
            first = last = None
            continue
        first = first or tok
        last = tok
    return out


def syntax_message(exc: SqlglotError) -> str:
    """sqlglot's error as one line a SQL user reads."""
    if isinstance(exc, AdjacentStrings):
        return f"SQL syntax error: {exc}"
    if isinstance(exc, TokenError):
        return "SQL syntax error: a quoted string or name is not closed"
    errors = exc.errors if isinstance(exc, ParseError) else []
    if not errors:
        return f"SQL syntax error: {one_line(str(exc))}"
    first = errors[0]
    return f"SQL syntax error at line {first['line']}, column {first['col']}: {_plain_words(first)}"


_TOKEN = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: \d+, col: \d+.*?>")
_MISSING = re.compile(r"Required keyword: '\w+' missing for <class '(?:[\w.]+\.)?(\w+)'>")
_CLAUSES = {"Where": "WHERE", "Having": "HAVING", "Order": "ORDER BY", "Group": "GROUP BY", "From": "FROM",
            "Join": "JOIN", "Limit": "LIMIT", "Select": "SELECT", "Qualify": "QUALIFY"}


def _plain_words(error: dict[str, Any]) -> str:
    """sqlglot's parser wording (class names, token dumps) as a sentence a SQL user reads."""
    description = str(error.get("description") or "")
    near = (error.get("highlight") or "").strip()
    at = f" after {one_line(near)!r}" if near else ""
    if description.startswith("Invalid expression / Unexpected token"):
        return f"unexpected {one_line(near)!r}" if near else "unexpected end of input"
    missing = _MISSING.fullmatch(description)
    if missing:
        clause = _CLAUSES.get(missing[1])
        return f"incomplete {clause} clause" if clause else f"incomplete expression{at}"
    if description.startswith("Expecting "):
        return f"expected {description.removeprefix('Expecting ').strip()!r}{at}"
    what = _TOKEN.sub(lambda m: "end of input" if m[1] == "SENTINEL" else repr(m[2]), description)
    return one_line(what)


def one_line(message: str) -> str:
    """The first line of a message, terminal colours removed."""
    return (re.sub(r"\x1b\[\d+m", "", message).strip().splitlines() or [""])[0]


@contextmanager
def quiet_sqlglot() -> Iterator[None]:
    """sqlglot logs a warning when it falls back to `Command`; we raise a clean error instead."""
    log = logging.getLogger("sqlglot")
    log.addFilter(hush := logging.Filter("\0"))  # matches no logger name, so drops every record
    try:
        yield
    finally:
        log.removeFilter(hush)
