"""Pair an engine run's entries and exits into trades: one row per trade, panel coordinates and prices."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipelines.simulator.engine import EXIT_REASONS, Fills, Panel, Result, Rows


def _by_symbol(fills: Fills) -> Rows:
    order: Rows = np.lexsort((fills.row, fills.column))
    return order


def _take(fills: Fills, order: Rows) -> Fills:
    return Fills(*(getattr(fills, f)[order] for f in Fills.__dataclass_fields__))


def trade_arrays(result: Result, close: Panel, last_row: Rows) -> pl.DataFrame:
    """One row per trade: `column`, `entry_row`, `exit_row` (-1 while open) and the Trade numbers.

    Entries and exits alternate per symbol, so after sorting both by (symbol, bar) the k-th exit
    closes the k-th entry; a symbol still in position at its last bar has one entry more (open).
    """
    entries = _take(result.entries, _by_symbol(result.entries))
    exits = _take(result.exits, _by_symbol(result.exits))
    n = len(entries.row)
    is_last = np.ones(n, bool)
    if n:
        is_last[:-1] = entries.column[:-1] != entries.column[1:]
    is_open = is_last & result.in_position[entries.column]
    closed = ~is_open
    col = entries.column
    exit_row = np.full(n, -1, np.int64)
    exit_row[closed] = exits.row
    mark_row = np.where(closed, exit_row, last_row[col])

    def with_exits(values: Panel, open_values: Panel) -> Panel:
        out = np.array(open_values, dtype=np.float64)
        out[closed] = values
        return out

    exit_price = with_exits(exits.price, np.full(n, np.nan))
    exit_fee = with_exits(exits.fee, np.zeros(n))
    last_price = close[mark_row, col] if n else np.empty(0)
    fees = entries.fee + exit_fee
    value = np.where(closed, exit_price, last_price)
    profit = entries.units * (value - entries.price) - fees
    spent = entries.units * entries.price + entries.fee
    reasons = np.full(n, None, dtype=object)
    reasons[closed] = [EXIT_REASONS[int(c)] for c in exits.reason]
    return pl.DataFrame(
        {
            "column": col,
            "entry_row": entries.row,
            "exit_row": exit_row,
            "mark_row": mark_row,
            "closed": closed,
            "exit_reason": pl.Series(reasons.tolist(), dtype=pl.String),
            "start_price": close[entries.row, col] if n else np.empty(0),
            "entry_price": entries.price,
            "exit_price": pl.Series(exit_price, nan_to_null=True),
            "last_price": last_price,
            "highest_price": with_exits(exits.highest, result.highest[col]),
            "lowest_price": with_exits(exits.lowest, result.lowest[col]),
            "units": entries.units,
            "fees": fees,
            "profit": profit,
            "profit_percent": 100.0 * profit / spent,
        }
    )
