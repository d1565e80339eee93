"""Engine runs' trades as one row per trade: symbol and rows, prices, fees and profit."""

from __future__ import annotations

import numpy as np
import polars as pl
from numpy.typing import NDArray

from pipelines.simulator.engine import DELISTED, EXIT_REASONS, FlatBars, Rows, Runs

REASONS = pl.Series([EXIT_REASONS.get(code) for code in range(max(EXIT_REASONS) + 1)])
"""Exit reason names by code; code NO_EXIT (0, an open trade) is null."""

Money = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]


def money(
    closed: NDArray[np.bool_],
    units: NDArray[np.float64],
    entry_price: NDArray[np.float64],
    entry_fee: NDArray[np.float64],
    exit_price: NDArray[np.float64],
    exit_fee: NDArray[np.float64],
    last_price: NDArray[np.float64],
    dividends: NDArray[np.float64],
) -> Money:
    """(fees, profit, profit_percent) of trades: a closed one at its exit price, an open one
    marked at `last_price`, each with the dividends it was credited; the one formula of a
    replayed and a carried-on trade."""
    fees = entry_fee + exit_fee
    value = np.where(closed, exit_price, last_price)
    profit = units * (value - entry_price) - fees + dividends
    spent = units * entry_price + entry_fee
    return fees, profit, 100.0 * profit / spent


def last_prices(
    bars: FlatBars, fill: str, closed: NDArray[np.bool_], marked: Rows, reason: Rows
) -> NDArray[np.float64]:
    """Each trade's `last_price` at its bar `marked` (a position in `bars`): a closed trade's
    exit at the fill's market price (`FlatBars.prices_at`), except a delisted exit (at the last
    close, whatever the fill), an open one the close."""
    at_fill = closed & (reason != DELISTED)
    exits: NDArray[np.float64] = np.where(at_fill, bars.prices_at(fill)[marked], bars.close[marked])
    return exits


def trade_arrays(runs: Runs, task_column: Rows, bars: FlatBars, fill: str) -> pl.DataFrame:
    """One row per trade of `runs` (task by task): `column`, `entry_row`, `exit_row` (-1 while
    open), `mark_row` (the exit bar, or the symbol's last bar while open), `closed` and the numbers.

    Rows count from the symbol's first bar. A closed trade's `last_price` is its exit's market
    price (`last_prices`); an open trade is marked at its symbol's last close.
    """
    t = runs.trades
    col = task_column[t.task]
    closed = t.exit_row >= 0
    mark_row = np.where(closed, t.exit_row, bars.length[col] - 1)
    last_price = last_prices(bars, fill, closed, bars.offset[col] + mark_row, t.reason)
    fees, profit, percent = money(
        closed,
        t.units,
        t.entry_price,
        t.entry_fee,
        t.exit_price,
        t.exit_fee,
        last_price,
        t.dividends,
    )
    return pl.DataFrame(
        {
            "column": col,
            "entry_row": t.entry_row,
            "exit_row": t.exit_row,
            "mark_row": mark_row,
            "closed": closed,
            "exit_reason": REASONS.gather(t.reason),
            "start_price": bars.prices_at(fill)[bars.offset[col] + t.entry_row],
            "entry_price": t.entry_price,
            "exit_price": pl.Series(t.exit_price, nan_to_null=True),
            "last_price": last_price,
            "highest_price": t.highest,
            "lowest_price": t.lowest,
            "units": t.units,
            "fees": fees,
            "dividends": t.dividends,
            "profit": profit,
            "profit_percent": percent,
        }
    )
