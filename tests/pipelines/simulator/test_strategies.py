"""The strategies' exits are in units of each market's typical daily volatility."""

from __future__ import annotations

from datetime import date, timedelta

import polars as pl
import pytest

from pipelines.catalog import MARKETS
from pipelines.simulator.backtests import SIGNAL_COLUMNS, simulate_with_signals
from pipelines.simulator.engine import Costs, ExitRules
from pipelines.simulator.strategies import AGGRESSIVE, CONSERVATIVE, TYPICAL_VOLATILITY


def test_stocks_keep_the_8_percent_trailing_stop_20_percent_take_profit_and_12_percent_stop() -> (
    None
):
    assert AGGRESSIVE.rules("stocks") == ExitRules(trailing_stop=0.08, take_profit=0.20)
    assert CONSERVATIVE.rules("stocks") == ExitRules(stop_loss=0.12)


@pytest.mark.parametrize("market", MARKETS)
def test_every_market_sets_its_stops_the_same_number_of_its_volatility_units_away(
    market: str,
) -> None:
    unit = TYPICAL_VOLATILITY[market]
    aggressive, conservative = AGGRESSIVE.rules(market), CONSERVATIVE.rules(market)
    assert aggressive.trailing_stop == pytest.approx(4 * unit, abs=5e-5)
    assert aggressive.take_profit == pytest.approx(10 * unit, abs=5e-5)
    assert conservative.stop_loss == pytest.approx(6 * unit, abs=5e-5)
    assert aggressive.stop_loss is None
    assert conservative.trailing_stop is None


def test_crypto_stops_sit_twice_as_far_as_stocks_and_forex_closer() -> None:
    assert AGGRESSIVE.rules("crypto").trailing_stop == 0.16
    assert CONSERVATIVE.rules("crypto").stop_loss == 0.24
    assert AGGRESSIVE.rules("forex").trailing_stop == 0.022


def _one_symbol(closes: list[float]) -> pl.DataFrame:
    first = date(2024, 1, 1)
    return pl.DataFrame(
        {
            "symbol": ["X"] * len(closes),
            "date": [first + timedelta(days=i) for i in range(len(closes))],
            "open": closes,
            "close": closes,
            "high": closes,
            "low": closes,
        }
    )


def test_a_ten_percent_pullback_stops_out_a_stock_but_not_a_coin() -> None:
    # Entry at the close of bar 1 (100), a high close of 110, then 99: 10 % below the high.
    bars = _one_symbol([100.0, 100.0, 110.0, 99.0, 101.0])
    signals = pl.DataFrame({c: [False] * bars.height for c in SIGNAL_COLUMNS}).with_columns(
        aggressive_entry=pl.Series([False, True, False, False, False])
    )
    free = Costs(fee=0.0, slippage=0.0)
    exits = {
        market: simulate_with_signals(bars, signals, free, market, ("aggressive",))
        .full_runs["aggressive"]
        .select("sell_date", "exit_reason")
        .row(0)
        for market in ("stocks", "crypto")
    }
    assert exits["stocks"] == (date(2024, 1, 4), "trailing_stop")
    assert exits["crypto"] == (None, None)
