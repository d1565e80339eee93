"""Queries of the newsroom route group: briefs, and the written analyses."""

from __future__ import annotations

from api.queries import Row, first, rows
from api.warehouse import WarehouseSnapshot


async def article(snapshot: WarehouseSnapshot, market: str, article_id: str) -> Row | None:
    """The brief of one article."""
    sql = "SELECT * FROM briefs WHERE market = ? AND article_id = ?"
    return await first(snapshot, sql, [market, article_id])


async def recent_briefs(
    snapshot: WarehouseSnapshot, market: str, symbol: str, limit: int
) -> list[Row]:
    """The newest `limit` briefs naming `symbol` (undated last, then by article id)."""
    sql = (
        "SELECT * FROM briefs WHERE market = ? AND list_contains(symbols, ?) "
        "ORDER BY timestamp DESC NULLS LAST, article_id LIMIT ?"
    )
    return await rows(snapshot, sql, [market, symbol, limit])


async def search_briefs(
    snapshot: WarehouseSnapshot,
    market: str,
    symbol: str,
    since: int,
    until: int,
    words: list[str],
    limit: int,
) -> list[Row]:
    """The newest `limit` briefs naming `symbol`, published from `since` to `until` (epoch ms,
    inclusive), whose title holds every one of `words` (lower case) in any case."""
    titled = "".join(" AND contains(lower(title), ?)" for _ in words)
    sql = (
        "SELECT * FROM briefs WHERE market = ? AND list_contains(symbols, ?) "
        f"AND timestamp >= ? AND timestamp <= ?{titled} "
        "ORDER BY timestamp DESC, article_id LIMIT ?"
    )
    return await rows(snapshot, sql, [market, symbol, since, until, *words, limit])


async def instrument_analysis(snapshot: WarehouseSnapshot, market: str, symbol: str) -> Row | None:
    """The newest written analysis of `symbol`."""
    sql = (
        "SELECT * FROM instrument_analyses WHERE market = ? AND upper(symbol) = ? "
        "ORDER BY timestamp DESC LIMIT 1"
    )
    return await first(snapshot, sql, [market, symbol])


async def market_summary(snapshot: WarehouseSnapshot, market: str) -> Row | None:
    """The newest written summary of `market`."""
    sql = "SELECT * FROM market_summaries WHERE market = ? ORDER BY timestamp DESC LIMIT 1"
    return await first(snapshot, sql, [market])
