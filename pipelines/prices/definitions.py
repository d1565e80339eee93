"""Definitions of the daily prices domain, built from settings."""

import dagster as dg

from pipelines.platform.settings import PipelineSettings
from pipelines.prices.assets import build_daily_prices
from pipelines.prices.sources.config import SourceRegistry, load_sources


def build_defs(settings: PipelineSettings, sources: SourceRegistry | None = None) -> dg.Definitions:
    """Assets `daily_prices`, `price_rejects`, their checks, and the `price_sources` resource (from
    `settings.sources_config`, or `sources` when given) that the instruments domain reads too."""
    registry = sources or load_sources(settings)
    return dg.Definitions(
        assets=[build_daily_prices(registry.embedded)],
        resources={"price_sources": registry},
    )
