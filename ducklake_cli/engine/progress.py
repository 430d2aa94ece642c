"""A one-line Rich progress display of running Spark stages and tasks, on stderr when it is a terminal."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

POLL_SECONDS = 0.3


def _line(spark: SparkSession) -> str | None:
    tracker = spark.sparkContext.statusTracker()
    stages = [info for sid in tracker.getActiveStageIds() if (info := tracker.getStageInfo(sid)) is not None]
    if not stages:
        return None
    done = sum(int(s.numCompletedTasks) for s in stages)
    total = sum(int(s.numTasks) for s in stages)
    running = sum(int(s.numActiveTasks) for s in stages)
    names = ", ".join(str(s.stageId) for s in stages[:3])
    return f"Spark stage {names}: {done}/{total} tasks done, {running} running"


@contextmanager
def spark_progress(spark: SparkSession) -> Iterator[None]:
    """Show live stage/task progress while the block runs (only for a local or cluster JVM on a terminal)."""
    if not sys.stderr.isatty() or getattr(spark, "_jsc", None) is None:
        yield
        return
    from rich.console import Console

    stop = threading.Event()
    console = Console(stderr=True)
    with console.status("starting Spark job…") as status:
        def poll() -> None:
            while not stop.wait(POLL_SECONDS):
                try:
                    text = _line(spark)
                except Exception:  # the tracker can race with job completion; the display is best effort
                    continue
                if text:
                    status.update(text)

        thread = threading.Thread(target=poll, name="ducklake-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=2)
