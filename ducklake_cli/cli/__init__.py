"""The Typer command-line interface (a thin client of `ducklake_cli.ops`)."""
