"""Incremental fetches: read the stored partition, ask HTTP sources only for what is new, merge."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path

import polars as pl

from pipelines.catalog import DAILY_PRICES, LocalStorage, WarehouseStorage, read_partitions
from pipelines.prices.sources.base import PriceSource, RawBars
from pipelines.prices.validate import validate_bars


def stored_partition(
    warehouse: Path | WarehouseStorage, table: str, market: str
) -> pl.DataFrame | None:
    """The table's current partition as the warehouse manifest names it (read through the
    configured storage, local or object), or None before the first."""
    storage = LocalStorage(warehouse) if isinstance(warehouse, Path) else warehouse
    manifest = storage.read_manifest()
    entry = manifest.tables.get(table, {}).get(market) if manifest else None
    if entry is None:
        return None
    try:
        return read_partitions(storage, DAILY_PRICES, [market], manifest)
    except OSError:  # the file is gone (a warehouse being repaired): fetch everything again
        return None


def fetch_plan(
    previous: pl.DataFrame | None, symbols: Sequence[str]
) -> dict[date | None, list[str]]:
    """Symbols grouped by the day to fetch from: their newest stored bar (re-fetched, since the
    source may have revised a bar that was still forming), or None for a symbol never stored."""
    newest: dict[str, date] = {}
    if previous is not None and not previous.is_empty():
        last = previous.group_by("symbol").agg(pl.col("date").max())
        newest = dict(zip(last["symbol"], last["date"], strict=True))
    plan: dict[date | None, list[str]] = {}
    for symbol in symbols:
        plan.setdefault(newest.get(symbol), []).append(symbol)
    return plan


def merge(
    previous: pl.DataFrame | None, fresh: pl.DataFrame, symbols: Sequence[str]
) -> pl.DataFrame:
    """Stored bars of still-listed symbols, replaced by fresh bars on the same (symbol, date)."""
    if previous is None:
        return fresh
    kept = previous.filter(pl.col("symbol").is_in(list(symbols)))
    kept = kept.join(fresh.select("symbol", "date"), on=["symbol", "date"], how="anti")
    return pl.concat([kept, fresh]).sort("symbol", "date")


def collect_prices(
    source: PriceSource, market: str, symbols: Sequence[str], previous: pl.DataFrame | None
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, str]]:
    """Clean bars and rejects of one market, fetching only what is new from incremental sources.

    Returns a summary of what was fetched (for metadata): each `since` day and its symbol count.
    """
    if not source.incremental:
        previous = None
    # A full re-read is one call even with no symbols: files of unknown symbols must be reported.
    plan = fetch_plan(previous, symbols) if previous is not None else {None: list(symbols)}
    raw = RawBars.concat([source.daily_bars(market, group, since) for since, group in plan.items()])
    fresh, rejects = validate_bars(raw, market, symbols, source.name)
    fetched = {
        str(since or "full history"): f"{len(group)} symbols" for since, group in plan.items()
    }
    return merge(previous, fresh, symbols), rejects, fetched
