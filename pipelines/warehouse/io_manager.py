"""The Dagster IO manager that stores every polars output as a warehouse table partition."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dagster as dg
import polars as pl

from pipelines.catalog import TABLES, Table
from pipelines.warehouse.object_store import ObjectWarehouse, S3Location
from pipelines.warehouse.store import WHOLE_TABLE, Warehouse

MISSING_AS_EMPTY = "warehouse/missing_as_empty"
"""Input metadata: read partitions not materialized yet as no rows (an optional upstream)."""


class WarehouseIOManager(dg.ConfigurableIOManager):
    """Writes `pl.DataFrame` outputs to `<warehouse_dir>/<table>/market=<partition>/` via the manifest.

    The table is the asset key's last component and must be a catalog table. An unpartitioned
    asset writes the whole table as partition `all`. An output of `None` is not stored (assets
    whose effect is outside the warehouse, such as source files).
    """

    warehouse_dir: str
    """A local directory, or `s3://bucket/prefix` for the warehouse on object storage."""
    duckdb_path: str | None = None
    """Local warehouses only: on object storage views are built in memory (`apply_object_views`)."""
    gc_grace_seconds: float = 600.0
    s3_endpoint_url: str | None = None
    """An S3-compatible endpoint (MinIO, Ceph, a test server); None: AWS S3."""

    def handle_output(
        self, context: dg.OutputContext, obj: pl.DataFrame | pl.LazyFrame | None
    ) -> None:
        if obj is None:
            return
        table = table_for(context.asset_key)
        frame = obj.collect() if isinstance(obj, pl.LazyFrame) else obj
        if not isinstance(frame, pl.DataFrame):
            raise TypeError(f"{table.name}: expected a polars DataFrame, got {type(obj).__name__}")
        market = context.partition_key if context.has_partition_key else WHOLE_TABLE
        commit = self.warehouse().write(table, market, frame)
        if not commit.views_refreshed:
            context.log.warning(f"{self.duckdb_path} stayed locked: its views lag the manifest")
        context.add_output_metadata(
            {
                "row_count": dg.MetadataValue.int(commit.rows),
                "path": dg.MetadataValue.path(str(commit.path)),
                "version": dg.MetadataValue.int(commit.version),
            }
        )

    def load_input(self, context: dg.InputContext) -> pl.DataFrame:
        """The upstream table's partitions; with input metadata `{MISSING_AS_EMPTY: True}` a
        partition not stored yet reads as no rows instead of failing the step."""
        table = table_for(context.asset_key)
        markets = context.asset_partition_keys if context.has_asset_partitions else None
        try:
            return self.warehouse().read(table, markets)
        except LookupError:
            if not (context.definition_metadata or {}).get(MISSING_AS_EMPTY):
                raise
        stored = self.warehouse().manifest()
        present = set(stored.tables.get(table.name, {})) if stored else set()
        kept = [m for m in markets or () if m in present]
        return self.warehouse().read(table, kept) if kept else table.empty()

    def warehouse(self) -> Warehouse | ObjectWarehouse:
        """The one store the configuration names: object storage for s3:// roots, else local."""
        if self.warehouse_dir.startswith("s3://"):
            location = S3Location.parse(self.warehouse_dir, self.s3_endpoint_url)
            return ObjectWarehouse(location, gc_grace=timedelta(seconds=self.gc_grace_seconds))
        return Warehouse(
            root=Path(self.warehouse_dir),
            duckdb_path=Path(self.duckdb_path) if self.duckdb_path else None,
            gc_grace=timedelta(seconds=self.gc_grace_seconds),
        )


def table_for(asset_key: dg.AssetKey) -> Table:
    """The catalog table an asset is stored as: its key's last component."""
    name = asset_key.path[-1]
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(
            f"asset {asset_key.to_user_string()!r} is not a warehouse table; "
            f"its key must end in one of {sorted(TABLES)}"
        ) from None
