"""Dagster adapter of the trade simulator: its five tables for every market, from carried signals."""

import dagster as dg

from pipelines.catalog import DAILY_PRICES, INSTRUMENTS, PRICE_ADJUSTMENTS, TREND_SEGMENTS
from pipelines.catalog import trades as catalog
from pipelines.incremental.assets import domain_asset
from pipelines.platform.runs import RunOptions
from pipelines.simulator.checks import CHECKS
from pipelines.simulator.update import SimulatorConfig, simulator_domain
from pipelines.warehouse.resource import WarehouseResource


def build_trade_simulator(config: SimulatorConfig) -> dg.AssetsDefinition:
    """The `trade_simulator` multi-asset; its scorecards read the run's running trend segments."""
    return domain_asset(
        simulator_domain(config),
        name="trade_simulator",
        outputs=list(catalog.TABLES),
        deps=[DAILY_PRICES.name, PRICE_ADJUSTMENTS.name, INSTRUMENTS.name, TREND_SEGMENTS.name],
        group="simulator",
        checks={key: text for key, (text, _) in CHECKS.items()},
    )


POSITIONS_CHECK = "every_market_has_a_position"


def build_positions_check() -> dg.AssetChecksDefinition:
    """WARN when a market of the run has nothing to recommend on its latest day: no strategy holds
    any of its instruments (every current action Stay or Sell), so get-recommendations answers
    `[]` for it whatever `min_score`. Real markets rarely do (docs/trade-simulator.md); a demo
    market that does shows an empty route."""

    @dg.asset_check(
        asset=catalog.RECOMMENDATIONS.name,
        name=POSITIONS_CHECK,
        description="Every market of the run has a symbol some strategy is long on (WARN).",
    )
    def every_market_has_a_position(
        context: dg.AssetCheckExecutionContext,
        warehouse: WarehouseResource,
        run_options: RunOptions,
    ) -> dg.AssetCheckResult:
        # The run's view of the table: its staged rows before the publish step, the committed
        # ones after (the check is not ordered against that step).
        tx = warehouse.transaction(context.run.run_id, POSITIONS_CHECK)
        held = {
            market: sum(
                f.rows for f in tx.partitions(catalog.RECOMMENDATIONS.name, market).values()
            )
            for market in run_options.markets
        }
        empty = sorted(market for market, count in held.items() if count == 0)
        return dg.AssetCheckResult(
            passed=not empty,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "positions_by_market": dg.MetadataValue.json(held),
                "empty_markets": ", ".join(empty) or "none",
            },
        )

    return every_market_has_a_position
