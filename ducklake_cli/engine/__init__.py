"""The Spark engine: sessions, scans, SQL rewriting and pruning (pyspark imported only inside functions)."""
