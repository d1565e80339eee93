"""The trade simulator on one shard: signals carried from state, every window re-simulated from them.

A backtest window of `years` starts that many years before the symbol's last day, so each new day
moves every window: its run is replayed over the window from the stored bars and the stored
per-bar signals (the compiled engine makes that cheap), while the signals themselves, which
depend on the whole history through the recursive indicators, are carried from state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date

import numpy as np
import polars as pl

from pipelines.catalog import DAILY_PRICES, INSTRUMENTS, STRATEGIES, TREND_SEGMENTS, Table
from pipelines.catalog import trades as catalog
from pipelines.catalog.state import BACKTEST_STATE, SIGNAL_STATE, STRATEGY_SIGNALS
from pipelines.incremental.modes import APPEND, FULL, REMOVED, code_version
from pipelines.incremental.runner import Domain, Files, ShardResult, ShardWork
from pipelines.indicators import recursive
from pipelines.simulator import (
    backtests,
    checks,
    engine,
    metrics,
    resume,
    scoring,
    signals,
    strategies,
    trades,
)
from pipelines.simulator.engine import Costs
from pipelines.warehouse.tables import (
    EVERYTHING,
    by_shard,
    kept_or_written,
    order,
    read_symbols,
    rewrite_snapshot,
    scan,
    snapshot,
    sorted_by,
    upsert_series,
)

TABLES: tuple[Table, ...] = (*catalog.TABLES, STRATEGY_SIGNALS, SIGNAL_STATE, BACKTEST_STATE)
SIMULATED = (catalog.BACKTEST_TRADES, catalog.BACKTEST_SUMMARIES, catalog.CURRENT_ACTIONS)
"""Tables of a symbol's backtests: rewritten only for the symbols a run recomputes."""
BAR_COLUMNS = ("open", "close", "high", "low", "volume")
"""What the signals and the backtests read of a bar (besides its symbol and date)."""
RESUMED = {
    catalog.BACKTEST_TRADES: "trades",
    catalog.BACKTEST_SUMMARIES: "summaries",
    catalog.CURRENT_ACTIONS: "actions",
    BACKTEST_STATE: "states",
}
"""The tables of carried-on windows, by the key `resume.resume` returns them under."""
SCORED = (catalog.SCORECARDS, catalog.RECOMMENDATIONS)
"""Tables that also read other domains' current tables (names, running trends): rewritten for
every symbol on every run."""


@dataclass(frozen=True)
class SimulatorConfig:
    """Costs of every backtest and the strategies run."""

    costs: Costs = field(default_factory=Costs)
    strategies: tuple[str, ...] = STRATEGIES


VERSION = code_version(
    recursive, signals, strategies, engine, backtests, trades, metrics, scoring, resume
)
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
    from their state; the windows of appended symbols carried on over their new bars where they
    can be (`resume`), every other window of both replayed; removed symbols dropped."""
    full, appended, removed = work.symbols(FULL), work.symbols(APPEND), work.symbols(REMOVED)
    processed = [*full, *appended]
    carried = work.state.filter(pl.col("symbol").is_in(appended)).sort("symbol")
    since = dict(zip(carried["symbol"].to_list(), carried["context_start"].to_list(), strict=True))
    # The signals of appended symbols need their last CONTEXT_BARS; only replays need the rest.
    bars = _bars(work, processed, since)
    advanced = _advance(work, full, carried, bars)
    cutoffs = dict.fromkeys([*full, *removed], EVERYTHING)
    files = {
        STRATEGY_SIGNALS.name: upsert_series(
            work.tx,
            STRATEGY_SIGNALS,
            work.shard,
            work.stored[STRATEGY_SIGNALS.name],
            _conformed(advanced.signal_rows, STRATEGY_SIGNALS, work.shard.market),
            cutoffs,
        )
    }
    backtested = _stored(work, appended)
    windows = _carried_windows(work, appended, backtested)
    kept_on = set(windows["symbol"].unique().to_list())
    replayed = [s for s in processed if s not in kept_on]
    tables = _backtests(work, replayed, bars, full, files[STRATEGY_SIGNALS.name], config)
    dropped = None
    if kept_on:
        wanted = pl.col("symbol").is_in(pl.Series(sorted(kept_on), dtype=pl.String).implode())
        on = resume.resume(
            windows,
            backtested,
            advanced.new_bars.filter(wanted),
            advanced.new_signals.filter(wanted),
            config.costs,
            work.shard.market,
            lambda symbols: _closed_trades(work, symbols),
            work.factors.select("symbol", "date", "dividend"),
        )
        dropped = on.dropped
        for table in RESUMED:
            tables[table.name] = pl.concat(
                [tables[table.name], table.conform(_in_market(getattr(on, RESUMED[table]), work))],
                how="vertical_relaxed",
            )
    tables[SIGNAL_STATE.name] = _conformed(advanced.state_rows, SIGNAL_STATE, work.shard.market)
    written, trades_now = _written(work, tables, processed, [*replayed, *removed], removed, dropped)
    files |= written
    tables[catalog.BACKTEST_TRADES.name] = trades_now
    scored = _scored(work, files)
    key = work.shard.key
    for table in SCORED:
        # Every symbol's rows, rewritten each run; a run with nothing new keeps the stored file.
        current = work.stored[table.name].get(key)
        ordered = sorted_by(scored[table.name], order(table))
        files[table.name] = {key: kept_or_written(work.tx, table, key, ordered, current)}
    return ShardResult(files, {**{t.name: tables[t.name] for t in SIMULATED}, **scored})


def _bars(
    work: ShardWork, symbols: list[str], since: Mapping[str, date] | None = None
) -> pl.DataFrame:
    """The symbols' split-adjusted bars (BAR_COLUMNS) with each bar's dividend per unit."""
    if not symbols:
        empty = DAILY_PRICES.empty().select("symbol", "date", *BAR_COLUMNS)
        return empty.with_columns(dividend=pl.lit(0.0))
    return work.bars(symbols, since, columns=BAR_COLUMNS, dividends=True)


@dataclass(frozen=True)
class _Advanced:
    """The signals' state and signals after the new bars, and those bars."""

    state_rows: list[pl.DataFrame]
    signal_rows: list[pl.DataFrame]
    new_bars: pl.DataFrame
    """The appended symbols' new bars (symbol, date and BAR_COLUMNS), by symbol then date."""
    new_signals: pl.DataFrame
    """Their signals, row for row."""


