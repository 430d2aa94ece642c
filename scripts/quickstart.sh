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

demo=demo
rm -rf "$demo" && mkdir -p "$demo"
.venv/bin/ducklake create-catalog "$demo/lake.sqlite" --data-path "$demo/data"
# Until `ducklake write` lands, DuckDB's own ducklake extension (installed offline from PyPI wheels) loads
# sample rows, which also shows the two tools sharing one lake.
.venv/bin/python scripts/demo_data.py "$demo/lake.sqlite"
.venv/bin/ducklake inspect "$demo/lake.sqlite"
.venv/bin/ducklake inspect "$demo/lake.sqlite" main.trips
# A real query on Spark (embedded local[*]; the first one pays ~10 s of JVM start).
.venv/bin/ducklake query "$demo/lake.sqlite" \
  "SELECT city, count(*) AS trips, round(avg(fare), 2) AS avg_fare FROM trips GROUP BY city ORDER BY city"
