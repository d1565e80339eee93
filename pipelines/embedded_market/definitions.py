"""The embedded market domain's Dagster definitions."""

from __future__ import annotations

import dagster as dg

from pipelines.embedded_market.assets import build_embedded_market_asset
from pipelines.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The `embedded_market_files` asset bound to `settings`."""
    return dg.Definitions(assets=[build_embedded_market_asset(settings)])
