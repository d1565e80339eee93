"""Current actions, scores, scorecards and recommendations from the full-history backtests."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from pipelines.simulator.backtests import Simulation
from pipelines.simulator.strategies import BY_NAME

ACTIONS: tuple[str, ...] = ("Buy", "Sell", "Hold", "Stay")
ICONS: dict[str, str] = {"Buy": "🟢", "Sell": "🔴", "Hold": "🟡", "Stay": "⚪"}
"""One emoji per action: green buy, red sell, amber hold, white stay out."""
ACTION_POINTS: dict[str, float] = {"Buy": 1.0, "Hold": 0.75, "Stay": 0.25, "Sell": 0.0}
"""The current action's part of the score (entering or holding now is worth more)."""


def actions_of(trades: pl.DataFrame, last: pl.DataFrame, name: str) -> pl.DataFrame:
    """Buy / Sell / Hold / Stay of one strategy at each symbol's last bar, with the message parts,
    from its full-history run's trades (symbol, start_date, sell_date, closed, profit_percent,
    exit_reason) and each symbol's last day (`last`: symbol, date, and optionally `delisted`; the
    rows' order). A delisted symbol is Stay: its trades closed at its last bar, and it is no
    longer traded (decisions.md, Corporate actions)."""
    latest = trades.sort("symbol", "start_date").group_by("symbol").last()
    if "delisted" not in last.columns:
        last = last.with_columns(delisted=pl.lit(False))
    state = last.join(latest, on="symbol", how="left", maintain_order="left")
    # only a symbol's last trade can be open: it is in a position iff that trade is
    in_trade = (~pl.col("closed")).fill_null(False)
    action = (
        pl.when("delisted")
        .then(pl.lit("Stay"))
        .when(pl.col("start_date") == pl.col("date"))
        .then(pl.lit("Buy"))
        .when(pl.col("sell_date") == pl.col("date"))
        .then(pl.lit("Sell"))
        .when("in_trade")
        .then(pl.lit("Hold"))
        .otherwise(pl.lit("Stay"))
    )
    return state.with_columns(in_trade=in_trade).with_columns(
        action=action, strategy=pl.lit(name, pl.String)
    )


def _message(entry_reason: str) -> pl.Expr:
    symbol, date, strategy = pl.col("symbol"), pl.col("date").cast(pl.String), pl.col("strategy")
    gain = pl.col("profit_percent").round(2).cast(pl.String)
    return (
        pl.when(pl.col("action") == "Buy")
        .then(
            pl.format(
                "Buy {} at the close of {}: {} ({})", symbol, date, pl.lit(entry_reason), strategy
            )
        )
        .when(pl.col("action") == "Sell")
        .then(
            pl.format(
                "Sell {} at the close of {}: {} ({})", symbol, date, pl.col("exit_reason"), strategy
            )
        )
        .when(pl.col("action") == "Hold")
        .then(
            pl.format(
                "Hold {}: in a position since {}, {}% so far ({})",
                symbol,
                pl.col("start_date").cast(pl.String),
                gain,
                strategy,
            )
        )
        .when(pl.col("delisted"))
        .then(pl.format("Stay out of {}: delisted after {} ({})", symbol, date, strategy))
        .otherwise(pl.format("Stay out of {}: no entry signal on {} ({})", symbol, date, strategy))
    )


def current_actions(full_runs: Mapping[str, pl.DataFrame], last: pl.DataFrame) -> pl.DataFrame:
    """symbol, strategy, action, message, date, in_trade: one row per symbol and strategy, from
    each strategy's full-history trades (`actions_of`) and each symbol's last day."""
    frames = [
        actions_of(trades, last, name).with_columns(message=_message(BY_NAME[name].entry_reason))
        for name, trades in full_runs.items()
    ]
    return pl.concat(frames).select("symbol", "strategy", "action", "message", "date", "in_trade")


def simulated_actions(sim: Simulation) -> pl.DataFrame:
    """`current_actions` of a simulation's full-history runs."""
    gone = sim.market.bars.delisted
    last = pl.DataFrame(
        {
            "symbol": pl.Series(sim.market.symbols, dtype=pl.String),
            "date": sim.market.last_dates(),
            "delisted": np.zeros(len(sim.market.symbols), np.bool_) if gone is None else gone,
        }
    )
    return current_actions(sim.full_runs, last)


def _squash(x: pl.Expr, scale: float) -> pl.Expr:
    """A number of any sign mapped onto 0..1 (0.5 at zero, `scale` = where it reaches ~0.88)."""
    return 0.5 + 0.5 * ((2.0 * x / scale).exp() - 1.0) / ((2.0 * x / scale).exp() + 1.0)


def score() -> pl.Expr:
    """0..5: 2 x edge over buy-and-hold + 1 x annualized return + 1 x win rate + 0.5 x (1 -
    drawdown) + 0.5 x current action, each part in 0..1 (see docs/trade-simulator.md)."""
    edge = _squash(pl.col("profit_percent") - pl.col("buy_and_hold_profit_percent"), 50.0)
    annual = _squash(pl.col("annualized_return").fill_null(0.0).clip(-1e6, 1e6), 20.0)
    win_rate = pl.col("profitable_trade_percent").fill_null(0.0) / 100.0
    drawdown = (1.0 + pl.col("peak_loss") / 100.0).clip(0.0, 1.0)
    action = pl.col("action").replace_strict(ACTION_POINTS, return_dtype=pl.Float64)
    total = (
        2.0 * edge.fill_nan(0.5) + annual.fill_nan(0.5) + win_rate + 0.5 * drawdown + 0.5 * action
    )
    return total.clip(0.0, 5.0).round(2)


def scorecards(
    summaries: pl.DataFrame,
    actions: pl.DataFrame,
    instruments: pl.DataFrame,
    trends: pl.DataFrame,
) -> pl.DataFrame:
    """One row per symbol and strategy from its longest backtest window filled at the close;
    `preferred` marks the strategy with the higher score (aggressive on a tie), the one a single
    scorecard shows."""
    summaries = summaries.filter(pl.col("fill") == "close")
    longest = summaries.filter(pl.col("years") == pl.col("years").max().over("symbol", "strategy"))
    running = trends.filter("is_running").select(
        "symbol", "trend", trend_duration=pl.col("trend_duration_days")
    )
    cards = (
        longest.join(actions, on=["symbol", "strategy"])
        .join(instruments.select("symbol", "name"), on="symbol", how="left")
        .join(running, on="symbol", how="left")
        .with_columns(
            score=score(),
            icon=pl.col("action").replace_strict(ICONS, return_dtype=pl.String),
            name=pl.col("name").fill_null(pl.col("symbol")),
            buy_and_hold_percentage=pl.col("buy_and_hold_profit_percent"),
            percentage_profit=pl.col("profit_percent"),
        )
    )
    best = pl.col("score") == pl.col("score").max().over("symbol")
    first = pl.col("strategy") == pl.col("strategy").filter(best).min().over("symbol")
    return cards.with_columns(preferred=best & first).sort("symbol", "strategy")


def recommendations(cards: pl.DataFrame) -> pl.DataFrame:
    """Symbols a strategy is long on now (Buy or Hold), best score first."""
    return (
        cards.filter(pl.col("action").is_in(["Buy", "Hold"]))
        .select("symbol", "strategy", "score", "action", "date")
        .sort(["score", "symbol"], descending=[True, False])
    )
