"""`python -m ducklake_cli` runs the CLI, exactly as the `ducklake` executable does."""

from ducklake_cli.cli.launch import main

main()
