"""Definitions of the trends domain: the `trend_history` + `trend_segments` multi-asset and checks."""

import dagster as dg

from pipelines.platform.settings import PipelineSettings
from pipelines.trends.assets import build_trends


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The trends multi-asset (every market, from `daily_prices`); resources come from the root."""
    del settings  # the domain reads only the warehouse
    return dg.Definitions(assets=[build_trends()])
