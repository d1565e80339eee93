"""The daily schedule: every asset of every market, one run per market partition."""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg

from pipelines.catalog import MARKETS

DAILY_JOB = "materialize_all"
DAILY_CRON = "30 0 * * *"
"""00:30 UTC: after the day's bars have closed everywhere the embedded market models."""


def build_defs() -> dg.Definitions:
    """The job over every asset (with its checks) and the schedule requesting it per market."""
    # In-process: on 2 cores a process per step costs more than the steps; runs give parallelism.
    job = dg.define_asset_job(
        DAILY_JOB,
        selection=dg.AssetSelection.all(),
        executor_def=dg.in_process_executor,
        description="Materialize every asset for one market partition.",
    )

    @dg.schedule(
        job=job,
        cron_schedule=DAILY_CRON,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,  # on whenever the daemon runs
    )
    def daily_materialization(context: dg.ScheduleEvaluationContext) -> Iterator[dg.RunRequest]:
        day = context.scheduled_execution_time.date().isoformat()
        for market in MARKETS:
            yield dg.RunRequest(run_key=f"{day}:{market}", partition_key=market)

    return dg.Definitions(jobs=[job], schedules=[daily_materialization])
