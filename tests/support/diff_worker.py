"""Runs the query differential (`compare_lake`) in its own process, on a Spark master or Connect server.

A process can hold one kind of Spark session only (pyspark switches itself to Connect mode globally), so reads
through a cluster or Spark Connect run here, while the test session keeps its embedded `spark` fixture.
Input: a JSON spec `{"master" | "remote": url, "cases": [{backend, catalog, oracle_target, data_path, scenario,
snapshots}]}` as the only argument; output: one JSON object `{scenario: failure text}` on the last stdout line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    """Compare every case; report failures by scenario."""
    from ducklake_cli.engine.session import SparkSettings, build_session
    from tests.support.diff import compare_lake
    from tests.support.spot import Spot

    spec = json.loads(argv[0])
    spark = build_session(SparkSettings(master=spec.get("master"), remote=spec.get("remote")))
    failures: dict[str, str] = {}
    for case in spec["cases"]:
        spot = Spot(case["backend"], case["catalog"], case["oracle_target"], Path(case["data_path"]))
        try:
            compare_lake(spot, spark, case["scenario"], case["snapshots"])
        except BaseException as exc:  # pytest.fail raises an OutcomeException (a BaseException)
            failures[case["scenario"]] = str(exc)
    spark.stop()
    sys.stdout.write("\n" + json.dumps(failures) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
