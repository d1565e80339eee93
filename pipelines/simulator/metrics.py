"""BacktestSummary fields from a run's trades and equity curve, for every symbol of a panel at once."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipelines.simulator.engine import Panel, Rows

DAYS_PER_YEAR = 365.25


def _at(panel: Panel, rows: Rows) -> Panel:
    at: Panel = panel[rows, np.arange(panel.shape[1])]
    return at


def equity_metrics(
    equity: Panel, close: Panel, start: Rows, last: Rows, initial: float
) -> pl.DataFrame:
    """Per panel column: final value, buy-and-hold, peak profit (max run-up %) and peak loss
    (max drawdown %, <= 0) of the equity curve between `start` and `last` rows."""
    with np.errstate(invalid="ignore", divide="ignore"):
        peak = np.fmax.accumulate(equity, axis=0)
        trough = np.fmin.accumulate(equity, axis=0)
        drawdown = np.nanmin(np.where(np.isnan(equity), np.inf, equity / peak - 1.0), axis=0)
        run_up = np.nanmax(np.where(np.isnan(equity), -np.inf, equity / trough - 1.0), axis=0)
    final = _at(equity, last)
    return pl.DataFrame(
        {
            "column": np.arange(equity.shape[1]),
            "final_value": final,
            "initial_investment": np.full(equity.shape[1], initial),
            "total_profit": final - initial,
            "profit_percent": 100.0 * (final / initial - 1.0),
            "buy_and_hold_profit_percent": 100.0 * (_at(close, last) / _at(close, start) - 1.0),
            "peak_profit": 100.0 * run_up,
            "peak_loss": 100.0 * drawdown,
        }
    )


def trade_metrics(trades: pl.DataFrame) -> pl.DataFrame:
    """Per `column`: counts and averages over CLOSED trades (`profit` > 0 counts as profitable)."""
    won, lost = pl.col("profit") > 0, pl.col("profit") <= 0
    return (
        trades.filter("closed")
        .group_by("column")
        .agg(
            total_trades=pl.len(),
            profitable_trades=won.sum(),
            unprofitable_trades=lost.sum(),
            average_profit=pl.col("profit").filter(won).mean(),
            average_profit_percent=pl.col("profit_percent").filter(won).mean(),
            average_loss=pl.col("profit").filter(lost).mean(),
            average_loss_percent=pl.col("profit_percent").filter(lost).mean(),
            average_trade_duration=pl.col("days_in_trade").mean(),
        )
    )


def summaries(equity_part: pl.DataFrame, trade_part: pl.DataFrame) -> pl.DataFrame:
    """Join both parts; durations and rates from `start_date`/`end_date` present in `equity_part`."""
    counts = ["total_trades", "profitable_trades", "unprofitable_trades"]
    joined = equity_part.join(trade_part, on="column", how="left").with_columns(
        pl.col(counts).fill_null(0).cast(pl.Int32)
    )
    duration = (pl.col("end_date") - pl.col("start_date")).dt.total_days()
    growth = pl.col("final_value") / pl.col("initial_investment")
    return joined.with_columns(
        backtest_duration=duration.cast(pl.Int32),
        annualized_return=pl.when(duration > 0).then(
            100.0 * (growth ** (DAYS_PER_YEAR / duration) - 1.0)
        ),
        profitable_trade_percent=pl.when(pl.col("total_trades") > 0).then(
            100.0 * pl.col("profitable_trades") / pl.col("total_trades")
        ),
    )
