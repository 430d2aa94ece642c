"""The warm ducklake process that `ducklake spark start` runs next to its Spark Connect server.

It imports what commands need (Typer, SQLAlchemy, the Spark Connect client with pandas, sqlglot, rich: ~1 s per
command otherwise) and then forks for each command a `ducklake` process sends it (`cli/launch.py`). The fork, in a
process group of its own, forks once more: the grandchild takes over the caller's stdin/stdout/stderr, environment,
working directory and umask and runs the command (and dies with its caller); the child waits for it and reports
its pid and exit code to the caller. The warm process keeps no state about commands, opens no catalog and no Spark
session, so nothing is shared across a fork and stopping it (SIGTERM) never touches a running command.

    python -m ducklake_cli.cli.warm STATE_DIR
"""

from __future__ import annotations

import array
import contextlib
import importlib
import io
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any, NoReturn

from ducklake_cli.warm_socket import LENGTH, MESSAGE, code_fingerprint, same_user, warm_address

PRELOAD = (
    "ducklake_cli.cli.app", "ducklake_cli.api", "ducklake_cli.ops.query", "ducklake_cli.ops.inspect",
    "ducklake_cli.ops.write", "ducklake_cli.engine.planning.sql_rewrite", "ducklake_cli.engine.scan",
    "ducklake_cli.engine.session", "ducklake_cli.engine.run_query",
    "ducklake_cli.engine.progress", "pyspark.sql.connect.session", "rich.console", "rich.table",
    "sqlalchemy.dialects.sqlite",
)
# Imported when a command first needs them (Typer's parameter conversion, the catalog drivers): here if present.
OPTIONAL_PRELOAD = (
    "typer._adapters", "duckdb", "duckdb_engine", "sqlalchemy.dialects.postgresql.psycopg", "psycopg",
    "sqlalchemy.dialects.mysql.pymysql", "pymysql",
)
MAX_REQUEST = 16 << 20


def serve(state: Path) -> None:
    """Preload, listen on the state dir's warm socket, and start commands until killed."""
    fingerprint = code_fingerprint()
    for name in PRELOAD:
        importlib.import_module(name)
    for name in OPTIONAL_PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(warm_address(state))
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    sys.stdout.write(f"warm ducklake process {os.getpid()} serving\n")
    sys.stdout.flush()
    while True:
        conn, _addr = listener.accept()
        with contextlib.suppress(OSError, ValueError):
            _start(conn, fingerprint, listener)
        conn.close()


def _receive_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The caller's request and its three standard file descriptors."""
    fds = array.array("i")
    data, ancdata, _flags, _addr = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    try:
        if len(fds) != 3 or len(data) < LENGTH.size:
            raise ValueError("malformed request")
        (size,) = LENGTH.unpack(data[: LENGTH.size])
        if size > MAX_REQUEST:
            raise ValueError("request too large")
        body = data[LENGTH.size:]
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                raise ValueError("truncated request")
            body += chunk
        return json.loads(body), list(fds)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _start(conn: socket.socket, fingerprint: str, listener: socket.socket) -> None:
    """Start one caller's command (or refuse it when the caller runs other code)."""
    conn.settimeout(5)
    if not same_user(conn):
        return
    request, fds = _receive_request(conn)
    try:
        if request.get("fingerprint") != fingerprint:
            conn.sendall(MESSAGE.pack(b"R", 0))
        elif os.fork() == 0:
            _supervise(conn, request, fds, listener)
    finally:
        for fd in fds:
            os.close(fd)


def _supervise(conn: socket.socket, request: dict[str, Any], fds: list[int], listener: socket.socket) -> NoReturn:
    """The fork per command: its own process group; runs the command in a child and reports pid and exit code."""
    code = 1
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        listener.close()
        conn.settimeout(None)  # before the fork: the command's watchdog blocks on this socket for as long as it runs
        pid = os.fork()
        if pid == 0:
            _run_command(conn, request, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall(MESSAGE.pack(b"P", pid))
        exit_code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        exit_code = 128 - exit_code if exit_code < 0 else exit_code
        os.write(1, f"command {pid} exit {exit_code}\n".encode())  # to warm.log; never the arguments (secrets)
        conn.sendall(MESSAGE.pack(b"X", exit_code))
        code = 0
    finally:
        os._exit(code)


def _text_stream(fd: int, mode: str, encoding: str, errors: str) -> io.TextIOWrapper:
    raw = io.FileIO(fd, mode, closefd=False)
    buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, line_buffering=raw.isatty() or fd == 2)


def _die_with(conn: socket.socket) -> None:
    """Block until the caller goes away; then go too (a killed `ducklake` must not leave its command running)."""
    with contextlib.suppress(OSError):
        while conn.recv(1):
            pass
    os.kill(os.getpid(), signal.SIGKILL)


def _run_command(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> NoReturn:
    """Become the caller's command: its streams, environment, directory and umask; then run it and exit."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        (in_enc, in_err), (out_enc, out_err), (err_enc, err_err) = request["streams"]
        sys.stdin = _text_stream(0, "r", in_enc, in_err)
        sys.stdout = _text_stream(1, "w", out_enc, out_err)
        sys.stderr = _text_stream(2, "w", err_enc, err_err)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        os.umask(request["umask"])
        tempfile.tempdir = None  # recomputed from this caller's TMPDIR
        sys.argv = ["ducklake", *request["argv"]]
        threading.Thread(target=_die_with, args=(conn,), daemon=True).start()
        from ducklake_cli.cli.app import main

        try:
            main(request["argv"])
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
        except BaseException:  # what escapes `main` (`--debug`): its traceback, as the interpreter would print it
            traceback.print_exc()
            code = 1
    except BaseException as exc:  # noqa: BLE001 - the command must always end in os._exit
        with contextlib.suppress(Exception):
            sys.stderr.write(f"error: the warm ducklake process failed: {type(exc).__name__}: {exc}\n")
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    with contextlib.suppress(Exception):
        sys.stderr.write(f"{exc.code}\n")
    return 1


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
