"""The newsroom domain's Definitions: briefs, the sentiment tables, their checks and the enricher."""

from __future__ import annotations

import os
from collections.abc import Mapping

import dagster as dg

from pipelines.newsroom.assets import build_briefs_asset, build_sentiment_assets
from pipelines.newsroom.config import build_enricher, load_llm_settings
from pipelines.settings import PipelineSettings


def build_defs(settings: PipelineSettings, env: Mapping[str, str] | None = None) -> dg.Definitions:
    """briefs, sentiment_daily and sentiment_topics with the resource `newsroom_enricher`.

    The enricher is the offline lexicon one unless `MI_LLM_BASE_URL` and `MI_LLM_MODEL` are set
    (read here, when the definitions load, never at import).
    """
    del settings  # the newsroom reads only the warehouse, through the IO manager
    llm = load_llm_settings(os.environ if env is None else env)
    return dg.Definitions(
        assets=[build_briefs_asset(), build_sentiment_assets()],
        resources={"newsroom_enricher": build_enricher(llm)},
    )
