"""The warehouse: immutable Parquet files per table partition, a manifest naming the current ones, DuckDB views."""
