"""Queries of data-status: the per-day condition tables of one market."""

from __future__ import annotations

from datetime import date

from api.queries import Row, rows
from api.warehouse import WarehouseSnapshot


async def price_days(
    snapshot: WarehouseSnapshot, market: str, first: date, last: date
) -> list[Row]:
    """The market's `price_days` rows from `first` through `last`."""
    sql = (
        "SELECT date, bars, warnings, errors FROM price_days "
        "WHERE market = ? AND date BETWEEN ? AND ?"
    )
    return await rows(snapshot, sql, [market, first, last])


async def news_days(snapshot: WarehouseSnapshot, market: str, first: date, last: date) -> list[Row]:
    """The market's `news_days` rows from `first` through `last` (none before the news ran)."""
    if "news_days" not in snapshot.manifest.tables:
        return []
    sql = "SELECT date, warnings, errors FROM news_days WHERE market = ? AND date BETWEEN ? AND ?"
    return await rows(snapshot, sql, [market, first, last])
