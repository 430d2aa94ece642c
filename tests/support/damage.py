"""Lakes built by DuckDB, then damaged the ways `ducklake verify` must notice: files deleted, truncated or
emptied on storage, and catalog rows edited (sizes, record counts, stats bounds, a dropped inlined table).
Catalog edits go through DuckDB's attached metadata database, so they work on every catalog backend."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb

from tests.support.oracle import oracle_connect
from tests.support.spot import Spot

ALIAS = "lk"
META = f"__ducklake_metadata_{ALIAS}"

# One table with three Parquet files (one with a delete file), inlined rows, and a second table.
SETUP = [
    "CREATE TABLE t (a INTEGER, s VARCHAR, x DOUBLE)",
    "INSERT INTO t SELECT i, 's' || i, i / 4 FROM range(0, 100) r(i)",
    "INSERT INTO t SELECT i, 's' || i, i / 4 FROM range(100, 200) r(i)",
    "INSERT INTO t SELECT i, 's' || i, i / 4 FROM range(200, 300) r(i)",
    "DELETE FROM t WHERE a % 3 = 0 AND a >= 100 AND a < 200",
    "INSERT INTO t VALUES (1000, 'inl', 1.5), (1001, 'inl2', 2.5)",
    "CREATE TABLE u (id BIGINT)",
    "INSERT INTO u SELECT i FROM range(50) r(i)",
]


@dataclass(frozen=True)
class LiveFile:
    """A live file of table `t` as DuckDB lists it."""

    data_file_id: int
    path: str
    delete_path: str | None


class DamagedLake:
    """A DuckDB-built lake (`SETUP`) on a `Spot`, with helpers that damage it and read it back with DuckDB."""

    def __init__(self, spot: Spot, *, extra: str = "", secret: str | None = None) -> None:
        self.spot = spot
        self.extra = extra
        self.secret = secret
        self._files: dict[str, list[LiveFile]] = {}
        self.run(*(sql.replace("TABLE ", f"TABLE {ALIAS}.").replace("INTO ", f"INTO {ALIAS}.")
                   .replace("FROM t ", f"FROM {ALIAS}.t ") for sql in SETUP))

    def connect(self) -> duckdb.DuckDBPyConnection:
        """DuckDB with the lake attached as `lk` (not in use: a metadata edit would then find SQLite locked)."""
        con = oracle_connect()
        if self.secret:
            con.execute(self.secret)
        con.execute(self.spot.attach(ALIAS, self.extra))
        return con

    def run(self, *statements: str) -> list[tuple[Any, ...]]:
        """Statements on a fresh attach; the last one's rows."""
        return self.run_all(*statements)[-1]

    def run_all(self, *statements: str) -> list[list[tuple[Any, ...]]]:
        """Statements on one fresh attach; each one's rows."""
        con = self.connect()
        try:
            return [con.execute(sql).fetchall() for sql in statements]
        finally:
            con.close()

    def files(self, table: str = "t", *, fresh: bool = False) -> list[LiveFile]:
        """The live files of a table with their full paths, in data file order (cached unless `fresh`)."""
        if table in self._files and not fresh:
            return self._files[table]
        rows = self.run(f"SELECT f.data_file_id, l.data_file, l.delete_file FROM ducklake_list_files('{ALIAS}', "
                        f"'{table}') l JOIN {META}.ducklake_data_file f ON l.data_file LIKE '%' || f.path "
                        "WHERE f.end_snapshot IS NULL ORDER BY f.data_file_id")
        self._files[table] = [LiveFile(int(r[0]), str(r[1]), r[2]) for r in rows]
        return self._files[table]

    def with_delete(self) -> LiveFile:
        """The file of `t` that has a delete file."""
        return next(f for f in self.files() if f.delete_path)

    def without_delete(self, *, last: bool = False) -> LiveFile:
        """The first (or last) file of `t` without a delete file."""
        plain = [f for f in self.files() if not f.delete_path]
        return plain[-1] if last else plain[0]

    def count(self, table: str = "t") -> int:
        """What DuckDB counts in a table (fails when the lake cannot be read)."""
        return int(self.run(f"SELECT count(*) FROM {ALIAS}.{table}")[0][0])


