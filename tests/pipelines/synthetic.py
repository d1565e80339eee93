"""A price source over generated bars held in memory, and runs of the incremental domains on it.

The source answers as an HTTP vendor does (bars since a day), so the domains are driven exactly as
the daily job drives them: prices first, then each domain's shards, then one commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta

import dagster as dg
import numpy as np
import polars as pl

from pipelines.catalog import WEEKDAY_MARKETS
from pipelines.incremental.runner import Domain, DomainRun, run_market
from pipelines.jobs.publish import build_publish
from pipelines.jobs.schedules import DAILY_PUBLISH, NEWS_PUBLISH
from pipelines.platform.runs import RunOptions
from pipelines.prices.sources.base import RAW_BARS_SCHEMA, PriceSource, RawBars, RawInstruments
from pipelines.prices.update import Request, update_market
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.store import Warehouse

FIRST_DAY = date(2023, 1, 2)


def walks(
    symbols: Sequence[str], days: int, seed: int = 1, first: date = FIRST_DAY
) -> pl.DataFrame:
    """Random-walk OHLCV bars (symbol, date, open, high, low, close, volume) from `first`."""
    rng = np.random.default_rng(seed)
    frames = []
    for i, symbol in enumerate(symbols):
        close = 50.0 * (i + 1) * np.exp(np.cumsum(rng.normal(0.0002, 0.02, days)))
        opening = close * np.exp(rng.normal(0.0, 0.005, days))
        high = np.maximum(opening, close) * np.exp(np.abs(rng.normal(0.0, 0.01, days)))
        low = np.minimum(opening, close) * np.exp(-np.abs(rng.normal(0.0, 0.01, days)))
        volume = rng.integers(0, 1_000_000, days).astype(np.float64)
        frames.append(
            pl.DataFrame(
                {
                    "symbol": symbol,
                    "date": [first + timedelta(days=d) for d in range(days)],
                    "open": opening,
                    "high": high,
                    "low": low,
                    "close": close,
                    "volume": volume,
                }
            )
        )
    return pl.concat(frames)


class Vendor(PriceSource):
    """An incremental source over `bars` (its `open`..`volume` columns as text)."""

    name = "vendor"

    def __init__(self, bars: pl.DataFrame, market: str = "crypto") -> None:
        if market in WEEKDAY_MARKETS:
            bars = bars.filter(pl.col("date").dt.weekday() <= 5)
        self.bars = bars

    @property
    def incremental(self) -> bool:
        return True

    def instruments(self, market: str) -> RawInstruments:
        raise NotImplementedError

    def daily_bars(self, market: str, symbols: Sequence[str], since: date | None) -> RawBars:
        rows = self.bars.filter(pl.col("symbol").is_in(list(symbols)))
        if since is not None:
            rows = rows.filter(pl.col("date") >= since)
        text = rows.select(
            pl.col("symbol"),
            pl.col("date").cast(pl.String),
            *(pl.col(c).cast(pl.String) for c in ("open", "high", "low", "close", "volume")),
            source=pl.lit("memory"),
            location=pl.format("{} {}", "symbol", "date"),
            record=pl.lit(""),
        )
        return RawBars(text.select(RAW_BARS_SCHEMA.names()))


def run_day(
    warehouse: Warehouse,
    source: PriceSource,
    symbols: list[str],
    through: date,
    run_id: str,
    domains: Sequence[Domain] = (),
    market: str = "crypto",
    full: bool = False,
    shard_symbols: int = 1_000,
) -> list[DomainRun]:
    """One daily run: prices through `through`, then each domain, then one commit."""
    prices = RunTransaction(warehouse, run_id, "prices")
    update_market(
        prices, source, Request(market, symbols, through, full=full, shard_symbols=shard_symbols)
    )
    runs = []
    for domain in domains:
        tx = RunTransaction(warehouse, run_id, domain.name)
        runs.append(run_market(tx, market, domain, full=full))
    RunTransaction(warehouse, run_id, "publish").commit()
    return runs


def load_prices(warehouse: Warehouse, bars: pl.DataFrame, market: str, through: date) -> None:
    """Store `bars` as the market's committed prices (with their state), as a daily run would."""
    symbols = sorted(bars["symbol"].unique().to_list())
    tx = RunTransaction(warehouse, f"prices-{market}-{through}", "prices")
    update_market(tx, Vendor(bars, market), Request(market, symbols, through))
    tx.commit()


def materialize_daily(
    warehouse: Warehouse,
    assets: Sequence[dg.AssetsDefinition],
    day: date,
    markets: Sequence[str],
    resources: dict[str, object] | None = None,
) -> dg.ExecuteInProcessResult:
    """Materialize `assets` of the daily job for `day` and `markets`, then publish the run."""
    keys = [key.to_user_string() for asset in assets for key in asset.keys]
    publish = build_publish(DAILY_PUBLISH, keys, True, "test publish")
    return dg.materialize(
        [*assets, publish],
        resources={
            "warehouse": WarehouseResource(warehouse_dir=str(warehouse.root)),
            "run_options": RunOptions(markets=list(markets), day=day.isoformat()),
            **(resources or {}),
        },
        raise_on_error=True,
    )


def materialize_news(
    warehouse: Warehouse,
    assets: Sequence[dg.AssetsDefinition],
    markets: Sequence[str],
    resources: dict[str, object],
) -> dg.ExecuteInProcessResult:
    """Materialize `assets` of the news refresh for `markets`, then publish the run."""
    keys = [key.to_user_string() for asset in assets for key in asset.keys]
    publish = build_publish(NEWS_PUBLISH, keys, None, "test publish")
    return dg.materialize(
        [*assets, publish],
        resources={
            "warehouse": WarehouseResource(warehouse_dir=str(warehouse.root)),
            "run_options": RunOptions(markets=list(markets)),
            **resources,
        },
        raise_on_error=True,
    )
