"""Metadata-only commands never load Spark (STYLE §4)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.built_lakes import BuiltLakes

PROBE = """
import sys
from ducklake_cli.cli.app import main
try:
    main({args!r})
except SystemExit:
    pass
print("PYSPARK_LOADED" if any(m == "pyspark" or m.startswith("pyspark.") for m in sys.modules) else "NO_PYSPARK")
"""


def _probe(args: list[str]) -> str:
    res = subprocess.run([sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, check=False)
    return res.stdout.strip().splitlines()[-1]


def test_help_does_not_import_pyspark() -> None:
    assert _probe(["--help"]) == "NO_PYSPARK"


def test_inspect_does_not_import_pyspark(built_lakes: BuiltLakes) -> None:
    cat = built_lakes.get("sqlite", "catalog_example")[0].catalog  # read only
    for args in ([str(cat)], [str(cat), "t"], [str(cat), "--snapshots"], [str(cat), "--files"]):
        assert _probe(["inspect", *args]) == "NO_PYSPARK", args
