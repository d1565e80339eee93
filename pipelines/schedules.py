"""The daily schedule: every asset of every market, one run per market partition."""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg

from pipelines.catalog import MARKETS
from pipelines.settings import PipelineSettings

DAILY_JOB = "materialize_all"
DAILY_CRON = "30 0 * * *"
"""00:30 UTC: after the day's bars have closed everywhere the embedded market models."""


def executor_def(name: str) -> dg.ExecutorDefinition:
    """The executor `MI_EXECUTOR` names. In-process by default: on 2 cores a process per step
    costs more than the steps, and runs give the parallelism. Celery and Kubernetes need their
    integration packages (not locked here; docs/deployment.md)."""
    if name == "multiprocess":
        return dg.multiprocess_executor.configured({"max_concurrent": 2})
    if name == "celery":
        from dagster_celery import celery_executor

        return celery_executor
    if name == "k8s":
        from dagster_k8s import k8s_job_executor

        return k8s_job_executor
    return dg.in_process_executor


def build_defs(settings: PipelineSettings | None = None) -> dg.Definitions:
    """The job over every asset (with its checks) and the schedule requesting it per market."""
    job = dg.define_asset_job(
        DAILY_JOB,
        selection=dg.AssetSelection.all(),
        executor_def=executor_def(settings.executor if settings else "in_process"),
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
