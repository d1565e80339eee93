"""The `warehouse` resource: the store every step writes through, and a run transaction per step."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dagster as dg

from pipelines.catalog.versions import Retention
from pipelines.warehouse.object_store import ObjectWarehouse, S3Location
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.store import Warehouse


class WarehouseResource(dg.ConfigurableResource):
    """Where the warehouse lives: a local directory (with its DuckDB views) or an s3:// root."""

    warehouse_dir: str
    """A local directory, or `s3://bucket/prefix` for the warehouse on object storage."""
    duckdb_path: str | None = None
    """Local warehouses only: on object storage views are built in memory (`apply_object_views`)."""
    gc_grace_seconds: float = 600.0
    s3_endpoint_url: str | None = None
    """An S3-compatible endpoint (MinIO, Ceph, a test server); None: AWS S3."""
    versions_keep_all_days: float = 7.0
    versions_retain_days: float = 90.0

    @property
    def retention(self) -> Retention:
        """Which versions the expiry step keeps (decisions.md, "Point in time")."""
        return Retention(self.versions_keep_all_days, self.versions_retain_days)

    def store(self) -> Warehouse | ObjectWarehouse:
        """The one store the configuration names: object storage for s3:// roots, else local."""
        grace = timedelta(seconds=self.gc_grace_seconds)
        if self.warehouse_dir.startswith("s3://"):
            location = S3Location.parse(self.warehouse_dir, self.s3_endpoint_url)
            return ObjectWarehouse(location, gc_grace=grace)
        duckdb_path = Path(self.duckdb_path) if self.duckdb_path else None
        return Warehouse(root=Path(self.warehouse_dir), duckdb_path=duckdb_path, gc_grace=grace)

    def transaction(self, run_id: str, step: str) -> RunTransaction:
        """This step's view of the run: reads see what earlier steps staged; writes are staged."""
        return RunTransaction(self.store(), run_id, step)
