"""The demo market has something to recommend on a typical day, in every market.

get-recommendations lists the symbols a strategy is long on at their latest bar; on a market where
no strategy holds anything it answers `[]`. Real markets are rarely there (a sell-off of a whole
coin market is); these tests hold the embedded market, with the strategies' real rules, to that.
"""

from __future__ import annotations

from datetime import date

import numpy as np
import polars as pl
import pytest

from pipelines.catalog import MARKETS, WEEKDAY_MARKETS
from pipelines.embedded_market.model import ANCHOR, HISTORY_START, simulate, trading_days
from pipelines.embedded_market.universe import build_universe
from pipelines.simulator.backtests import simulate as backtest
from pipelines.simulator.engine import Costs

END = date(2026, 6, 30)
FROM = date(2023, 1, 1)
SEEDS = (1, 2, 3, 4, 5, 6)


def _held_per_day(market: str, seed: int) -> dict[str, np.ndarray]:
    """Per strategy, how many of the market's symbols it is long on at each day's close."""
    universe = build_universe(market)
    days = trading_days(ANCHOR, END, market in WEEKDAY_MARKETS)
    bars = simulate(universe, seed, MARKETS.index(market), days, HISTORY_START)
    n_days, n = bars.close.shape
    frame = pl.DataFrame(
        {
            "symbol": np.tile(np.array(universe.symbols), n_days),
            "date": np.repeat(np.array(bars.days, dtype="datetime64[D]"), n),
            "close": bars.close.ravel(),
            "high": bars.high.ravel(),
            "low": bars.low.ravel(),
            "open": bars.open.ravel(),
            "volume": bars.volume.ravel(),
        }
    ).with_columns(pl.col("date").cast(pl.Date))
    runs = backtest(frame, Costs(), market).full_runs
    kept = np.array([d for d in bars.days if d >= FROM], dtype="datetime64[D]")[:, None]
    held = {}
    for name, trades in runs.items():
        start = trades["start_date"].to_numpy().astype("datetime64[D]")[None, :]
        sold = trades["sell_date"].to_numpy().astype("datetime64[D]")
        end = np.where(trades["closed"].to_numpy(), sold, np.datetime64("2100-01-01"))[None, :]
        held[name] = ((start <= kept) & (kept < end)).sum(axis=1)
    return held


@pytest.fixture(scope="module")
def empty_shares() -> dict[str, tuple[float, float]]:
    """Per market, the share of days (since 2023, six seeds) with no position of any strategy and
    with no position of the aggressive strategy (get-recommendations' default)."""
    shares = {}
    for market in MARKETS:
        runs = [_held_per_day(market, seed) for seed in SEEDS]
        anything = np.mean([((h["aggressive"] + h["conservative"]) == 0).mean() for h in runs])
        aggressive = np.mean([(h["aggressive"] == 0).mean() for h in runs])
        shares[market] = (float(anything), float(aggressive))
    return shares


@pytest.mark.parametrize("market", MARKETS)
def test_a_market_has_a_position_on_at_least_95_percent_of_days(
    empty_shares: dict[str, tuple[float, float]], market: str
) -> None:
    assert empty_shares[market][0] <= 0.05


@pytest.mark.parametrize("market", MARKETS)
def test_the_aggressive_strategy_alone_holds_something_on_at_least_90_percent_of_days(
    empty_shares: dict[str, tuple[float, float]], market: str
) -> None:
    assert empty_shares[market][1] <= 0.10
