"""Storage, the ground floor: fsspec file systems, listing and deleting, Parquet footers, deletion vectors."""
