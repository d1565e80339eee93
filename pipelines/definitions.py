"""The composition root: every domain's Definitions, the warehouse IO manager and the schedule, merged."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import dagster as dg

from pipelines import schedules
from pipelines.embedded_market.definitions import build_defs as embedded_market_defs
from pipelines.indicators.definitions import build_defs as indicators_defs
from pipelines.news.definitions import build_defs as news_defs
from pipelines.newsroom.definitions import build_defs as newsroom_defs
from pipelines.prices.definitions import build_defs as prices_defs
from pipelines.settings import PipelineSettings, load_settings
from pipelines.simulator.definitions import build_defs as simulator_defs
from pipelines.trends.definitions import build_defs as trends_defs
from pipelines.warehouse.definitions import build_defs as warehouse_defs
from pipelines.webhooks.definitions import build_defs as webhooks_defs

DOMAINS: tuple[Callable[[PipelineSettings], dg.Definitions], ...] = (
    embedded_market_defs,
    prices_defs,
    news_defs,
    newsroom_defs,
    indicators_defs,
    trends_defs,
    simulator_defs,
    webhooks_defs,
)
"""Each domain's `build_defs`; adding a domain is one import and one entry here."""


def build_definitions(
    settings: PipelineSettings,
    domains: Sequence[Callable[[PipelineSettings], dg.Definitions]] = DOMAINS,
) -> dg.Definitions:
    """The domains' Definitions with the warehouse IO manager and the daily schedule."""
    return dg.Definitions.merge(
        *(build(settings) for build in domains),
        warehouse_defs(settings),
        schedules.build_defs(settings),
    )


@dg.definitions
def defs() -> dg.Definitions:
    """What `dagster dev` loads; settings are read when Dagster loads the code, not at import."""
    return build_definitions(load_settings())
