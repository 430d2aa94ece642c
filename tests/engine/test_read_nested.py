"""Nested field access after struct-field renames (issue 11, item 1): `ducklake query` vs DuckDB on the same lake.

The lake (scenario ``nested_renames``) renames struct fields at several depths — a struct field, a field of a struct
inside a struct, the inner struct itself, a field of a list's struct element and of a map's struct value — reuses
an old name for a new field, and deletes rows, with Parquet and inlined rows on both sides of the renames. Each
query selects or filters on nested fields by dot access (what Spark's nested schema pruning rewrites); its rows
must equal DuckDB's at the same snapshot, on every catalog backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import pytest

import ducklake_cli
from tests.support.diff import ORACLE_ALIAS, assert_same_multiset, duckdb_table_rows, oracle_lake, spark_table_rows
from tests.support.lakes import build_lake
from tests.support.spot import Spot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

BACKENDS = ["sqlite", "duckdb", pytest.param("postgres", marks=pytest.mark.postgres)]

# (Spark SQL, DuckDB SQL); `{t}` is the table. One string when both dialects agree.
QUERIES: list[str | tuple[str, str]] = [
    "SELECT id, s.alpha AS c FROM {t}",
    ("SELECT id, s.nest.ex AS c, l.pe AS d, element_at(m, 'k1').vee AS e FROM {t} WHERE s.nest.ex % 3 = 0",
     "SELECT id, s.nest.ex AS c, list_transform(l, e -> e.pe) AS d, m['k1'].vee AS e FROM {t} WHERE s.nest.ex % 3 = 0"),
    ("SELECT id, s.b AS b, s.nest AS c FROM {t} WHERE s.alpha > 40 AND l[0].pe > 10 AND kk > 1",
     "SELECT id, s.b AS b, s.nest AS c FROM {t} WHERE s.alpha > 40 AND l[1].pe > 10 AND kk > 1"),
    "SELECT s.nest.y AS y, count(*) AS n, CAST(sum(s.nest.ex) AS BIGINT) AS total FROM {t} GROUP BY s.nest.y",
    ("SELECT id, map_values(m)[0].vee AS c FROM {t} WHERE map_values(m)[0].vee >= 0",
     "SELECT id, map_values(m)[1].vee AS c FROM {t} WHERE map_values(m)[1].vee >= 0"),
    "SELECT id, s.a AS a, k FROM {t} WHERE s.a IS NULL OR k > 80",  # old names reused by new fields
]


def _pair(query: str | tuple[str, str]) -> tuple[str, str]:
    return (query, query) if isinstance(query, str) else query


@pytest.mark.parametrize("spot", BACKENDS, indirect=True)
def test_nested_field_access_after_renames_matches_duckdb(spot: Spot, spark: SparkSession) -> None:
    ids = build_lake(spot.backend, spot.oracle_target, spot.data_path, "nested_renames")
    # After the renames and a single inlined row (older rows all written before), and the last snapshot.
    snapshots = [ids[10], ids[-1]]
    expected = {}
    with oracle_lake(spot) as con:
        for sid in snapshots:
            for i, query in enumerate(QUERIES):
                duck = _pair(query)[1].format(t=f"{ORACLE_ALIAS}.main.t AT (VERSION => {sid})")
                try:
                    expected[sid, i] = duckdb_table_rows(con, f"({duck})")
                except duckdb.BinderException:  # `s.a` exists only from the snapshot that re-adds it
                    continue
    failures = []
    with ducklake_cli.connect(spot.catalog, read_only=True) as lake:
        for (sid, i), (names, want) in expected.items():
            ours = _pair(QUERIES[i])[0].format(t="t")
            try:
                got_names, got = spark_table_rows(lake.sql(ours, snapshot=sid, spark=spark))
                assert len(got_names) == len(names), f"columns {got_names} vs DuckDB {names}"
                assert_same_multiset(want, got, f"[{spot.backend}] @{sid} {ours}", columns=names)
            except AssertionError as exc:
                failures.append(str(exc))
    assert not failures, "\n\n".join(failures[:6])
