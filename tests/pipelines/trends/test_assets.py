"""The trends multi-asset materialized by the daily job: both tables stored, every check run and passing."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.catalog import TREND_HISTORY, TREND_SEGMENTS
from pipelines.trends.assets import build_trends
from pipelines.warehouse.store import Warehouse
from tests.pipelines.synthetic import load_prices, materialize_daily
from tests.pipelines.trends.helpers import bars


def test_materialize_stores_both_tables_and_every_check_passes(tmp_path: Path) -> None:
    warehouse = Warehouse(root=tmp_path / "warehouse")
    v = np.concatenate([np.linspace(50.0, 30.0, 60), np.linspace(30.0, 60.0, 60)[1:]])
    prices = bars({"AAA": v, "BBB": np.linspace(10.0, 20.0, 40)}, market="stocks")
    last = date(2024, 1, 1) + timedelta(days=118)
    load_prices(warehouse, prices.drop("market", "timestamp", "source"), "stocks", last)
    result = materialize_daily(warehouse, [build_trends()], last, ["stocks"])
    evaluations = result.get_asset_check_evaluations()
    assert len(evaluations) == 6
    assert all(e.passed for e in evaluations), [e.check_name for e in evaluations if not e.passed]
    history = warehouse.read(TREND_HISTORY, ["stocks"])
    segments = warehouse.read(TREND_SEGMENTS, ["stocks"])
    stored = warehouse.read(TREND_HISTORY)
    assert history.height == stored.height > 0
    assert history.schema == TREND_HISTORY.schema
    aaa = segments.filter(pl.col("symbol") == "AAA").sort("segment")
    assert aaa["trend"][0] == "down"
    assert aaa["trend"][-1] == "up"
    assert segments.filter("is_running").height == 2
    assert segments["last_updated"].n_unique() == 1


def test_a_run_with_nothing_new_keeps_the_stored_files(tmp_path: Path) -> None:
    warehouse = Warehouse(root=tmp_path / "warehouse")
    prices = bars({"AAA": np.linspace(10.0, 20.0, 500)}, market="crypto")
    last = date(2024, 1, 1) + timedelta(days=499)
    load_prices(warehouse, prices.drop("market", "timestamp", "source"), "crypto", last)
    materialize_daily(warehouse, [build_trends()], last, ["crypto"])
    before = warehouse.manifest()
    result = materialize_daily(warehouse, [build_trends()], last, ["crypto"])
    after = warehouse.manifest()
    assert before is not None
    assert after is not None
    assert after.partitions(TREND_HISTORY.name, "crypto") == before.partitions(
        TREND_HISTORY.name, "crypto"
    )
    metadata = result.get_asset_materialization_events()[0].materialization.metadata
    assert metadata["mi/rows_written"].value == 0
    assert metadata["dagster/row_count"].value == 500  # the table's rows, not the run's
