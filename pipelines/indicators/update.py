"""Indicator snapshots of one shard updated from carried state: new bars advance the recursions, the windowed members read the trailing bars again."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipelines.catalog import INDICATOR_SNAPSHOTS, PartitionFile
from pipelines.catalog.state import INDICATOR_STATE
from pipelines.incremental.modes import APPEND, FULL, REMOVED, code_version
from pipelines.incremental.runner import Domain, ShardResult, ShardWork
from pipelines.indicators import all_periods, checks, fibonacci, panel, recursive
from pipelines.indicators.all_periods import Bars
from pipelines.indicators.panel import PERIOD_MAX
from pipelines.warehouse.tables import order, rewrite_snapshot

CONTEXT_BARS = PERIOD_MAX + 5
"""Trailing bars the windowed members read (stochastic's slow %D reaches 5 bars back)."""


VERSION = code_version(recursive, all_periods, panel, fibonacci)
"""The code the snapshots are computed with: a change recomputes every symbol once.
Hashed when the code is imported: the source that runs, even if its files are edited later."""


def version() -> str:
    return VERSION


def update_shard(work: ShardWork) -> ShardResult:
    """The shard's new snapshot and state files: full symbols from their first bar, appended ones
    from their carried state and their last CONTEXT_BARS bars."""
    full, appended = work.symbols(FULL), work.symbols(APPEND)
    parts = [_computed(work, work.bars(full), None)] if full else []
    if appended:
        carried = _rows_of(work.state, appended)
        since = dict(zip(carried["symbol"], carried["context_start"], strict=True))
        parts.append(_computed(work, work.bars(appended, since), carried))
    snapshots = pl.concat([p[0] for p in parts]) if parts else INDICATOR_SNAPSHOTS.empty()
    states = pl.concat([p[1] for p in parts]) if parts else INDICATOR_STATE.empty()
    replaced = [*full, *appended, *work.symbols(REMOVED)]
    files = {
        INDICATOR_SNAPSHOTS.name: rewrite_snapshot(
            work.tx,
            INDICATOR_SNAPSHOTS,
            work.shard,
            work.stored[INDICATOR_SNAPSHOTS.name],
            snapshots,
            replaced,
        ),
        INDICATOR_STATE.name: _rewrite_state(work, states, replaced),
    }
    return ShardResult(files, {INDICATOR_SNAPSHOTS.name: snapshots})


def _rows_of(state: pl.DataFrame, symbols: list[str]) -> pl.DataFrame:
    """The state rows of `symbols`, sorted by symbol (no copy of the ~24 KB a row when they are
    all of them, in order: a day appends to every symbol)."""
    rows = state if state.height == len(symbols) else state.filter(pl.col("symbol").is_in(symbols))
    return rows if rows["symbol"].is_sorted() else rows.sort("symbol")


def _rewrite_state(
    work: ShardWork, rows: pl.DataFrame, replaced: list[str]
) -> dict[str, PartitionFile]:
    """`rewrite_snapshot` of the state table, keeping rows of the state the run has read already
    (`work.state`: every stored row of the shard) instead of reading the file again."""
    gone = pl.Series(replaced, dtype=pl.String).implode()
    kept = work.state.filter(~pl.col("symbol").is_in(gone))
    frame = pl.concat([kept, rows], how="vertical_relaxed")
    if not frame["symbol"].is_sorted():
        frame = frame.sort(order(INDICATOR_STATE))
    return {work.shard.key: work.tx.write_file(INDICATOR_STATE, work.shard.key, frame)}


def _computed(
    work: ShardWork, bars: pl.DataFrame, carried: pl.DataFrame | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(snapshot rows, state rows) of the symbols in `bars`: from their first bar when `carried`
    is None, else advancing the carried state by the bars after its `last_date`."""
    flat, heads = all_periods.flat_bars(bars)
    symbols = heads["symbol"].to_list()
    if carried is None:
        state = all_periods.state_of(flat, symbols)
    else:
        if carried["symbol"].to_list() != symbols:
            raise ValueError("the carried state's symbols are not the bars' symbols")
        state = _advanced(flat, bars, carried)
    keys, last = heads.select("symbol"), heads.select("date", "timestamp")
    snapshots = all_periods.grid_frame(flat, keys, last, state, len(recursive.ALL_PERIODS))
    snapshots = snapshots.with_columns(market=pl.lit(work.shard.market))
    return INDICATOR_SNAPSHOTS.conform(snapshots), _state_rows(work, flat, bars, state)


def _advanced(flat: Bars, bars: pl.DataFrame, carried: pl.DataFrame) -> recursive.RecursiveState:
    """The carried state (rows in the bars' symbol order) advanced by each symbol's bars after
    its `last_date`: the tail of its rows."""
    lengths = np.diff(flat.offsets)
    last = np.repeat(carried["last_date"].to_numpy(), lengths)
    new = bars["date"].to_numpy() > last
    counts = np.add.reduceat(new.astype(np.int64), flat.offsets[:-1]) if len(new) else lengths
    cuts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    start = recursive.from_frame(carried, recursive.ALL_PERIODS)
    close, high, low, volume = (x[new] for x in (flat.close, flat.high, flat.low, flat.volume))
    return recursive.advance(start, close, high, low, volume, cuts)


def _state_rows(
    work: ShardWork, flat: Bars, bars: pl.DataFrame, state: recursive.RecursiveState
) -> pl.DataFrame:
    """The state frame with its bookkeeping: the prices it was computed from, and where the next
    run's trailing read starts (the first of each symbol's last CONTEXT_BARS bars)."""
    context = np.maximum(flat.offsets[:-1], flat.offsets[1:] - CONTEXT_BARS)
    frame = (
        recursive.to_frame(state)
        .with_columns(context_start=bars["date"][context])
        .join(
            work.prices.select("symbol", "history_id", "last_date"),
            on="symbol",
            maintain_order="left",
        )
        .with_columns(market=pl.lit(work.shard.market), code_version=pl.lit(version()))
    )
    return INDICATOR_STATE.conform(frame)


INDICATORS = Domain(
    name="indicator_snapshots",
    tables=(INDICATOR_SNAPSHOTS, INDICATOR_STATE),
    state=INDICATOR_STATE,
    version=version,
    update=update_shard,
    checks={(INDICATOR_SNAPSHOTS.name, name): check for name, (_, check) in checks.CHECKS.items()},
)