def _advance(
    work: ShardWork, full: list[str], carried: pl.DataFrame, bars: pl.DataFrame
) -> _Advanced:
    """Signals of full symbols from their first bar and of the appended ones (`carried`: their
    state rows) over their new bars; `bars` holds the former's history, the latter's context."""
    state_rows, signal_rows = [], []
    if full:
        mine = bars.filter(pl.col("symbol").is_in(pl.Series(full, dtype=pl.String).implode()))
        state, frame = signals.advance(signals.empty(full), mine, np.zeros(len(full), np.int64))
        state_rows.append(_state_frame(work, state, mine))
        signal_rows.append(frame)
    if carried.is_empty():
        new_bars = _bars(work, [])
        return _Advanced(state_rows, signal_rows, new_bars, STRATEGY_SIGNALS.empty())
    context = bars.filter(pl.col("symbol").is_in(carried["symbol"].implode()))
    stored = context.join(carried.select("symbol", "last_date"), on="symbol").filter(
        pl.col("date") <= pl.col("last_date")
    )
    counts = carried.select("symbol").join(
        stored.group_by("symbol").len(), on="symbol", how="left", maintain_order="left"
    )
    state, frame = signals.advance(
        signals.from_frame(carried), context, counts["len"].fill_null(0).to_numpy().astype(np.int64)
    )
    state_rows.append(_state_frame(work, state, context))
    signal_rows.append(frame)
    new_bars = context.join(carried.select("symbol", "last_date"), on="symbol").filter(
        pl.col("date") > pl.col("last_date")
    )
    return _Advanced(state_rows, signal_rows, new_bars, frame)


def _written(
    work: ShardWork,
    tables: Mapping[str, pl.DataFrame],
    processed: list[str],
    rewritten: list[str],
    removed: list[str],
    dropped: pl.DataFrame | None,
) -> tuple[dict[str, Files], pl.DataFrame]:
    """The shard's new files of the backtest tables and the states, and every trade of the
    processed symbols (what the checks look at). Every row of the processed and removed symbols
    is replaced, but a carried-on symbol's trades only where they changed (`dropped`: the open
    trades replaced; `rewritten`: the symbols whose trades are all replaced)."""
    replaced = [*processed, *removed]
    trades, key = catalog.BACKTEST_TRADES, work.shard.key
    if not replaced:
        kept = (*SIMULATED, SIGNAL_STATE, BACKTEST_STATE)
        return {t.name: dict(work.stored[t.name]) for t in kept}, tables[trades.name]
    files: dict[str, Files] = {}
    for table in (
        catalog.BACKTEST_SUMMARIES,
        catalog.CURRENT_ACTIONS,
        SIGNAL_STATE,
        BACKTEST_STATE,
    ):
        stored = work.stored[table.name]
        files[table.name] = rewrite_snapshot(
            work.tx, table, work.shard, stored, tables[table.name], replaced
        )
    stored = work.stored[trades.name]
    every = snapshot(work.tx, trades, stored, tables[trades.name], rewritten, dropped)
    files[trades.name] = {key: work.tx.write_file(trades, key, every)}
    mine = pl.col("symbol").is_in(pl.Series(processed, dtype=pl.String).implode())
    return files, every.filter(mine)


