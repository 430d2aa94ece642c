"""PostgreSQL inlined-data tables: ours have DuckDB 1.5.5's column types, DuckDB reads the values we inline exactly
(interval, uuid, time, timetz, decimals that a bare NUMERIC would turn into DOUBLE), and we read DuckDB's."""

from __future__ import annotations

from typing import Any

import pytest

from ducklake_cli.catalog.inlined import decode_inlined, encode_inlined
from ducklake_cli.catalog.models import TableInfo
from ducklake_cli.catalog.writes import TableWrite, create_table
from ducklake_cli.engine.parquet_files import data_stats
from ducklake_cli.engine.writer import leaves
from ducklake_cli.lake import Lake
from tests.support.oracle import oracle_connect, postgres_dsn, sql_str

pytestmark = pytest.mark.postgres

COLUMNS = ("k INTEGER, i INTERVAL, u UUID, t TIME, tz TIMETZ, d38 DECIMAL(38,10), d4 DECIMAL(4,1), "
           "d18 DECIMAL(18,3), li INTERVAL[], s STRUCT(x INTEGER, d DECIMAL(38,10)), v VARCHAR, b BLOB, dt DATE, "
           "ts TIMESTAMPTZ, big UBIGINT, h HUGEINT, f DOUBLE")
ROWS = """
 (1, INTERVAL '1 year 2 months 3 days 04:05:06.789012', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '04:05:06.789012',
  '04:05:06.789012+02:30', 1234567890123456789012345678.0123456789, -999.9, 123456789012345.678,
  [INTERVAL '1 microsecond', NULL], {'x': 7, 'd': -0.0000000001},
  'é''x', '\\x00\\xFF'::BLOB, '2024-02-29', '2024-01-01 00:00:00.000001+00', 18446744073709551615,
  -17014118346046923173168730371588410572, 0.1),
 (2, -INTERVAL '1 year 2 months 3 days 04:05:06.789012', '00000000-0000-0000-0000-000000000000', '24:00:00',
  '00:00:00-15:59', -1234567890123456789012345678.0123456789, 0.1, -0.001, [], NULL, '', ''::BLOB,
  '0001-01-01', '1970-01-01 00:00:00+00', 0, 0, 'inf'),
 (3, INTERVAL '2562047 hours 54.775807 seconds', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '00:00:00',
  '23:59:59.999999+15:59', 0, 999.9, 0, NULL, {'x': NULL, 'd': NULL}, NULL, NULL, NULL, NULL, NULL, NULL, -0.0),
 (4, to_months(-7) + to_days(40) + INTERVAL '-100 hours 1 microsecond', NULL, NULL, '12:00:00+00', NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
"""


def _attach(url: str, data: str) -> str:
    return (f"ATTACH {sql_str('ducklake:postgres:' + postgres_dsn(url))} AS lake "
            f"(DATA_PATH {sql_str(data)}, DATA_INLINING_ROW_LIMIT 10)")


def _column_types(url: str) -> dict[str, list[tuple[str, str]]]:
    """{table: [(column, PostgreSQL type, with precision and scale for numeric)]} of its inlined-data tables."""
    import psycopg

    with psycopg.connect(url) as pg:
        rows = pg.execute("""
            SELECT t.table_name, c.column_name, c.data_type || CASE WHEN c.data_type = 'numeric'
                   THEN '(' || c.numeric_precision || ',' || c.numeric_scale || ')' ELSE '' END
            FROM ducklake_inlined_data_tables i JOIN ducklake_table t USING (table_id)
            JOIN information_schema.columns c ON c.table_name = i.table_name AND c.table_schema = current_schema()
            WHERE t.end_snapshot IS NULL ORDER BY t.table_name, c.ordinal_position""").fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, ty in rows:
        out.setdefault(table, []).append((column, ty))
    return out


def test_duckdb_reads_our_postgres_inlined_values_exactly(pg_url: str, tmp_path: Any) -> None:
    """DuckDB inlines rows in `theirs`; we inline the same values in `ours` through the catalog layer."""
    data = str(tmp_path / "data") + "/"
    con = oracle_connect()
    con.execute(_attach(pg_url, data))
    con.execute(f"CREATE TABLE lake.theirs({COLUMNS})")
    con.execute(f"INSERT INTO lake.theirs VALUES {ROWS}")
    source = con.execute("SELECT * EXCLUDE (k) FROM lake.theirs ORDER BY k").to_arrow_table()
    con.execute("DETACH lake")

    with Lake.open(pg_url, data_path=data) as lake:
        def build(tx: Any) -> None:
            theirs: TableInfo = tx.reader.find_table(tx.reader.latest_snapshot().snapshot_id, "theirs")
            schema = next(s for s in tx.reader.schemas(tx.reader.latest_snapshot().snapshot_id)
                          if s.schema_id == theirs.schema_id)
            columns = [c for c in theirs.columns if c.name != "k"]
            ours = create_table(tx, schema, "ours", columns, [], inline=True)
            tw = TableWrite(tx, ours)
            tw.add_inlined(encode_inlined(source, ours.columns), data_stats(source, leaves(ours.columns)))
            tw.finish()

        lake.commit(build)
        with lake.reader() as r:
            sid = r.latest_snapshot().snapshot_id
            decoded = {}
            for name in ("theirs", "ours"):
                t = r.find_table(sid, name)
                kept = [c for c in t.columns if c.name != "k"]
                rows = r.inlined_rows(sid, t.inlined_tables[-1], kept)
                decoded[name] = decode_inlined(rows, kept).drop_columns(["row_id"]).rename_columns(
                    source.column_names)

    # Same PostgreSQL column types as DuckDB's own inlined table (k aside).
    types = _column_types(pg_url)
    assert types["ours"] == [c for c in types["theirs"] if c[0] != "k"]
    assert dict(types["ours"])["d38"] == "numeric(38,10)" and dict(types["ours"])["i"] == "interval"

    # DuckDB reads our rows as the values we were given (as text: a DOUBLE would not render like the decimal).
    # The input comes through Arrow, which has no TIMETZ: its offsets are lost there, before our code.
    con.execute(_attach(pg_url, data).replace("DATA_INLINING_ROW_LIMIT 10", "READ_ONLY"))
    cols = ", ".join(f"{n}::VARCHAR" for n in source.column_names)
    con.register("source", source)
    types_of = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE lake.theirs)").fetchall())
    typed = ", ".join(f"CAST({n} AS {types_of[n]})::VARCHAR" for n in source.column_names)
    given = con.execute(f"SELECT {typed} FROM source").fetchall()
    assert con.execute(f"SELECT {cols} FROM lake.ours ORDER BY rowid").fetchall() == given
    assert con.execute("SELECT typeof(d38) FROM lake.ours LIMIT 1").fetchone() == ("DECIMAL(38,10)",)
    theirs_rows = con.execute(f"SELECT {cols} FROM lake.theirs ORDER BY k").fetchall()
    assert [r[:3] + r[4:] for r in theirs_rows] == [r[:3] + r[4:] for r in given]
    assert theirs_rows[0][:5] == ("1 year 2 months 3 days 04:05:06.789012", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
                                  "04:05:06.789012", "04:05:06.789012+02:30", "1234567890123456789012345678.0123456789")

    # Our reader decodes DuckDB's rows (TIMETZ offsets included: as text, Spark's form) and ours as DuckDB does.
    for name, expected in (("theirs", theirs_rows), ("ours", given)):
        con.register(f"dec_{name}", decoded[name])
        assert con.execute(f"SELECT {typed} FROM dec_{name}").fetchall() == expected, name
    con.close()
