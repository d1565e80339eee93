"""The trade simulator on one shard: signals carried from state, every window re-simulated from them.

A backtest window of `years` starts that many years before the symbol's last day, so each new day
moves every window: its run is replayed over the window from the stored bars and the stored
per-bar signals (the compiled engine makes that cheap), while the signals themselves, which
depend on the whole history through the recursive indicators, are carried from state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from pipelines.catalog import DAILY_PRICES, INSTRUMENTS, STRATEGIES, TREND_SEGMENTS, Table
from pipelines.catalog import trades as catalog
from pipelines.catalog.state import SIGNAL_STATE, STRATEGY_SIGNALS
from pipelines.incremental.modes import APPEND, FULL, REMOVED, code_version
from pipelines.incremental.runner import Domain, Files, ShardResult, ShardWork
from pipelines.incremental.tables import (
    EVERYTHING,
    kept_or_written,
    order,
    read_symbols,
    rewrite_snapshot,
    scan,
    sorted_by,
    upsert_series,
)
from pipelines.indicators import recursive
from pipelines.simulator import (
    backtests,
    checks,
    engine,
    metrics,
    scoring,
    signals,
    strategies,
    trades,
)
from pipelines.simulator.engine import Costs

TABLES: tuple[Table, ...] = (*catalog.TABLES, STRATEGY_SIGNALS, SIGNAL_STATE)
SIMULATED = (catalog.BACKTEST_TRADES, catalog.BACKTEST_SUMMARIES, catalog.CURRENT_ACTIONS)
"""Tables of a symbol's backtests: rewritten only for the symbols a run recomputes."""
BAR_COLUMNS = ("close", "high", "low", "volume")
"""What the signals and the backtests read of a bar (besides its symbol and date)."""
SCORED = (catalog.SCORECARDS, catalog.RECOMMENDATIONS)
"""Tables that also read other domains' current tables (names, running trends): rewritten for
every symbol on every run."""


@dataclass(frozen=True)
class SimulatorConfig:
    """Costs of every backtest and the strategies run."""

    costs: Costs = field(default_factory=Costs)
    strategies: tuple[str, ...] = STRATEGIES


VERSION = code_version(recursive, signals, strategies, engine, backtests, trades, metrics, scoring)
"""The code the signals and backtests are computed with: a change recomputes every symbol.
Hashed when the code is imported: the source that runs, even if its files are edited later."""


def version() -> str:
    return VERSION


def simulator_domain(config: SimulatorConfig) -> Domain:
    def update(work: ShardWork) -> ShardResult:
        return update_shard(work, config)

    return Domain(
        name="trade_simulator",
        tables=TABLES,
        state=SIGNAL_STATE,
        version=version,
        update=update,
        checks={key: check for key, (_, check) in checks.CHECKS.items()},
        every_shard=True,
    )


def update_shard(work: ShardWork, config: SimulatorConfig) -> ShardResult:
    """The shard's new files: signals of full symbols from their first bar and of appended ones
    from their state, then every window of both replayed; removed symbols dropped."""
    full, appended, removed = work.symbols(FULL), work.symbols(APPEND), work.symbols(REMOVED)
    processed = [*full, *appended]
    # Every window is replayed from the symbols' whole history: read it once, for the signals too.
    bars = work.bars(processed, columns=BAR_COLUMNS) if processed else DAILY_PRICES.empty()
    state_rows, signal_rows = [], []
    if full:
        mine = bars.filter(pl.col("symbol").is_in(pl.Series(full, dtype=pl.String).implode()))
        state, frame = signals.advance(signals.empty(full), mine, np.zeros(len(full), np.int64))
        state_rows.append(_state_frame(work, state, mine))
        signal_rows.append(frame)
    if appended:
        carried = work.state.filter(pl.col("symbol").is_in(appended)).sort("symbol")
        context = (
            bars.join(carried.select("symbol", "context_start"), on="symbol", maintain_order="left")
            .filter(pl.col("date") >= pl.col("context_start"))
            .drop("context_start")
        )
        stored = context.join(carried.select("symbol", "last_date"), on="symbol").filter(
            pl.col("date") <= pl.col("last_date")
        )
        counts = carried.select("symbol").join(
            stored.group_by("symbol").len(), on="symbol", how="left", maintain_order="left"
        )
        state, frame = signals.advance(
            signals.from_frame(carried),
            context,
            counts["len"].fill_null(0).to_numpy().astype(np.int64),
        )
        state_rows.append(_state_frame(work, state, context))
        signal_rows.append(frame)
    new_signals = _conformed(signal_rows, STRATEGY_SIGNALS, work.shard.market)
    cutoffs = dict.fromkeys([*full, *removed], EVERYTHING)
    files = {
        STRATEGY_SIGNALS.name: upsert_series(
            work.tx,
            STRATEGY_SIGNALS,
            work.shard,
            work.stored[STRATEGY_SIGNALS.name],
            new_signals,
            cutoffs,
        )
    }
    tables = _backtests(work, processed, bars, files[STRATEGY_SIGNALS.name], config)
    tables[SIGNAL_STATE.name] = _conformed(state_rows, SIGNAL_STATE, work.shard.market)
    replaced = [*processed, *removed]
    for table in (*SIMULATED, SIGNAL_STATE):
        files[table.name] = (
            rewrite_snapshot(
                work.tx, table, work.shard, work.stored[table.name], tables[table.name], replaced
            )
            if replaced
            else dict(work.stored[table.name])
        )
    scored = _scored(work, files)
    key = work.shard.key
    for table in SCORED:
        # Every symbol's rows, rewritten each run; a run with nothing new keeps the stored file.
        current = work.stored[table.name].get(key)
        ordered = sorted_by(scored[table.name], order(table))
        files[table.name] = {key: kept_or_written(work.tx, table, key, ordered, current)}
    return ShardResult(files, {**{t.name: tables[t.name] for t in SIMULATED}, **scored})


