"""The `ducklake` executable: runs a command in a fork of the warm process `ducklake spark start` leaves running
(imports already done), or in this process when there is none, it runs other code, or `DUCKLAKE_WARM=0`.

Only the standard library is imported here: this module runs before every command.
"""

from __future__ import annotations

import array
import contextlib
import hashlib
import json
import os
import signal
import socket
import struct
import sys
from collections.abc import Mapping
from pathlib import Path

# Replies from the warm process: (tag, value). P: the command runs in child `value`; X: it exited with code
# `value`; R: refused (another interpreter or other code), run it here.
MESSAGE = struct.Struct("!cq")
LENGTH = struct.Struct("!I")
CREDENTIALS = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def state_dir(env: Mapping[str, str]) -> Path:
    """Where `ducklake spark start` keeps its state: `$XDG_STATE_HOME/ducklake`, else `~/.local/state/ducklake`."""
    if env.get("XDG_STATE_HOME"):
        return Path(env["XDG_STATE_HOME"]).expanduser() / "ducklake"
    return Path(env.get("HOME", "~")).expanduser() / ".local" / "state" / "ducklake"


def warm_address(state: Path) -> bytes:
    """The warm process's socket: an abstract Unix socket named after the state dir (no file to go stale, no
    path-length limit; both ends check that the other runs as the same user)."""
    digest = hashlib.sha256(os.fsencode(state.resolve())).hexdigest()[:40]
    return b"\0ducklake-warm-" + digest.encode()


PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def code_fingerprint(root: Path = PACKAGE_ROOT) -> str:
    """This interpreter and a package's sources (names, sizes, mtimes): a warm process serves only callers that run
    exactly its code."""
    digest = hashlib.sha256(f"{sys.executable}\0{sys.version}\0{root}".encode())
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                st = os.stat(os.path.join(dirpath, name))
                digest.update(f"{dirpath}/{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def same_user(sock: socket.socket) -> bool:
    """Whether the process at the other end of a Unix socket runs as this user."""
    _pid, uid, _gid = CREDENTIALS.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, CREDENTIALS.size))
    return uid == os.getuid()


def receive_message(sock: socket.socket) -> tuple[bytes, int] | None:
    """One (tag, value) message, or None at end of stream."""
    data = b""
    while len(data) < MESSAGE.size:
        chunk = sock.recv(MESSAGE.size - len(data))
        if not chunk:
            return None
        data += chunk
    tag, value = MESSAGE.unpack(data)
    return tag, value


def _request(argv: list[str]) -> bytes | None:
    """What a warm child needs to run the command as if it were this process; None when it cannot."""
    streams = (sys.stdin, sys.stdout, sys.stderr)
    if any(s is None for s in streams):
        return None
    try:
        cwd = os.getcwd()
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:  # a deleted working directory or a closed standard stream: run here
        return None
    umask = os.umask(0o022)
    os.umask(umask)
    return json.dumps({
        "argv": argv, "env": dict(os.environ), "cwd": cwd, "umask": umask, "fingerprint": code_fingerprint(),
        "streams": [[s.encoding, s.errors] for s in streams],
    }).encode()


def warm_enabled(env: Mapping[str, str]) -> bool:
    """Whether commands may use a warm process: on Linux (abstract sockets, SO_PEERCRED), unless DUCKLAKE_WARM=0."""
    return sys.platform.startswith("linux") and env.get("DUCKLAKE_WARM") != "0"


def warm_listening(state: Path) -> bool:
    """Whether a warm process accepts commands for this state dir."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        sock.connect(warm_address(state))
        return True
    return False


def run_warm(argv: list[str]) -> int | None:
    """Run the command in a fork of the warm process and return its exit code; None when there is no usable warm
    process (then nothing has run)."""
    if not warm_enabled(os.environ):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(5)
        sock.connect(warm_address(state_dir(os.environ)))
        request = _request(argv) if same_user(sock) else None
        if request is None:
            sock.close()
            return None
        payload = LENGTH.pack(len(request)) + request
        sent = sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", (0, 1, 2)))])
        sock.sendall(payload[sent:])
        started = receive_message(sock)
    except OSError:  # nothing listening (the usual case), or it went away
        sock.close()
        return None
    if started is None or started[0] != b"P":
        sock.close()
        return None
    pid = started[1]

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for sig in FORWARDED_SIGNALS:  # Ctrl-C reaches our process group, not the child's
        signal.signal(sig, forward)
    sock.settimeout(None)
    try:
        ended = receive_message(sock)
    except OSError:
        ended = None
    if ended is None or ended[0] != b"X":
        sys.stderr.write("error: the warm ducklake process stopped before the command finished "
                         "(hint: rerun it; DUCKLAKE_WARM=0 runs commands without the warm process)\n")
        return 1
    return ended[1]


def delegable(argv: list[str]) -> bool:
    """Whether a command may run in the warm process (`ducklake spark …` starts and stops it, so runs here)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first != "spark"


def main() -> None:
    """Entry point of the `ducklake` executable."""
    argv = sys.argv[1:]
    if delegable(argv):
        code = run_warm(argv)
        if code is not None:
            sys.stdout.flush()
            sys.exit(code)
    from ducklake_cli.cli.app import main as run_here

    run_here(argv)
