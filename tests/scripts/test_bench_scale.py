"""``scripts/bench_scale.py``'s pure helpers (growth exponent, ratios, targets, report lines) and its process
measurement on tiny commands; the lakes and the real commands run only in the bench."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    """The module imported by its path, as bench.py loads it."""
    spec = importlib.util.spec_from_file_location("bench_scale", REPO / "scripts" / "bench_scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_growth_exponent(scale: ModuleType) -> None:
    assert scale.growth((10_000, 1.0), (1_000_000, 100.0)) == pytest.approx(1.0)
    assert scale.growth((10_000, 2.0), (1_000_000, 2.0)) == pytest.approx(0.0)
    assert scale.growth((10_000, 1.0), (1_000_000, 10.0)) == pytest.approx(0.5)
    assert scale.growth((10_000, None), (1_000_000, 10.0)) is None
    assert scale.growth((10_000, 0.0), (1_000_000, 10.0)) is None


def test_ratio_formatting(scale: ModuleType) -> None:
    assert scale.ratio(3.0, 1.5) == 2.0
    assert scale.ratio(3.0, None) is None and scale.ratio(3.0, 0.0) is None
    assert scale.fmt_ratio(2.0) == "2.00×"
    assert scale.fmt_ratio(0.0123) == "0.012×"
    assert scale.fmt_ratio(None) == "–"
    assert scale.fmt_s(0.01234) == "0.012" and scale.fmt_s(12.345) == "12.35" and scale.fmt_s(None) == "–"


def test_cache_key_names_parameters_and_version(scale: ModuleType) -> None:
    assert scale.lake_key(1_000_000, 100_000) == f"files1000000-snapshots100000-distinct-v{scale.BUILD_VERSION}"


def test_time_v_report_parsed(scale: ModuleType) -> None:
    text = ("\tUser time (seconds): 10.50\n\tSystem time (seconds): 1.50\n"
            "\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03\n"
            "\tMaximum resident set size (kbytes): 2097152\n\tExit status: 0\n")
    got = scale._time_v(text)
    assert got == {"rc": 0, "wall_s": 3723.0, "cpu_s": 12.0, "rss_mb": 2048.0}


def _entry(ours: float, duck: float | None, rss: float = 100.0) -> dict[str, Any]:
    out: dict[str, Any] = {"ours": {"cpu_s": ours, "wall_s": ours, "rss_mb": rss}}
    if duck is not None:
        out["duckdb"] = {"cpu_s": duck, "wall_s": duck, "rss_mb": 100.0, "statement_s": duck / 2,
                         "statement_cpu_s": duck / 2}
    return out


def test_targets_and_report_at_the_largest_size(scale: ModuleType) -> None:
    sizes = {"10000": _entry(1.0, 1.0), "1000000": _entry(4.0, 1.0, rss=120.0)}
    result: dict[str, Any] = {
        "meta": {"date": "d", "git": "g", "reps": 1, "loadavg_start": [1.0], "loadavg_end": [1.0], "cache": "/c"},
        "lakes": {"10000": {"data_files": 10001, "snapshots": 1003, "disk_mb": 40.0,
                            "build": {"wall_s": 7.0, "cpu_s": 6.0, "rss_mb": 400.0}}},
        "commands": {c.key: {"title": c.title, "target": c.target,
                             "sizes": {n: e if c.duckdb else {"ours": e["ours"]} for n, e in sizes.items()}}
                     for c in scale.COMMANDS},
        "planning": {"10000": {"keep1": {"plan_cpu_s": 0.1, "plan_s": 0.1, "files_kept": 1},
                               "keepall": {"plan_register_cpu_s": 1.0, "plan_register_s": 1.0, "rss_mb": 200.0}},
                     "1000000": {"keep1": {"plan_cpu_s": 1.0, "plan_s": 1.0, "files_kept": 1},
                                 "keepall": {"plan_register_cpu_s": 40.0, "plan_register_s": 50.0,
                                             "rss_mb": 1024.0}}},
    }
    result["commands"]["explain_keep1"]["sizes"]["1000000"]["duckdb"]["statement_cpu_s"] = 0.5
    got = {t["name"]: t for t in scale.targets(result)}
    keep1 = got["scale: catalog planning of a query keeping 1 file (CPU, no JVM) at 1,000,000 files"]
    assert keep1["value"] == 1.0 and keep1["met"]
    assert got["scale: catalog planning keeping 1 file / DuckDB EXPLAIN statement (CPU) at 1,000,000 files"][
        "value"] == 2.0
    keepall = got["scale: catalog planning + view registration keeping all files (CPU, Python + JVM) at 1,000,000 "
                  "files"]
    assert keepall["value"] == 40.0 and not keepall["met"] and keepall["missed_by"] == "33% over"
    inspect = got["scale: `inspect TABLE` / DuckDB `ducklake_table_info` (CPU) at 1,000,000 files"]
    assert inspect["value"] == 4.0 and not inspect["met"]
    flat = got["scale: `--files --format json` peak RSS flat: RSS / RSS at 10,000 files at 1,000,000 files"]
    assert flat["value"] == pytest.approx(1.2) and flat["met"]
    assert got["scale: `verify` (CPU) at 1,000,000 files"]["met"]
    text = "\n".join(scale.render(result))
    assert f"Growth k of CPU, 10,000 → 1,000,000: ours {math.log(4) / math.log(100):.2f}, duckdb 0.00." in text
    assert "| 1,000,000 | 4.00 | 4.00 | 120 | 1.00 | 1.00 | 100 | 0.50 | 4.00× |" in text
    assert "✗" in text and "✓" in text


def test_measure_counts_the_child_and_kills_on_timeout(scale: ModuleType, tmp_path: Path) -> None:
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\nprint('done')"
    got = scale.measure([sys.executable, "-c", burn], stdout=tmp_path / "o", stderr=tmp_path / "e", timeout_s=60)
    assert "error" not in got and got["cpu_s"] >= 0.3 and got["wall_s"] >= 0.3 and got["rss_mb"] > 1
    assert (tmp_path / "o").read_text() == "done\n"
    failed = scale.measure([sys.executable, "-c", "raise SystemExit('no')"], stdout=tmp_path / "o",
                           stderr=tmp_path / "e", timeout_s=60)
    assert failed["error"] == "exit 1: no"
    slow = scale.measure([sys.executable, "-c", "import time; time.sleep(30)"], stdout=tmp_path / "o",
                         stderr=tmp_path / "e", timeout_s=0.5)
    assert slow["error"] == "timeout after 0.5 s"
