"""Backtests of a market's daily bars: every strategy over every `years` window, as long frames."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.indicators.panel import to_panels
from pipelines.simulator import metrics
from pipelines.simulator.engine import Costs, Panel, Result, Rows, backtest
from pipelines.simulator.strategies import BY_NAME, Prices, Signals, Strategy
from pipelines.simulator.trades import trade_arrays

MAX_YEARS = 20
"""The API's clamp of `years`; longer histories are backtested over at most their last 20 years."""
_NO_DAY = np.iinfo(np.int64).max
"""Date padding after a symbol's last bar: later than any day, so counting `date < d` skips it."""


@dataclass(frozen=True)
class Market:
    """A market's bars as panels (column j = symbol j from its first bar) with their days."""

    symbols: list[str]
    prices: Prices
    days: Rows
    """(bars, symbols) days since 1970-01-01; `_NO_DAY` after a symbol's last bar."""
    last: Rows
    """Each symbol's last row."""

    def dates(self, rows: Rows, columns: Rows) -> pl.Series:
        return pl.Series(self.days[rows, columns]).cast(pl.Int32).cast(pl.Date)

    def last_dates(self) -> pl.Series:
        return self.dates(self.last, np.arange(len(self.symbols)))


@dataclass(frozen=True)
class Simulation:
    """Every strategy's trades and summaries for every window, and the full-history runs."""

    trades: pl.DataFrame
    summaries: pl.DataFrame
    full_runs: dict[str, tuple[Result, pl.DataFrame]]
    """Per strategy: the full-history run and its trades (for current actions)."""
    market: Market


def load_market(bars: pl.DataFrame) -> Market:
    """Panels of `bars` (columns symbol, date, open, high, low, close, volume), any row order."""
    bars = bars.sort("symbol", "date")
    p = to_panels(bars, ("symbol",))
    days = np.full(p.close.shape, _NO_DAY, np.int64)
    column = np.repeat(np.arange(len(p.lengths)), p.lengths)
    row = np.arange(bars.height) - np.repeat(np.cumsum(p.lengths) - p.lengths, p.lengths)
    days[row, column] = bars["date"].cast(pl.Int32).to_numpy()
    return Market(
        symbols=p.keys["symbol"].to_list(),
        prices=Prices(high=p.high, low=p.low, close=p.close),
        days=days,
        last=p.lengths - 1,
    )


def years_available(market: Market) -> Rows:
    """Per symbol: the number of `years` windows, ceil(history in years), at least 1, at most 20."""
    first = market.days[0].astype(float)
    last = market.days[market.last, np.arange(len(market.symbols))].astype(float)
    spans = np.ceil((last - first) / metrics.DAYS_PER_YEAR - 1e-9)
    return np.clip(spans, 1, MAX_YEARS).astype(np.int64)


def window_start(market: Market, years: int) -> Rows:
    """Per symbol: the first row on or after its last day minus `years` calendar years."""
    since = market.last_dates().dt.offset_by(f"-{years}y").cast(pl.Int32).to_numpy()
    start: Rows = (market.days < since[None, :]).sum(axis=0)
    return start


def _trade_frame(market: Market, result: Result) -> pl.DataFrame:
    close = market.prices.close
    arrays = trade_arrays(result, close, market.last)
    col = arrays["column"].to_numpy()
    start = market.dates(arrays["entry_row"].to_numpy(), col)
    marked = market.dates(arrays["mark_row"].to_numpy(), col)
    closed = arrays["closed"]
    return arrays.with_columns(
        symbol=pl.Series([market.symbols[j] for j in col], dtype=pl.String),
        action=pl.when(closed).then(pl.lit("Sell")).otherwise(pl.lit("Buy")),
        start_date=start,
        sell_date=pl.when(closed).then(marked),
        days_in_trade=(marked - start).dt.total_days().cast(pl.Int32),
    )


def _summary_frame(
    market: Market, result: Result, trades: pl.DataFrame, start: Rows, costs: Costs
) -> pl.DataFrame:
    close: Panel = market.prices.close
    columns = np.arange(len(market.symbols))
    equity = metrics.equity_metrics(
        result.equity, close, start, market.last, costs.initial_investment
    ).with_columns(
        symbol=pl.Series(market.symbols, dtype=pl.String),
        start_date=market.dates(start, columns),
        end_date=market.last_dates(),
    )
    return metrics.summaries(equity, metrics.trade_metrics(trades))


def run_window(
    market: Market, strategy: Strategy, signals: Signals, start: Rows, costs: Costs
) -> tuple[Result, pl.DataFrame, pl.DataFrame]:
    """One engine run of `strategy` from the `start` rows: the result, its trades and summaries."""
    p = market.prices
    result = backtest(
        p.close, p.high, p.low, signals.entry, signals.exit, start, strategy.rules, costs
    )
    trades = _trade_frame(market, result)
    return result, trades, _summary_frame(market, result, trades, start, costs)


def simulate(bars: pl.DataFrame, costs: Costs, strategies: tuple[str, ...]) -> Simulation:
    """Backtest every strategy over `years` = 1..ceil(history) of each symbol (at most 20).

    The window of `years` starts at the symbol's last day minus that many calendar years;
    `full_history` marks a window that starts on the symbol's first bar (the whole history).
    """
    market = load_market(bars)
    available = years_available(market)
    all_trades, all_summaries = [], []
    full_runs: dict[str, tuple[Result, pl.DataFrame]] = {}
    for name in strategies:
        strategy = BY_NAME[name]
        signals = strategy.signals(market.prices)
        for years in range(1, int(available.max(initial=1)) + 1):
            start = window_start(market, years)
            _, trades, summaries = run_window(market, strategy, signals, start, costs)
            keep = pl.Series(available >= years)
            window = {"strategy": name, "years": years}
            all_trades.append(_label(trades, keep, window, start == 0))
            all_summaries.append(_label(summaries, keep, window, start == 0))
            if years == 1:
                zero = np.zeros(len(market.symbols), np.int64)
                full_runs[name] = run_window(market, strategy, signals, zero, costs)[:2]
    return Simulation(
        trades=pl.concat(all_trades, how="vertical_relaxed"),
        summaries=pl.concat(all_summaries, how="vertical_relaxed"),
        full_runs=full_runs,
        market=market,
    )


def _label(
    frame: pl.DataFrame, keep: pl.Series, window: dict[str, object], full: Rows
) -> pl.DataFrame:
    """Rows of the symbols that have this window, labelled with strategy, years and full_history."""
    by_column = pl.DataFrame({"column": np.arange(len(keep)), "_keep": keep, "full_history": full})
    return (
        frame.join(by_column, on="column", how="left")
        .filter("_keep")
        .drop("_keep")
        .with_columns(
            strategy=pl.lit(window["strategy"], pl.String),
            years=pl.lit(window["years"], pl.Int32),
        )
    )
