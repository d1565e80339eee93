"""The trade simulator's Definitions: the `trade_simulator` multi-asset and its checks."""

import dagster as dg

from pipelines.platform.settings import PipelineSettings
from pipelines.simulator.assets import build_positions_check, build_trade_simulator
from pipelines.simulator.update import SimulatorConfig


def build_defs(settings: PipelineSettings, config: SimulatorConfig | None = None) -> dg.Definitions:
    """Assets backtest_trades, backtest_summaries, current_actions, scorecards, recommendations."""
    del settings  # the simulator reads only the warehouse
    return dg.Definitions(
        assets=[build_trade_simulator(config or SimulatorConfig())],
        asset_checks=[build_positions_check()],
    )
