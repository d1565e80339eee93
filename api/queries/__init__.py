"""Every SQL statement the API runs over the warehouse, as named queries: one module per route
group (`api/routes/` holds none). A query takes the snapshot a request reads and the request's
values, runs off the event loop, and returns the rows as dicts (a list, or one row or None)."""

from __future__ import annotations

from typing import Any

from api.warehouse import QueryParams, WarehouseSnapshot

Row = dict[str, Any]
DAY_MS = 86_400_000


async def rows(snapshot: WarehouseSnapshot, sql: str, params: QueryParams = None) -> list[Row]:
    """`sql` in a worker thread; its rows as dicts."""
    frame = await snapshot.fetch(sql, params)
    return frame.to_dicts()


async def first(snapshot: WarehouseSnapshot, sql: str, params: QueryParams = None) -> Row | None:
    """The first row of `sql`, or None when it has none."""
    found = await rows(snapshot, sql, params)
    return found[0] if found else None
