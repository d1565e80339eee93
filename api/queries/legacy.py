"""Queries of the legacy (/api/v1-style) routes: trends and topic sentiment of a coin."""

from __future__ import annotations

from api.queries import DAY_MS, Row, rows
from api.warehouse import WarehouseSnapshot


async def trend_segments(snapshot: WarehouseSnapshot, market: str, symbol: str) -> list[Row]:
    """Every trend segment of `symbol`, the newest first."""
    sql = (
        "SELECT * FROM trend_segments WHERE market = ? AND upper(symbol) = ? ORDER BY segment DESC"
    )
    return await rows(snapshot, sql, [market, symbol])


async def topic_sentiment(
    snapshot: WarehouseSnapshot, market: str, symbol: str, days: int
) -> list[Row]:
    """timestamp, topic, positive, negative of `symbol` over the market's last `days` days of
    topic sentiment (counted back from its newest), the newest first."""
    sql = (
        "SELECT timestamp, topic, positive, negative FROM sentiment_topics "
        "WHERE market = ? AND upper(symbol) = ? AND timestamp > "
        "(SELECT max(timestamp) FROM sentiment_topics WHERE market = ?) - ? "
        "ORDER BY timestamp DESC"
    )
    return await rows(snapshot, sql, [market, symbol, market, days * DAY_MS])
