"""Definitions of the instruments domain, built from settings."""

import dagster as dg

from pipelines.instruments.assets import build_instruments
from pipelines.platform.settings import PipelineSettings
from pipelines.prices.sources.config import SourceRegistry, load_sources


def build_defs(settings: PipelineSettings, sources: SourceRegistry | None = None) -> dg.Definitions:
    """Assets `instruments`, `instrument_rejects` and their checks; the `price_sources` resource
    that lists them comes with the prices domain (`pipelines.prices.definitions`)."""
    registry = sources or load_sources(settings)
    return dg.Definitions(assets=[build_instruments(registry.embedded)])
