"""`indicator_snapshots` materialized for one market from a tiny stored daily_prices partition."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl

from pipelines.catalog import DAILY_PRICES, INDICATOR_SNAPSHOTS
from pipelines.indicators.assets import indicator_snapshots
from pipelines.partitions import MARKET_PARTITIONS
from pipelines.warehouse.io_manager import WarehouseIOManager
from pipelines.warehouse.store import Warehouse
from tests.pipelines.indicators.oracle import random_walk


def daily_prices(market: str, days: dict[str, int]) -> pl.DataFrame:
    """Consecutive daily bars of a few symbols, in DAILY_PRICES columns."""
    frames = []
    for seed, (symbol, count) in enumerate(days.items()):
        arrays = random_walk(seed, count)
        dates = [date(2024, 1, 1) + timedelta(days=i) for i in range(count)]
        frames.append(
            pl.DataFrame(
                {
                    "market": market,
                    "symbol": symbol,
                    "date": dates,
                    "timestamp": [
                        int((d - date(1970, 1, 1)).total_seconds()) * 1000 for d in dates
                    ],
                    **arrays,
                    "source": "test",
                }
            )
        )
    return DAILY_PRICES.conform(pl.concat(frames))


def materialize(
    tmp_path: Path, asset: dg.AssetsDefinition, market: str
) -> dg.ExecuteInProcessResult:
    """Run `asset` for one market over the daily_prices stored in a warehouse under tmp_path."""
    upstream = dg.AssetSpec("daily_prices", partitions_def=MARKET_PARTITIONS)
    io_manager = WarehouseIOManager(warehouse_dir=str(tmp_path / "warehouse"))
    return dg.materialize(
        [upstream, asset],
        partition_key=market,
        resources={"io_manager": io_manager},
        raise_on_error=True,
    )


def test_materialize_stores_every_period_of_every_symbol_and_passes_its_checks(
    tmp_path: Path,
) -> None:
    prices = daily_prices("crypto", {"BTC": 400, "ETH": 30})
    Warehouse(root=tmp_path / "warehouse").write(DAILY_PRICES, "crypto", prices)
    result = materialize(tmp_path, indicator_snapshots, "crypto")
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert {c.check_name for c in checks} == {
        "finite_values",
        "oscillators_in_0_100",
        "every_period_per_symbol",
    }
    assert all(c.passed for c in checks)
    stored = Warehouse(root=tmp_path / "warehouse").read(INDICATOR_SNAPSHOTS, ["crypto"])
    assert stored.height == 2 * 364
    assert stored.schema == INDICATOR_SNAPSHOTS.schema
    assert (stored["market"] == "crypto").all()
    btc = stored.filter(pl.col("symbol") == "BTC").sort("period")
    assert btc["date"].unique().to_list() == [date(2024, 1, 1) + timedelta(days=399)]
    assert not np.isnan(btc["sma"].drop_nulls().to_numpy()).any()
