"""The two jobs (daily update, news refresh), their schedules, and the freshness checks that watch them."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from datetime import timedelta

import dagster as dg

from pipelines.catalog import BRIEFS, DAILY_PRICES, RAW_NEWS, SENTIMENT_DAILY
from pipelines.catalog.quality import DUE_AFTER
from pipelines.jobs.publish import build_expiry, build_publish
from pipelines.platform.executors import executor_def
from pipelines.platform.settings import PipelineSettings

DAILY_JOB = "daily_update"
NEWS_JOB = "news_refresh"
DAILY_PUBLISH = "daily_publish"
NEWS_PUBLISH = "news_publish"
VERSIONS = "warehouse_versions"
CLOSING_STEPS = (DAILY_PUBLISH, NEWS_PUBLISH, VERSIONS)
"""The steps every run of a job ends with, whatever it selects: its commit, then (daily) expiry."""
DAILY_CRON = "30 0 * * *"
"""00:30 UTC: after the day's bars have closed everywhere the embedded market models."""
PRICES_MAX_AGE = DUE_AFTER - timedelta(days=1)
"""At the deadline, daily_prices was materialized since the day closed (00:00 UTC)."""
_DEADLINE_MINUTES = int(PRICES_MAX_AGE.total_seconds()) // 60
PRICES_DEADLINE_CRON = f"{_DEADLINE_MINUTES % 60} {_DEADLINE_MINUTES // 60} * * *"
"""When the day that just closed must be in (02:30 UTC): the instant `data-status` calls it due
(`pipelines.catalog.quality.DUE_AFTER`), so prices are no older than one trading day."""
NEWS_MAX_AGE = timedelta(minutes=30)
"""News tables refreshed no longer ago than this (two cadences)."""


RUN_TAG = "mi/job"
"""Every run of the two jobs carries it: the instance's queue runs at most one run per job at a
time (`tag_concurrency_limits` in dagster.yaml), so a backfill and the schedule's run of the same
job never race to commit the same tables."""


def publish_assets(
    daily: Sequence[dg.AssetKey], news: Sequence[dg.AssetKey]
) -> list[dg.AssetsDefinition]:
    """The last step of each job: commits every table its run staged, in one manifest version."""
    return [
        build_publish(
            DAILY_PUBLISH,
            [k.to_user_string() for k in daily],
            True,
            "The daily run's tables made current together, in one warehouse version.",
        ),
        build_publish(
            NEWS_PUBLISH,
            [k.to_user_string() for k in news],
            False,
            "The news refresh's tables made current together, in one warehouse version.",
        ),
        build_expiry(
            VERSIONS,
            DAILY_PUBLISH,
            "The retained warehouse versions (as_of): what the retention no longer keeps leaves "
            "the log, and files no retained version names are deleted.",
        ),
    ]


def build_defs(
    settings: PipelineSettings, daily: Sequence[dg.AssetKey], news: Sequence[dg.AssetKey]
) -> dg.Definitions:
    """The jobs over `daily` and `news` assets with their publish steps, the
    schedules requesting them, and the freshness checks with the sensor that evaluates them."""
    executor = executor_def(settings)
    checks = freshness_checks()
    # The freshness checks are evaluated by their sensor against the clock, not inside the runs.
    watched = dg.AssetSelection.checks(*checks)
    daily_job = dg.define_asset_job(
        DAILY_JOB,
        selection=dg.AssetSelection.assets(*daily, DAILY_PUBLISH, VERSIONS) - watched,
        executor_def=executor,
        description="Bring every table of the daily layer to a day, from carried state.",
        run_tags={RUN_TAG: DAILY_JOB},
    )
    news_job = dg.define_asset_job(
        NEWS_JOB,
        selection=dg.AssetSelection.assets(*news, NEWS_PUBLISH) - watched,
        executor_def=executor,
        description="Read the feeds' new articles, enrich them, recount the days they touch.",
        run_tags={RUN_TAG: NEWS_JOB},
    )
    return dg.Definitions(
        jobs=[daily_job, news_job],
        schedules=[_daily_schedule(), _news_schedule(settings.news_cadence_minutes)],
        asset_checks=checks,
        sensors=[freshness_sensor(checks)],
    )


def freshness_checks() -> list[dg.AssetChecksDefinition]:
    """Prices: the day that just closed is materialized by 02:30 UTC. News: refreshed in the last
    30 minutes. Both fail (severity ERROR) when late.

    Dagster 1.13 marks these checks superseded by freshness policies, which are in preview and not
    partition-aware; the checks say exactly what we promise, so their notice is silenced here.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=dg.SupersessionWarning)
        prices = dg.build_last_update_freshness_checks(
            assets=[DAILY_PRICES.name],
            lower_bound_delta=PRICES_MAX_AGE,
            deadline_cron=PRICES_DEADLINE_CRON,
            severity=dg.AssetCheckSeverity.ERROR,
        )
        news = dg.build_last_update_freshness_checks(
            assets=[RAW_NEWS.name, BRIEFS.name, SENTIMENT_DAILY.name],
            lower_bound_delta=NEWS_MAX_AGE,
            severity=dg.AssetCheckSeverity.ERROR,
        )
    return [*prices, *news]


def freshness_sensor(checks: Sequence[dg.AssetChecksDefinition]) -> dg.SensorDefinition:
    """Evaluates the freshness checks every minute (on whenever the daemon runs)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=dg.SupersessionWarning)
        return dg.build_sensor_for_freshness_checks(
            freshness_checks=checks,
            name="freshness_checks_sensor",
            default_status=dg.DefaultSensorStatus.RUNNING,
        )


def _daily_schedule() -> dg.ScheduleDefinition:
    @dg.schedule(
        job_name=DAILY_JOB,
        cron_schedule=DAILY_CRON,
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,  # on whenever the daemon runs
        name="daily_update_schedule",
    )
    def daily_update_schedule(context: dg.ScheduleEvaluationContext) -> Iterator[dg.RunRequest]:
        day = (context.scheduled_execution_time - timedelta(days=1)).date().isoformat()
        config = {"resources": {"run_options": {"config": {"day": day}}}}
        yield dg.RunRequest(run_key=day, run_config=config)

    return daily_update_schedule


def _news_schedule(cadence_minutes: int) -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(
        name="news_refresh_schedule",
        job_name=NEWS_JOB,
        cron_schedule=f"*/{cadence_minutes} * * * *" if cadence_minutes < 60 else "0 * * * *",
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
    )
