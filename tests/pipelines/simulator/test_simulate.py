"""Whole simulations: equal to the numpy backtests they replaced, and the same from given signals."""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.catalog import STRATEGIES
from pipelines.catalog.trades import BACKTEST_SUMMARIES, BACKTEST_TRADES
from pipelines.indicators.panel import to_panels
from pipelines.simulator.backtests import (
    SIGNAL_COLUMNS,
    Prices,
    Simulation,
    signals_frame,
    simulate,
    simulate_with_signals,
)
from pipelines.simulator.engine import Costs, Mask
from tests.pipelines.simulator import numpy_engine
from tests.pipelines.simulator.numpy_signals import NUMPY_SIGNALS

COSTS = Costs()


def random_market(seed: int, symbols: int = 9) -> pl.DataFrame:
    """Regime-switching walks of 1 to 1,300 days (4 windows) ending on different days."""
    rng = np.random.default_rng(seed)
    frames = []
    for k, days in enumerate([1_300, 1, 40, *rng.integers(200, 1_300, symbols - 3).tolist()]):
        drift = np.repeat(rng.normal(0.0, 0.005, days // 60 + 1), 60)[:days]
        close = rng.uniform(5.0, 500.0) * np.exp(np.cumsum(rng.normal(drift, 0.025)))
        spread = np.abs(rng.normal(0.0, 0.01, days))
        last = date(2024, 12, 31) - timedelta(days=int(rng.integers(0, 400)))
        frames.append(
            pl.DataFrame(
                {
                    "symbol": f"S{k:02d}",
                    "date": pl.date_range(last - timedelta(days=days - 1), last, eager=True),
                    "open": close,
                    "high": close * (1.0 + spread),
                    "low": close * (1.0 - spread),
                    "close": close,
                    "volume": 1.0,
                }
            )
        )
    return pl.concat(frames)


TRADE_COLUMNS = [
    c.name for c in BACKTEST_TRADES.columns if c.name not in ("market", "fill", "dividends")
]
"""The numpy backtests know no dividends (these markets pay none: `dividends` is 0 throughout)."""
SUMMARY_COLUMNS = [c.name for c in BACKTEST_SUMMARIES.columns if c.name not in ("market", "fill")]
AT_CLOSE = pl.col("fill") == "close"
"""The numpy backtests filled at the signal bar's close only."""
FULL_RUN_COLUMNS = ["column", "entry_row", "exit_row", "closed", "exit_reason", "start_date"]


def assert_same_frames(ours: pl.DataFrame, theirs: pl.DataFrame) -> None:
    """Equal row for row; float columns to the bit (so -0.0 differs from 0.0)."""
    assert_frame_equal(ours, theirs, check_exact=True, check_dtypes=False)
    for name, dtype in ours.schema.items():
        if dtype.is_float():
            a, b = ours[name].fill_nan(None), theirs[name].fill_nan(None)
            assert_frame_equal(
                pl.DataFrame({name: a.to_numpy().view(np.uint64)}).filter(a.is_not_null()),
                pl.DataFrame({name: b.to_numpy().view(np.uint64)}).filter(b.is_not_null()),
            )


def assert_same_simulations(ours: Simulation, theirs: numpy_engine.Simulation) -> None:
    assert_same_frames(
        ours.trades.filter(AT_CLOSE).select(TRADE_COLUMNS), theirs.trades.select(TRADE_COLUMNS)
    )
    assert_same_frames(
        ours.summaries.filter(AT_CLOSE).select(SUMMARY_COLUMNS),
        theirs.summaries.select(SUMMARY_COLUMNS),
    )
    assert ours.market.symbols == theirs.market.symbols
    for name in STRATEGIES:
        assert_same_frames(
            ours.full_runs[name].select(FULL_RUN_COLUMNS),
            theirs.full_runs[name][1].select(FULL_RUN_COLUMNS),
        )


@pytest.mark.parametrize(("seed", "market"), [(2, "stocks"), (3, "crypto"), (4, "forex")])
def test_simulate_equals_the_numpy_backtests_bit_for_bit(seed: int, market: str) -> None:
    bars = random_market(seed)
    ours = simulate(bars, COSTS, market, STRATEGIES)
    theirs = numpy_engine.simulate(bars, COSTS, market, STRATEGIES)
    assert ours.trades.height > 100, "the market must exercise the strategies"
    assert ours.summaries["years"].max() == 4
    assert_same_simulations(ours, theirs)


def test_simulating_with_the_signals_frame_equals_simulate() -> None:
    bars = random_market(5)
    signals = signals_frame(bars)
    assert signals.columns == list(SIGNAL_COLUMNS)
    ours = simulate_with_signals(bars, signals, COSTS, "stocks")
    assert_same_frames(ours.trades, simulate(bars, COSTS, "stocks").trades)
    assert_same_frames(ours.summaries, simulate(bars, COSTS, "stocks").summaries)


def test_the_signals_frame_holds_each_bars_strategy_signals_in_symbol_then_date_order() -> None:
    bars = random_market(6)
    shuffled = bars.sample(fraction=1.0, shuffle=True, seed=1)
    ordered = bars.sort("symbol", "date")
    signals = signals_frame(shuffled)
    assert signals.height == bars.height
    p = to_panels(ordered)
    prices = Prices(high=p.high, low=p.low, close=p.close)

    def by_bar(panel: Mask) -> list[bool]:
        return np.concatenate([panel[:n, j] for j, n in enumerate(p.lengths)]).tolist()

    for name in STRATEGIES:
        expected = NUMPY_SIGNALS[name](prices)
        assert signals[f"{name}_entry"].to_list() == by_bar(expected.entry)
        assert signals[f"{name}_exit"].to_list() == by_bar(expected.exit)
    assert signals["aggressive_entry"].sum() > 10


def test_bars_in_any_row_order_give_the_same_simulation() -> None:
    bars = random_market(7)
    shuffled = bars.sample(fraction=1.0, shuffle=True, seed=2)
    ours = simulate(shuffled, COSTS, "stocks")
    theirs = simulate(bars, COSTS, "stocks")
    assert_same_frames(ours.trades, theirs.trades)
    assert_same_frames(ours.summaries, theirs.summaries)


def test_signals_need_one_row_per_bar() -> None:
    bars = random_market(8)
    with pytest.raises(ValueError, match="rows of signals"):
        simulate_with_signals(bars, signals_frame(bars).head(10), COSTS, "stocks")


def test_null_signals_are_refused() -> None:
    bars = random_market(8)
    signals = signals_frame(bars).with_columns(
        aggressive_exit=pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise(True)
    )
    with pytest.raises(ValueError, match="aggressive_exit"):
        simulate_with_signals(bars, signals, COSTS, "stocks")
