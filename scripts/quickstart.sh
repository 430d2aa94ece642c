#!/usr/bin/env bash
# The README's first command: set up .venv, create an embedded local SQLite lake, look at it and query it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install --quiet --upgrade pip 2>/dev/null
.venv/bin/pip install --quiet -e '.[dev]' 2>/dev/null || .venv/bin/pip install -e '.[dev]'
# Bytecode for the editable package, written now in case PYTHONDONTWRITEBYTECODE is set: ~0.1 s off every command.
.venv/bin/python -m compileall -q ducklake_cli >/dev/null
# The Spark driver's class-data sharing archive (~/.cache/ducklake/cds): every later Spark command starts seconds
# sooner. Never fatal: without it commands only start slower.
.venv/bin/python -m ducklake_cli.engine.cds_build || true

demo=demo
rm -rf "$demo" && mkdir -p "$demo"
.venv/bin/ducklake create-catalog "$demo/lake.sqlite" --data-path "$demo/data"
# Sample rows (Parquet files) loaded with `ducklake write` on Spark (embedded local[*]; each command pays ~10 s of
# JVM start): one snapshot of 9,900 rows, then one row small enough to be inlined in the catalog.
.venv/bin/python scripts/demo_data.py "$demo/input"
.venv/bin/ducklake write "$demo/lake.sqlite" trips --from "$demo/input/trips.parquet" --mode create -m "demo trips"
.venv/bin/ducklake write "$demo/lake.sqlite" trips --from "$demo/input/late.parquet" -m "one late trip"
.venv/bin/ducklake inspect "$demo/lake.sqlite"
.venv/bin/ducklake inspect "$demo/lake.sqlite" main.trips
# A real query on Spark.
.venv/bin/ducklake query "$demo/lake.sqlite" \
  "SELECT city, count(*) AS trips, round(avg(fare), 2) AS avg_fare FROM trips GROUP BY city ORDER BY city"
