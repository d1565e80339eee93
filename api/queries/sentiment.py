"""Queries of the sentiment route group."""

from __future__ import annotations

from api.queries import Row, rows
from api.warehouse import WarehouseSnapshot


async def sentiment_days(
    snapshot: WarehouseSnapshot, market: str, symbol: str, limit: int
) -> list[Row]:
    """`symbol`'s daily sentiment, the newest `limit` days first."""
    sql = (
        "SELECT * FROM sentiment_daily WHERE market = ? AND upper(symbol) = ? "
        "ORDER BY date DESC LIMIT ?"
    )
    return await rows(snapshot, sql, [market, symbol, limit])
