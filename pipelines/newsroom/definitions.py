"""The newsroom domain's Definitions: briefs, sentiment, written analyses, checks, enricher and writer."""

from __future__ import annotations

import os
from collections.abc import Mapping

import dagster as dg

from pipelines.newsroom.assets import (
    build_analyses_assets,
    build_briefs_asset,
    build_sentiment_assets,
)
from pipelines.newsroom.config import LlmSettings, load_llm_settings
from pipelines.newsroom.enrichment import Enricher, LexiconEnricher
from pipelines.newsroom.writing.writer import TemplateWriter, Writer
from pipelines.platform.settings import PipelineSettings


def build_enricher(llm: LlmSettings | None) -> Enricher:
    """The LLM enricher (falling back to the lexicon) when configured, else the lexicon enricher."""
    if llm is None:
        return LexiconEnricher()
    from pipelines.newsroom.llm import LlmEnricher  # httpx only when an endpoint is configured

    return LlmEnricher(llm, LexiconEnricher())


def build_writer(llm: LlmSettings | None) -> Writer:
    """The LLM writer (falling back to the templates) when configured, else the template writer."""
    if llm is None:
        return TemplateWriter()
    from pipelines.newsroom.writing.llm import LlmWriter  # httpx only when configured

    return LlmWriter(llm, TemplateWriter())


def build_defs(settings: PipelineSettings, env: Mapping[str, str] | None = None) -> dg.Definitions:
    """briefs, sentiment_daily, sentiment_topics, instrument_analyses and market_summaries, with
    the resources `newsroom_enricher` and `newsroom_writer`.

    The enricher is the offline lexicon one and the writer the template one unless
    `MI_LLM_BASE_URL` and `MI_LLM_MODEL` are set (read here, when the definitions load, never at
    import); then both use that endpoint and fall back to the offline ones.
    """
    del settings  # the newsroom reads only the warehouse, through the run's transaction
    llm = load_llm_settings(os.environ if env is None else env)
    return dg.Definitions(
        assets=[build_briefs_asset(), build_sentiment_assets(), build_analyses_assets()],
        resources={"newsroom_enricher": build_enricher(llm), "newsroom_writer": build_writer(llm)},
    )
