"""`ducklake spark start|stop|status`: one persistent local Spark Connect server, recorded in a state file.

The server is the pyspark wheel's own `SparkConnectServer`, launched with `spark-submit` in its own session
(detached from the terminal); its pid, port, start time and log path go to `<state dir>/connect-server.json`.
Next to it runs the warm ducklake process (`cli/warm.py`, Linux): `ducklake` commands run in forks of it, with
their imports already done.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ducklake_cli.errors import SparkServerError
from ducklake_cli.ops.results import Section

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
WARM_MODULE = "ducklake_cli.cli.warm"
STATE_FILE = "connect-server.json"
DEFAULT_PORT = 15002


@dataclass(frozen=True)
class ServerStatus:
    """A recorded Spark Connect server and whether it is up."""

    running: bool
    url: str | None = None
    pid: int | None = None
    port: int | None = None
    master: str | None = None
    started_at: dt.datetime | None = None
    uptime_seconds: float | None = None
    log: str | None = None
    note: str | None = None
    warm_pid: int | None = None  # the warm ducklake process, while it accepts commands

    def to_json(self) -> Any:
        """`{running, url, pid, port, master, started_at, uptime_seconds, log, warm_pid}`."""
        return {"running": self.running, "url": self.url, "pid": self.pid, "port": self.port, "master": self.master,
                "started_at": self.started_at.isoformat() if self.started_at else None,
                "uptime_seconds": round(self.uptime_seconds, 1) if self.uptime_seconds is not None else None,
                "log": self.log, "warm_pid": self.warm_pid}

    def sections(self) -> list[Section]:
        """The server, as property/value lines for people and as one CSV row."""
        uptime = _human(self.uptime_seconds) if self.uptime_seconds is not None else None
        pid = str(self.pid) if self.pid is not None else None
        warm = str(self.warm_pid) if self.warm_pid is not None else None
        columns = ("state", "url", "pid", "master", "uptime", "log", "warm_pid")
        row = ("running" if self.running else "stopped", self.url, pid, self.master, uptime, self.log, warm)
        return [Section("Spark Connect server", ("property", "value"), tuple(zip(columns, row, strict=True)),
                        csv=False),
                Section("Spark Connect server", columns, (row,), table=False)]


def _human(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def spark_home() -> Path:
    """The pyspark wheel's directory (its `bin/spark-submit` starts the server), found without importing it."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise SparkServerError("pyspark is not installed", hint="pip install 'pyspark[connect]'")
    return Path(spec.origin).parent


