"""The composition root: every domain's Definitions, the two jobs with their publish steps, the resources."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import dagster as dg

from pipelines.corporate_actions.definitions import build_defs as corporate_actions_defs
from pipelines.embedded_market.definitions import build_defs as embedded_market_defs
from pipelines.indicators.definitions import build_defs as indicators_defs
from pipelines.instruments.definitions import build_defs as instruments_defs
from pipelines.jobs import schedules
from pipelines.news.definitions import build_defs as news_defs
from pipelines.newsroom.definitions import build_defs as newsroom_defs
from pipelines.platform.daily import is_daily
from pipelines.platform.runs import RunOptions
from pipelines.platform.settings import PipelineSettings, load_settings
from pipelines.prices.definitions import build_defs as prices_defs
from pipelines.simulator.definitions import build_defs as simulator_defs
from pipelines.trends.definitions import build_defs as trends_defs
from pipelines.warehouse.definitions import build_defs as warehouse_defs
from pipelines.warehouse.metadata import described
from pipelines.webhooks.definitions import build_defs as webhooks_defs

DOMAINS: tuple[Callable[[PipelineSettings], dg.Definitions], ...] = (
    embedded_market_defs,
    prices_defs,
    instruments_defs,
    corporate_actions_defs,
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
    """The domains' Definitions; their assets tagged for the daily job form it, the others the
    news job, each closed by its publish step; the warehouse and run-options resources. Every
    table asset carries its catalog columns, location, kinds and owner (`described`)."""
    merged = dg.Definitions.merge(*(build(settings) for build in domains))
    assets = [a for a in merged.assets or [] if isinstance(a, dg.AssetsDefinition)]
    daily = [k for a in assets for k in a.keys if is_daily(a, k)]
    news = [k for a in assets for k in a.keys if not is_daily(a, k)]
    url = settings.warehouse.url
    tables = dg.map_asset_specs(
        lambda spec: described(spec, url), [*assets, *schedules.publish_assets(daily, news)]
    )
    others = [a for a in merged.assets or [] if not isinstance(a, dg.AssetsDefinition)]
    return dg.Definitions.merge(
        dg.Definitions(
            assets=[*tables, *others],
            asset_checks=merged.asset_checks,
            jobs=merged.jobs,
            schedules=merged.schedules,
            sensors=merged.sensors,
            resources={
                **(merged.resources or {}),
                "run_options": RunOptions(shard_symbols=settings.shard_symbols),
            },
        ),
        schedules.build_defs(settings, daily, news),
        warehouse_defs(settings),
    )


@dg.definitions
def defs() -> dg.Definitions:
    """What `dagster dev` loads; settings are read when Dagster loads the code, not at import."""
    return build_definitions(load_settings())
