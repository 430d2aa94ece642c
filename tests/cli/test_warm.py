"""The warm ducklake process (`cli/warm.py`, started by `ducklake spark start`): a command run through it behaves
exactly like one run in its own process — output, exit code, terminal, environment, working directory, umask —
and dies with its caller. Code that differs from the warm process's own is refused and runs locally."""

from __future__ import annotations

import array
import json
import os
import pty
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ducklake_cli.cli.launch import delegable
from ducklake_cli.warm_socket import LENGTH, MESSAGE, code_fingerprint, warm_address, warm_listening
from tests.support.built_lakes import BuiltLakes
from tests.support.cli import REPO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the warm process is Linux-only")


@dataclass(frozen=True)
class Warm:
    """A running warm process: its pid, state dir, log, and the environment that makes commands use it."""

    pid: int
    state: Path
    log: Path
    env: dict[str, str]

    def served(self) -> list[str]:
        """The `command PID exit CODE` lines of its log."""
        return [line for line in self.log.read_text().splitlines() if line.startswith("command ")]

    def descendants(self) -> set[int]:
        """Processes below the warm process (the per-command supervisors and the commands)."""
        parents: dict[int, int] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
        found: set[int] = set()
        frontier = {self.pid}
        while frontier:
            frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
            found |= frontier
        return found


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Warm]:
    state = tmp_path / "state" / "ducklake"
    state.mkdir(parents=True)
    log = state / "warm.log"
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "ducklake_cli.cli.warm", str(state)], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while not warm_listening(state):
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    env = {k: v for k, v in os.environ.items() if k not in ("DUCKLAKE_CATALOG", "DUCKLAKE_CONFIG", "DUCKLAKE_WARM")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    try:
        yield Warm(proc.pid, state, log, env)
    finally:
        proc.terminate()
        proc.wait(30)


def ducklake(*args: str, env: dict[str, str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ducklake_cli", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False, **kwargs)  # type: ignore[call-overload]


def test_commands_behave_as_in_their_own_process(warm: Warm, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    # A relative catalog path and the caller's umask: both are the caller's, not the warm process's.
    created = ducklake("create-catalog", "lake.sqlite", "--data-path", "data", env=warm.env, cwd=work,
                       preexec_fn=lambda: os.umask(0o077))
    assert created.returncode == 0, created.stderr
    assert (work / "lake.sqlite").stat().st_mode & 0o777 == 0o600
    here = {**warm.env, "DUCKLAKE_WARM": "0"}
    # $DUCKLAKE_CATALOG from the caller's environment names the catalog.
    for env in ({**warm.env, "DUCKLAKE_CATALOG": str(work / "lake.sqlite")},
                {**here, "DUCKLAKE_CATALOG": str(work / "lake.sqlite")}):
        shown = ducklake("maintain", "expire", "--keep-last", "1", "--dry-run", "--format", "json", env=env)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["catalog"] == f"sqlite:{work / 'lake.sqlite'}"
    # Errors: the same one line and exit code either way.
    missing = [ducklake("inspect", str(tmp_path / "nope.sqlite"), env=e) for e in (warm.env, here)]
    assert missing[0].returncode == missing[1].returncode == 1
    assert missing[0].stderr == missing[1].stderr and missing[0].stderr.count("\n") == 1
    usage = [ducklake("inspect", "--no-such-flag", env=e) for e in (warm.env, here)]
    assert usage[0].returncode == usage[1].returncode == 2 and usage[0].stderr == usage[1].stderr
    assert warm.served() == [line for line in warm.served() if line.split()[-1] in ("0", "1", "2")]
    assert len(warm.served()) == 4  # create-catalog, inspect, missing catalog, usage error
    assert "nope.sqlite" not in warm.log.read_text()  # arguments are never logged


def test_the_question_is_asked_on_the_callers_terminal(warm: Warm, tmp_path: Path, built_lakes: BuiltLakes) -> None:
    catalog = Path(built_lakes.copy("deletes", tmp_path / "lake")[0].catalog)
    before = catalog.read_bytes()
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ducklake_cli", "maintain", "expire", str(catalog),
                             "--keep-last", "2"], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=REPO, env=warm.env)
    os.close(slave)
    os.write(master, b"n\n")
    _, err = proc.communicate(timeout=60)
    os.close(master)
    assert proc.returncode == 1 and b"go ahead?" in err and b"aborted: nothing changed" in err, err
    assert catalog.read_bytes() == before
    assert warm.served()[-1].endswith("exit 1")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_stopped_caller_stops_its_command(warm: Warm, tmp_path: Path, sig: signal.Signals) -> None:
    catalog = tmp_path / "lake.sqlite"
    assert ducklake("create-catalog", str(catalog), "--data-path", str(tmp_path / "data"), env=warm.env).returncode == 0
    # A "Spark Connect server" that accepts connections and never answers: the query waits forever.
    with socket.create_server(("127.0.0.1", 0)) as mute:
        port = mute.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-m", "ducklake_cli", "query", str(catalog), "SELECT 1", "--remote",
                                 f"sc://127.0.0.1:{port}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=warm.env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 60
        while len(warm.descendants()) < 2:  # the supervisor and the command
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
        time.sleep(1)
        proc.send_signal(sig)
        proc.communicate(timeout=30)
        assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL)
        deadline = time.monotonic() + 30
        while warm.descendants():
            assert time.monotonic() < deadline, f"still running: {warm.descendants()}"
            time.sleep(0.1)
    assert warm_listening(warm.state)  # and the warm process serves on


def test_other_code_is_refused_and_runs_here(warm: Warm, tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(warm_address(warm.state))
        body = json.dumps({"argv": ["--version"], "env": {}, "cwd": "/", "umask": 0o22, "fingerprint": "other",
                           "streams": [["utf-8", "strict"]] * 3}).encode()
        fds = array.array("i", (0, 1, 2))
        sock.sendmsg([LENGTH.pack(len(body)) + body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        assert MESSAGE.unpack(sock.recv(MESSAGE.size)) == (b"R", 0)
    assert warm.served() == []
    # A caller whose sources differ (here: one file's mtime) carries another fingerprint.
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "m.py").write_text("x = 1\n")
    first = code_fingerprint(pkg)
    os.utime(pkg / "sub" / "m.py", ns=(1, 1))
    assert code_fingerprint(pkg) != first
    version = ducklake("--version", env=warm.env)
    assert version.returncode == 0 and version.stdout.startswith("ducklake ")


def test_spark_commands_run_here() -> None:
    assert not delegable(["spark", "stop"]) and not delegable(["--debug", "spark", "status"])
    assert delegable(["query", "lake.sqlite", "SELECT 1"]) and delegable([])
