"""`verify`: each kind of damage injected into a DuckDB-built lake is found (and the unreadable ones repaired so
DuckDB reads the lake again); the healthy lakes of the suite, DuckDB's and ours, report nothing. Metadata only."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ducklake_cli.catalog.verify import bound_problem
from ducklake_cli.lake import Lake
from ducklake_cli.ops.verify import REPAIRABLE, VerifyReport, plan_repair, verify
from tests.support.built_lakes import BuiltLakes
from tests.support.damage import DAMAGES, META, DamagedLake
from tests.support.spot import Spot

REPO = Path(__file__).resolve().parents[2]
sqlite = pytest.mark.parametrize("spot", ["sqlite"], indirect=True)


def _verify(spot: Spot, *, deep: bool = True, **kw: Any) -> VerifyReport:
    with Lake.open(spot.catalog, read_only=True, **kw) as lake:
        return verify(lake, deep=deep)


def _repair(spot: Spot, **kw: Any) -> int | None:
    with Lake.open(spot.catalog, **kw) as lake:
        plan = plan_repair(lake)
        sid = plan.apply(lake).extra["snapshot_id"]
        return int(sid) if sid is not None else None


@sqlite
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_each_damage_is_found_and_unreadable_files_are_repaired(spot: Spot, damage: str) -> None:
    inject, kind, deep = DAMAGES[damage]
    lake = DamagedLake(spot)
    before, rows = _survey(lake)
    rows_of = {f.path: n for f, n in zip(lake.files(), rows, strict=True)}
    where = inject(lake)
    if deep:  # the metadata-only pass cannot see it; the deep one must
        assert _verify(spot, deep=False).healthy
    found = _verify(spot, deep=deep)
    assert {p.kind for p in found.problems} == {kind}, found.problems
    if damage == "lying_bounds":  # a recorded min the footer's is a prefix of: DuckDB's files are not cut short
        assert any("recorded min 's2000' above the file's min 's200'" in p.detail for p in found.problems)
    for problem in found.problems:
        assert problem.table == "main.t"
        assert problem.path == where or (kind == "missing_inlined_table" and where in problem.detail)
        assert problem.repairable == (kind in REPAIRABLE)
    if kind not in REPAIRABLE:
        return
    ended = next(f for f in lake.files() if where in (f.path, f.delete_path))
    sid = _repair(spot)
    assert sid is not None
    assert _verify(spot).healthy
    count, change = lake.run_all("SELECT count(*) FROM lk.t", "SELECT changes_made, commit_message FROM "
                             f"{META}.ducklake_snapshot_changes WHERE snapshot_id = {sid}")
    assert count[0][0] == before - rows_of[ended.path]  # DuckDB reads the lake again, without the ended file
    assert change[0][0] == "deleted_from_table:1" and "verify --repair" in change[0][1]


def _survey(lake: DamagedLake) -> tuple[int, list[int]]:
    """What DuckDB counts in t, and the rows it reads from each live file of t (deletes applied)."""
    count, rows = lake.run_all("SELECT count(*) FROM lk.t", f"SELECT f.data_file_id, count(*) FROM lk.t JOIN "
                           f"{META}.ducklake_data_file f ON lk.t.rowid >= f.row_id_start AND lk.t.rowid < "
                           "f.row_id_start + f.record_count WHERE f.end_snapshot IS NULL AND f.table_id = 1 "
                           "GROUP BY ALL ORDER BY 1")
    return int(count[0][0]), [int(r[1]) for r in rows]


@pytest.mark.postgres
@pytest.mark.parametrize("spot", ["postgres"], indirect=True)
def test_damage_on_postgres_is_found_and_repaired(spot: Spot) -> None:
    lake = DamagedLake(spot)
    for name in ("deleted_delete_file", "missing_inlined_table", "lying_bounds", "empty_file"):
        DAMAGES[name][0](lake)
    found = _verify(spot)
    assert sorted({p.kind for p in found.problems}) == ["empty_file", "missing_file", "missing_inlined_table",
                                                        "stats_bound"], found.problems
    _repair(spot)
    after = _verify(spot)
    assert sorted({p.kind for p in after.problems}) == ["missing_inlined_table", "stats_bound"]
    assert lake.count("u") == 50  # DuckDB attaches and reads the other table
    files = lake.files(fresh=True)
    assert len(files) == 1 and not files[0].delete_path  # both damaged files ended in one snapshot


# One lake per feature verify reads differently (the query differential builds them all in the same session).
HEALTHY = ["primitives", "nested", "partitioned", "deletes", "flush_inlined", "merge_adjacent", "updates",
           "special_values", "decimals", "timestamps", "type_promotion", "nested_evolution", "add_files",
           "add_files_positional", "deletion_vectors"]


def test_healthy_duckdb_lakes_report_nothing(built_lakes: BuiltLakes) -> None:
    compared = 0
    for scenario in HEALTHY:
        spot, _ = built_lakes.get("sqlite", scenario)
        found = _verify(spot)
        assert found.healthy, (scenario, found.problems)
        compared += found.checked["stats_bounds"]
    assert compared > 300  # the bounds were really compared, not skipped


def test_healthy_lakes_of_ours_report_nothing(tmp_path: Path) -> None:
    """A generated lake (our catalog layer's commits and stats) and files we registered (name mappings)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ducklake_cli.ops.register import register

    cat = tmp_path / "big.sqlite"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_big_catalog.py"), str(cat), "--data-path",
                    str(tmp_path / "big"), "--files", "40", "--snapshots", "50"], check=True, capture_output=True)
    spot = Spot("sqlite", str(cat), str(cat), tmp_path / "big")
    found = _verify(spot)
    assert found.healthy and found.checked["data_files"] == 41, found.problems

    reg = Spot("sqlite", str(tmp_path / "reg.sqlite"), str(tmp_path / "reg.sqlite"), tmp_path / "reg")
    DamagedLake(reg)
    src = tmp_path / "src"
    src.mkdir()
    pq.write_table(pa.table({"s": ["x", "y"], "a": pa.array([7, 9], pa.int32()), "x": [0.5, None]}),
                   src / "a.parquet")
    with Lake.open(reg.catalog) as lake:
        register(lake, "t", str(src / "a.parquet"))
    found = _verify(reg)
    assert found.healthy and found.checked["stats_bounds"] >= 13, found.problems