def _local(path: str) -> str:
    return path.removeprefix("file://")


def delete_data_file(lake: DamagedLake) -> str:
    """Remove a data file from storage."""
    f = lake.without_delete()
    os.remove(_local(f.path))
    return f.path


def delete_delete_file(lake: DamagedLake) -> str:
    """Remove a delete file from storage."""
    f = lake.with_delete()
    assert f.delete_path
    os.remove(_local(f.delete_path))
    return f.delete_path


def truncate_file(lake: DamagedLake) -> str:
    """Cut a data file to half its size (its footer is gone)."""
    f = lake.without_delete()
    size = os.path.getsize(_local(f.path))
    with open(_local(f.path), "r+b") as fh:
        fh.truncate(size // 2)
    return f.path


def empty_file(lake: DamagedLake) -> str:
    """Make a data file 0 bytes long."""
    f = lake.without_delete()
    with open(_local(f.path), "wb"):
        pass
    return f.path


def wrong_size(lake: DamagedLake) -> str:
    """Record a size 7 bytes off for a data file."""
    f = lake.without_delete(last=True)
    lake.run(f"UPDATE {META}.ducklake_data_file SET file_size_bytes = file_size_bytes + 7 "
             f"WHERE data_file_id = {f.data_file_id}")
    return f.path


def drop_inlined_table(lake: DamagedLake) -> str:
    """Drop the inlined-data table holding t's inlined rows (its registration stays)."""
    name = lake.run(f"SELECT i.table_name FROM {META}.ducklake_inlined_data_tables i JOIN {META}.ducklake_table t "
                    "USING (table_id) WHERE t.table_name = 't' ORDER BY i.schema_version DESC LIMIT 1")[0][0]
    lake.run(f"DROP TABLE {META}.{name}")
    return str(name)


def wrong_record_count(lake: DamagedLake) -> str:
    """Record 3 rows more than a data file holds."""
    f = lake.without_delete(last=True)
    lake.run(f"UPDATE {META}.ducklake_data_file SET record_count = record_count + 3 "
             f"WHERE data_file_id = {f.data_file_id}")
    return f.path


def lying_bounds(lake: DamagedLake) -> str:
    """Record min/max bounds of `a` (an integer) and `s` (a string) that exclude the file's values; `s`'s min
    extends the file's ('s200' → 's2000'): DuckDB writes whole strings, so this is no writer's truncation."""
    f = lake.without_delete(last=True)
    ids = dict(lake.run(f"SELECT c.column_name, c.column_id FROM {META}.ducklake_column c JOIN {META}.ducklake_table t "
                        "USING (table_id) WHERE t.table_name = 't' AND c.end_snapshot IS NULL"))
    lake.run(f"UPDATE {META}.ducklake_file_column_stats SET min_value = '5', max_value = '10' "
             f"WHERE data_file_id = {f.data_file_id} AND column_id = {ids['a']}")
    lake.run(f"UPDATE {META}.ducklake_file_column_stats SET min_value = 's2000', max_value = 's1' "
             f"WHERE data_file_id = {f.data_file_id} AND column_id = {ids['s']}")
    return f.path


# name → (inject, problem kind verify reports, needs --deep, path reported is the damaged one)
DAMAGES: dict[str, tuple[Callable[[DamagedLake], str], str, bool]] = {
    "deleted_data_file": (delete_data_file, "missing_file", False),
    "deleted_delete_file": (delete_delete_file, "missing_file", False),
    "truncated_file": (truncate_file, "unreadable_file", False),
    "empty_file": (empty_file, "empty_file", False),
    "wrong_size": (wrong_size, "size_mismatch", False),
    "missing_inlined_table": (drop_inlined_table, "missing_inlined_table", False),
    "wrong_record_count": (wrong_record_count, "record_count_mismatch", True),
    "lying_bounds": (lying_bounds, "stats_bound", True),
}
