"""A real Spark standalone master + worker on loopback, from the pyspark wheel (ENVIRONMENT.md recipe)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Spark process exited early; log tail:\n{log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.5)
    raise RuntimeError(f"Spark did not listen on {port} within {timeout:.0f} s; log tail:\n{log.read_text()[-2000:]}")


@contextlib.contextmanager
def standalone_cluster(workdir: Path) -> Iterator[str]:
    """Start a master and one 2-core worker; yield the master URL; stop both."""
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable, "SPARK_HOME": str(spark_home)}
    port, ui, wui = _free_port(), _free_port(), _free_port()
    url = f"spark://127.0.0.1:{port}"
    cls = str(spark_home / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        mlog = workdir / "master.log"
        master = subprocess.Popen(
            [cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(ui)], env=env, stdout=mlog.open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        procs.append(master)
        _wait_for(port, master, mlog)
        wlog = workdir / "worker.log"
        worker = subprocess.Popen(
            [cls, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
             "--memory", "2g", "--webui-port", str(wui), "--work-dir", str(workdir / "work")],
            env=env, stdout=wlog.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
        )
        procs.append(worker)
        deadline = time.monotonic() + 120
        while "Successfully registered with master" not in wlog.read_text(errors="replace"):
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker did not register; log tail:\n{wlog.read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
