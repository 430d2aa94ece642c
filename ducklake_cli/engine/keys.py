"""Key checks on an input DataFrame, run by Spark executors (the input never reaches the driver)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_COUNT = "__ducklake_key_count"


def bad_key(df: DataFrame, keys: Sequence[str]) -> tuple[tuple[Any, ...], bool] | None:
    """One key (its values in `keys` order) that occurs more than once in `df` or has a NULL part, with whether it
    repeats; None when every row has its own non-NULL key."""
    from pyspark.sql import functions as F

    from ducklake_cli.engine.planning.dml_plan import quote_name

    cols = [F.col(quote_name(k)) for k in keys]
    has_null = F.lit(False)
    for c in cols:
        has_null = has_null | c.isNull()
    found = (df.groupBy(*cols).agg(F.count(F.lit(1)).alias(_COUNT))
             .where((F.col(_COUNT) > 1) | has_null).limit(1).collect())
    if not found:
        return None
    row = found[0]
    return tuple(row[i] for i in range(len(keys))), int(row[_COUNT]) > 1
