"""Indicator snapshots of one shard updated from carried state: new bars advance the recursions,
the windowed members read the trailing bars again."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipelines.catalog import INDICATOR_SNAPSHOTS
from pipelines.catalog.state import INDICATOR_STATE
from pipelines.incremental.modes import APPEND, FULL, REMOVED, code_version
from pipelines.incremental.runner import Domain, ShardResult, ShardWork
from pipelines.incremental.tables import rewrite_snapshot
from pipelines.indicators import all_periods, checks, fibonacci, kernels, panel, recursive
from pipelines.indicators.panel import PERIOD_MAX, to_panels

CONTEXT_BARS = PERIOD_MAX + 5
"""Trailing bars the windowed members read (stochastic's slow %D reaches 5 bars back)."""


def version() -> str:
    """The code the snapshots are computed with: a change recomputes every symbol once."""
    return code_version(recursive, all_periods, kernels, panel, fibonacci)


def update_shard(work: ShardWork) -> ShardResult:
    """The shard's new snapshot and state files: full symbols from their first bar, appended ones
    from their carried state and their last CONTEXT_BARS bars."""
    full, appended = work.symbols(FULL), work.symbols(APPEND)
    parts = [_computed(work, work.bars(full), None)] if full else []
    if appended:
        carried = work.state.filter(pl.col("symbol").is_in(appended)).sort("symbol")
        since = dict(zip(carried["symbol"], carried["context_start"], strict=True))
        parts.append(_computed(work, work.bars(appended, since), carried))
    snapshots = pl.concat([p[0] for p in parts]) if parts else INDICATOR_SNAPSHOTS.empty()
    states = pl.concat([p[1] for p in parts]) if parts else INDICATOR_STATE.empty()
    replaced = [*full, *appended, *work.symbols(REMOVED)]
    files = {
        table.name: rewrite_snapshot(
            work.tx, table, work.shard, work.stored[table.name], frame, replaced
        )
        for table, frame in ((INDICATOR_SNAPSHOTS, snapshots), (INDICATOR_STATE, states))
    }
    return ShardResult(files, {INDICATOR_SNAPSHOTS.name: snapshots})


def _computed(
    work: ShardWork, bars: pl.DataFrame, carried: pl.DataFrame | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(snapshot rows, state rows) of the symbols in `bars`: from their first bar when `carried`
    is None, else advancing the carried state by the bars after its `last_date`."""
    p = to_panels(bars, ("symbol",))
    if carried is None:
        state = all_periods.recursive_state(p)
    else:
        new = (
            bars.join(carried.select("symbol", "last_date"), on="symbol")
            .filter(pl.col("date") > pl.col("last_date"))
            .sort("symbol", "date")
        )
        counts = carried.select("symbol").join(
            new.group_by("symbol").len(), on="symbol", how="left", maintain_order="left"
        )
        cuts = np.concatenate([[0], np.cumsum(counts["len"].fill_null(0).to_numpy())])
        start = recursive.from_frame(carried, recursive.ALL_PERIODS)
        close, high, low, volume = (new[c].to_numpy() for c in ("close", "high", "low", "volume"))
        state = recursive.advance(start, close, high, low, volume, cuts)
    snapshots = all_periods.all_periods_frame(bars, state=state).with_columns(
        market=pl.lit(work.shard.market)
    )
    return INDICATOR_SNAPSHOTS.conform(snapshots), _state_rows(work, bars, state)


def _state_rows(
    work: ShardWork, bars: pl.DataFrame, state: recursive.RecursiveState
) -> pl.DataFrame:
    """The state frame with its bookkeeping: the prices it was computed from, and where the next
    run's trailing read starts."""
    from_end = pl.int_range(pl.len(), 0, -1).over("symbol")
    context = (
        bars.filter(from_end <= CONTEXT_BARS)
        .group_by("symbol")
        .agg(context_start=pl.col("date").min())
    )
    frame = (
        recursive.to_frame(state)
        .join(work.prices.select("symbol", "history_id", "last_date"), on="symbol")
        .join(context, on="symbol")
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
