"""Queries of the instruments route group: the instrument index and a symbol's scorecard."""

from __future__ import annotations

import polars as pl

from api.queries import Row, first
from api.warehouse import WarehouseSnapshot


def instrument_list(snapshot: WarehouseSnapshot) -> pl.DataFrame:
    """market, symbol, name, logo of every instrument (blocking: the reader's thread builds the
    index from it before a version is served)."""
    return snapshot.query("SELECT market, symbol, name, logo FROM instruments")


def listing_days(snapshot: WarehouseSnapshot) -> pl.DataFrame:
    """market, symbol, listed (its listing's day) and delisted (its delisting's day), each the
    first a source reports or null, of every instrument with either, blocking as
    `instrument_list`."""
    sql = (
        "SELECT market, upper(symbol) AS symbol, "
        "min(date) FILTER (WHERE kind = 'listing') AS listed, "
        "min(date) FILTER (WHERE kind = 'delisting') AS delisted "
        "FROM corporate_actions WHERE kind IN ('listing', 'delisting') GROUP BY ALL"
    )
    return snapshot.query(sql)


def adjusted_symbols(snapshot: WarehouseSnapshot) -> pl.DataFrame:
    """market, symbol of every symbol with an adjustment row (a split or a dividend among its
    bars), blocking as `instrument_list`."""
    return snapshot.query("SELECT DISTINCT market, symbol FROM price_adjustments")


async def scorecard(snapshot: WarehouseSnapshot, market: str, symbol: str) -> Row | None:
    """The scorecard row of `symbol` (upper case) in `market`."""
    sql = "SELECT * FROM scorecards WHERE market = ? AND upper(symbol) = ? LIMIT 1"
    return await first(snapshot, sql, [market, symbol])
