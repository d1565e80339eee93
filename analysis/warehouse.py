"""The warehouse for analysis: an in-memory DuckDB connection with a view per catalog table."""

from __future__ import annotations

import duckdb

from pipelines.catalog import TABLES, LocalStorage, S3Location
from pipelines.catalog.sql import view_sql
from pipelines.platform.settings import load_settings
from pipelines.warehouse.views import apply_object_views


class NotMaterializedError(LookupError):
    """The warehouse has no manifest yet: nothing to read."""


def open_warehouse(storage: LocalStorage | S3Location | None = None) -> duckdb.DuckDBPyConnection:
    """Views over exactly the current manifest's files (local or on object storage), read-only by
    construction: nothing is written, so it opens while the pipeline or the API run. `storage`
    defaults to the environment's warehouse (`MI_DATA_DIR`, `MI_WAREHOUSE_URL`), as `mi sql`."""
    storage = storage or load_settings().warehouse
    manifest = storage.read_manifest()
    if manifest is None:
        raise NotMaterializedError(f"no warehouse at {storage.url}: run `mi materialize` first")
    connection = duckdb.connect(":memory:")
    if isinstance(storage, S3Location):
        apply_object_views(connection, storage, manifest)
        return connection
    for table in TABLES.values():
        files = [storage.arrow_path(path) for path in manifest.files(table.name)]
        connection.execute(view_sql(table, files))
    return connection
