"""Test support code (not tests): the DuckDB oracle, service fixtures, lake scenarios, Spark helpers, CLI runners."""
