"""The news domain's Definitions: the raw news multi-asset, its checks and its resources."""

from __future__ import annotations

import dagster as dg

from pipelines.news.assets import build_raw_news_assets
from pipelines.news.config import load_news_config
from pipelines.platform.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """raw_news + news_rejects with resources `news_source` and `news_policy`.

    The `warehouse` and `run_options` resources are supplied where the domains are merged.
    """
    config = load_news_config(settings)
    return dg.Definitions(
        assets=[build_raw_news_assets(embedded=settings.sources_config is None)],
        resources={"news_source": config.source, "news_policy": config.policy},
    )
