"""Storage: path resolution, fsspec file systems and Parquet footers."""
