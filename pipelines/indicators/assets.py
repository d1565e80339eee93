"""Dagster adapter of the indicators domain: `indicator_snapshots` from `daily_prices`, every market."""

import dagster as dg

from pipelines.catalog import DAILY_PRICES, INDICATOR_SNAPSHOTS, PRICE_ADJUSTMENTS
from pipelines.incremental.assets import domain_asset
from pipelines.indicators.checks import CHECKS
from pipelines.indicators.update import INDICATORS


def build_indicator_snapshots() -> dg.AssetsDefinition:
    """The asset and its checks, run on the rows each run recomputes."""
    return domain_asset(
        INDICATORS,
        name=INDICATOR_SNAPSHOTS.name,
        outputs=[INDICATOR_SNAPSHOTS],
        deps=[DAILY_PRICES.name, PRICE_ADJUSTMENTS.name],
        group="analytics",
        checks={(INDICATOR_SNAPSHOTS.name, name): text for name, (text, _) in CHECKS.items()},
    )
