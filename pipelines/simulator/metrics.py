"""BacktestSummary fields from runs' equity figures and trades, for many symbols and windows at once."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipelines.simulator.engine import Panel, Rows, curve_figures

DAYS_PER_YEAR = 365.25


def equity_frame(
    final: Panel,
    run_up: Panel,
    drawdown: Panel,
    first_close: Panel,
    last_close: Panel,
    initial: float,
    dividends: Panel | None = None,
) -> pl.DataFrame:
    """Final value, profit, buy-and-hold, peak profit (max run-up %) and peak loss (max drawdown
    %, <= 0) per run, from its final equity, curve figures (fractions) and window's closes;
    buy-and-hold is credited the `dividends` per unit of the window (`window_dividends`)."""
    paid = np.zeros(len(final)) if dividends is None else dividends
    return pl.DataFrame(
        {
            "final_value": final,
            "initial_investment": np.full(len(final), initial),
            "total_profit": final - initial,
            "profit_percent": 100.0 * (final / initial - 1.0),
            "buy_and_hold_profit_percent": 100.0 * ((last_close + paid) / first_close - 1.0),
            "peak_profit": 100.0 * run_up,
            "peak_loss": 100.0 * drawdown,
        }
    )


def window_dividends(paid: pl.DataFrame, windows: pl.DataFrame) -> Panel:
    """Per window (symbol, start_date, end_date; any order): the dividends per unit of the ex-dates
    after its first bar through its last, what a unit bought at the first close was credited.
    `paid` holds symbol, date, dividend of ex-dates. Summed in date order, so a replayed and a
    carried-on window add the same numbers the same way."""
    if paid.is_empty() or windows.is_empty():
        return np.zeros(windows.height)
    numbered = windows.select("symbol", "start_date", "end_date").with_row_index("_window")
    inside = (
        numbered.join(paid.filter(pl.col("dividend") > 0), on="symbol")
        .filter((pl.col("date") > pl.col("start_date")) & (pl.col("date") <= pl.col("end_date")))
        .sort("_window", "date")
        .group_by("_window", maintain_order=True)
        .agg(pl.col("dividend").sum())
    )
    sums = numbered.select("_window").join(inside, on="_window", how="left", maintain_order="left")
    found: Panel = sums["dividend"].fill_null(0.0).to_numpy()
    return found


def equity_metrics(
    equity: Panel, close: Panel, start: Rows, last: Rows, initial: float
) -> pl.DataFrame:
    """`equity_frame` per column of an equity panel (NaN outside the window between `start` and
    `last` rows), with `column`."""
    run_up, drawdown = curve_figures(equity)
    columns = np.arange(equity.shape[1])
    return equity_frame(
        final=equity[last, columns],
        run_up=run_up,
        drawdown=drawdown,
        first_close=close[start, columns],
        last_close=close[last, columns],
        initial=initial,
    ).with_columns(column=pl.Series(columns))


def trade_metrics(trades: pl.DataFrame, by: str = "column") -> pl.DataFrame:
    """Per `by`: counts and averages over CLOSED trades (`profit` > 0 counts as profitable)."""
    won, lost = pl.col("profit") > 0, pl.col("profit") <= 0
    return (
        trades.select(by, "closed", "profit", "profit_percent", "days_in_trade")
        .filter("closed")
        .group_by(by)
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


def summaries(
    equity_part: pl.DataFrame, trade_part: pl.DataFrame, on: str = "column"
) -> pl.DataFrame:
    """Join both parts on `on` (in `equity_part`'s row order); durations and rates from
    `start_date`/`end_date` present in `equity_part`."""
    counts = ["total_trades", "profitable_trades", "unprofitable_trades"]
    joined = equity_part.join(trade_part, on=on, how="left", maintain_order="left").with_columns(
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
