"""Machine output is complete and lossless: every DuckLake type, every row, equal to DuckDB's own values.

A DuckDB-built table of every type DuckLake stores (NULLs in every column) is exported through the CLI as
`--format json`, `--format csv` and `--output .json/.csv/.parquet`; each value is compared with DuckDB's.
Normalisation, per type, of DuckDB's Python value to the documented encoding (README "Output formats"):
ints -> int; ubigint/hugeint/uhugeint -> decimal text; decimal -> plain digits with the scale; float32 ->
compared as float32; float64 -> exact, NaN/inf as "NaN"/"Infinity"/"-Infinity"; blob -> hex; date -> ISO;
time/timetz/interval -> DuckDB's own VARCHAR cast; timestamp[_s/_ms/_ns] -> ISO with 6 fraction digits
(timestamp_ns: microseconds, the reader's documented truncation); timestamptz -> the UTC instant with +00:00;
uuid -> canonical text; json -> its text; struct/list/map -> objects/arrays/objects keyed by the key's text.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import REPO, run_main
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot

pytestmark = pytest.mark.spark

_NULL_EVERY = 23  # column k is NULL where (i + k) % 23 == 0, so every column has NULLs on different rows

# (column, DuckDB type, expression over i, normalisation kind)
COLUMNS: list[tuple[str, str, str, str]] = [
    ("c_tinyint", "TINYINT", "CASE i % 5 WHEN 0 THEN -128 WHEN 1 THEN 127 ELSE i % 200 - 100 END", "int"),
    ("c_smallint", "SMALLINT", "CASE i % 5 WHEN 0 THEN -32768 WHEN 1 THEN 32767 ELSE i * 3 - 30000 END", "int"),
    ("c_integer", "INTEGER", "CASE i % 5 WHEN 0 THEN -2147483648 WHEN 1 THEN 2147483647 ELSE i * 99991 END", "int"),
    ("c_bigint", "BIGINT", "CASE i % 5 WHEN 0 THEN -9223372036854775808 WHEN 1 THEN 9223372036854775807 "
                           "ELSE (i - 10000) * 900719925474099 END", "int"),
    ("c_utinyint", "UTINYINT", "i % 256", "int"),
    ("c_usmallint", "USMALLINT", "(i * 7) % 65536", "int"),
    ("c_uinteger", "UINTEGER", "CASE i % 4 WHEN 0 THEN 4294967295 ELSE i * 214748 END", "int"),
    ("c_ubigint", "UBIGINT", "CASE i % 4 WHEN 0 THEN 18446744073709551615 ELSE i::UBIGINT * 922337203685477 END",
     "intstr"),
    ("c_hugeint", "HUGEINT", "CASE i % 4 WHEN 0 THEN -17014118346046923173168730371588410 "
                             "ELSE (i - 10000)::HUGEINT * 17014118346046923173168730371 END", "intstr"),
    ("c_uhugeint", "UHUGEINT", "i::UHUGEINT * 1701411834604692317316873037158841", "intstr"),
    ("c_dec4", "DECIMAL(4,1)", "((i * 37) % 19999 - 9999) / 10", "dec"),
    ("c_dec9", "DECIMAL(9,3)", "(i * 4999 % 1999999 - 999999) / 1000", "dec"),
    ("c_dec18", "DECIMAL(18,6)", "(i - 10000) * 12345678.123456", "dec"),
    ("c_dec38", "DECIMAL(38,10)", "i * 1234567890123456.0123456789", "dec"),
    ("c_float", "FLOAT", "CASE i % 9 WHEN 0 THEN 'nan'::FLOAT WHEN 1 THEN 'inf'::FLOAT WHEN 2 THEN '-inf'::FLOAT "
                         "WHEN 3 THEN 3.4028235e38::FLOAT ELSE i / 7.0 END", "f32"),
    ("c_double", "DOUBLE", "CASE i % 9 WHEN 0 THEN 'nan'::DOUBLE WHEN 1 THEN 'inf'::DOUBLE WHEN 2 THEN '-inf'::DOUBLE "
                           "WHEN 3 THEN 1.7976931348623157e308 WHEN 4 THEN 5e-324 ELSE i / 3.0 END", "f64"),
    ("c_bool", "BOOLEAN", "i % 2 = 0", "plain"),
    ("c_varchar", "VARCHAR", "CASE i % 7 WHEN 0 THEN '' WHEN 1 THEN 'ünïcødé ✓ 数据 ' || i "
                             "WHEN 2 THEN 'line1' || chr(10) || 'line2' || chr(13) || chr(10) || 'l3' "
                             "WHEN 3 THEN 'say \"hi\", ok' WHEN 4 THEN ' padded ' WHEN 5 THEN 'NULL' ELSE 'x' || i END",
     "plain"),
    ("c_blob", "BLOB", "CASE WHEN i % 3 = 0 THEN ''::BLOB ELSE '\\x00\\xFF,\"'::BLOB || encode(i::VARCHAR) END",
     "blob"),
    ("c_date", "DATE", "DATE '1970-01-01' + (i * 37 - 300000)::INTEGER", "date"),
    ("c_time", "TIME", "make_time(i % 24, i % 60, ((i * 7919) % 60000000) / 1000000.0)", "text"),
    ("c_timetz", "TIMETZ", "(make_time(i % 24, i % 60, (i % 60)::DOUBLE)::VARCHAR || '+05:30')::TIMETZ", "text"),
    ("c_ts", "TIMESTAMP", "make_timestamp((i - 10000) * 123456789012)", "ts"),
    ("c_ts_s", "TIMESTAMP_S", "make_timestamp((i - 10000) * 123456789012)", "ts"),
    ("c_ts_ms", "TIMESTAMP_MS", "make_timestamp((i - 10000) * 123456789012)", "ts"),
    ("c_ts_ns", "TIMESTAMP_NS", "make_timestamp((i - 10000) * 123456789012)::TIMESTAMP_NS", "ts"),
    ("c_tstz", "TIMESTAMPTZ", "make_timestamp((i - 10000) * 123456789013)::TIMESTAMPTZ", "tstz"),
    ("c_interval", "INTERVAL", "to_months(i % 13) + to_days(i % 30) + to_microseconds(i * 1234567)",
     "text"),
    ("c_uuid", "UUID", "md5(i::VARCHAR)::UUID", "uuid"),
    ("c_json", "JSON", "json_object('k', i, 's', 'x\"y', 'l', [1, 2])", "plain"),
    ("c_struct", "STRUCT(a INTEGER, b VARCHAR, c DOUBLE)",
     "{'a': i, 'b': CASE WHEN i % 4 = 0 THEN NULL ELSE 'b,\"' || i END, 'c': i / 4}", "struct"),
    ("c_list", "INTEGER[]", "CASE WHEN i % 5 = 0 THEN [] ELSE [i, NULL, i + 1] END", "list"),
    ("c_map", "MAP(VARCHAR, INTEGER)", "MAP {'k' || i: i, 'z': NULL}", "map"),
]


def run_bytes(*args: str) -> tuple[int, str, str]:
    """The CLI as a user runs it; stdout decoded without newline translation (a CSV field may hold `\\r\\n`)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DUCKLAKE_CATALOG", "DUCKLAKE_CONFIG")}
    res = subprocess.run([sys.executable, "-m", "ducklake_cli", *args], capture_output=True, cwd=REPO, env=env,
                         timeout=300, check=False)
    return res.returncode, res.stdout.decode("utf-8"), res.stderr.decode("utf-8", "replace")


