"""Spark-free planning: scan plans, file pruning and SQL rewriting (testable without a JVM)."""
