"""Dagster adapter of the trends domain: `trend_history` + `trend_segments` from `daily_prices`."""

import dagster as dg

from pipelines.catalog import DAILY_PRICES, PRICE_ADJUSTMENTS, TREND_HISTORY, TREND_SEGMENTS
from pipelines.incremental.assets import domain_asset
from pipelines.trends.update import CHECKS, TRENDS


def build_trends() -> dg.AssetsDefinition:
    """The multi-asset and its checks, run on the rows each run recomputes."""
    return domain_asset(
        TRENDS,
        name="trends",
        outputs=[TREND_HISTORY, TREND_SEGMENTS],
        deps=[DAILY_PRICES.name, PRICE_ADJUSTMENTS.name],
        group="analytics",
        checks={key: text for key, (text, _) in CHECKS.items()},
    )
