"""The one renderer: Rich tables for people, JSON and CSV for machines. Data to stdout, messages to stderr."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Iterator
from enum import StrEnum
from typing import IO, TYPE_CHECKING, Any, Protocol

from ducklake_cli.ops.results import Result, Section

if TYPE_CHECKING:
    from ducklake_cli.engine.output import RowStream

MAX_TABLE_ROWS = 500  # a terminal table beyond this is unreadable; JSON/CSV always carry every row
NULL_MARKER = "NULL"  # shown dim, as DuckDB's CLI shows it; metadata tables keep `-` for "none"


class OutputFormat(StrEnum):
    """`--format` values."""

    table = "table"
    json = "json"
    csv = "csv"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _data_cell(value: Any) -> Any:
    from rich.text import Text

    if value is None:
        return Text(NULL_MARKER, style="dim italic")
    return Text(value if isinstance(value, str) else str(value))  # Text: values are never read as Rich markup


def _rich_section(section: Section) -> Any:
    from rich.table import Table

    table = Table(title=section.title, title_justify="left", title_style="bold")
    for col in section.columns:
        table.add_column(col, overflow="fold")
    rows = section.rows
    if len(rows) > MAX_TABLE_ROWS:
        rows = rows[-MAX_TABLE_ROWS:] if section.history else rows[:MAX_TABLE_ROWS]
        table.caption = (f"showing the {'newest' if section.history else 'first'} {MAX_TABLE_ROWS:,} of "
                         f"{len(section.rows):,} rows; --format csv or json shows all")
    cell = _data_cell if section.data else _cell
    for row in rows:
        table.add_row(*(cell(v) for v in row))
    return table


def render(result: Result, fmt: OutputFormat) -> None:
    """Write a result to stdout in the chosen format."""
    if fmt is OutputFormat.json:
        # Indented for a terminal; compact (and C-accelerated) when piped to a program.
        indent = 2 if sys.stdout.isatty() else None
        sys.stdout.write(json.dumps(result.to_json(), indent=indent, default=str) + "\n")
        return
    if fmt is OutputFormat.csv:
        section = next((s for s in result.sections() if s.csv), None)
        if section is None:
            return
        if section.data:
            from ducklake_cli.engine.output import csv_field

            sys.stdout.write(",".join(csv_field(c) for c in section.columns) + "\n")
            sys.stdout.writelines(",".join(csv_field(v) for v in row) + "\n" for row in section.rows)
            return
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(section.columns)
        writer.writerows(["" if v is None else v for v in row] for row in section.rows)
        return
    from rich.console import Console

    console = Console()
    for section in result.sections():
        if section.table:
            console.print(_rich_section(section))


class StreamedResult(Protocol):
    """A metadata listing whose rows are read while they are written (`--format json|csv`)."""

    def json_stream(self, *, compact: bool) -> tuple[dict[str, Any] | None, str | None, Iterator[Any]]:
        """The JSON document around the list (None: the list is the document), the list's key, and its items:
        with `compact`, each already encoded as `json.dumps(item)` would encode it."""

    def csv_stream(self) -> tuple[tuple[str, ...], Iterator[tuple[Any, ...]]]:
        """The CSV header and rows."""


_LIST = "\x00list\x00"  # where the streamed list goes in its document
_BATCH = 1000  # items per write


def render_streamed(result: StreamedResult, fmt: OutputFormat) -> None:
    """Write a listing to stdout as JSON or CSV row by row, byte for byte what `render` writes for the same
    rows built in memory."""
    out = sys.stdout
    if fmt is OutputFormat.csv:
        columns, rows = result.csv_stream()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)  # None is written as "", as `render` writes it
        return
    indent = 2 if out.isatty() else None
    head, key, items = result.json_stream(compact=indent is None)
    doc = _LIST if head is None else {**head, str(key): _LIST}
    before, after = json.dumps(doc, indent=indent, default=str).split(json.dumps(_LIST))
    line = before.rpartition("\n")[2]  # the list's line: its indentation is the list's depth
    out.write(before)
    if indent is None:
        first = True
        for batch in _batches(items):
            out.write(("[" if first else ", ") + ", ".join(batch))
            first = False
        out.write("[]" if first else "]")
    else:
        _write_json_list(out, items, indent, depth=len(line) - len(line.lstrip(" ")))
    out.write(after + "\n")


def _write_json_list(out: IO[str], items: Iterable[Any], indent: int, *, depth: int) -> None:
    """A JSON array as `json.dumps(…, indent=indent)` writes it at `depth` spaces of indentation, encoded a batch
    of items at a time (each batch is a list whose brackets are dropped)."""
    first = True
    for batch in _batches(items):
        text = json.dumps(batch, indent=indent, default=str)
        out.write(("[" if first else ",") + text[1:-2].replace("\n", "\n" + " " * depth))
        first = False
    out.write("[]" if first else "\n" + " " * depth + "]")


def _batches(items: Iterable[Any]) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def render_stream(stream: RowStream, fmt: OutputFormat) -> int:
    """Every row of a query to stdout as JSON or CSV, written as it arrives; the number of rows."""
    from ducklake_cli.engine.output import write_csv, write_json

    if fmt is OutputFormat.csv:
        return write_csv(stream, sys.stdout)
    return write_json(stream, sys.stdout, lines=False)


def message(text: str) -> None:
    """A human message on stderr."""
    from rich.console import Console

    Console(stderr=True, highlight=False).print(text)
