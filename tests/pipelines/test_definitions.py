"""The composition root: `pipelines.definitions` loads, and its graph, job and schedule are as expected."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from pipelines import definitions
from pipelines.catalog import TABLES
from pipelines.jobs.schedules import (
    DAILY_JOB,
    DAILY_PUBLISH,
    NEWS_JOB,
    NEWS_PUBLISH,
    RUN_TAG,
    VERSIONS,
)
from pipelines.platform.daily import DAILY_TAGS
from pipelines.platform.settings import load_settings
from pipelines.warehouse.resource import WarehouseResource

EXPECTED_ASSETS = {
    "backtest_summaries",
    "backtest_trades",
    "briefs",
    "corporate_action_rejects",
    "corporate_actions",
    "current_actions",
    "daily_prices",
    "daily_publish",
    "embedded_market_news",
    "embedded_market_prices",
    "indicator_snapshots",
    "instrument_analyses",
    "instrument_rejects",
    "instruments",
    "market_summaries",
    "news_days",
    "news_publish",
    "news_rejects",
    "price_adjustments",
    "price_days",
    "price_rejects",
    "raw_news",
    "recommendations",
    "scorecards",
    "sentiment_daily",
    "sentiment_topics",
    "trend_history",
    "trend_segments",
    "warehouse_versions",
}
"""Snapshot of the asset graph: update it in the commit that adds a domain to DOMAINS."""


@pytest.fixture
def defs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dg.Definitions:
    """The project's Definitions as `dagster dev` loads them, with data under tmp_path."""
    monkeypatch.setenv("MI_DATA_DIR", str(tmp_path))
    return definitions.defs()


def test_definitions_load_with_the_expected_asset_graph(defs: dg.Definitions) -> None:
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == EXPECTED_ASSETS


def test_the_webhooks_domain_adds_its_sensors_and_delivery_job(defs: dg.Definitions) -> None:
    sensors = {s.name for s in defs.get_repository_def().sensor_defs}
    assert {"webhook_events", "webhook_delivery_sensor"} <= sensors
    assert defs.resolve_job_def("webhook_delivery").executor_def.name == "in_process"


NEWS_ASSETS = {
    "embedded_market_news",
    "raw_news",
    "news_rejects",
    "news_days",
    "briefs",
    "sentiment_daily",
    "sentiment_topics",
    NEWS_PUBLISH,
}
"""The news refresh's assets; every other asset is the daily job's (tagged `mi/job: daily`)."""


def test_no_asset_is_partitioned_and_the_daily_ones_are_tagged_for_their_job(
    defs: dg.Definitions,
) -> None:
    """Rule: a carried-state asset is brought to a day by one run, so it has no partitions whose
    status could differ from the data (Dagster showed 1,065 of 1,066 days "missing")."""
    graph = defs.resolve_asset_graph()
    for key in graph.materializable_asset_keys:
        node = graph.get(key)
        name = key.path[-1]
        assert node.partitions_def is None, key
        expected = {} if name in NEWS_ASSETS else DAILY_TAGS
        assert {k: v for k, v in node.tags.items() if k in DAILY_TAGS} == expected, key
        closing = name.endswith("_publish") or name == VERSIONS
        assert name in TABLES or name.startswith("embedded_market") or closing, key


def test_each_job_runs_its_assets_and_ends_with_its_publish_step_then_expiry(
    defs: dg.Definitions,
) -> None:
    daily = defs.resolve_job_def(DAILY_JOB)
    news = defs.resolve_job_def(NEWS_JOB)
    daily_keys = {k.path[-1] for k in daily.asset_layer.executable_asset_keys}
    news_keys = {k.path[-1] for k in news.asset_layer.executable_asset_keys}
    assert news_keys == NEWS_ASSETS
    assert daily_keys == EXPECTED_ASSETS - NEWS_ASSETS
    graph = defs.resolve_asset_graph()
    publish = graph.get(dg.AssetKey(DAILY_PUBLISH))
    assert {k.path[-1] for k in publish.parent_keys} == daily_keys - {DAILY_PUBLISH, VERSIONS}
    expiry = graph.get(dg.AssetKey(VERSIONS))
    assert {k.path[-1] for k in expiry.parent_keys} == {DAILY_PUBLISH}
    assert daily.executor_def.name == "in_process"


