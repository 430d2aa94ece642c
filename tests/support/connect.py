"""One Spark Connect server for the test session, started and stopped with `ducklake spark start|stop`."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.cluster import _free_port
from tests.support.s3a import s3a_jars


@dataclass(frozen=True)
class ConnectServer:
    """A running server: its URL, the state dir `ducklake spark` records it in, and its log."""

    url: str
    env: dict[str, str]  # XDG_STATE_HOME for `ducklake spark status|stop`
    log: Path


@contextlib.contextmanager
def connect_server(workdir: Path) -> Iterator[ConnectServer]:
    """`ducklake spark start` on a free loopback port, with the s3a jars on its classpath; stopped after."""
    env = {"XDG_STATE_HOME": str(workdir / "state")}
    jars = ",".join(str(j) for j in s3a_jars())
    res = run_cli("spark", "start", "--port", str(_free_port()), "--master", "local[2]", "--conf", f"spark.jars={jars}",
                  "--conf", "spark.driver.memory=1g", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    status = json.loads(res.stdout)
    try:
        yield ConnectServer(status["url"], env, Path(status["log"]))
    finally:
        stopped = run_cli("spark", "stop", env=env)
        assert stopped.returncode == 0, stopped.stderr
        if status["warm_pid"] is not None:  # the warm ducklake process goes with the server
            deadline = time.monotonic() + 10
            while Path(f"/proc/{status['warm_pid']}").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not Path(f"/proc/{status['warm_pid']}").exists()