def build_table(spot: Spot, rows: int) -> list[tuple[Any, ...]]:
    """Create lake.main.t with DuckDB; return DuckDB's rows (ordered by `id`), text kinds as DuckDB's VARCHAR."""
    con = oracle_connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(spot.attach())
        exprs = ", ".join(f"CASE WHEN (i + {k}) % {_NULL_EVERY} = 0 THEN NULL ELSE CAST({e} AS {t}) END AS {n}"
                          for k, (n, t, e, _) in enumerate(COLUMNS))
        con.execute(f"CREATE TABLE lake.main.t AS SELECT i AS id, {exprs} FROM range({rows}) r(i)")
        cols = ", ".join(f"CAST({n} AS VARCHAR)" if kind == "text" else n for n, _, _, kind in COLUMNS)
        out = con.execute(f"SELECT id, {cols} FROM lake.main.t ORDER BY id").fetchall()
        con.execute("DETACH lake")
        return out
    finally:
        con.close()


def expected_value(kind: str, value: Any) -> Any:
    """DuckDB's Python value in the documented JSON encoding."""
    if value is None:
        return None
    if kind in ("int", "plain", "text"):
        return value
    if kind == "intstr":
        return str(value)
    if kind == "dec":
        return format(value, "f")
    if kind in ("f32", "f64"):
        return _special(value)
    if kind == "blob":
        return bytes(value).hex()
    if kind == "date":
        return value.isoformat()
    if kind == "ts":
        return value.isoformat(timespec="microseconds")
    if kind == "tstz":
        return value.astimezone(dt.UTC).isoformat(timespec="microseconds")
    if kind == "uuid":
        return str(value)
    if kind == "struct":
        return {"a": value["a"], "b": value["b"], "c": _special(value["c"]) if value["c"] is not None else None}
    if kind == "list":
        return list(value)
    if kind == "map":
        pairs = zip(value["key"], value["value"], strict=True) if set(value) == {"key", "value"} else value.items()
        return {str(k): v for k, v in pairs}
    raise AssertionError(kind)


