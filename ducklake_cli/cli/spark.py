"""`ducklake spark start|stop|status`: a warm local Spark Connect server for interactive use."""

from __future__ import annotations

from typing import Annotated

import typer

from ducklake_cli.cli.common import DebugOpt, FormatOpt, key_values
from ducklake_cli.cli.render import OutputFormat, message, render

spark_app = typer.Typer(
    name="spark",
    help="A persistent local Spark Connect server, so Spark commands skip the JVM start.",
    no_args_is_help=True,
)

ProfileOpt = Annotated[str | None, typer.Option("--profile", help="Take `\\[spark]` settings (e.g. spark.jars) and "
                                                                  "`master` from this ducklake.toml profile.",
                                                show_default=False)]


@spark_app.command("start")
def start(
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="gRPC port of the server.")] = 15002,
    host: Annotated[str, typer.Option("--host", help="Address to listen on (loopback: only this machine).")]
    = "127.0.0.1",
    master: Annotated[str | None, typer.Option("--master", help="Where the server runs its jobs: local[*] "
                                                                "(default) or a cluster URL.", show_default=False)]
    = None,
    conf: Annotated[list[str] | None, typer.Option("--conf", help="Spark setting key=value for the server "
                                                                  "(repeatable), e.g. spark.jars=….",
                                                   show_default=False)] = None,
    profile: ProfileOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Start a Spark Connect server in the background and wait until it accepts connections.

    Then point commands at it with --remote, $DUCKLAKE_REMOTE or a profile's `remote`.

    Examples:

      ducklake spark start && export DUCKLAKE_REMOTE=sc://127.0.0.1:15002

      ducklake spark start --port 15010 --conf spark.driver.memory=8g

      ducklake spark start --profile prod     # the profile's \\[spark] table, e.g. spark.jars for S3
    """
    from ducklake_cli.cli.config import server_settings
    from ducklake_cli.ops.spark_server import start_server

    settings = server_settings(profile)
    server_conf = {**settings.spark_conf, **key_values(conf or [], "--conf")}
    status = start_server(settings.state_dir, host=host, port=port, master=master or settings.master or "local[*]",
                          conf=server_conf)
    if fmt is OutputFormat.table:
        verb = "is already running" if status.note == "already running" else "started"
        message(f"Spark Connect server {verb} at {status.url} (pid {status.pid}, log {status.log})")
        message(f"use it with --remote {status.url} or: export DUCKLAKE_REMOTE={status.url}")
    else:
        render(status, fmt)


@spark_app.command("status")
def status(fmt: FormatOpt = OutputFormat.table, debug: DebugOpt = False) -> None:
    """Show the server's URL, pid and uptime; exit 1 when none is running.

    Examples:

      ducklake spark status

      ducklake spark status --format json
    """
    from ducklake_cli.cli.config import server_settings
    from ducklake_cli.ops.spark_server import server_status

    result = server_status(server_settings(None).state_dir)
    if result.note and fmt is OutputFormat.table:
        message(result.note)
    else:
        render(result, fmt)
    if not result.running:
        raise typer.Exit(1)


@spark_app.command("stop")
def stop(fmt: FormatOpt = OutputFormat.table, debug: DebugOpt = False) -> None:
    """Stop the server `ducklake spark start` started (its JVM shuts down cleanly; killed after 30 s).

    Examples:

      ducklake spark stop
    """
    from ducklake_cli.cli.config import server_settings
    from ducklake_cli.ops.spark_server import stop_server

    result = stop_server(server_settings(None).state_dir)
    if fmt is OutputFormat.table:
        message(f"Spark Connect server at {result.url} (pid {result.pid}) stopped" if result.note == "stopped"
                else result.note or "stopped")
    else:
        render(result, fmt)
