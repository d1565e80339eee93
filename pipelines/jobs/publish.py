"""The last steps of each job: the commit of every table its steps staged, then the version log's
expiry (daily)."""

from collections.abc import Sequence

import dagster as dg

from pipelines.platform.daily import in_daily_job
from pipelines.platform.runs import step_name
from pipelines.warehouse.resource import WarehouseResource


def build_publish(
    name: str, upstream: Sequence[str], daily: bool, description: str
) -> dg.AssetsDefinition:
    """The last step of a job: commit every table the run's steps staged, in one manifest version."""

    @dg.asset(name=name, deps=list(upstream), group_name="warehouse", description=description)
    def publish(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource
    ) -> dg.MaterializeResult:
        published = warehouse.transaction(context.run.run_id, step_name(context)).commit()
        if published.published:
            context.log.info(f"published warehouse version {published.version}")
        else:
            context.log.info(f"nothing new: warehouse version {published.version} stands")
        return dg.MaterializeResult(
            metadata={
                "version": dg.MetadataValue.int(published.version),
                "published": published.published,
            }
        )

    return in_daily_job(publish) if daily else publish


def build_expiry(name: str, upstream: str, description: str) -> dg.AssetsDefinition:
    """After the daily publish: drop from the version log what the retention no longer keeps and
    delete the files no retained version names (docs/warehouse.md, "Versions and retention")."""

    @dg.asset(name=name, deps=[upstream], group_name="warehouse", description=description)
    def versions(
        context: dg.AssetExecutionContext, warehouse: WarehouseResource
    ) -> dg.MaterializeResult:
        expiry = warehouse.store().expire(warehouse.retention)
        context.log.info(
            f"version log: {len(expiry.kept)} kept, {len(expiry.expired)} expired, "
            f"{len(expiry.removed)} files ({expiry.freed_bytes:,} bytes) deleted"
        )
        oldest = expiry.kept[0].published if expiry.kept else None
        return dg.MaterializeResult(
            metadata={
                "versions_kept": dg.MetadataValue.int(len(expiry.kept)),
                "versions_expired": dg.MetadataValue.int(len(expiry.expired)),
                "oldest_retained": dg.MetadataValue.text(oldest or "none"),
                "files_deleted": dg.MetadataValue.int(len(expiry.removed)),
                "bytes_freed": dg.MetadataValue.int(expiry.freed_bytes),
            }
        )

    return in_daily_job(versions)
