"""Dagster adapter of the trade simulator: one multi-asset per market writing its five tables, with checks."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import dagster as dg
import polars as pl

from pipelines.catalog import trades as catalog
from pipelines.catalog.schema import Table
from pipelines.partitions import MARKET_PARTITIONS
from pipelines.prices.checks import markdown
from pipelines.simulator import checks, scoring
from pipelines.simulator.backtests import simulate
from pipelines.simulator.engine import Costs
from pipelines.simulator.strategies import STRATEGIES
from pipelines.warehouse.io_manager import MISSING_AS_EMPTY

TREND_SEGMENTS = dg.AssetKey("trend_segments")
"""The trends domain's table; the scorecards use its running segment of each symbol."""

Check = Callable[[dict[str, pl.DataFrame]], pl.DataFrame]
CHECKS: dict[tuple[str, str], tuple[str, Check]] = {
    ("backtest_trades", "finite_numbers"): (
        "No NaN or infinite number.",
        lambda t: checks.non_finite(t["backtest_trades"]),
    ),
    ("backtest_trades", "trade_arithmetic"): (
        "profit = (exit - entry) x units - fees; profit_percent = profit / spend x 100.",
        lambda t: checks.bad_trade_arithmetic(t["backtest_trades"]),
    ),
    ("backtest_trades", "days_in_trade_from_dates"): (
        "days_in_trade = sell_date - start_date (>= 0 while open).",
        lambda t: checks.bad_trade_dates(t["backtest_trades"]),
    ),
    ("backtest_trades", "prices_within_high_low"): (
        "lowest_price <= start_price, last_price <= highest_price.",
        lambda t: checks.prices_outside_range(t["backtest_trades"]),
    ),
    ("backtest_trades", "open_closed_consistent"): (
        "Buy (open) trades have no exit; Sell (closed) trades have exit reason, price and date.",
        lambda t: checks.inconsistent_trade_state(t["backtest_trades"]),
    ),
    ("backtest_summaries", "finite_numbers"): (
        "No NaN or infinite number.",
        lambda t: checks.non_finite(t["backtest_summaries"]),
    ),
    ("backtest_summaries", "counts_consistent"): (
        "total = profitable + unprofitable = closed trades; total_profit = final - initial.",
        lambda t: checks.inconsistent_counts(t["backtest_summaries"], t["backtest_trades"]),
    ),
    ("current_actions", "action_values"): (
        "action is Buy, Sell, Hold or Stay.",
        lambda t: checks.bad_actions(t["current_actions"]),
    ),
    ("scorecards", "finite_numbers"): (
        "No NaN or infinite number.",
        lambda t: checks.non_finite(t["scorecards"]),
    ),
    ("scorecards", "score_range"): (
        "score within 0..5.",
        lambda t: checks.score_out_of_range(t["scorecards"]),
    ),
    ("scorecards", "action_values"): (
        "action is Buy, Sell, Hold or Stay.",
        lambda t: checks.bad_actions(t["scorecards"]),
    ),
    ("recommendations", "score_range"): (
        "score within 0..5.",
        lambda t: checks.score_out_of_range(t["recommendations"]),
    ),
}


@dataclass(frozen=True)
class SimulatorConfig:
    """Costs of every backtest and the strategies run."""

    costs: Costs = field(default_factory=Costs)
    strategies: tuple[str, ...] = STRATEGIES


def simulator_tables(
    prices: pl.DataFrame,
    instruments: pl.DataFrame,
    trends: pl.DataFrame,
    market: str,
    config: SimulatorConfig,
) -> dict[str, pl.DataFrame]:
    """The five tables of one market, conformed to the catalog (empty without prices)."""
    if prices.is_empty():
        return {t.name: t.empty() for t in catalog.TABLES}
    sim = simulate(prices, config.costs, config.strategies)
    actions = scoring.current_actions(sim)
    cards = scoring.scorecards(sim.summaries, actions, instruments, trends)
    frames = {
        "backtest_trades": sim.trades,
        "backtest_summaries": sim.summaries,
        "current_actions": actions,
        "scorecards": cards,
        "recommendations": scoring.recommendations(cards),
    }
    tables: dict[str, Table] = {t.name: t for t in catalog.TABLES}
    return {
        name: tables[name].conform(frame.with_columns(market=pl.lit(market, pl.String)))
        for name, frame in frames.items()
    }


def check_results(tables: dict[str, pl.DataFrame]) -> Iterator[dg.AssetCheckResult]:
    """One result per (table, property); a failure carries the first offending rows."""
    for (asset, name), (_, find) in CHECKS.items():
        offending = find(tables)
        yield dg.AssetCheckResult(
            asset_key=asset,
            check_name=name,
            passed=offending.is_empty(),
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "offending_count": offending.height,
                "offending_rows": dg.MetadataValue.md(markdown(offending)),
            },
        )


def build_trade_simulator(config: SimulatorConfig) -> dg.AssetsDefinition:
    """The `trade_simulator` multi-asset: the five catalog tables of one market per run.

    `trend_segments` is an input read through the IO manager (so from whatever storage the
    warehouse is configured on); a market whose trends are not materialized yet reads it as no
    rows and gets null trend and trend_duration.
    """
    specs = [
        dg.AssetCheckSpec(name, asset=asset, description=description)
        for (asset, name), (description, _) in CHECKS.items()
    ]

    @dg.multi_asset(
        name="trade_simulator",
        outs={t.name: dg.AssetOut(key=t.name, description=t.description) for t in catalog.TABLES},
        ins={
            "daily_prices": dg.AssetIn(key="daily_prices"),
            "instruments": dg.AssetIn(key="instruments"),
            "trend_segments": dg.AssetIn(key=TREND_SEGMENTS, metadata={MISSING_AS_EMPTY: True}),
        },
        partitions_def=MARKET_PARTITIONS,
        check_specs=specs,
        group_name="simulator",
    )
    def trade_simulator(
        context: dg.AssetExecutionContext,
        daily_prices: pl.DataFrame,
        instruments: pl.DataFrame,
        trend_segments: pl.DataFrame,
    ) -> Iterator[dg.Output[pl.DataFrame] | dg.AssetCheckResult]:
        market = context.partition_key
        tables = simulator_tables(daily_prices, instruments, trend_segments, market, config)
        for name, frame in tables.items():
            yield dg.Output(frame, output_name=name, metadata={"dagster/row_count": frame.height})
        yield from check_results(tables)

    return trade_simulator
