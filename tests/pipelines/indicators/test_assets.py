"""`indicator_snapshots` of the daily job materialized for one market over a few stored symbols."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.catalog import INDICATOR_SNAPSHOTS
from pipelines.indicators.assets import build_indicator_snapshots
from pipelines.warehouse.store import Warehouse
from tests.pipelines.indicators.oracle import random_walk
from tests.pipelines.synthetic import load_prices, materialize_daily

FIRST = date(2024, 1, 1)


def bars(days: dict[str, int]) -> pl.DataFrame:
    """Consecutive daily bars of a few symbols from FIRST (symbol, date, open..volume)."""
    frames = [
        pl.DataFrame(
            {
                "symbol": symbol,
                "date": [FIRST + timedelta(days=i) for i in range(count)],
                **random_walk(seed, count),
            }
        )
        for seed, (symbol, count) in enumerate(days.items())
    ]
    return pl.concat(frames)


def test_materialize_stores_every_period_of_every_symbol_and_passes_its_checks(
    tmp_path: Path,
) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    last = FIRST + timedelta(days=399)
    load_prices(warehouse, bars({"BTC": 400, "ETH": 30}), "crypto", last)
    result = materialize_daily(warehouse, [build_indicator_snapshots()], last, ["crypto"])
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert {c.check_name for c in checks} == {
        "finite_values",
        "oscillators_in_0_100",
        "every_period_per_symbol",
    }
    assert all(c.passed for c in checks)
    stored = warehouse.read(INDICATOR_SNAPSHOTS, ["crypto"])
    assert stored.height == 2 * 364
    assert stored.schema == INDICATOR_SNAPSHOTS.schema
    assert (stored["market"] == "crypto").all()
    btc = stored.filter(pl.col("symbol") == "BTC").sort("period")
    assert btc["date"].unique().to_list() == [last]
    assert not np.isnan(btc["sma"].drop_nulls().to_numpy()).any()
