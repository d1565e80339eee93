"""Dagster adapters of the daily prices domain: the `daily_prices` + `price_rejects` multi-asset."""

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg
import polars as pl

from pipelines.catalog import DAILY_PRICES, PRICE_REJECTS, WarehouseStorage
from pipelines.partitions import MARKET_PARTITIONS
from pipelines.prices import checks
from pipelines.prices.incremental import collect_prices, stored_partition
from pipelines.prices.sources.config import SourceRegistry

EMBEDDED_FILES = dg.AssetKey("embedded_market_files")
"""The embedded market's files (another domain's asset), depended on by key in embedded mode."""

PRICE_CHECKS = {
    "unique_symbol_date": "At most one bar per (symbol, date).",
    "positive_prices": "open, high, low and close are positive finite numbers.",
    "high_at_least_open_close": "high >= max(open, close).",
    "low_at_most_open_close": "low <= min(open, close).",
    "no_missing_trading_days": "No calendar day (crypto) or weekday (others) missing inside a series; warns, since holidays exist.",
    "fresh": "Every symbol's newest bar is within the market's freshness budget of the reference day.",
}


def check_result(
    check: str, asset: str, offending: pl.DataFrame, severity: dg.AssetCheckSeverity
) -> dg.AssetCheckResult:
    """A check result that fails when any row offends, carrying the first rows as Markdown."""
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=check,
        passed=offending.is_empty(),
        severity=severity,
        metadata={
            "offending_count": offending.height,
            "offending_rows": dg.MetadataValue.md(checks.markdown(offending)),
        },
    )


def price_check_results(
    prices: pl.DataFrame, market: str, reference: date, max_age_days: int
) -> Iterator[dg.AssetCheckResult]:
    """One result per property of the `daily_prices` partition."""
    error, warn = dg.AssetCheckSeverity.ERROR, dg.AssetCheckSeverity.WARN
    key = ["symbol", "date"]
    yield check_result(
        "unique_symbol_date", "daily_prices", checks.duplicate_keys(prices, key), error
    )
    yield check_result("positive_prices", "daily_prices", checks.non_positive_prices(prices), error)
    high = checks.high_below_open_close(prices)
    yield check_result("high_at_least_open_close", "daily_prices", high, error)
    low = checks.low_above_open_close(prices)
    yield check_result("low_at_most_open_close", "daily_prices", low, error)
    gaps = checks.missing_trading_days(prices, market)
    yield check_result("no_missing_trading_days", "daily_prices", gaps, warn)
    yield freshness_result(prices, reference, max_age_days)


def freshness_result(
    prices: pl.DataFrame, reference: date, max_age_days: int
) -> dg.AssetCheckResult:
    """Fails when any symbol is stale, or when the partition holds no bar at all."""
    stale = checks.stale_symbols(prices, reference, max_age_days)
    newest = prices["date"].max()
    return dg.AssetCheckResult(
        asset_key="daily_prices",
        check_name="fresh",
        passed=stale.is_empty() and not prices.is_empty(),
        metadata={
            "reference_day": reference.isoformat(),
            "max_age_days": max_age_days,
            "newest_date": str(newest) if newest is not None else "none",
            "stale_symbols": dg.MetadataValue.md(checks.markdown(stale)),
        },
    )


def rejects_result(asset: str, rejects: pl.DataFrame) -> dg.AssetCheckResult:
    """Warns when the partition has rejects; metadata counts them by reason."""
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name="no_rejects",
        passed=rejects.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "reject_count": rejects.height,
            "reasons": dg.MetadataValue.md(checks.markdown(checks.reasons_by_count(rejects))),
            "first_rejects": dg.MetadataValue.md(checks.markdown(rejects)),
        },
    )


def build_daily_prices(
    warehouse_dir: Path | WarehouseStorage, reference_day: date | None, embedded: bool
) -> dg.AssetsDefinition:
    """The multi-asset; `reference_day` None means today (UTC) at run time, for freshness."""
    specs = [
        dg.AssetCheckSpec(n, asset="daily_prices", description=d) for n, d in PRICE_CHECKS.items()
    ]
    specs.append(
        dg.AssetCheckSpec(
            "no_rejects", asset="price_rejects", description="No price row was rejected."
        )
    )

    @dg.multi_asset(
        name="raw_daily_prices",
        outs={
            "daily_prices": dg.AssetOut(key="daily_prices", description=DAILY_PRICES.description),
            "price_rejects": dg.AssetOut(
                key="price_rejects", description=PRICE_REJECTS.description
            ),
        },
        ins={"instruments": dg.AssetIn(key="instruments")},
        deps=[EMBEDDED_FILES] if embedded else [],
        partitions_def=MARKET_PARTITIONS,
        check_specs=specs,
        required_resource_keys={"price_sources"},
        group_name="raw",
    )
    def raw_daily_prices(
        context: dg.AssetExecutionContext, instruments: pl.DataFrame
    ) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
        market = context.partition_key
        registry: SourceRegistry = context.resources.price_sources
        source = registry.for_market(market)
        previous = (
            stored_partition(warehouse_dir, DAILY_PRICES.name, market)
            if source.incremental
            else None
        )
        symbols = instruments["symbol"].to_list()
        prices, rejects, fetched = collect_prices(source, market, symbols, previous)
        newest = prices["date"].max()
        yield dg.Output(
            prices,
            output_name="daily_prices",
            metadata={
                "dagster/row_count": prices.height,
                "symbols": prices["symbol"].n_unique(),
                "newest_date": str(newest) if newest is not None else "none",
                "rejects": rejects.height,
                "connector": source.name,
                "fetched": dg.MetadataValue.json(fetched),
            },
        )
        yield dg.Output(
            rejects, output_name="price_rejects", metadata={"dagster/row_count": rejects.height}
        )
        reference = reference_day or datetime.now(UTC).date()
        yield from price_check_results(prices, market, reference, registry.freshness_days[market])
        yield rejects_result("price_rejects", rejects)

    return raw_daily_prices