def _stored(work: ShardWork, symbols: list[str]) -> resume.Stored:
    """The shard's stored backtests of `symbols` that their windows carry on from."""
    storage = work.tx.store.storage
    if not symbols:
        return resume.Stored(
            summaries=catalog.BACKTEST_SUMMARIES.empty(),
            states=BACKTEST_STATE.empty(),
            open_trades=catalog.BACKTEST_TRADES.empty(),
        )
    wanted = pl.Series(symbols, dtype=pl.String).implode()
    open_trades = scan(
        storage, work.stored[catalog.BACKTEST_TRADES.name].values(), catalog.BACKTEST_TRADES
    ).filter(pl.col("symbol").is_in(wanted) & (pl.col("action") == "Buy"))
    summaries, states = (
        read_symbols(storage, t, work.stored[t.name], symbols)
        for t in (catalog.BACKTEST_SUMMARIES, BACKTEST_STATE)
    )
    return resume.Stored(summaries=summaries, states=states, open_trades=open_trades.collect())


def _closed_trades(work: ShardWork, symbols: list[str]) -> pl.DataFrame:
    """The stored closed trades of `symbols`."""
    wanted = pl.Series(symbols, dtype=pl.String).implode()
    files = work.stored[catalog.BACKTEST_TRADES.name].values()
    return (
        scan(work.tx.store.storage, files, catalog.BACKTEST_TRADES)
        .filter(pl.col("symbol").is_in(wanted) & (pl.col("action") == "Sell"))
        .collect()
    )


def _carried_windows(work: ShardWork, appended: list[str], stored: resume.Stored) -> pl.DataFrame:
    """The windows of the appended symbols that every window of can be carried on, with their new
    first bars (`resume.windows`, `resume.start_bars`); empty when there are none."""
    if not appended:
        return pl.DataFrame(schema={"symbol": pl.String})
    prices = work.prices.filter(pl.col("symbol").is_in(appended))
    candidates = resume.windows(stored, prices).filter("carried")
    if candidates.is_empty():
        return candidates
    symbols = candidates["symbol"].unique().to_list()
    files = work.tx.partitions(DAILY_PRICES.name, work.shard.market)
    near = (
        scan(work.tx.store.storage, by_shard(files).get(work.shard, {}).values(), DAILY_PRICES)
        .select("symbol", "date", "close")
        .filter(pl.col("symbol").is_in(symbols) & resume.day_filter(candidates))
        .collect()
        .sort("symbol", "date")
    )
    return resume.start_bars(candidates, work.adjusted(near))


def _in_market(frame: pl.DataFrame, work: ShardWork) -> pl.DataFrame:
    return frame.with_columns(market=pl.lit(work.shard.market, pl.String))


def _scored(work: ShardWork, files: Mapping[str, Files]) -> dict[str, pl.DataFrame]:
    """Scorecards and recommendations of every symbol of the shard, from its backtests as they now
    stand and the instruments and running trends of this run: a symbol whose backtests did not
    change still shows its current name and trend."""
    storage, market = work.tx.store.storage, work.shard.market
    summaries = scan(
        storage, files[catalog.BACKTEST_SUMMARIES.name].values(), catalog.BACKTEST_SUMMARIES
    ).filter(pl.col("fill") == "close")
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
    whole: list[str],
    signal_files: Files,
    config: SimulatorConfig,
) -> dict[str, pl.DataFrame]:
    """Trades, summaries, current actions and carried state of `symbols`: every window replayed
    from their bars and stored signals. `bars` holds the whole history of the symbols in `whole`;
    the others' is read."""
    if not symbols:
        return {t.name: t.empty() for t in (*SIMULATED, BACKTEST_STATE)}
    read = [s for s in symbols if s not in set(whole)]
    history = bars.filter(pl.col("symbol").is_in(pl.Series(whole, dtype=pl.String).implode()))
    if read:
        history = pl.concat([history, _bars(work, read)]).sort("symbol", "date")
    # The signal columns alone: the market's strings would only add to the read and the sort.
    storage, columns = work.tx.store.storage, backtests.SIGNAL_COLUMNS
    stored = read_symbols(storage, STRATEGY_SIGNALS, signal_files, symbols, columns=columns)
    sim = backtests.simulate_with_signals(
        history,
        stored,
        config.costs,
        work.shard.market,
        config.strategies,
        delisted=work.delisted,
    )
    frames = {
        catalog.BACKTEST_TRADES.name: sim.trades,
        catalog.BACKTEST_SUMMARIES.name: sim.summaries,
        catalog.CURRENT_ACTIONS.name: scoring.simulated_actions(sim),
        BACKTEST_STATE.name: sim.states,
    }
    return {
        t.name: t.conform(_in_market(frames[t.name], work)) for t in (*SIMULATED, BACKTEST_STATE)
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
