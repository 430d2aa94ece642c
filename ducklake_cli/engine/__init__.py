"""The engine: Spark execution (sessions, scans, writes, output) over the Spark-free plans of `engine/planning`
(pyspark imported only inside functions, and only in this package)."""
