"""Dagster adapter of the trade simulator: its five tables for every market, from carried signals."""

import dagster as dg

from pipelines.catalog import DAILY_PRICES, INSTRUMENTS, TREND_SEGMENTS
from pipelines.catalog import trades as catalog
from pipelines.incremental.assets import domain_asset
from pipelines.simulator.checks import CHECKS
from pipelines.simulator.update import SimulatorConfig, simulator_domain


def build_trade_simulator(config: SimulatorConfig) -> dg.AssetsDefinition:
    """The `trade_simulator` multi-asset; its scorecards read the run's running trend segments."""
    return domain_asset(
        simulator_domain(config),
        name="trade_simulator",
        outputs=list(catalog.TABLES),
        deps=[DAILY_PRICES.name, INSTRUMENTS.name, TREND_SEGMENTS.name],
        group="simulator",
        checks={key: text for key, (text, _) in CHECKS.items()},
    )
