"""Queries of the technical-analysis route group: price history and indicator snapshots."""

from __future__ import annotations

from api.queries import Row, first, rows
from api.warehouse import WarehouseSnapshot
from pipelines.catalog.adjustments import adjusted_bars_sql


def price_sql(adjustment: str, start: int | None, end: int | None, limit: int | None) -> str:
    """Range first (inclusive), then the most recent `limit` points of it, newest first, of the
    series adjusted as `adjustment` says (decisions.md, Corporate actions)."""
    where = ["p.market = ?", "p.symbol = ?"]
    where += ["p.timestamp >= ?"] * (start is not None) + ["p.timestamp <= ?"] * (end is not None)
    bars = adjusted_bars_sql(adjustment, " AND ".join(where))
    sql = f"SELECT timestamp, date, close AS price, volume FROM ({bars})"
    return sql + " ORDER BY timestamp DESC" + (" LIMIT ?" if limit is not None else "")


async def price_points(
    snapshot: WarehouseSnapshot,
    market: str,
    symbol: str,
    adjustment: str,
    start: int | None,
    end: int | None,
    limit: int | None,
) -> list[Row]:
    """timestamp, date, price, volume of `symbol`'s bars from `start` to `end` (epoch ms, each
    optional, inclusive), the most recent `limit` of them (all without), newest first."""
    params = [p for p in (market, symbol, start, end, limit) if p is not None]
    return await rows(snapshot, price_sql(adjustment, start, end, limit), params)


async def indicator_snapshot(
    snapshot: WarehouseSnapshot, market: str, symbol: str, period: int
) -> Row | None:
    """`symbol`'s indicators over `period` days at its latest bar."""
    sql = "SELECT * FROM indicator_snapshots WHERE market = ? AND upper(symbol) = ? AND period = ?"
    return await first(snapshot, sql, [market, symbol, period])
