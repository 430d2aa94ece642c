"""What every operation result offers the renderer: a JSON form and tabular sections."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol


@dataclass(frozen=True)
class Section:
    """One table of output: a title, column headers and rows. `csv` marks the section `--format csv` prints;
    `table=False` leaves it out of the terminal table (a CSV-only form of what another section shows);
    `data` marks query values (shown as they are, NULL with its own marker) rather than metadata; `history` marks
    rows oldest first, of which a capped terminal table shows the newest."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    csv: bool = True
    table: bool = True
    data: bool = False
    history: bool = False


class Result(Protocol):
    """An operation result the CLI can render."""

    def to_json(self) -> Any:
        """A JSON-serialisable form (stable: documented in the README)."""

    def sections(self) -> list[Section]:
        """Tables for people (Rich) and for `--format csv`."""


def jsonable(value: Any) -> Any:
    """Dataclasses, datetimes and tuples turned into JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "asDict"):  # a Spark Row (struct): an object, not a list
        return {str(k): jsonable(v) for k, v in value.asDict().items()}
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value
