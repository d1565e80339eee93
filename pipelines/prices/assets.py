"""Dagster adapters of the daily prices domain: the `daily_prices` + `price_rejects` multi-asset."""

from collections.abc import Iterable, Iterator
from datetime import date
from typing import Any

import dagster as dg
import polars as pl

from pipelines.catalog import DAILY_PRICES, INSTRUMENTS, PRICE_REJECTS
from pipelines.catalog.state import PRICE_STATE
from pipelines.incremental.tables import stored_rows
from pipelines.partitions import DAILY_PARTITIONS
from pipelines.prices import checks
from pipelines.prices.sources.config import SourceRegistry
from pipelines.prices.update import MarketPrices, Request, update_market
from pipelines.runs import RunDays, RunOptions, run_days, single_run, step_name
from pipelines.warehouse.resource import WarehouseResource
from pipelines.warehouse.staging import RunTransaction

EMBEDDED_PRICES = dg.AssetKey("embedded_market_prices")
"""The embedded market's price files (another domain's asset), depended on by key in embedded mode."""

PRICE_CHECKS = {
    "unique_symbol_date": "At most one bar per (symbol, date).",
    "positive_prices": "open, high, low and close are positive finite numbers.",
    "high_at_least_open_close": "high >= max(open, close).",
    "low_at_most_open_close": "low <= min(open, close).",
    "no_missing_trading_days": "No calendar day (crypto) or weekday (others) missing inside a series; warns, since holidays exist.",
    "fresh": "Every symbol's newest stored bar is within its market's freshness budget of the run's day.",
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
    written: pl.DataFrame, states: dict[str, pl.DataFrame], reference: date, budgets: dict[str, int]
) -> Iterator[dg.AssetCheckResult]:
    """One result per property: of the bars this run wrote, and of every market's stored spans."""
    error, warn = dg.AssetCheckSeverity.ERROR, dg.AssetCheckSeverity.WARN
    key = ["market", "symbol", "date"]
    yield check_result(
        "unique_symbol_date", "daily_prices", checks.duplicate_keys(written, key), error
    )
    yield check_result(
        "positive_prices", "daily_prices", checks.non_positive_prices(written), error
    )
    high = checks.high_below_open_close(written)
    yield check_result("high_at_least_open_close", "daily_prices", high, error)
    low = checks.low_above_open_close(written)
    yield check_result("low_at_most_open_close", "daily_prices", low, error)
    yield check_result("no_missing_trading_days", "daily_prices", _gaps(written, states), warn)
    yield freshness_result(states, reference, budgets)


def _gaps(written: pl.DataFrame, markets: Iterable[str]) -> pl.DataFrame:
    """Expected days missing inside the bars written, per market (crypto every day, others weekdays)."""
    found = [
        checks.missing_trading_days(written.filter(pl.col("market") == m), m).with_columns(
            market=pl.lit(m)
        )
        for m in markets
    ]
    return pl.concat(found) if found else pl.DataFrame()


def freshness_result(
    states: dict[str, pl.DataFrame], reference: date, budgets: dict[str, int]
) -> dg.AssetCheckResult:
    """Fails when any symbol's newest stored bar is stale, or when a market holds no bar at all."""
    stale = [
        checks.stale_symbols(
            state.select("symbol", pl.col("last_date").alias("date")), reference, budgets[market]
        ).with_columns(market=pl.lit(market))
        for market, state in states.items()
    ]
    empty = sorted(market for market, state in states.items() if state.is_empty())
    offending = pl.concat(stale) if stale else pl.DataFrame()
    days = [d for s in states.values() for d in s["last_date"].to_list()]
    newest = max(days, default=None)
    return dg.AssetCheckResult(
        asset_key="daily_prices",
        check_name="fresh",
        passed=offending.is_empty() and not empty,
        metadata={
            "reference_day": reference.isoformat(),
            "max_age_days": dg.MetadataValue.json(budgets),
            "newest_date": str(newest) if newest is not None else "none",
            "markets_without_bars": dg.MetadataValue.json(empty),
            "stale_symbols": dg.MetadataValue.md(checks.markdown(offending)),
        },
    )


def rejects_result(asset: str, rejects: pl.DataFrame) -> dg.AssetCheckResult:
    """Warns when the run has rejects; metadata counts them by reason."""
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


def _summary(results: list[MarketPrices]) -> dict[str, Any]:
    return {
        r.market: {
            "shards": r.shards,
            "appended": len(r.appended),
            "reloaded": len(r.reloaded),
            "removed": len(r.removed),
            "fetched": r.fetched,
        }
        for r in results
    }


def build_daily_prices(embedded: bool) -> dg.AssetsDefinition:
    """The multi-asset: every listed market's bars through the run's day, shard by shard."""
    specs = [
        dg.AssetCheckSpec(n, asset="daily_prices", description=d) for n, d in PRICE_CHECKS.items()
    ]
    specs.append(
        dg.AssetCheckSpec(
            "no_rejects", asset="price_rejects", description="No price row was rejected."
        )
    )

    def build() -> dg.AssetsDefinition:
        @dg.multi_asset(
            name="raw_daily_prices",
            specs=[
                dg.AssetSpec(
                    DAILY_PRICES.name,
                    description=DAILY_PRICES.description,
                    deps=[INSTRUMENTS.name, *([EMBEDDED_PRICES] if embedded else [])],
                ),
                dg.AssetSpec(PRICE_REJECTS.name, description=PRICE_REJECTS.description),
            ],
            partitions_def=DAILY_PARTITIONS,
            backfill_policy=dg.BackfillPolicy.single_run(),
            check_specs=specs,
            group_name="raw",
        )
        def raw_daily_prices(
            context: dg.AssetExecutionContext,
            price_sources: dg.ResourceParam[SourceRegistry],
            warehouse: WarehouseResource,
            run_options: RunOptions,
        ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
            tx = warehouse.transaction(context.run.run_id, step_name(context))
            days = run_days(context)
            results = [
                update_market(
                    tx, price_sources.for_market(market), _request(tx, market, days, run_options)
                )
                for market in run_options.markets
            ]
            written = pl.concat([r.bars() for r in results])
            rejects = pl.concat([r.rejects for r in results])
            states = {r.market: stored_rows(tx, PRICE_STATE, r.market) for r in results}
            newest = written["date"].max()
            yield dg.MaterializeResult(
                asset_key=DAILY_PRICES.name,
                metadata={
                    "dagster/row_count": written.height,
                    "newest_date": str(newest) if newest is not None else "none",
                    "markets": dg.MetadataValue.json(_summary(results)),
                },
            )
            yield dg.MaterializeResult(
                asset_key=PRICE_REJECTS.name, metadata={"dagster/row_count": rejects.height}
            )
            budgets = {m: price_sources.freshness_days[m] for m in states}
            yield from price_check_results(written, states, days.through, budgets)
            yield rejects_result("price_rejects", rejects)

        return raw_daily_prices

    return single_run(build)


def _request(tx: RunTransaction, market: str, days: RunDays, options: RunOptions) -> Request:
    instruments = stored_rows(tx, INSTRUMENTS, market)
    return Request(
        market=market,
        symbols=instruments["symbol"].to_list(),
        through=days.through,
        since=days.since,
        full=options.full,
        shard_symbols=options.shard_symbols,
    )