def server_command(*, host: str, port: int, master: str, conf: Mapping[str, str]) -> list[str]:
    """The `spark-submit` command line of a Spark Connect server (no secrets: credentials are per session)."""
    log_conf = Path(__file__).resolve().parent.parent / "engine" / "log4j2.properties"
    quiet = f"-Dlog4j.configurationFile=file:{log_conf}"
    settings = {"spark.ui.enabled": "false", "spark.driver.extraJavaOptions": quiet, **conf,
                "spark.connect.grpc.binding.address": host, "spark.connect.grpc.binding.port": str(port)}
    cmd = [str(spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--name", "ducklake Spark Connect",
           "--master", master]
    for key, value in settings.items():
        cmd += ["--conf", f"{key}={value}"]
    return cmd


def _state_path(state_dir: Path) -> Path:
    return state_dir / STATE_FILE


def _read_state(state_dir: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(_state_path(state_dir).read_text()))
    except (OSError, ValueError):
        return None


def _is_process(pid: int, marker: str = SERVER_CLASS) -> bool:
    """Whether `pid` is alive and still our process (its command line names `marker`; not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True  # no /proc (macOS): trust the pid
    return marker.encode() in cmdline


def _listening(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
        return True
    return False


def _status_from(state: Mapping[str, Any], running: bool) -> ServerStatus:
    started = dt.datetime.fromisoformat(state["started_at"]) if state.get("started_at") else None
    uptime = (dt.datetime.now(dt.UTC) - started).total_seconds() if started and running else None
    warm = state.get("warm_pid")
    warm_pid = int(warm) if running and warm is not None and _is_process(int(warm), WARM_MODULE) else None
    return ServerStatus(running=running, url=state.get("url"), pid=state.get("pid"), port=state.get("port"),
                        master=state.get("master"), started_at=started, uptime_seconds=uptime, log=state.get("log"),
                        warm_pid=warm_pid)


def server_status(state_dir: Path) -> ServerStatus:
    """The recorded server, and whether its process is alive and accepting connections."""
    state = _read_state(state_dir)
    if state is None:
        return ServerStatus(running=False, note="no Spark Connect server was started with `ducklake spark start`")
    running = _is_process(int(state["pid"])) and _listening(state["host"], int(state["port"]))
    return _status_from(state, running)


def start_server(
    state_dir: Path, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT, master: str = "local[*]",
    conf: Mapping[str, str] | None = None, timeout: float = 180.0,
) -> ServerStatus:
    """Start a detached Spark Connect server and wait until it accepts connections (an already running one is
    returned as it is)."""
    current = server_status(state_dir)
    if current.running:
        state = _read_state(state_dir) or {}
        if current.warm_pid is None:  # killed, or never started: commands run without it until it is back
            state["warm_pid"] = _start_warm(state_dir)
            _state_path(state_dir).write_text(json.dumps(state))
        return ServerStatus(**{**_status_from(state, True).__dict__, "note": "already running"})
    if _listening(host, port):
        raise SparkServerError(f"port {host}:{port} is already in use", hint="pick another one with --port")
    _stop_warm(_read_state(state_dir) or {})  # one left behind by a server that died: it would keep the socket
    state_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir / f"connect-server-{port}.log"
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": host if host in ("127.0.0.1", "localhost") else os.environ.get("SPARK_LOCAL_IP", host)}
    with log.open("ab") as out:
        proc = subprocess.Popen(server_command(host=host, port=port, master=master, conf=conf or {}),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    state = {"pid": proc.pid, "host": host, "port": port, "url": f"sc://{host}:{port}", "master": master,
             "started_at": dt.datetime.now(dt.UTC).isoformat(), "log": str(log)}
    deadline = time.monotonic() + timeout
    while not _listening(host, port):
        if proc.poll() is not None or time.monotonic() > deadline:
            _terminate(proc.pid, grace=10)
            why = "exited" if proc.returncode is not None else f"did not listen within {timeout:.0f} s"
            raise SparkServerError(f"the Spark Connect server {why}: {_last_error(log)}", hint=f"see {log}")
        time.sleep(0.25)
    state["warm_pid"] = _start_warm(state_dir)
    _state_path(state_dir).write_text(json.dumps(state))
    return _status_from(state, True)


def _start_warm(state_dir: Path, *, timeout: float = 60.0) -> int | None:
    """Start the warm ducklake process and wait until it accepts commands; its pid, or None when it is disabled
    or did not come up (commands then run in their own process, as without a server; see `warm.log`)."""
    from ducklake_cli.warm_socket import warm_enabled, warm_listening

    if not warm_enabled(os.environ):
        return None
    with (state_dir / "warm.log").open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", WARM_MODULE, str(state_dir)], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while not warm_listening(state_dir):
        if proc.poll() is not None or time.monotonic() > deadline:
            _terminate(proc.pid, grace=5)
            return None
        time.sleep(0.1)
    return proc.pid


def _stop_warm(state: Mapping[str, Any]) -> None:
    """Stop the recorded warm ducklake process, if it still runs (commands it started run in process groups of
    their own and go on)."""
    warm = state.get("warm_pid")
    if warm is not None and _is_process(int(warm), WARM_MODULE):
        _terminate(int(warm), grace=5)


def _last_error(log: Path) -> str:
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    errors = [line for line in lines if "Exception" in line or "Error" in line]
    return (errors or lines or ["no output"])[-1][:300]


def _terminate(pid: int, *, grace: float) -> None:
    """SIGTERM the server's process group (JVM shutdown hooks run), SIGKILL after `grace` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap it when we are its parent (tests)
            if not _alive(pid):
                return
            time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        return stat.read_text().split(") ", 1)[1][:1] != "Z"  # a zombie has exited
    return True


def stop_server(state_dir: Path, *, grace: float = 30.0) -> ServerStatus:
    """Stop the recorded server (SIGTERM, then SIGKILL after `grace` s) and forget it."""
    state = _read_state(state_dir)
    if state is None:
        return ServerStatus(running=False, note="no Spark Connect server was running")
    pid = int(state["pid"])
    _stop_warm(state)
    was_running = _is_process(pid)
    if was_running:
        _terminate(pid, grace=grace)
        if _alive(pid):
            raise SparkServerError(f"the Spark Connect server (pid {pid}) did not stop")
    _state_path(state_dir).unlink(missing_ok=True)
    note = "stopped" if was_running else "the recorded server was not running any more"
    return ServerStatus(**{**_status_from(state, False).__dict__, "note": note})


def release_sessions() -> bool:
    """Release this process's Spark Connect sessions; whether it had any."""
    from ducklake_cli.engine.session import release_remote_sessions

    return release_remote_sessions()