def test_the_warehouse_resource_writes_under_the_settings_data_dir(
    defs: dg.Definitions, tmp_path: Path
) -> None:
    warehouse = (defs.resources or {})["warehouse"]
    assert isinstance(warehouse, WarehouseResource)
    assert Path(warehouse.warehouse_dir) == tmp_path / "warehouse"
    assert Path(str(warehouse.duckdb_path)) == tmp_path / "warehouse.duckdb"


def test_importing_the_root_reads_no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MI_SEED", "not a number")
    with pytest.raises(ValueError, match="not a number"):
        load_settings()
    assert callable(definitions.defs)


def test_the_daily_schedule_closes_the_day_that_just_ended(defs: dg.Definitions) -> None:
    schedule = defs.resolve_schedule_def("daily_update_schedule")
    assert schedule.cron_schedule == "30 0 * * *"
    assert schedule.execution_timezone == "UTC"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    when = datetime(2026, 1, 2, 0, 30, tzinfo=UTC)
    with dg.build_schedule_context(
        repository_def=defs.get_repository_def(), scheduled_execution_time=when
    ) as context:
        requests = list(schedule.evaluate_tick(context).run_requests or [])
    assert [r.run_key for r in requests] == ["2026-01-01"]
    assert requests[0].run_config == {
        "resources": {"run_options": {"config": {"day": "2026-01-01"}}}
    }


def test_the_news_refreshes_every_fifteen_minutes_by_default(defs: dg.Definitions) -> None:
    schedule = defs.resolve_schedule_def("news_refresh_schedule")
    assert schedule.cron_schedule == "*/15 * * * *"
    assert schedule.job_name == NEWS_JOB
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING


def test_the_news_cadence_is_configurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MI_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MI_NEWS_CADENCE_MINUTES", "5")
    schedule = definitions.defs().resolve_schedule_def("news_refresh_schedule")
    assert schedule.cron_schedule == "*/5 * * * *"
    monkeypatch.setenv("MI_NEWS_CADENCE_MINUTES", "7")
    with pytest.raises(ValueError, match="does not divide an hour"):
        definitions.defs()


def test_freshness_checks_watch_prices_and_news_and_a_sensor_runs_them(
    defs: dg.Definitions,
) -> None:
    graph = defs.resolve_asset_graph()
    watched = {
        key.asset_key.path[-1]
        for key in graph.asset_check_keys
        if key.name.startswith("freshness_check")
    }
    assert watched == {"daily_prices", "raw_news", "briefs", "sentiment_daily"}
    sensor = defs.resolve_sensor_def("freshness_checks_sensor")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING


@pytest.mark.slow
def test_the_dagster_cli_finds_the_lazy_definitions(tmp_path: Path) -> None:
    # What `make dagster` relies on: pyproject's [tool.dagster] module and the lazy `defs`.
    dagster = Path(sys.executable).with_name("dagster")
    env = {**os.environ, "MI_DATA_DIR": str(tmp_path), "DAGSTER_HOME": str(tmp_path)}
    completed = subprocess.run(
        [str(dagster), "definitions", "validate"],
        cwd=Path(definitions.__file__).parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "All code locations passed validation" in completed.stdout + completed.stderr


def test_every_run_of_the_two_jobs_carries_the_job_tag_the_queue_limits(
    defs: dg.Definitions,
) -> None:
    for job in (DAILY_JOB, NEWS_JOB):
        assert (defs.resolve_job_def(job).run_tags or {})[RUN_TAG] == job
