"""The `ducklake` command: mounts one module per command group and maps errors to one line and an exit code."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import threading
from typing import Annotated, Any

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer._click.exceptions import UsageError as ClickUsageError
from typer.core import Abort

from ducklake_cli._version import __version__
from ducklake_cli.cli.changes import changes
from ducklake_cli.cli.copy_catalog import copy_catalog
from ducklake_cli.cli.create import create_catalog
from ducklake_cli.cli.delete import delete
from ducklake_cli.cli.inspect import inspect
from ducklake_cli.cli.maintain import expire, maintain_app, orphans
from ducklake_cli.cli.options import options
from ducklake_cli.cli.query import query
from ducklake_cli.cli.register import register
from ducklake_cli.cli.restore import restore
from ducklake_cli.cli.spark import spark_app
from ducklake_cli.cli.upgrade import upgrade
from ducklake_cli.cli.verify import verify
from ducklake_cli.cli.write import write
from ducklake_cli.errors import DuckLakeError

app = typer.Typer(
    name="ducklake",
    help="Inspect, query, load and maintain DuckLake lakehouses.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command("create-catalog")(create_catalog)
app.command("copy-catalog")(copy_catalog)
app.command("inspect")(inspect)
app.command("query")(query)
app.command("changes")(changes)
app.command("write")(write)
app.command("delete")(delete)
app.command("options")(options)
app.command("register")(register)
app.command("restore")(restore)
app.command("verify")(verify)
app.command("upgrade")(upgrade)
app.add_typer(spark_app, name="spark")
app.add_typer(maintain_app, name="maintain")
app.command("expire-snapshots", help="Same as `maintain expire`.")(expire)
app.command("cleanup-orphans", help="Same as `maintain orphans`.")(orphans)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ducklake {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """Inspect, query, load and maintain DuckLake lakehouses."""


_URL_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")


def _one_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return _URL_PASSWORD.sub(r"\1***@", first)


def _interrupted(signum: int, frame: object) -> None:
    """Ctrl-C: one word and exit 130 at once (Spark/Py4J would otherwise print tracebacks from their threads).

    A transaction left open is rolled back by the catalog database; files written so far are orphans, as after
    a kill."""
    with contextlib.suppress(OSError):
        os.write(_stderr_fd if _stderr_fd is not None else 2, b"interrupted\n")
    os._exit(130)


_stderr_fd: int | None = None  # our stderr, kept: fd 2 points at Spark's log while the JVM starts


_interrupted.ducklake_interrupt = True  # type: ignore[attr-defined]  # engine.session re-installs it after Spark


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app; our errors become one line on stderr and an exit code (tracebacks: --debug)."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args or os.environ.get("DUCKLAKE_DEBUG") == "1"
    root = logging.getLogger()
    quiet_logs = logging.NullHandler()
    if not debug:  # libraries' log records (Py4J's logging.exception on Ctrl-C) never reach the terminal
        root.addHandler(quiet_logs)
    global _stderr_fd
    previous = _install_interrupt_handler()
    if previous is not None and _stderr_fd is None:
        _stderr_fd = os.dup(2)
    try:
        code = app(args=args, prog_name="ducklake", standalone_mode=False)
        if isinstance(code, int) and code:  # typer.Exit(n) from a command
            if code == 130:
                sys.stderr.write("interrupted\n")
            sys.exit(code)
    except ClickException as exc:
        if isinstance(exc, NoArgsIsHelpError):  # `ducklake maintain`: the help text, as before
            exc.show()
            sys.exit(exc.exit_code)
        if debug:
            raise
        where = exc.ctx.command_path if isinstance(exc, ClickUsageError) and exc.ctx else "ducklake"
        sys.stderr.write(f"error: {_one_line(exc.format_message())} (hint: see {where} --help)\n")
        sys.exit(exc.exit_code)
    except Abort:  # end of input at a question
        sys.stderr.write("aborted: nothing changed\n")
        sys.exit(1)
    except DuckLakeError as exc:
        if debug:
            raise
        hint = f" (hint: {_one_line(exc.hint)})" if exc.hint else ""
        sys.stderr.write(f"error: {_one_line(exc.message)}{hint}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    except Exception as exc:  # an error we did not anticipate: still one line, never a secret
        if debug:
            raise
        sys.stderr.write(f"error: unexpected {type(exc).__name__}: {_one_line(str(exc))} (rerun with --debug)\n")
        sys.exit(1)
    finally:
        root.removeHandler(quiet_logs)
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _install_interrupt_handler() -> Any:
    """Our SIGINT handler (main thread only); the handler it replaces, to restore, or None."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, _interrupted)
