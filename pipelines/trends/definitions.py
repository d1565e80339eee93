"""Definitions of the trends domain: the `trend_history` + `trend_segments` multi-asset and checks."""

import dagster as dg

from pipelines.settings import PipelineSettings
from pipelines.trends.assets import trends


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The trends multi-asset (per market, from `daily_prices`); the IO manager comes from the root."""
    return dg.Definitions(assets=[trends])
