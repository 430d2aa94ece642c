"""Write the quickstart's sample input files (Parquet, with pyarrow): what `ducklake write` then loads."""

from __future__ import annotations

import argparse
import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("started", pa.timestamp("us", tz="UTC")),
                    ("fare", pa.decimal128(8, 2))])


def trips(ids: list[int], cities: list[str], first: dt.datetime) -> pa.Table:
    """Rows `id`, `city`, `started` (one a minute from `first`), `fare`."""
    return pa.table({
        "id": ids,
        "city": cities,
        "started": [first + dt.timedelta(minutes=i) for i in ids],
        "fare": [Decimal(5 + i % 40).quantize(Decimal("0.01")) for i in ids],
    }, schema=SCHEMA)


def main() -> None:
    """`trips.parquet`: 9,900 trips in three cities; `late.parquet`: one more (few enough to be inlined)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("directory", type=Path)
    args = parser.parse_args()
    args.directory.mkdir(parents=True, exist_ok=True)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    ids = [i for i in range(10000) if i % 100]
    pq.write_table(trips(ids, [("Amsterdam", "Berlin", "Lisbon")[i % 3] for i in ids], start),
                   args.directory / "trips.parquet")
    pq.write_table(trips([10000], ["Porto"], start), args.directory / "late.parquet")


if __name__ == "__main__":
    main()
