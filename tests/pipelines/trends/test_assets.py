"""The trends multi-asset materialized for one market from a tiny stored daily_prices partition."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl

from pipelines.catalog import DAILY_PRICES, TREND_HISTORY, TREND_SEGMENTS
from pipelines.partitions import MARKET_PARTITIONS
from pipelines.trends.assets import trends
from pipelines.warehouse.io_manager import WarehouseIOManager
from pipelines.warehouse.store import Warehouse
from tests.pipelines.trends.helpers import bars


def test_materialize_stores_both_tables_and_every_check_passes(tmp_path: Path) -> None:
    warehouse = Warehouse(root=tmp_path / "warehouse")
    v = np.concatenate([np.linspace(50.0, 30.0, 60), np.linspace(30.0, 60.0, 60)[1:]])
    prices = bars({"AAA": v, "BBB": np.linspace(10.0, 20.0, 40)}, market="stocks")
    warehouse.write(DAILY_PRICES, "stocks", prices)
    result = dg.materialize(
        [dg.AssetSpec("daily_prices", partitions_def=MARKET_PARTITIONS), trends],
        partition_key="stocks",
        resources={"io_manager": WarehouseIOManager(warehouse_dir=str(tmp_path / "warehouse"))},
        raise_on_error=True,
    )
    evaluations = result.get_asset_check_evaluations()
    assert len(evaluations) == 6
    assert all(e.passed for e in evaluations), [e.check_name for e in evaluations if not e.passed]
    history = warehouse.read(TREND_HISTORY, ["stocks"])
    segments = warehouse.read(TREND_SEGMENTS, ["stocks"])
    assert history.height == prices.height
    assert history.schema == TREND_HISTORY.schema
    aaa = segments.filter(pl.col("symbol") == "AAA").sort("segment")
    assert aaa["trend"][0] == "down"
    assert aaa["trend"][-1] == "up"
    assert segments.filter("is_running").height == 2
    assert segments["last_updated"].n_unique() == 1
