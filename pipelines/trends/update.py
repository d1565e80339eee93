"""Trend tables of one shard updated from carried state: new bars labelled, the last segments recomputed."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date

import polars as pl

from pipelines.catalog import TREND_HISTORY, TREND_SEGMENTS
from pipelines.catalog.state import TREND_STATE
from pipelines.incremental.modes import APPEND, FULL, REMOVED, code_version
from pipelines.incremental.runner import Check, Domain, ShardResult, ShardWork
from pipelines.trends import checks, frames, incremental, method
from pipelines.warehouse.tables import EVERYTHING, rewrite_snapshot, upsert_series

VERSION = code_version(method, frames, incremental)
"""The code the trend tables are computed with: a change recomputes every symbol once.
Hashed when the code is imported: the source that runs, even if its files are edited later."""


def version() -> str:
    return VERSION


def update_shard(work: ShardWork) -> ShardResult:
    """The shard's new trend files: young, full and revised symbols from their first bar, the
    others from their carried state."""
    now = int(time.time() * 1000)
    carried = work.state.filter(
        pl.col("symbol").is_in(work.symbols(APPEND)) & (pl.col("bars") >= incremental.MATURE_BARS)
    )
    appended = carried["symbol"].to_list()
    full = sorted(set(work.symbols(FULL, APPEND)) - set(appended))
    history, segments, states = [], [], []
    cutoffs = dict.fromkeys([*full, *work.symbols(REMOVED)], EVERYTHING)
    if full:
        whole, whole_segments, whole_state = incremental.full_tables(work.bars(full), now)
        history.append(TREND_HISTORY.conform(whole))
        segments.append(TREND_SEGMENTS.conform(whole_segments))
        states.append(whole_state)
    if appended:
        added, cuts, added_segments, added_state = _appended(work, carried, now)
        history.append(added)
        segments.append(added_segments)
        states.append(added_state)
        cutoffs |= cuts
    replaced = [*full, *appended, *work.symbols(REMOVED)]
    tx, shard, stored = work.tx, work.shard, work.stored
    rows = _concat(history, TREND_HISTORY.empty())
    segs = _concat(segments, TREND_SEGMENTS.empty())
    state = _with_bookkeeping(work, states)
    files = {
        TREND_HISTORY.name: upsert_series(
            tx, TREND_HISTORY, shard, stored[TREND_HISTORY.name], rows, cutoffs
        ),
        TREND_SEGMENTS.name: rewrite_snapshot(
            tx, TREND_SEGMENTS, shard, stored[TREND_SEGMENTS.name], segs, replaced
        ),
        TREND_STATE.name: rewrite_snapshot(
            tx, TREND_STATE, shard, stored[TREND_STATE.name], state, replaced
        ),
    }
    return ShardResult(files, {TREND_HISTORY.name: rows, TREND_SEGMENTS.name: segs})


def _appended(
    work: ShardWork, carried: pl.DataFrame, now: int
) -> tuple[pl.DataFrame, dict[str, date], pl.DataFrame, pl.DataFrame]:
    """Appended symbols' rows from their state, their last bars and their stored trend rows."""
    symbols = carried["symbol"].to_list()
    context = dict(zip(symbols, carried["context_start"], strict=True))
    final = dict(zip(symbols, carried["final_segment_start"], strict=True))
    return incremental.append_tables(
        carried,
        work.bars(symbols, context),
        work.stored_rows(TREND_HISTORY, symbols, final),
        work.stored_rows(TREND_SEGMENTS, symbols),
        now,
    )


def _concat(frames_: list[pl.DataFrame], empty: pl.DataFrame) -> pl.DataFrame:
    return pl.concat(frames_) if frames_ else empty


def _with_bookkeeping(work: ShardWork, states: list[pl.DataFrame]) -> pl.DataFrame:
    """State rows with the prices' history id they were computed from and the code version."""
    if not states:
        return TREND_STATE.empty()
    frame = pl.concat(states, how="diagonal_relaxed").join(
        work.prices.select("symbol", "history_id"), on="symbol"
    )
    return TREND_STATE.conform(frame.with_columns(code_version=pl.lit(version())))


def _on(table: str, find: Callable[[pl.DataFrame], pl.DataFrame]) -> Check:
    return lambda rows: find(rows[table]) if table in rows else pl.DataFrame()


CHECKS: dict[tuple[str, str], tuple[str, Check]] = {
    (TREND_HISTORY.name, "history_finite"): (
        "No NaN or infinity in trend_history.",
        _on(TREND_HISTORY.name, checks.non_finite),
    ),
    (TREND_HISTORY.name, "history_labels"): (
        "trend and strength are allowed labels.",
        _on(TREND_HISTORY.name, checks.bad_labels),
    ),
    (TREND_SEGMENTS.name, "segments_finite"): (
        "No NaN or infinity in trend_segments.",
        _on(TREND_SEGMENTS.name, checks.non_finite),
    ),
    (TREND_SEGMENTS.name, "segments_contiguous"): (
        "Each segment starts on the bar where the previous one ended; numbered 0, 1, ...",
        _on(TREND_SEGMENTS.name, checks.discontiguous),
    ),
    (TREND_SEGMENTS.name, "one_running_segment"): (
        "Exactly one running segment per symbol, the newest.",
        _on(TREND_SEGMENTS.name, checks.running_not_once),
    ),
    (TREND_SEGMENTS.name, "durations_and_extremes"): (
        "trend_duration_days = calendar days start..end; extremes inside; peak_gain >= 0 >= peak_loss.",
        _on(TREND_SEGMENTS.name, checks.wrong_durations),
    ),
}
"""(asset, check) -> (description, property of a shard's recomputed rows)."""

TRENDS = Domain(
    name="trends",
    tables=(TREND_HISTORY, TREND_SEGMENTS, TREND_STATE),
    state=TREND_STATE,
    version=version,
    update=update_shard,
    checks={key: check for key, (_, check) in CHECKS.items()},
)
