"""The embedded market domain's Dagster definitions."""

from __future__ import annotations

import dagster as dg

from pipelines.embedded_market.assets import build_embedded_news_asset, build_embedded_prices_asset
from pipelines.platform.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The embedded market's price and news assets bound to `settings` (embedded mode only)."""
    if settings.sources_config is not None:
        return dg.Definitions()
    return dg.Definitions(
        assets=[build_embedded_prices_asset(settings), build_embedded_news_asset(settings)]
    )
