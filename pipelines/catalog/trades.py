"""Trade-simulator tables: backtest trades and summaries, current actions, scorecards, recommendations."""

from __future__ import annotations

import polars as pl

from pipelines.catalog.schema import Column, Table

_KEY = (
    Column("market", pl.String(), "market of the instrument"),
    Column("symbol", pl.String(), "canonical upper-case symbol"),
    Column("strategy", pl.String(), "aggressive or conservative"),
)
FILL = Column(
    "fill",
    pl.String(),
    "close (orders fill at the signal bar's close) or next_open (at the next bar's open)",
)
_WINDOW = (
    FILL,
    Column("years", pl.Int32(), "backtest window: the last `years` calendar years (1..20)"),
    Column(
        "full_history",
        pl.Boolean(),
        "the window starts on the symbol's first bar; the API serves a larger `years` with the "
        "symbol's largest stored `years`",
    ),
)


def _f(name: str, description: str, nullable: bool = False) -> Column:
    return Column(name, pl.Float64(), description, nullable)


BACKTEST_TRADES = Table(
    name="backtest_trades",
    description=(
        "Every trade of every backtest window and fill: one row per (symbol, strategy, fill, "
        "years, start_date). Entries and exits fill at the signal bar's close or at the next "
        "bar's open; see docs/trade-simulator.md."
    ),
    columns=(
        *_KEY,
        *_WINDOW,
        Column("action", pl.String(), "Buy while the trade is open, Sell once closed"),
        Column(
            "exit_reason",
            pl.String(),
            "signal, stop_loss, trailing_stop, take_profit, or delisted (closed at the last bar of "
            "a delisted symbol); null while open",
            nullable=True,
        ),
        Column("start_date", pl.Date(), "day of the entry's fill"),
        Column("sell_date", pl.Date(), "day of the exit's fill; null while open", nullable=True),
        Column(
            "days_in_trade",
            pl.Int32(),
            "calendar days from start_date to sell_date (or the last bar)",
        ),
        _f(
            "start_price",
            "market price of the entry, before slippage: the entry bar's close (fill close) or "
            "open (fill next_open)",
        ),
        _f("entry_price", "buy fill: start_price x (1 + slippage)"),
        _f("exit_price", "sell fill: last_price x (1 - slippage); null while open", True),
        _f(
            "last_price",
            "market price of the exit (the exit bar's close or open, as start_price), or the "
            "last bar's close while open",
        ),
        _f("highest_price", "highest high from the entry bar to the exit (or last) bar"),
        _f("lowest_price", "lowest low from the entry bar to the exit (or last) bar"),
        _f("units", "units bought (all the cash, fee included)"),
        _f("fees", "fees paid, both legs (entry leg only while open)"),
        _f(
            "dividends",
            "cash of the dividends of every ex-date inside the trade: units x each one's dividend "
            "per unit of the split-adjusted series (0 without)",
        ),
        _f(
            "profit",
            "(exit_price - entry_price) x units - fees + dividends; while open, marked at "
            "last_price",
        ),
        _f("profit_percent", "profit / (entry_price x units + entry fee) x 100"),
    ),
    key=("market", "symbol", "strategy", "fill", "years", "start_date"),
)

BACKTEST_SUMMARIES = Table(
    name="backtest_summaries",
    description="BacktestSummary of every (symbol, strategy, fill, years) window.",
    columns=(
        *_KEY,
        *_WINDOW,
        Column("start_date", pl.Date(), "first bar of the window"),
        Column("end_date", pl.Date(), "last bar (the symbol's latest)"),
        Column("backtest_duration", pl.Int32(), "calendar days from start_date to end_date"),
        _f("initial_investment", "cash at the start (10,000 unless configured)"),
        _f("final_value", "cash plus the open position at the last close"),
        _f("total_profit", "final_value - initial_investment"),
        _f("profit_percent", "total_profit / initial_investment x 100"),
        _f(
            "annualized_return",
            "((final/initial)^(365.25/backtest_duration) - 1) x 100; null for a 0-day window",
            True,
        ),
        _f(
            "buy_and_hold_profit_percent",
            "((last close + the window's dividends per unit) / window's first close - 1) x 100",
        ),
        _f("peak_profit", "largest run-up of the equity curve from a trough, in percent (>= 0)"),
        _f("peak_loss", "largest drawdown of the equity curve from a peak, in percent (<= 0)"),
        Column("total_trades", pl.Int32(), "closed trades"),
        Column("profitable_trades", pl.Int32(), "closed trades with profit > 0"),
        Column("unprofitable_trades", pl.Int32(), "closed trades with profit <= 0"),
        _f("profitable_trade_percent", "profitable / total x 100; null without trades", True),
        _f("average_profit", "mean profit of profitable trades", True),
        _f("average_profit_percent", "mean profit_percent of profitable trades", True),
        _f("average_loss", "mean profit of unprofitable trades (<= 0)", True),
        _f("average_loss_percent", "mean profit_percent of unprofitable trades", True),
        _f("average_trade_duration", "mean days_in_trade of closed trades", True),
    ),
    key=("market", "symbol", "strategy", "fill", "years"),
)

CURRENT_ACTIONS = Table(
    name="current_actions",
    description=(
        "Each strategy's decision at each symbol's latest bar (full-history backtest, filled at "
        "the close)."
    ),
    columns=(
        *_KEY,
        Column("action", pl.String(), "Buy, Sell, Hold or Stay (docs/trade-simulator.md)"),
        Column("message", pl.String(), "the decision in words"),
        Column("date", pl.Date(), "the latest bar's day"),
    ),
    key=("market", "symbol", "strategy"),
)

SCORECARDS = Table(
    name="scorecards",
    description=(
        "Technical scorecard per symbol and strategy from the longest backtest window filled at "
        "the close; the API "
        "shows the row with `preferred` (the better score, aggressive on a tie)."
    ),
    columns=(
        *_KEY,
        Column("name", pl.String(), "instrument display name (the symbol when unknown)"),
        Column("action", pl.String(), "current action: Buy, Sell, Hold or Stay"),
        Column("icon", pl.String(), "emoji of the action: 🟢 Buy, 🔴 Sell, 🟡 Hold, ⚪ Stay"),
        Column("total_trades", pl.Int32(), "closed trades of the backtest"),
        _f("score", "0..5, higher is better (docs/trade-simulator.md)"),
        _f("buy_and_hold_percentage", "buy-and-hold profit over the window, percent"),
        Column("in_trade", pl.Boolean(), "the strategy holds a position at the latest bar"),
        _f("percentage_profit", "the strategy's profit over the window, percent"),
        Column("trend", pl.String(), "running trend: up, down or neutral", nullable=True),
        Column("trend_duration", pl.Int32(), "running trend's length in days", nullable=True),
        Column("preferred", pl.Boolean(), "the strategy a single scorecard shows"),
        Column("date", pl.Date(), "the latest bar's day"),
    ),
    key=("market", "symbol", "strategy"),
)

RECOMMENDATIONS = Table(
    name="recommendations",
    description="Symbols a strategy is long on now (action Buy or Hold) with their score.",
    columns=(
        *_KEY,
        _f("score", "0..5 as in scorecards"),
        Column("action", pl.String(), "Buy or Hold"),
        Column("date", pl.Date(), "the latest bar's day"),
    ),
    key=("market", "symbol", "strategy"),
)

TABLES: tuple[Table, ...] = (
    BACKTEST_TRADES,
    BACKTEST_SUMMARIES,
    CURRENT_ACTIONS,
    SCORECARDS,
    RECOMMENDATIONS,
)
