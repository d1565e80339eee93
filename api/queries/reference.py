"""Queries of the reference route group: an instrument's corporate actions."""

from __future__ import annotations

from datetime import date

from api.queries import Row, rows
from api.warehouse import WarehouseSnapshot

CORPORATE_ACTIONS = (
    "SELECT date, kind, ratio, amount, reason FROM corporate_actions "
    "WHERE market = ? AND upper(symbol) = ? AND date >= ? AND date <= ? ORDER BY date, kind"
)


async def corporate_actions(
    snapshot: WarehouseSnapshot, market: str, symbol: str, first: date, last: date
) -> list[Row]:
    """`symbol`'s actions dated `first` through `last`, oldest first (a day's by kind)."""
    return await rows(snapshot, CORPORATE_ACTIONS, [market, symbol, first, last])