@sqlite
def test_sequence_and_id_damage_is_found(spot: Spot) -> None:
    lake = DamagedLake(spot)
    lake.run("CALL ducklake_expire_snapshots('lk', versions => [2, 3])")
    assert _verify(spot).healthy  # rows that begin in an expired snapshot are normal
    lake.run(f"UPDATE {META}.ducklake_snapshot SET snapshot_time = '2000-01-01 00:00:00+00' WHERE snapshot_id = 5",
             f"UPDATE {META}.ducklake_schema_versions SET schema_version = 99 WHERE table_id = 2",
             f"UPDATE {META}.ducklake_snapshot SET next_file_id = 1 "
             f"WHERE snapshot_id = (SELECT max(snapshot_id) FROM {META}.ducklake_snapshot)",
             f"UPDATE {META}.ducklake_column SET end_snapshot = 0 WHERE table_id = 2")
    kinds = sorted({p.kind for p in _verify(spot, deep=False).problems})
    assert kinds == ["lifetime", "next_id", "schema_version_mismatch", "snapshot_order"], kinds


@pytest.mark.s3
def test_s3_lake(tmp_path: Path, s3_bucket: Any) -> None:
    s3 = s3_bucket
    secret = (f"CREATE SECRET (TYPE s3, KEY_ID '{s3.key}', SECRET '{s3.secret}', ENDPOINT '{s3.host_port}', "
              f"URL_STYLE 'path', USE_SSL false, REGION '{s3.region}')")
    cat = str(tmp_path / "cat.sqlite")
    spot = Spot("sqlite", cat, cat, s3.url)  # an s3:// data path, as text (a Path would fold its "//")
    lake = DamagedLake(spot, secret=secret)
    opts = {"storage_options": s3.storage_options()}
    found = _verify(spot, **opts)
    assert found.healthy and found.checked["footers"] == 5, found.problems
    gone = lake.with_delete().delete_path
    assert gone
    s3.filesystem().rm_file(gone)
    found = _verify(spot, deep=False, **opts)
    assert [(p.kind, p.path) for p in found.problems] == [("missing_file", gone)]


@pytest.mark.parametrize(("rmin", "rmax", "fmin", "fmax", "typ", "phys", "bad"), [
    ("0.1", "0.3", 0.10000000149011612, 0.30000001192092896, "float32", "FLOAT", False),  # single precision
    ("0.1", "0.3", 0.10000000149011612, 0.30000001192092896, "float64", "FLOAT", False),  # promoted float
    ("nan", "nan", 1.0, 2.0, "float64", "DOUBLE", False),  # NaN bounds say nothing
    ("1.0", "1.5", 0.5, 1.5, "float64", "DOUBLE", True),
    ("abcdef", "abd", "abc", "abd", "varchar", "BYTE_ARRAY", True),  # DuckDB and we write whole string bounds
    ("str9", "str9", "", "str9", "varchar", "BYTE_ARRAY", True),  # an empty string is a real min
    ("a", "str", "a", "str9", "varchar", "BYTE_ARRAY", True),  # a recorded max cut short excludes values
    ("b", "c", "a", "c", "varchar", "BYTE_ARRAY", True),
    ("é", "ü", "é", "ü", "varchar", "BYTE_ARRAY", False),  # UTF-8 byte order
    ("1.50", "2.00", Decimal("1.5"), Decimal("2"), "decimal(4,2)", "INT32", False),
    ("2024-01-01 00:00:00+00", "2024-01-02 00:00:00+00", dt.datetime(2024, 1, 1, 0, 0, 1, tzinfo=dt.UTC),
     dt.datetime(2024, 1, 2, 0, 0, 0, 500000, tzinfo=dt.UTC), "timestamptz", "INT64", True),
    ("2024-01-01", "2024-03-01", dt.date(2024, 1, 1), dt.date(2024, 2, 1),
     "date", "INT32", False),
    ("1", "5", 1, 5, "int128", "FIXED_LEN_BYTE_ARRAY", False),  # a type without bounds
    ("x", "y", None, None, "int32", "INT32", False),  # unparsable or absent: not checked
])
def test_bound_rules(rmin: str, rmax: str, fmin: Any, fmax: Any, typ: str, phys: str, bad: bool) -> None:
    assert (bound_problem(rmin, rmax, fmin, fmax, typ, phys) is not None) == bad


def test_a_foreign_writer_may_cut_a_string_min_short() -> None:
    """Only for files registered from elsewhere: a footer min that is a prefix of the recorded one."""
    assert bound_problem("abcdef", "abd", "abc", "abd", "varchar", "BYTE_ARRAY", may_truncate=True) is None
    assert bound_problem("abd", "abd", "abcd", "abd", "varchar", "BYTE_ARRAY", may_truncate=True) is not None
    assert bound_problem("b", "c", "a", "c", "varchar", "BYTE_ARRAY", may_truncate=True) is not None
