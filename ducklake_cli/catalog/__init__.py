"""The DuckLake metadata layer and vocabulary (types, partitions, paths, stats, time travel): the only place with
SQL."""
