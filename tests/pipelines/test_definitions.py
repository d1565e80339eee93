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
from pipelines.catalog import MARKETS, TABLES
from pipelines.partitions import MARKET_PARTITIONS
from pipelines.schedules import DAILY_JOB
from pipelines.settings import load_settings
from pipelines.warehouse.io_manager import WarehouseIOManager
from tests.mi import toy_definitions

EXPECTED_ASSETS = {
    "backtest_summaries",
    "backtest_trades",
    "briefs",
    "current_actions",
    "daily_prices",
    "embedded_market_files",
    "indicator_snapshots",
    "instrument_analyses",
    "instrument_rejects",
    "instruments",
    "market_summaries",
    "news_rejects",
    "price_rejects",
    "raw_news",
    "recommendations",
    "scorecards",
    "sentiment_daily",
    "sentiment_topics",
    "trend_history",
    "trend_segments",
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


def test_every_stored_asset_is_a_catalog_table_partitioned_by_market(
    defs: dg.Definitions,
) -> None:
    graph = defs.resolve_asset_graph()
    for key in graph.materializable_asset_keys:
        node = graph.get(key)
        assert node.partitions_def == MARKET_PARTITIONS, key
        assert key.path[-1] in TABLES or key.path[-1] == "embedded_market_files", key


def test_the_io_manager_writes_under_the_settings_data_dir(
    defs: dg.Definitions, tmp_path: Path
) -> None:
    io_manager = defs.resources["io_manager"]
    assert isinstance(io_manager, WarehouseIOManager)
    assert Path(io_manager.warehouse_dir) == tmp_path / "warehouse"
    assert Path(str(io_manager.duckdb_path)) == tmp_path / "warehouse.duckdb"


def test_importing_the_root_reads_no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MI_SEED", "not a number")
    with pytest.raises(ValueError, match="not a number"):
        load_settings()
    assert callable(definitions.defs)


def test_the_daily_schedule_requests_one_run_per_market(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MI_DATA_DIR", str(tmp_path))
    defs = toy_definitions.defs()
    schedule = defs.resolve_schedule_def("daily_materialization")
    assert schedule.cron_schedule == "30 0 * * *"
    assert schedule.execution_timezone == "UTC"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    when = datetime(2026, 1, 2, 0, 30, tzinfo=UTC)
    repository = defs.get_repository_def()
    with dg.build_schedule_context(
        repository_def=repository, scheduled_execution_time=when
    ) as context:
        requests = list(schedule.evaluate_tick(context).run_requests or [])
    assert [r.partition_key for r in requests] == list(MARKETS)
    assert [r.run_key for r in requests] == [f"2026-01-02:{m}" for m in MARKETS]
    assert defs.resolve_job_def(DAILY_JOB).executor_def.name == "in_process"


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
