"""The `ducklake` executable: runs a command in a fork of the warm process `ducklake spark start` leaves running
(imports already done), or in this process when there is none, it runs other code, or `DUCKLAKE_WARM=0`.

Only the standard library is imported here: this module runs before every command.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
import sys

from ducklake_cli.warm_socket import (
    LENGTH,
    code_fingerprint,
    receive_message,
    same_user,
    state_dir,
    warm_address,
    warm_enabled,
)

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


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
