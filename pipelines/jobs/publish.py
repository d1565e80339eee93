"""The last step of each job: the commit of every table its steps staged."""

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
