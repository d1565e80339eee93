"""Definitions of the corporate actions domain, built from settings."""

import dagster as dg

from pipelines.corporate_actions.assets import build_corporate_actions
from pipelines.platform.settings import PipelineSettings
from pipelines.prices.sources.config import reads_embedded


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """Assets `corporate_actions`, `corporate_action_rejects` and their checks; the sources
    (`price_sources`) come with the prices domain, as for the instruments."""
    return dg.Definitions(assets=[build_corporate_actions(reads_embedded(settings))])
