"""Pruning in the catalog's SQL (catalog/file_scan.py + scan_plan._kept_files) keeps exactly the files the Python
pruner alone keeps (engine/planning/prune.py, itself checked against DuckDB 1.5.5 in test_prune.py), on every
backend: the lake of test_prune (every stats kind, partitions, promotions, NaN, infinities, NULLs) is copied to
a DuckDB file, PostgreSQL and MariaDB, and every predicate form and random conjunctions are planned on each (a
sample per table by default, every generated predicate on SQLite in the full tier)."""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import ducklake_cli
from ducklake_cli.catalog.url import parse_catalog
from ducklake_cli.engine.planning.predicates import Predicate
from ducklake_cli.engine.planning.prune import prune
from ducklake_cli.engine.planning.scan_plan import FileSource, _kept_files
from ducklake_cli.ops.copy_catalog import copy_catalog
from tests.engine.planning.test_prune import SEED, LakeTable, build_custom_lake, gen_predicates, load_tables
from tests.support.oracle import oracle_connect
from tests.support.services import mysql_database, pg_database, require_env
from tests.support.tiers import is_full

# Per file of table `odd`: stats texts other writers may leave (padded, signed, 19 digits, not a number, all NULL,
# impossible dates and times, a trailing zero in the fraction, a date for a timestamp, ISO `T`, year 0).
ODD_INTS = [(" -40", "0"), ("+3", " 90 "), ("1234567890123456789", "-1"), ("x", "1e3"), (None, None), ("-5", "0500"),
            ("-7", "7"), ("0", "100")]
ODD_TIMES = [("2024-02-30 00:00:00", "2024-03-01 10:00:00"), ("2024-02-28 23:00:00.50", "2024-02-29 24:00:00"),
             ("2024-02-29", "2024-03-01"), ("2024-02-28T23:00:00", "2024-03-02 00:00:00"),
             ("0000-01-01 00:00:00", "2024-02-29 00:00:00.000001"), (None, "2024-02-29 12:00:00"),
             ("2023-02-29 00:00:00", "2024-02-29 00:00:00"), ("2024-02-29 00:00:00.5", "2024-03-01 00:00:00.123456")]
ODD_DATES = [("2024-02-30", "2024-03-01"), ("2023-02-29", "2024-02-29"), ("2024-02-29 00:00:00", "2024-03-01"),
             ("0000-12-31", "2024-02-26"), ("2024-02-25", None), ("2024-13-01", "2024-14-01"),
             ("2024-02-25", "2024-02-28"), ("2024-02-28", "2024-02-29")]
TABLES = ["days", "cal", "ordered", "bucketed", "bmulti", "mixed", "tzp", "tzb", "yinf", "evolve", "promo"]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """test_prune's lake, plus a table whose integer stats SQL cannot read (kept for Python to judge)."""
    inserts = [f"INSERT INTO lake.odd SELECT r * {k + 1} - 40, r::UBIGINT * 200000000000000000, "
               f"TIMESTAMP '2024-02-28 23:00:00' + to_seconds(r * 1000 * {k + 1}), "
               f"DATE '2024-02-25' + CAST(r * {k + 1} AS INTEGER) FROM range({k * 7}, {k * 7 + 20}) t(r)"
               for k in range(len(ODD_TIMES))]
    catalog = build_custom_lake(tmp_path_factory.mktemp("prune-sql"),
                                "CREATE TABLE lake.odd(i BIGINT, u UBIGINT, t TIMESTAMP, d DATE)", *inserts)
    db = sqlite3.connect(catalog)
    with db:  # stats texts other writers may leave: padded, signed, 19 digits, not a number, all NULL
        tid = db.execute("SELECT table_id FROM ducklake_table WHERE table_name = 'odd'").fetchone()[0]
        ids = [r[0] for r in db.execute(
            "SELECT data_file_id FROM ducklake_data_file WHERE table_id = ? ORDER BY 1", (tid,))]
        for fid, ints, times, dates in zip(ids, ODD_INTS, ODD_TIMES, ODD_DATES, strict=True):
            for cid, (lo, hi) in enumerate((ints, times, dates)):
                db.execute("UPDATE ducklake_file_column_stats SET min_value = ?, max_value = ? "
                           "WHERE data_file_id = ? AND column_id = ?", (lo, hi, fid, (1, 3, 4)[cid]))
        db.execute("UPDATE ducklake_file_column_stats SET value_count = 0 WHERE data_file_id = ? AND column_id = 1",
                   (ids[-1],))
    db.close()
    return catalog