def _special(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    return ("Infinity" if value > 0 else "-Infinity") if math.isinf(value) else value


def _f32(value: Any) -> Any:
    return struct.pack("f", value) if isinstance(value, float) else value


def same(kind: str, got: Any, want: Any) -> bool:
    """Equal under the column's rule (float32 compared as float32)."""
    if kind == "f32":
        return _f32(got) == _f32(want)
    return type(got) is type(want) and got == want if not isinstance(want, dict | list) else got == want


def check_rows(columns: list[str], got: list[list[Any]], duck: list[tuple[Any, ...]]) -> None:
    """Every row, every value equal to DuckDB's under the normalisation rules."""
    assert columns == ["id", *(n for n, *_ in COLUMNS)]
    assert len(got) == len(duck)
    got = sorted(got, key=lambda r: r[0])
    bad: list[str] = []
    for g, d in zip(got, duck, strict=True):
        assert g[0] == d[0]
        for (name, _, _, kind), gv, dv in zip(COLUMNS, g[1:], d[1:], strict=True):
            want = expected_value(kind, dv)
            if not same(kind, gv, want) and len(bad) < 10:
                bad.append(f"row {d[0]} {name}: got {gv!r}, DuckDB {want!r}")
    assert not bad, "\n".join(bad)


def parse_csv(text: str) -> list[list[tuple[str, bool]]]:
    """RFC 4180 records as (text, was_quoted) fields, so NULL (empty) and '' (quoted empty) stay apart."""
    records: list[list[tuple[str, bool]]] = []
    fields: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            j, buf = i + 1, []
            while True:
                k = text.index('"', j)
                buf.append(text[j:k])
                if k + 1 < n and text[k + 1] == '"':
                    buf.append('"')
                    j = k + 2
                    continue
                i = k + 1
                break
            fields.append(("".join(buf), True))
        else:
            j = i
            while j < n and text[j] not in ",\n":
                j += 1
            fields.append((text[i:j], False))
            i = j
        if i >= n or text[i] == "\n":
            records.append(fields)
            fields = []
        i += 1
    return records


def csv_value(kind: str, field: tuple[str, bool]) -> Any:
    """One CSV field back to the JSON-ready value of its column (documented: NULL is an unquoted empty field)."""
    text, quoted = field
    if text == "" and not quoted:
        return None
    if kind == "int":
        return int(text)
    if kind in ("f32", "f64"):
        return text if text in ("NaN", "Infinity", "-Infinity") else float(text)
    if kind == "plain" and text in ("true", "false"):
        return text == "true"
    if kind in ("struct", "list", "map"):
        return json.loads(text)
    return text


def check_csv(text: str, duck: list[tuple[Any, ...]]) -> None:
    """Parse our CSV and compare it with DuckDB's rows."""
    header, *records = parse_csv(text)
    kinds = ["int", *(k for *_, k in COLUMNS)]
    kinds[COLUMNS.index(next(c for c in COLUMNS if c[0] == "c_bool")) + 1] = "bool"
    rows = []
    for rec in records:
        assert len(rec) == len(kinds)
        rows.append([(None if f == ("", False) else f[0] == "true") if k == "bool" else csv_value(k, f)
                     for k, f in zip(kinds, rec, strict=True)])
    check_rows([h for h, _ in header], rows, duck)


def check_json_rows(objects: list[dict[str, Any]], duck: list[tuple[Any, ...]]) -> None:
    """Compare row objects (every key present, NULLs included) with DuckDB's rows."""
    columns = list(objects[0]) if objects else []
    check_rows(columns, [list(o.values()) for o in objects], duck)


def check_parquet(path: Path, spot: Spot, rows: int) -> None:
    """Our Parquet read by DuckDB, each column cast back to its DuckLake type, equals the lake's rows."""
    con = oracle_connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(spot.attach())
        casts = ", ".join(f"CAST({n} AS {t}) AS {n}" for n, t, _, _ in COLUMNS)
        # timestamp_ns: the reader's documented truncation to microseconds.
        lake = ", ".join(f"{n}::TIMESTAMP::TIMESTAMP_NS AS {n}" if t == "TIMESTAMP_NS" else n for n, t, _, _ in COLUMNS)
        mismatch = con.execute(
            f"SELECT count(*) FROM (SELECT id, {casts} FROM read_parquet('{path}')) p FULL JOIN "
            f"(SELECT id, {lake} FROM lake.main.t) d USING (id) WHERE p IS DISTINCT FROM d").fetchone()
        count = con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchone()
        con.execute("DETACH lake")
    finally:
        con.close()
    assert count == (rows,)
    assert mismatch == (0,)


@pytest.mark.parametrize("spot", ["sqlite"], indirect=True)
def test_every_type_every_row(spot: Spot, tmp_path: Path, spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """JSON to stdout from a user's process; the other encodings in this process (one JVM start, not five)."""
    rows = 20_000
    duck = build_table(spot, rows)
    sql = "SELECT * FROM t"
    code, out, err = run_bytes("query", spot.catalog, sql, "--format", "json")
    assert code == 0, err
    check_json_rows(json.loads(out), duck)
    code, out, err = run_main(capsys, "query", spot.catalog, sql, "--format", "csv")
    assert code == 0, err
    check_csv(out, duck)
    for ext in ("json", "csv", "parquet"):
        path = tmp_path / f"out.{ext}"
        code, out, err = run_main(capsys, "query", spot.catalog, sql, "--output", str(path))
        assert code == 0, err
        if ext == "json":
            check_json_rows([json.loads(line) for line in path.read_bytes().decode().split("\n") if line], duck)
        elif ext == "csv":
            check_csv(path.read_bytes().decode(), duck)
        else:
            check_parquet(path, spot, rows)


@pytest.mark.parametrize("spot", ["duckdb", "postgres"], indirect=True)
def test_every_type_small_other_catalogs(spot: Spot, spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    duck = build_table(spot, 600)
    code, out, err = run_main(capsys, "query", spot.catalog, "SELECT * FROM t", "--format", "json")
    assert code == 0, err
    check_json_rows(json.loads(out), duck)
    if spot.backend != "duckdb":
        return
    # The terminal table: the first rows of an ORDER BY, nested values as JSON, NULL marked, the cap on stderr.
    code, out, err = run_main(capsys, "query", spot.catalog, "SELECT id, c_struct, c_tinyint FROM t ORDER BY id DESC")
    assert code == 0, err
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if line.count("│") == 4]
    assert [c[0] for c in cells[:2]] == ["599", "598"] and len(cells) == 500
    assert cells[0][1].replace(" ", "") == '{"a":599,"b":"b,\\"599","c":149.75}' and "Row(" not in out
    assert [c[2] for c in cells if c[0] == "575"] == ["NULL"]  # c_tinyint is NULL where i % 23 == 0
    assert "showing first 500 of 600 rows" in " ".join(err.split())
