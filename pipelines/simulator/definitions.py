"""The trade simulator's Definitions: the `trade_simulator` multi-asset and its checks."""

import dagster as dg

from pipelines.settings import PipelineSettings
from pipelines.simulator.assets import SimulatorConfig, build_trade_simulator


def build_defs(settings: PipelineSettings, config: SimulatorConfig | None = None) -> dg.Definitions:
    """Assets backtest_trades, backtest_summaries, current_actions, scorecards, recommendations."""
    simulator = build_trade_simulator(config or SimulatorConfig())
    return dg.Definitions(assets=[simulator])