@contextlib.contextmanager
def _catalog(backend: str, source: Path, root: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield str(source)
        return
    with contextlib.ExitStack() as stack:
        if backend == "duckdb":
            url = str(root / "cat.duckdb")
        elif backend == "postgres":
            url = stack.enter_context(pg_database(require_env("DUCKLAKE_TEST_PG")))
        else:
            url = stack.enter_context(mysql_database(require_env("DUCKLAKE_TEST_MYSQL")))
        copy_catalog(parse_catalog(str(source)), parse_catalog(url, must_exist=False))
        yield url


def _python_kept(table: LakeTable, predicates: list[Predicate]) -> set[int]:
    """What the Python pruner alone keeps (files' written types unknown, as when planning)."""
    candidates = [replace(c, written_types={}) for c in table.candidates]
    return set(prune(candidates, predicates, table.columns)[0])


def _source(row: tuple[Any, ...]) -> FileSource:
    return FileSource(row[0], row[1], 0, 0, None, 0, False, None, None)


def _odd_predicates() -> list[Predicate]:
    out: list[Predicate] = []
    for v in (-41, -40, -5, 0, 3, 90, 91, 500, 10 ** 17, 10 ** 18, 2 ** 63 - 1, -(2 ** 63)):
        out += [Predicate(c, op, (v,)) for c in ("i", "u") for op in ("=", "<", "<=", ">", ">=")]
    for t in ("2024-02-28 23:00:00", "2024-02-28 23:00:00.5", "2024-02-29", "2024-02-29 00:00:00.000001",
              "2024-02-29 12:00:00", "2024-03-01 00:00:00", "2024-03-01 10:00:00.5", "2024-03-02"):
        out += [Predicate(c, op, (t,)) for c in ("t", "d") for op in ("=", "<", "<=", ">", ">=")]
        out += [Predicate("t", op, (dt.datetime.fromisoformat(t),)) for op in ("=", "<", ">=")]
    out += [Predicate("d", "=", (dt.date(2024, 2, 29),)), Predicate("t", "between", ("2024-02-29", "2024-03-01")),
            Predicate("d", "in", ("2024-02-29", dt.date(2024, 3, 1))), Predicate("t", "<", ("2024-02-29T00:00:00Z",)),
            Predicate("t", ">", ("9999-12-31 23:59:59",)), Predicate("d", "<", ("0001-01-01",))]
    out += [Predicate("i", "between", (5, -5)), Predicate("i", "between", (-45, -39)),
            Predicate("i", "in", (1, 95, 600)), Predicate("i", "in", tuple(range(200))),
            Predicate("i", "=", (True,)), Predicate("i", "=", (3.0,)), Predicate("i", "=", ("3",)),
            Predicate("i", "is_null"), Predicate("i", "is_not_null"), Predicate("u", "=", (None,))]
    return out


@pytest.mark.parametrize("backend", [
    "sqlite", "duckdb", pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql)])
def test_sql_pruning_keeps_what_python_keeps(source: Path, tmp_path: Path, backend: str) -> None:
    tables = load_tables(source)
    duck = oracle_connect()
    rng = random.Random(f"{SEED}-sql-{backend}")
    cases: list[tuple[str, list[Predicate]]] = []
    for name in TABLES:
        preds = gen_predicates(duck, tables[name], rng, per_column=2)
        size = (len(preds) if backend == "sqlite" else 60) if is_full() else 20
        cases += [(name, [p]) for p in rng.sample(preds, min(size, len(preds)))]
        cases += [(name, rng.sample(preds, 3)) for _ in range(10 if is_full() else 4)]
    duck.close()
    cases += [("odd", [p]) for p in _odd_predicates()] + [("odd", [Predicate("i", ">=", (0,)),
                                                                   Predicate("u", "<", (10 ** 18,))])]
    pruned_somewhere = 0
    with _catalog(backend, source, tmp_path) as url, ducklake_cli.connect(url) as lake, lake.reader() as r:
        sid = r.latest_snapshot().snapshot_id
        infos = {t.name: t for t in r.tables(sid)}
        for name, predicates in cases:
            files, pruned = _kept_files(r, infos[name], sid, predicates, _source)
            kept = {f.data_file_id for f in files}
            assert kept == _python_kept(tables[name], predicates), (name, predicates)
            assert pruned == len(tables[name].candidates) - len(kept)
            pruned_somewhere += pruned > 0
    assert pruned_somewhere > len(cases) // 4
