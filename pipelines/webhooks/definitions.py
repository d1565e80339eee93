"""The webhooks Definitions: a sensor deriving events after each warehouse write, a delivery job and its sensor."""

import time

import dagster as dg

from pipelines.platform.settings import PipelineSettings
from pipelines.webhooks.delivery import Worker
from pipelines.webhooks.service import WebhookSettings, derive_events, webhook_settings

DELIVERY_JOB = "webhook_delivery"


def build_defs(
    settings: PipelineSettings, webhooks: WebhookSettings | None = None
) -> dg.Definitions:
    """Sensors `webhook_events` and `webhook_delivery_sensor`, job `webhook_delivery`."""
    resolved = webhooks or webhook_settings(settings.data_dir, warehouse=settings.warehouse)
    job = _delivery_job(resolved)
    return dg.Definitions(
        jobs=[job], sensors=[_events_sensor(resolved), _delivery_sensor(resolved)]
    )


def _events_sensor(webhooks: WebhookSettings) -> dg.SensorDefinition:
    @dg.sensor(
        name="webhook_events",
        minimum_interval_seconds=30,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="After every warehouse write (a new manifest version), derive events into the outbox.",
    )
    def webhook_events(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        manifest = webhooks.warehouse.read_manifest()
        if manifest is None or context.cursor == str(manifest.version):
            return dg.SkipReason("no new warehouse version")
        outbox = webhooks.open_outbox()
        try:
            counts = derive_events(webhooks.warehouse, outbox, webhooks.load(), time.time())
        finally:
            outbox.close()
        context.update_cursor(str(manifest.version))
        return dg.SkipReason(f"version {manifest.version}: new events {counts}")

    return webhook_events


def _delivery_job(webhooks: WebhookSettings) -> dg.JobDefinition:
    @dg.op(name="deliver_webhooks")
    def deliver_webhooks(context: dg.OpExecutionContext) -> None:
        outbox = webhooks.open_outbox()
        worker = Worker(outbox=outbox, config=webhooks.load())
        try:
            outcomes = worker.deliver_due()
        finally:
            worker.close()
            outbox.close()
        results = [o.result for o in outcomes]
        context.log.info(
            f"delivered {results.count('delivered')}, retrying {results.count('retry')}, "
            f"dead-lettered {results.count('dead')}"
        )

    @dg.job(name=DELIVERY_JOB, executor_def=dg.in_process_executor)
    def webhook_delivery() -> None:
        deliver_webhooks()

    return webhook_delivery


def _delivery_sensor(webhooks: WebhookSettings) -> dg.SensorDefinition:
    # Targets the job by name: a sensor holding the job itself is rebuilt when Definitions bind
    # resources, which trips a Dagster beta warning (warnings are errors in our tests).
    @dg.sensor(
        name="webhook_delivery_sensor",
        job_name=DELIVERY_JOB,
        minimum_interval_seconds=15,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Start a delivery run when a queued delivery is due and none is running.",
    )
    def webhook_delivery_sensor(
        context: dg.SensorEvaluationContext,
    ) -> dg.RunRequest | dg.SkipReason:
        if not webhooks.outbox_path.exists():
            return dg.SkipReason("no outbox yet")
        outbox = webhooks.open_outbox()
        try:
            due = outbox.next_due()
        finally:
            outbox.close()
        if due is None or due > time.time():
            return dg.SkipReason("nothing due")
        running = context.instance.get_runs_count(
            dg.RunsFilter(
                job_name=DELIVERY_JOB,
                statuses=[
                    dg.DagsterRunStatus.QUEUED,
                    dg.DagsterRunStatus.NOT_STARTED,
                    dg.DagsterRunStatus.STARTING,
                    dg.DagsterRunStatus.STARTED,
                ],
            )
        )
        if running:
            return dg.SkipReason("a delivery run is in progress")
        return dg.RunRequest()

    return webhook_delivery_sensor
