"""Definitions of the raw layer's instruments and daily prices domains, built from settings."""

import dagster as dg

from pipelines.instruments.assets import build_instruments
from pipelines.prices.assets import build_daily_prices
from pipelines.prices.sources.config import SourceRegistry, load_sources
from pipelines.settings import PipelineSettings


def build_defs(settings: PipelineSettings, sources: SourceRegistry | None = None) -> dg.Definitions:
    """Assets `instruments`, `instrument_rejects`, `daily_prices`, `price_rejects`, their checks,
    and the `price_sources` resource (from `settings.sources_config`, or `sources` when given)."""
    registry = sources or load_sources(settings)
    return dg.Definitions(
        assets=[
            build_instruments(registry.embedded),
            build_daily_prices(registry.embedded),
        ],
        resources={"price_sources": registry},
    )
