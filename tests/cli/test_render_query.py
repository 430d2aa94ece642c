"""Query values for people and machines: nested values as JSON text, NULL distinct from any string, the first rows
of an ordered result, and the documented lossless encoding per type (no Spark needed: only its type objects)."""

from __future__ import annotations

import datetime as dt
import io
import json
import struct
from decimal import Decimal
from typing import Any

import pytest

from ducklake_cli.cli.render import MAX_TABLE_ROWS, OutputFormat, render
from ducklake_cli.engine.output import RowStream, csv_field, encoder, write_csv, write_json
from ducklake_cli.ops.query import QueryResult


def _types() -> Any:
    from pyspark.sql import types as T

    return T


def test_encoding_per_type() -> None:
    T = _types()
    f32 = struct.unpack("f", struct.pack("f", 0.1))[0]
    assert encoder(T.FloatType())(f32) == 0.1  # shortest text that reads back as the same float32
    assert [encoder(T.DoubleType())(v) for v in (float("nan"), float("inf"), -float("inf"), 5e-324)] == [
        "NaN", "Infinity", "-Infinity", 5e-324]
    assert encoder(T.LongType())(2**63 - 1) == 9223372036854775807
    assert encoder(T.DecimalType(38, 10))(Decimal("0E-10")) == "0.0000000000"
    assert encoder(T.DecimalType(4, 1))(Decimal("-12.5")) == "-12.5"
    assert encoder(T.BinaryType())(bytearray(b"\x00\xff,")) == "00ff2c"
    assert encoder(T.TimestampNTZType())(dt.datetime(2024, 1, 2, 3, 4, 5)) == "2024-01-02T03:04:05.000000"
    aware = dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert encoder(T.TimestampType())(aware) == "2024-01-02T01:04:05.000006+00:00"
    naive_local = aware.astimezone().replace(tzinfo=None)  # how classic PySpark hands over an instant
    assert encoder(T.TimestampType())(naive_local) == "2024-01-02T01:04:05.000006+00:00"
    assert encoder(T.DateType())(dt.date(1, 1, 1)) == "0001-01-01"
    nested = T.StructType([T.StructField("a", T.ArrayType(T.DoubleType())),
                           T.StructField("m", T.MapType(T.IntegerType(), T.StringType()))])
    assert encoder(nested)(([1.5, None, float("nan")], {1: None, 2: "x"})) == {
        "a": [1.5, None, "NaN"], "m": {"1": None, "2": "x"}}
    assert encoder(T.StringType())(None) is None


def test_csv_keeps_null_and_empty_string_apart() -> None:
    assert [csv_field(v) for v in (None, "", "a,b", 'q"', " pad", "x\r\ny", 1.5, True, {"a": [1]})] == [
        "", '""', '"a,b"', '"q"""', '" pad"', '"x\r\ny"', "1.5", "true", '"{""a"":[1]}"']


def _stream(rows: list[tuple[Any, ...]]) -> RowStream:
    T = _types()
    enc = (encoder(T.IntegerType()), encoder(T.StringType()),
           encoder(T.StructType([T.StructField("a", T.IntegerType()), T.StructField("b", T.StringType())])))
    return RowStream(("id", "s", "st"), enc, iter(rows))


def test_machine_writers_stream_every_row_with_nulls() -> None:
    rows = [(i, None if i % 2 else "", (i, None)) for i in range(3)]
    out = io.StringIO()
    assert write_json(_stream(rows), out, lines=False) == 3
    assert json.loads(out.getvalue())[1] == {"id": 1, "s": None, "st": {"a": 1, "b": None}}
    out = io.StringIO()
    assert write_json(_stream(rows), out, lines=True) == 3
    assert json.loads(out.getvalue().splitlines()[0]) == {"id": 0, "s": "", "st": {"a": 0, "b": None}}
    out = io.StringIO()
    assert write_csv(_stream(rows), out) == 3
    assert out.getvalue().splitlines() == ["id,s,st", '0,"","{""a"":0,""b"":null}"', '1,,"{""a"":1,""b"":null}"',
                                           '2,"","{""a"":2,""b"":null}"']


def _result(n: int) -> QueryResult:
    T = _types()
    rows = tuple((i, "NULL" if i == 1 else None if i == 2 else f"s{i}", (i, None)) for i in range(n))
    st = T.StructType([T.StructField("a", T.IntegerType()), T.StructField("b", T.StringType())])
    return QueryResult(columns=("id", "s", "st"), rows=rows,
                       encoders=(encoder(T.IntegerType()), encoder(T.StringType()), encoder(st)))


def test_table_shows_json_for_nested_and_a_null_marker(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    render(_result(3), OutputFormat.table)
    out = capsys.readouterr().out
    assert '{"a":0,"b":null}' in out and "Row(" not in out
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") == 4}
    assert "NULL" in lines["1"] and "NULL" in lines["2"]  # the string 'NULL' and a NULL both read NULL as text...
    assert "s0" in lines["0"] and "-" not in lines["2"].replace("─", "")  # ...but NULL is never `-`


def test_csv_and_json_of_a_result(capsys: pytest.CaptureFixture[str]) -> None:
    render(_result(3), OutputFormat.csv)
    assert capsys.readouterr().out.splitlines() == [
        "id,s,st", '0,s0,"{""a"":0,""b"":null}"', '1,NULL,"{""a"":1,""b"":null}"', '2,,"{""a"":2,""b"":null}"']
    render(_result(3), OutputFormat.json)
    assert json.loads(capsys.readouterr().out)[2] == {"id": 2, "s": None, "st": {"a": 2, "b": None}}


def test_table_shows_the_first_rows(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    render(_result(MAX_TABLE_ROWS + 20), OutputFormat.table)
    out = capsys.readouterr().out
    ids = [line.split("│")[1].strip() for line in out.splitlines() if line.count("│") == 4]
    assert ids[:2] == ["0", "1"] and str(MAX_TABLE_ROWS - 1) in ids and str(MAX_TABLE_ROWS) not in ids
    assert f"showing the first {MAX_TABLE_ROWS}" in out


def test_a_long_history_shows_its_newest_rows(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from ducklake_cli.ops.results import Section

    class History:
        def sections(self) -> list[Section]:
            rows = tuple((i, f"t{i}") for i in range(MAX_TABLE_ROWS + 20))
            return [Section("Snapshots", ("snapshot_id", "time"), rows, history=True)]

        def to_json(self) -> Any:
            return []

    monkeypatch.setenv("COLUMNS", "200")
    render(History(), OutputFormat.table)
    out = capsys.readouterr().out
    ids = [line.split("│")[1].strip() for line in out.splitlines() if line.count("│") == 3]
    assert ids[-1] == str(MAX_TABLE_ROWS + 19) and "19" not in ids and "20" in ids
    assert f"showing the newest {MAX_TABLE_ROWS}" in out
