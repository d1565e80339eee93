"""The warehouse's contribution to the Definitions: the `warehouse` resource every step writes through."""

from __future__ import annotations

import dagster as dg

from pipelines.platform.settings import PipelineSettings
from pipelines.warehouse.resource import WarehouseResource


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    if settings.warehouse_url:  # object storage: no local DuckDB file (docs/deployment.md)
        warehouse = WarehouseResource(
            warehouse_dir=settings.warehouse_url, s3_endpoint_url=settings.s3_endpoint_url
        )
    else:
        warehouse = WarehouseResource(
            warehouse_dir=str(settings.warehouse_dir), duckdb_path=str(settings.duckdb_path)
        )
    return dg.Definitions(resources={"warehouse": warehouse})
