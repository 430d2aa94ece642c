"""Filter predicates on one table's columns, as extracted from SQL and used to prune files before Spark lists them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Op = Literal["=", "<", "<=", ">", ">=", "between", "in", "is_null", "is_not_null"]


@dataclass(frozen=True)
class Predicate:
    """`column op values`: a conjunct of a WHERE clause on a top-level column of one table.

    `values` holds Python literals: one for comparisons, two for `between` (low, high), any number for `in`,
    none for the null tests. Literals are as SQL wrote them (int, float, Decimal, str, bool, date/datetime);
    pruning casts them to the column type and keeps a file whenever it cannot decide.
    """

    column: str
    op: Op
    values: tuple[object, ...] = ()
