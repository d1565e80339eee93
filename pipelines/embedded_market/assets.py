"""The embedded market's assets: price files through the run's day, news feeds as of now."""

# No `from __future__ import annotations` here: Dagster inspects the context annotation at runtime.

from datetime import date
from typing import Any

import dagster as dg

from pipelines.embedded_market.market import write_embedded_news, write_embedded_prices
from pipelines.embedded_market.universe import split_instruments
from pipelines.platform.daily import in_daily_job
from pipelines.platform.runs import RunOptions, run_days
from pipelines.platform.settings import PipelineSettings


def instruments_for(settings: PipelineSettings, market: str) -> int | None:
    """This market's share of a scaled universe, or None for the default universe."""
    if settings.instruments is None:
        return None
    return split_instruments(settings.instruments)[market]


def price_day(settings: PipelineSettings, day: date) -> date:
    """The last day to write: the run's day, never after the configured end date."""
    return min(day, settings.end_date) if settings.end_date else day


def build_embedded_prices_asset(settings: PipelineSettings) -> dg.AssetsDefinition:
    """`embedded_market_prices`: instruments and one price file per trading day, through the run's
    day (a new day writes one file per market)."""

    def build() -> dg.AssetsDefinition:
        @dg.asset(
            name="embedded_market_prices",
            group_name="sources",
            description=(
                "Deterministic embedded market: instrument lists and daily price files of every "
                "market, in the file-drop layout under the embedded sources folder."
            ),
        )
        def embedded_market_prices(
            context: dg.AssetExecutionContext, run_options: RunOptions
        ) -> dg.MaterializeResult:
            run = run_options.settings(settings)
            through = price_day(run, run_days(run_options).through)
            written: dict[str, Any] = {}
            for market in run_options.markets:
                manifest = write_embedded_prices(
                    run.embedded_dir,
                    market,
                    seed=run.seed,
                    through=through,
                    instruments=instruments_for(run, market),
                )
                written[market] = {
                    "instruments": manifest.instruments,
                    "last_day": manifest.last_date,
                }
            return dg.MaterializeResult(
                metadata={
                    "root": dg.MetadataValue.path(str(settings.embedded_dir)),
                    "through": through.isoformat(),
                    "markets": dg.MetadataValue.json(written),
                }
            )

        return embedded_market_prices

    return in_daily_job(build())


def build_embedded_news_asset(settings: PipelineSettings) -> dg.AssetsDefinition:
    """`embedded_market_news`: every market's feeds as they stand now (stories are published
    through the day, by the clock or `MI_NOW`)."""

    @dg.asset(
        name="embedded_market_news",
        group_name="sources",
        description=(
            "Deterministic embedded market: each market's RSS and Atom feeds as of now (current "
            "documents and monthly archives) under the embedded sources folder."
        ),
    )
    def embedded_market_news(run_options: RunOptions) -> dg.MaterializeResult:
        run = run_options.settings(settings)
        now = run.news_now()
        written: dict[str, Any] = {}
        for market in run_options.markets:
            manifest = write_embedded_news(
                run.embedded_dir,
                market,
                seed=run.seed,
                now=now,
                instruments=instruments_for(run, market),
            )
            written[market] = {"items": manifest.news_items, "files": len(manifest.files)}
        return dg.MaterializeResult(
            metadata={"now": now.isoformat(), "markets": dg.MetadataValue.json(written)}
        )

    return embedded_market_news
