"""`python -m ducklake_cli` runs the CLI."""

from ducklake_cli.cli.app import main

main()
