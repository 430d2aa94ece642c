"""The DuckLake metadata layer: the only place with SQL."""
