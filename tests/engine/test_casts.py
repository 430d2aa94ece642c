"""`engine.casts` (the fallback reader's conversions of values written before a type change) against DuckDB 1.5.5's
own casts, over many values: decimals to FLOAT/DOUBLE (including the unscaled values too large to convert exactly),
DOUBLE and finer decimals to a DECIMAL (rounding), and every type DuckDB turns into JSON text. No Spark."""

from __future__ import annotations

import random
from decimal import Context, Decimal

import duckdb
import pyarrow as pa
import pytest

from ducklake_cli.engine import casts


def _duck(con: duckdb.DuckDBPyConnection, sql: str) -> list[object]:
    return [r[0] for r in con.execute(sql).fetchall()]


@pytest.mark.parametrize(("precision", "scale"), [(4, 1), (9, 2), (18, 3), (18, 17), (20, 2), (38, 2), (38, 20)])
def test_decimal_to_floating_matches_duckdb(precision: int, scale: int) -> None:
    rng = random.Random(precision * 100 + scale)
    top = 10**precision - 1
    unscaled = [0, 1, -1, top, -top, 2**24 + 1, 2**53 + 1, -(2**53) - 3, 10**scale - 1]
    unscaled += [rng.randint(-top, top) for _ in range(300)]
    unscaled += [rng.randint(-(2**60), 2**60) for _ in range(100) if top >= 2**60]
    values = [Decimal(u).scaleb(-scale, context=Context(prec=50)) for u in unscaled if abs(u) <= top]
    con = duckdb.connect()
    arr = pa.array([*values, None], pa.decimal128(precision, scale))
    con.register("v", pa.table({"x": arr}))
    for duck_type, arrow_type in (("DOUBLE", pa.float64()), ("FLOAT", pa.float32())):
        want = _duck(con, f"SELECT CAST(x AS {duck_type}) FROM v")
        assert casts.to_floating(arr, arrow_type).to_pylist() == want, duck_type


def test_to_decimal_rounds_like_duckdb() -> None:
    rng = random.Random(7)
    doubles = [0.125, 0.375, 1.005, -2.5, 2.5, 1e20, 12345678901234567890123.0, -1.7e30, 0.0]
    doubles += [rng.uniform(-1, 1) * 10 ** rng.randint(-3, 30) for _ in range(300)]
    con = duckdb.connect()
    for target in ((38, 2), (38, 0), (38, 10)):
        fits = [d for d in doubles if abs(d) < 10 ** (target[0] - target[1]) / 2]
        want = [r[0] for r in con.execute(f"SELECT CAST(x AS DECIMAL({target[0]},{target[1]})) FROM "
                                          "unnest(?::DOUBLE[]) WITH ORDINALITY u(x, o) ORDER BY o", [fits]).fetchall()]
        got = casts.to_decimal(pa.array(fits, pa.float64()), pa.decimal128(*target)).to_pylist()
        assert got == want, target
    finer = [Decimal("0.005"), Decimal("-0.015"), Decimal("0.025"), Decimal("123456789012345.678"), None]
    got = casts.to_decimal(pa.array(finer, pa.decimal128(18, 3)), pa.decimal128(38, 2)).to_pylist()
    want = [r[0] for r in con.execute("SELECT CAST(x::DECIMAL(18,3) AS DECIMAL(38,2)) FROM unnest(?::VARCHAR[]) "
                                      "WITH ORDINALITY u(x, o) ORDER BY o",
                                      [[None if d is None else str(d) for d in finer]]).fetchall()]
    assert got == want
    with pytest.raises(ValueError, match="does not fit"):
        casts.to_decimal(pa.array([1e40], pa.float64()), pa.decimal128(38, 2))


JSON_VALUES = {
    "BOOLEAN": "[true, false, NULL]",
    "BIGINT": "[-9223372036854775808, 0, 9223372036854775807]",
    "UBIGINT": "[18446744073709551615]",
    "FLOAT": "[1.1, -3.4e38, 'nan', '-inf', 16777217, -0.0, 1e-7, 1e20]",
    "DOUBLE": "[1.1, 1e300, 'nan', 'inf', -0.0, 1e21, 1e-6, 5e-324, 123456789.125, 12345678901234567890.0]",
    "DECIMAL(4,1)": "[-999.9, 0, 12.5]", "DECIMAL(9,2)": "[1.50, 100, -9999999.99, 0.01]",
    "DECIMAL(18,3)": "[123456789012345.678, 0.100, -0.005]", "DECIMAL(38,2)": "[0.10, 100, -1234567890123456789012.5]",
    "BLOB": "['\\xAA\\x00'::BLOB, 'a\"b''c\\x5C\\x7F '::BLOB, ''::BLOB]",
    "DATE": "[DATE '2020-02-29', DATE '0099-01-01', DATE '1900-03-04']",
    "TIMESTAMP": "[TIMESTAMP '2020-01-01 10:00:00.123456', TIMESTAMP '1960-01-01 00:00:00.12', "
                 "TIMESTAMP '1969-12-31 23:59:59.999999']",
    "TIMESTAMP_MS": "[TIMESTAMP_MS '1969-12-31 23:59:59.001']", "TIMESTAMP_S": "[TIMESTAMP_S '2020-01-01 10:00:01']",
    "TIMESTAMP_NS": "[TIMESTAMP_NS '2020-01-01 10:00:01.123456789', TIMESTAMP_NS '1969-12-31 23:59:59.999999999']",
    "TIMESTAMPTZ": "[TIMESTAMPTZ '2020-01-01 10:00:00.5+00']",
    "VARCHAR": "['{\"a\": 1}', ' [1, 2] ', '\"x\"']",
}


@pytest.mark.parametrize("duck_type", sorted(JSON_VALUES))
def test_json_text_matches_duckdb(duck_type: str) -> None:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    source = f"SELECT x::{duck_type} AS x, o FROM unnest({JSON_VALUES[duck_type]}) WITH ORDINALITY u(x, o)"
    rows = con.execute(f"SELECT x, CAST(x AS JSON)::VARCHAR FROM ({source}) ORDER BY o").arrow()
    if isinstance(rows, pa.RecordBatchReader):
        rows = rows.read_all()
    values, want = rows.column(0).combine_chunks(), rows.column(1).to_pylist()
    assert casts.json_text(values).to_pylist() == want
