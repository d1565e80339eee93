"""Definitions of the instruments domain, built from settings."""

import dagster as dg

from pipelines.instruments.assets import build_instruments
from pipelines.platform.settings import PipelineSettings
from pipelines.prices.sources.config import reads_embedded


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """Assets `instruments`, `instrument_rejects` and their checks. The `price_sources` resource
    that lists them comes with the prices domain (`pipelines.prices.definitions`), which reads
    the sources file; these assets need only whether it reads the embedded market."""
    return dg.Definitions(assets=[build_instruments(reads_embedded(settings))])
