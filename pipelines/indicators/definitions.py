"""Definitions of the indicators domain: the `indicator_snapshots` asset and its checks."""

import dagster as dg

from pipelines.indicators.assets import build_indicator_snapshots
from pipelines.platform.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """`indicator_snapshots` (every market, from `daily_prices`); resources come from the root."""
    del settings  # the domain reads only the warehouse
    return dg.Definitions(assets=[build_indicator_snapshots()])
