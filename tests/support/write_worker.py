"""Runs `run_write` steps in their own process on a Spark master (the test session holds an embedded session, and
one process can hold one Spark deployment only), all on one cluster application: one driver JVM and one executor
start for every step, instead of one per CLI process.

Input: a JSON spec `{"master": url, "catalog": path, "steps": [{"table", "source", "kwargs"}]}` as the only argument;
output: the `WriteResult.to_json()` of every step, as one JSON list on the last stdout line.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    """Write every step in order, each committing its own snapshot."""
    from ducklake_cli.api import connect
    from ducklake_cli.engine.session import SparkSettings
    from ducklake_cli.ops.write import run_write

    spec = json.loads(argv[0])
    results = []
    with connect(spec["catalog"], spark_settings=SparkSettings(master=spec["master"], conf=spec.get("conf", {}))) \
            as lake:
        for step in spec["steps"]:
            results.append(run_write(lake, step["table"], source=[step["source"]], **step["kwargs"]).to_json())
        lake.spark().stop()
    sys.stdout.write("\n" + json.dumps(results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
