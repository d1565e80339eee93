"""Definitions of the indicators domain: the `indicator_snapshots` asset and its checks."""

import dagster as dg

from pipelines.indicators.assets import indicator_snapshots
from pipelines.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """`indicator_snapshots` (per market, from `daily_prices`); the IO manager comes from the root."""
    return dg.Definitions(assets=[indicator_snapshots])
