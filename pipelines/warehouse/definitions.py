"""The warehouse's contribution to the Definitions: the `warehouse` resource every step writes through."""

from __future__ import annotations

import dagster as dg

from pipelines.platform.settings import PipelineSettings
from pipelines.warehouse.resource import WarehouseResource


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    local = not settings.warehouse_url  # object storage: no DuckDB file (docs/deployment.md)
    warehouse = WarehouseResource(
        warehouse_dir=str(settings.warehouse_dir) if local else str(settings.warehouse_url),
        duckdb_path=str(settings.duckdb_path) if local else None,
        s3_endpoint_url=None if local else settings.s3_endpoint_url,
        versions_keep_all_days=settings.versions_keep_all_days,
        versions_retain_days=settings.versions_retain_days,
    )
    return dg.Definitions(resources={"warehouse": warehouse})
