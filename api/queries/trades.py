"""Queries of the trades route group: backtests, actions, recent signals, recommendations and
trends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from api.queries import Row, first, rows
from api.warehouse import WarehouseSnapshot

BACKTEST = "market = ? AND upper(symbol) = ? AND strategy = ? AND fill = ?"
"""One symbol's backtests of one strategy and fill: market, symbol, strategy, fill."""
WINDOW = f"years = (SELECT max(years) FROM {{table}} WHERE {BACKTEST} AND years <= ?)"
"""A `years` beyond the symbol's history is served with its largest stored window (the full
history). Its parameters: market, symbol, strategy, fill, years."""
FULL_HISTORY = (
    "JOIN (SELECT market, symbol, strategy, fill, max(years) AS years FROM backtest_trades "
    "GROUP BY ALL) USING (market, symbol, strategy, fill, years)"
)
"""Each symbol, strategy and fill's longest window: the trades of its whole history."""
BACKTEST_TRADES = (
    f"SELECT * FROM backtest_trades WHERE {BACKTEST} "
    f"AND {WINDOW.format(table='backtest_trades')} ORDER BY start_date DESC LIMIT ?"
)
BACKTEST_SUMMARY = (
    f"SELECT * FROM backtest_summaries WHERE {BACKTEST} "
    f"AND {WINDOW.format(table='backtest_summaries')}"
)
RECENT_TRADES = {
    side: f"SELECT * FROM backtest_trades {FULL_HISTORY} WHERE market = ? AND fill = 'close' "
    f"AND {day} IS NOT NULL AND list_contains(?, strategy) "
    f"ORDER BY {day} DESC, symbol, strategy LIMIT ? OFFSET ?"
    for side, day in (("buys", "start_date"), ("sells", "sell_date"))
}
"""Recent buys and sells are those of the backtests filled at the close (decisions.md)."""


async def backtest_trades(
    snapshot: WarehouseSnapshot,
    market: str,
    symbol: str,
    strategy: str,
    fill: str,
    years: int,
    limit: int,
) -> list[Row]:
    """`symbol`'s trades of `strategy` filled at `fill` in its `years` window, the newest `limit`
    first."""
    params = [market, symbol, strategy, fill] * 2 + [years, limit]
    return await rows(snapshot, BACKTEST_TRADES, params)


async def backtest_summary(
    snapshot: WarehouseSnapshot, market: str, symbol: str, strategy: str, fill: str, years: int
) -> Row | None:
    """The summary of `symbol`'s backtest of `strategy` filled at `fill` over its `years` window."""
    params = [market, symbol, strategy, fill] * 2 + [years]
    return await first(snapshot, BACKTEST_SUMMARY, params)


async def current_action(
    snapshot: WarehouseSnapshot, market: str, symbol: str, strategy: str
) -> Row | None:
    """What `strategy` does with `symbol` at its latest bar."""
    sql = "SELECT * FROM current_actions WHERE market = ? AND upper(symbol) = ? AND strategy = ?"
    return await first(snapshot, sql, [market, symbol, strategy])


async def recent_trades(
    snapshot: WarehouseSnapshot,
    market: str,
    side: Literal["buys", "sells"],
    strategies: Sequence[str],
    limit: int,
    skip: int,
) -> list[Row]:
    """The market's latest entries (`buys`) or exits (`sells`) of `strategies` over each symbol's
    whole history, newest first, then by symbol and strategy: `limit` of them after `skip`."""
    params = [market, list(strategies), limit, skip]
    return await rows(snapshot, RECENT_TRADES[side], params)


async def recommendations(
    snapshot: WarehouseSnapshot, market: str, strategy: str, min_score: float, limit: int
) -> list[Row]:
    """strategy, symbol, score of the symbols `strategy` is long on, scored at least `min_score`,
    the best `limit` first (then by symbol)."""
    sql = (
        "SELECT strategy, symbol, score FROM recommendations WHERE market = ? AND strategy = ? "
        "AND score >= ? ORDER BY score DESC, symbol LIMIT ?"
    )
    return await rows(snapshot, sql, [market, strategy, min_score, limit])


async def trend_history(
    snapshot: WarehouseSnapshot, market: str, symbol: str, limit: int
) -> list[Row]:
    """timestamp, date, price, strength, trend of `symbol`'s newest `limit` days, newest first."""
    sql = (
        "SELECT timestamp, date, price, strength, trend FROM trend_history "
        "WHERE market = ? AND upper(symbol) = ? ORDER BY date DESC LIMIT ?"
    )
    return await rows(snapshot, sql, [market, symbol, limit])


async def running_trend(snapshot: WarehouseSnapshot, market: str, symbol: str) -> Row | None:
    """The trend segment `symbol` is in now."""
    sql = "SELECT * FROM trend_segments WHERE market = ? AND upper(symbol) = ? AND is_running"
    return await first(snapshot, sql, [market, symbol])


async def trend_segments(
    snapshot: WarehouseSnapshot, market: str, symbol: str, limit: int
) -> list[Row]:
    """`symbol`'s newest `limit` trend segments, newest first."""
    sql = (
        "SELECT * FROM trend_segments WHERE market = ? AND upper(symbol) = ? "
        "ORDER BY segment DESC LIMIT ?"
    )
    return await rows(snapshot, sql, [market, symbol, limit])