def _scored(work: ShardWork, files: Mapping[str, Files]) -> dict[str, pl.DataFrame]:
    """Scorecards and recommendations of every symbol of the shard, from its backtests as they now
    stand and the instruments and running trends of this run: a symbol whose backtests did not
    change still shows its current name and trend."""
    storage, market = work.tx.store.storage, work.shard.market
    summaries = scan(
        storage, files[catalog.BACKTEST_SUMMARIES.name].values(), catalog.BACKTEST_SUMMARIES
    )
    actions = scan(storage, files[catalog.CURRENT_ACTIONS.name].values(), catalog.CURRENT_ACTIONS)
    listed = pl.col("symbol").is_in(work.prices["symbol"].implode())
    instruments = scan(storage, work.tx.partitions(INSTRUMENTS.name, market).values(), INSTRUMENTS)
    running = scan(
        storage, work.tx.partitions(TREND_SEGMENTS.name, market).values(), TREND_SEGMENTS
    ).filter(pl.col("is_running"))
    # A strategy is in a position at the last bar exactly when it bought there or holds.
    in_trade = pl.col("action").is_in(["Buy", "Hold"]).alias("in_trade")
    cards = scoring.scorecards(
        summaries.collect(),
        actions.drop("market").with_columns(in_trade).collect(),
        instruments.filter(listed).collect(),
        running.filter(listed).collect(),
    )
    frames = {
        catalog.SCORECARDS.name: cards,
        catalog.RECOMMENDATIONS.name: scoring.recommendations(cards),
    }
    return {
        t.name: t.conform(frames[t.name].with_columns(market=pl.lit(market, pl.String)))
        for t in SCORED
    }


def _backtests(
    work: ShardWork,
    symbols: list[str],
    bars: pl.DataFrame,
    signal_files: Files,
    config: SimulatorConfig,
) -> dict[str, pl.DataFrame]:
    """Trades, summaries and current actions of `symbols`: every window replayed from their bars
    and stored signals."""
    if not symbols:
        return {t.name: t.empty() for t in SIMULATED}
    # The signal columns alone: the market's strings would only add to the read and the sort.
    storage, columns = work.tx.store.storage, backtests.SIGNAL_COLUMNS
    stored = read_symbols(storage, STRATEGY_SIGNALS, signal_files, symbols, columns=columns)
    sim = backtests.simulate_with_signals(bars, stored, config.costs, config.strategies)
    market = work.shard.market
    frames = {
        catalog.BACKTEST_TRADES.name: sim.trades,
        catalog.BACKTEST_SUMMARIES.name: sim.summaries,
        catalog.CURRENT_ACTIONS.name: scoring.current_actions(sim),
    }
    return {
        t.name: t.conform(frames[t.name].with_columns(market=pl.lit(market, pl.String)))
        for t in SIMULATED
    }


def _state_frame(work: ShardWork, state: signals.SignalState, bars: pl.DataFrame) -> pl.DataFrame:
    """Signal state rows with their bookkeeping: the prices they follow, where the next read starts."""
    from_end = pl.int_range(pl.len(), 0, -1).over("symbol")
    context = (
        bars.filter(from_end <= signals.CONTEXT_BARS)
        .group_by("symbol")
        .agg(context_start=pl.col("date").min())
    )
    return (
        signals.to_frame(state)
        .join(work.prices.select("symbol", "history_id", "last_date"), on="symbol")
        .join(context, on="symbol")
        .with_columns(code_version=pl.lit(version()))
    )


def _conformed(frames: list[pl.DataFrame], table: Table, market: str) -> pl.DataFrame:
    if not frames:
        return table.empty()
    return table.conform(pl.concat(frames).with_columns(market=pl.lit(market)))
