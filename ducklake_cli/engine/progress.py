"""A one-line Rich progress display of running Spark stages and tasks, on stderr when it is a terminal."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

POLL_SECONDS = 0.3


def _line(context: SparkContext) -> str | None:
    tracker = context.statusTracker()
    stages = [info for sid in tracker.getActiveStageIds() if (info := tracker.getStageInfo(sid)) is not None]
    if not stages:
        return None
    done = sum(int(s.numCompletedTasks) for s in stages)
    total = sum(int(s.numTasks) for s in stages)
    running = sum(int(s.numActiveTasks) for s in stages)
    names = ", ".join(str(s.stageId) for s in stages[:3])
    return f"Spark stage {names}: {done}/{total} tasks done, {running} running"


def _active_context() -> SparkContext | None:
    """The local JVM's SparkContext, once one runs (never imports pyspark itself)."""
    core = sys.modules.get("pyspark.core.context") or sys.modules.get("pyspark.context")
    context = getattr(getattr(core, "SparkContext", None), "_active_spark_context", None)
    return context if getattr(context, "_jsc", None) is not None else None


@contextmanager
def spark_progress(spark: SparkSession | None = None) -> Iterator[None]:
    """Show live stage/task progress while the block runs (only for a local or cluster JVM on a terminal).

    Without `spark`, the display waits for whichever local SparkContext the block starts (`write` starts Spark
    only after checking its input), and shows nothing for Spark Connect."""
    if not sys.stderr.isatty() or (spark is not None and getattr(spark, "_jsc", None) is None):
        yield
        return
    from rich.console import Console

    stop = threading.Event()
    console = Console(stderr=True)
    status = console.status("starting Spark job…")
    if spark is not None:
        status.start()

    def poll() -> None:
        shown = spark is not None
        while not stop.wait(POLL_SECONDS):
            try:
                context = spark.sparkContext if spark is not None else _active_context()
                text = _line(context) if context is not None else None
            except Exception:  # the tracker can race with job completion; the display is best effort
                continue
            if text:
                if not shown:
                    status.start()
                    shown = True
                status.update(text)

    thread = threading.Thread(target=poll, name="ducklake-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)
        status.stop()
