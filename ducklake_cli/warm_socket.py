"""The warm ducklake process's socket protocol, shared by its caller (`cli/launch.py`), the process itself
(`cli/warm.py`) and `ducklake spark start|stop` (`ops/spark_server.py`): where state lives, the socket's name,
who may use it, and the messages.

Only the standard library is imported here: the `ducklake` executable imports it before every command.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
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


PACKAGE_ROOT = Path(__file__).resolve().parent


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
