"""One error root for the whole package; the CLI maps each type to one line and an exit code."""

from __future__ import annotations

import re


class DuckLakeError(Exception):
    """Root of every error this package raises on purpose."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(DuckLakeError):
    """Arguments that cannot work together or cannot be parsed."""

    exit_code = 2


class ConfigError(DuckLakeError):
    """A bad `ducklake.toml`, profile or environment reference."""


class InvalidCatalogError(DuckLakeError):
    """A CATALOG argument that is not a path, URL, ATTACH string or profile we understand."""


class CatalogNotFoundError(DuckLakeError):
    """The catalog file or database does not exist."""


class CatalogUnreachableError(DuckLakeError):
    """The catalog server did not answer."""


class AuthenticationError(DuckLakeError):
    """The catalog server refused the credentials."""


class NotADuckLakeError(DuckLakeError):
    """The database exists but holds no DuckLake catalog."""


class UnsupportedVersionError(DuckLakeError):
    """The catalog's format version is not one we read and write."""

    exit_code = 2


class CatalogExistsError(DuckLakeError):
    """`create-catalog` was pointed at a database that already holds catalog tables."""


class NotFoundError(DuckLakeError):
    """A schema, table, view or snapshot that does not exist (at the requested snapshot)."""


class CommitConflictError(DuckLakeError):
    """Another writer committed a conflicting change and retries ran out."""

    exit_code = 3


class ProblemsFoundError(DuckLakeError):
    """`verify` found the lake unhealthy (the problems themselves went to stdout)."""

    exit_code = 4


class StorageError(DuckLakeError):
    """A data file could not be read, listed or written."""


class QueryError(DuckLakeError):
    """A query Spark or our SQL layer rejects (syntax, unknown column, type errors)."""


class InputError(DuckLakeError):
    """Input files `write` cannot load: empty, unreadable or not data."""


class SparkError(DuckLakeError):
    """Spark could not start or a job failed."""


class SparkServerError(DuckLakeError):
    """The Spark Connect server could not be started, found or stopped."""


class TableExistsError(DuckLakeError):
    """`--mode create` on a table that exists."""


class ScriptStoppedError(DuckLakeError):
    """A script of statements that each commit (DDL) stopped part-way: `done` says what ran (the error's exit code
    is that of the statement that failed)."""

    def __init__(self, message: str, *, cause: DuckLakeError, done: object) -> None:
        super().__init__(message, hint=cause.hint)
        self.exit_code = cause.exit_code
        self.cause = cause
        self.done = done


class ConstraintError(DuckLakeError):
    """New rows would break a table's constraint: a NULL in a NOT NULL column."""


class BadValueError(DuckLakeError):
    """A value Spark could not compute or a column cannot hold: out of its type's range, not of its type (a failed
    cast, an overflow)."""


class ChangeParseError(ValueError):
    """A `changes_made` string DuckDB would reject (a ValueError: callers treat it as unreadable history)."""


# An error of ours raised where Spark runs Python or SQL (executors) reaches the driver only as text: the last line of
# the worker's traceback, or the message of `raise_error`, reads `ducklake_cli.errors.<Class>: <message>`.
_EXECUTOR_LINE = re.compile(rf"{re.escape(__name__)}\.([A-Za-z]+): ([^\n]+)")


def executor_text(error: DuckLakeError) -> str:
    """`error` as the one line an executor's failure carries to the driver (`from_executor` reads it back)."""
    return f"{__name__}.{type(error).__name__}: {' '.join(error.message.split())}"


def from_executor(text: str) -> DuckLakeError | None:
    """The error of ours an executor failed with, found in the text of Spark's failure; None if there is none."""
    for name, message in reversed(_EXECUTOR_LINE.findall(text)):
        cls = globals().get(name)
        if isinstance(cls, type) and issubclass(cls, DuckLakeError):
            try:
                return cls(message.removesuffix(" SQLSTATE: P0001").strip())
            except TypeError:  # a class that needs more than a message is never raised on executors
                continue
    return None
