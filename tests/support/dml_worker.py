"""Runs change statements, appends and reads in order in their own process, on one Spark session (the test
session holds an embedded session, and one process can hold one Spark deployment only): one JVM for every step,
instead of one per CLI process.

Input: a JSON spec `{"catalog": url, "master": "local[1]", "conf": {...}, "steps": [...]}` as the only argument,
each step one of `{"change": sql, "message": m}`, `{"append": table, "source": path, "message": m}` or
`{"read": sql}`; output: one result per step (a change's or write's `to_json()`, a read's rows as lists), as one
JSON list on the last stdout line.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main(argv: list[str]) -> int:
    """Run every step in order; each change and append commits its own snapshot."""
    from ducklake_cli.api import connect
    from ducklake_cli.engine.session import SparkSettings
    from ducklake_cli.ops.dml import run_change
    from ducklake_cli.ops.query import sql_dataframe
    from ducklake_cli.ops.write import run_write

    spec = json.loads(argv[0])
    results: list[Any] = []
    settings = SparkSettings(master=spec.get("master", "local[1]"), conf=spec.get("conf", {}))
    with connect(spec["catalog"], spark_settings=settings) as lake:
        for step in spec["steps"]:
            if "change" in step:
                results.append(run_change(lake, [step["change"]], message=step.get("message")).to_json())
            elif "append" in step:
                results.append(run_write(lake, step["append"], source=[step["source"]], mode="append",
                                         message=step.get("message")).to_json())
            else:
                results.append([list(r) for r in sql_dataframe(lake, step["read"]).collect()])
        lake.spark().stop()
    sys.stdout.write("\n" + json.dumps(results, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
