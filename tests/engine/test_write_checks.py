"""The executor side of a write refusing rows, without Spark: NOT NULL only where DuckDB 1.5.5 enforces it, values a
column cannot hold (pyarrow's casts and DuckDB's), each named in one line that reaches the driver as the error it
was (`errors.from_executor`); a failed task leaves none of its files, and a failed job's files are found by name."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from ducklake_cli.catalog.models import ColumnInfo
from ducklake_cli.engine.parquet_files import FileSpec, data_file_name, job_file, write_batches
from ducklake_cli.engine.writer import arrow_field, enforces_not_null, leaves, remove_job_files
from ducklake_cli.errors import BadValueError, ConstraintError, QueryError, executor_text, from_executor


def _col(cid: int, name: str, kind: str, *, nulls: bool = True, parent: int | None = None,
         children: tuple[ColumnInfo, ...] = ()) -> ColumnInfo:
    return ColumnInfo(column_id=cid, name=name, type=kind, nulls_allowed=nulls, initial_default=None,
                      default_value="NULL", default_value_type="literal", parent_column=parent, column_order=cid,
                      begin_snapshot=0, children=children)


# As DuckDB 1.5.5 records them: id NOT NULL, a struct whose renamed field is NOT NULL, a NOT NULL list.
COLUMNS = (
    _col(1, "id", "int32", nulls=False),
    _col(2, "s", "struct", children=(_col(3, "a", "int32", parent=2), _col(4, "bb", "varchar", nulls=False,
                                                                               parent=2))),
    _col(5, "l", "list", nulls=False, children=(_col(6, "element", "int32", parent=5),)),
    _col(7, "u", "uint8"),
)


def _spec(tmp_path: Path, columns: tuple[ColumnInfo, ...] = COLUMNS, **kw: object) -> FileSpec:
    return FileSpec(table_dir=f"{tmp_path}/t/", schema=pa.schema([arrow_field(c) for c in columns]),
                    leaves=leaves(columns), table="main.t", **kw)  # type: ignore[arg-type]


def _files(tmp_path: Path) -> list[Path]:
    return sorted(p for p in tmp_path.rglob("*") if p.is_file())


def _batch(ids: list[int | None], us: list[int] | None = None) -> pa.RecordBatch:
    n = len(ids)
    return pa.RecordBatch.from_arrays([
        pa.array(ids, pa.int32()), pa.array([{"a": 1, "bb": None}] * n, pa.struct([("a", pa.int32()),
                                                                                      ("bb", pa.string())])),
        pa.array([None] * n, pa.list_(pa.int32())), pa.array(us or [1] * n, pa.int16())], ["_c0", "_c1", "_c2", "_c3"])


def test_not_null_as_duckdb_enforces_it(tmp_path: Path) -> None:
    assert [c.name for c in COLUMNS if enforces_not_null(c)] == ["id"]
    assert [leaf.not_null for leaf in leaves(COLUMNS)] == [True, False, False, False, False]
    assert all(f.nullable for f in _spec(tmp_path).schema)  # files as DuckDB writes them: every column OPTIONAL
    # NULL in the renamed field and in the NOT NULL list: written, as DuckDB writes them.
    out = list(write_batches(iter([_batch([1, 2])]), _spec(tmp_path)))
    assert len(out) == 1 and len(_files(tmp_path)) == 1
    # NULL in id: refused, naming the row; the task's files (an earlier batch's included) are gone.
    spec = _spec(tmp_path / "b", row_group_size=1)
    with pytest.raises(ConstraintError) as refused:
        list(write_batches(iter([_batch([1, 2]), _batch([3, None])]), spec))
    assert refused.value.message == ("NOT NULL constraint failed: main.t.id is NULL in the new row "
                                     "(id=NULL, s={'a': 1, 'bb': NULL}, l=NULL, u=1)")
    assert not _files(tmp_path / "b")


def test_values_a_column_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(BadValueError) as refused:
        list(write_batches(iter([_batch([1, 2], [5, 300])]), _spec(tmp_path)))
    assert refused.value.message == ("main.t.u is UTINYINT, which cannot hold 300, in the new row "
                                     "(id=2, s={'a': 1, 'bb': NULL}, l=NULL, u=300)")
    # Files DuckDB writes (a UUID column): its cast, named the same way.
    columns = (_col(1, "id", "int32"), _col(2, "k", "uuid"))
    batch = pa.RecordBatch.from_arrays([pa.array([1, 2], pa.int32()), pa.array(["00000000-0000-0000-0000-"
                                                                                "000000000001", "nope"])],
                                       ["_c0", "_c1"])
    with pytest.raises(BadValueError) as duck:
        list(write_batches(iter([batch]), _spec(tmp_path, columns)))
    assert duck.value.message == "main.t.k is UUID, which cannot hold 'nope', in the new row (id=2, k='nope')"
    assert not _files(tmp_path)


def test_errors_travel_as_one_line() -> None:
    line = executor_text(ConstraintError("NOT NULL constraint failed:\nmain.t.id"))
    assert line == "ducklake_cli.errors.ConstraintError: NOT NULL constraint failed: main.t.id"
    trace = f"Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    raise X\n{line}\n SQLSTATE: 38000"
    got = from_executor(f"[PYTHON_EXCEPTION] An exception was thrown from the Python worker: {trace}")
    assert isinstance(got, ConstraintError) and got.message == "NOT NULL constraint failed: main.t.id"
    raised = from_executor(f"[USER_RAISED_EXCEPTION] {executor_text(QueryError('q'))} SQLSTATE: P0001")
    assert isinstance(raised, QueryError) and raised.message == "q"
    assert from_executor("ducklake_cli.errors.NoSuchError: x") is None
    assert from_executor("ValueError: x") is None


def test_failed_job_files_are_found_by_name(tmp_path: Path) -> None:
    names = {data_file_name("0a1b2c3d") for _ in range(50)}
    assert len(names) == 50 and all(job_file(n, "0a1b2c3d") and not job_file(n, "0a1b2c3e") for n in names)
    assert not job_file(data_file_name(), "0a1b2c3d") and not job_file(next(iter(names)), "")
    spec = dataclasses.replace(_spec(tmp_path), job="0a1b2c3d")
    ours, other = tmp_path / "t" / "p=1" / next(iter(names)), tmp_path / "t" / data_file_name("ffffffff")
    for path in (ours, other):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    remove_job_files(spec)
    assert _files(tmp_path) == [other]
