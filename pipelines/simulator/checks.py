"""Properties of the simulator's tables as pure functions: each returns the rows that break one property."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import polars as pl

from pipelines.simulator.scoring import ACTIONS

TOLERANCE = 1e-6
"""Relative tolerance of the arithmetic checks (floating-point rounding, not business slack)."""


def _close(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    return (a - b).abs() <= TOLERANCE * (1.0 + a.abs().clip(lower_bound=b.abs()))


def non_finite(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows with a NaN or infinite number in any float column (null is allowed where documented)."""
    floats = [c for c, t in frame.schema.items() if t.is_float()]
    if not floats:
        return frame.clear()
    return frame.filter(pl.any_horizontal(~pl.col(c).is_finite().fill_null(True) for c in floats))


def bad_trade_arithmetic(trades: pl.DataFrame) -> pl.DataFrame:
    """profit = (exit or last price - entry) x units - fees + dividends, and profit_percent =
    profit / spend x 100 where spend = entry_price x units + the entry fee (a part of `fees`, so
    only bounds are known)."""
    value = pl.coalesce("exit_price", "last_price")
    gain = (value - pl.col("entry_price")) * pl.col("units")
    profit = gain - pl.col("fees") + pl.col("dividends")
    bought = pl.col("entry_price") * pl.col("units")
    bounds = [
        100.0 * pl.col("profit") / bought,
        100.0 * pl.col("profit") / (bought + pl.col("fees")),
    ]
    slack = TOLERANCE * (1.0 + pl.col("profit_percent").abs())
    ok = (
        _close(pl.col("profit"), profit)
        & (pl.col("profit_percent") >= pl.min_horizontal(bounds) - slack)
        & (pl.col("profit_percent") <= pl.max_horizontal(bounds) + slack)
    )
    return trades.filter(~ok)


def bad_trade_dates(trades: pl.DataFrame) -> pl.DataFrame:
    """days_in_trade = sell_date - start_date for closed trades, >= 0 for open ones."""
    days = (pl.col("sell_date") - pl.col("start_date")).dt.total_days()
    ok = (days == pl.col("days_in_trade")).fill_null(pl.col("days_in_trade") >= 0)
    return trades.filter(~ok)


def prices_outside_range(trades: pl.DataFrame) -> pl.DataFrame:
    """lowest <= start price and last price <= highest (fills differ from these by slippage)."""
    low, high = pl.col("lowest_price"), pl.col("highest_price")
    inside = [(low <= pl.col(c)) & (pl.col(c) <= high) for c in ("start_price", "last_price")]
    return trades.filter(~pl.all_horizontal(inside))


def inconsistent_trade_state(trades: pl.DataFrame) -> pl.DataFrame:
    """Open (Buy) trades have no exit reason, price or date; closed (Sell) trades have all three."""
    open_ = pl.col("action") == "Buy"
    exits = [pl.col(c).is_null() for c in ("exit_reason", "exit_price", "sell_date")]
    ok = pl.when(open_).then(pl.all_horizontal(exits)).otherwise(~pl.any_horizontal(exits))
    return trades.filter(~ok | ~pl.col("action").is_in(["Buy", "Sell"]))


def inconsistent_counts(summaries: pl.DataFrame, trades: pl.DataFrame) -> pl.DataFrame:
    """total = profitable + unprofitable = the closed trades of the window; total_profit = final - initial."""
    key = ["symbol", "strategy", "fill", "years"]
    closed = trades.filter(pl.col("action") == "Sell").group_by(key).agg(_closed=pl.len())
    joined = summaries.join(closed, on=key, how="left").with_columns(pl.col("_closed").fill_null(0))
    ok = (
        (pl.col("total_trades") == pl.col("profitable_trades") + pl.col("unprofitable_trades"))
        & (pl.col("total_trades") == pl.col("_closed"))
        & _close(pl.col("total_profit"), pl.col("final_value") - pl.col("initial_investment"))
    )
    return joined.filter(~ok).drop("_closed")


def bad_actions(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows whose action is not Buy, Sell, Hold or Stay."""
    return frame.filter(~pl.col("action").is_in(list(ACTIONS)))


def score_out_of_range(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows whose score is not within 0..5."""
    return frame.filter(~pl.col("score").is_between(0.0, 5.0))


Check = Callable[[Mapping[str, pl.DataFrame]], pl.DataFrame]
CHECKS: dict[tuple[str, str], tuple[str, Check]] = {
    ("backtest_trades", "finite_numbers"): (
        "No NaN or infinite number.",
        lambda t: non_finite(t["backtest_trades"]),
    ),
    ("backtest_trades", "trade_arithmetic"): (
        "profit = (exit - entry) x units - fees + dividends; profit_percent = profit / spend x 100.",
        lambda t: bad_trade_arithmetic(t["backtest_trades"]),
    ),
    ("backtest_trades", "days_in_trade_from_dates"): (
        "days_in_trade = sell_date - start_date (>= 0 while open).",
        lambda t: bad_trade_dates(t["backtest_trades"]),
    ),
    ("backtest_trades", "prices_within_high_low"): (
        "lowest_price <= start_price, last_price <= highest_price.",
        lambda t: prices_outside_range(t["backtest_trades"]),
    ),
    ("backtest_trades", "open_closed_consistent"): (
        "Buy (open) trades have no exit; Sell (closed) trades have exit reason, price and date.",
        lambda t: inconsistent_trade_state(t["backtest_trades"]),
    ),
    ("backtest_summaries", "finite_numbers"): (
        "No NaN or infinite number.",
        lambda t: non_finite(t["backtest_summaries"]),
    ),
    ("backtest_summaries", "counts_consistent"): (
        "total = profitable + unprofitable = closed trades; total_profit = final - initial.",
        lambda t: inconsistent_counts(t["backtest_summaries"], t["backtest_trades"]),
    ),
    ("current_actions", "action_values"): (
        "action is Buy, Sell, Hold or Stay.",
        lambda t: bad_actions(t["current_actions"]),
    ),
    ("scorecards", "finite_numbers"): (
        "No NaN or infinite number.",
        lambda t: non_finite(t["scorecards"]),
    ),
    ("scorecards", "score_range"): (
        "score within 0..5.",
        lambda t: score_out_of_range(t["scorecards"]),
    ),
    ("scorecards", "action_values"): (
        "action is Buy, Sell, Hold or Stay.",
        lambda t: bad_actions(t["scorecards"]),
    ),
    ("recommendations", "score_range"): (
        "score within 0..5.",
        lambda t: score_out_of_range(t["recommendations"]),
    ),
}
