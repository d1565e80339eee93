"""Trend tables updated from carried state: new bars are labelled where the last run left off.

A symbol's labelling state (`method.advance`) is kept after its last bar. A new run recomputes the
signal of the last CONFIRM_BARS - 1 stored bars and of the new ones from the trailing window (with
the block method's exact additions, `method.window_mean_at`), relabels them from that state (a
confirmation may relabel those stored bars), renumbers their segments, and recomputes the segments
from the last one no new bar can change. A symbol with fewer than `MATURE_BARS` bars is computed
whole (the warm-up rule may still relabel its first bars, and its window is not full).
"""

from __future__ import annotations

from datetime import date

import numba
import numpy as np
import polars as pl
from numpy.typing import NDArray

from pipelines.catalog import TREND_HISTORY, TREND_SEGMENTS
from pipelines.platform.compiled import kernel_input
from pipelines.trends import method
from pipelines.trends.frames import (
    TREND_NAMES,
    named,
    trend_history_with_machines,
    trend_segments,
)
from pipelines.warehouse.tables import sorted_by

REWRITABLE = method.CONFIRM_BARS - 1
"""Stored bars a new bar can relabel (a confirmation is backdated onto them)."""
CONTEXT_BARS = 2 * method.LONG_WINDOW + method.CONFIRM_BARS
"""Stored bars an append reads again: the block sums of its first relabelled bar reach 2n - 1
rows back, and that row's true range needs the close before it."""
MATURE_BARS = CONTEXT_BARS
"""A symbol with fewer stored bars is computed whole."""
MACHINE = ("machine_state", "machine_pending", "machine_run")
_CODE = {"up": method.UP, "neutral": method.NEUTRAL, "down": method.DOWN}


def full_tables(
    bars: pl.DataFrame, last_updated: int
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(trend_history, trend_segments, state rows) of `bars`' symbols, from their first bar."""
    history, machines = trend_history_with_machines(bars)
    segments = trend_segments(history, last_updated)
    totals = history.group_by("symbol").agg(bars=pl.len())
    return history, segments, _state(history, history, totals, machines)


def append_tables(
    state: pl.DataFrame,
    bars: pl.DataFrame,
    tail: pl.DataFrame,
    stored_segments: pl.DataFrame,
    last_updated: int,
) -> tuple[pl.DataFrame, dict[str, date], pl.DataFrame, pl.DataFrame]:
    """(trend_history rows from each symbol's first relabelled bar, each symbol's cutoff day,
    every trend_segments row of the symbols, their new state rows).

    `state`: TREND_STATE rows of symbols with at least MATURE_BARS bars; `bars`: each symbol's
    stored bars from its `context_start` (CONTEXT_BARS of them) and its new bars; `tail`: its stored
    trend_history rows from `final_segment_start`; `stored_segments`: its trend_segments rows.
    """
    # Reads come sorted (`read_symbols`): checking is far cheaper than sorting every bar again.
    state, bars, tail = (
        sorted_by(state, ["symbol"]),
        sorted_by(bars, ["symbol", "date"]),
        sorted_by(tail, ["symbol", "date"]),
    )
    # written in place by the kernel: a C-ordered copy (a frame converts column by column)
    machines = np.array(state.select(MACHINE).to_numpy(), dtype=np.int64, order="C")
    emitted = _emitted(state, bars, tail, machines)
    first = emitted.group_by("symbol").agg(_first=pl.col("date").min())
    older = tail.join(first, on="symbol").filter(pl.col("date") < pl.col("_first"))
    rows = pl.concat([TREND_HISTORY.conform(older), emitted]).sort("symbol", "date")
    finals = state.select("symbol", "final_segment")
    recomputed = trend_segments(rows, last_updated).join(finals, on="symbol")
    kept = stored_segments.join(finals, on="symbol").filter(
        pl.col("segment") < pl.col("final_segment")
    )
    segments = pl.concat(
        [
            TREND_SEGMENTS.conform(kept.with_columns(last_updated=pl.lit(last_updated, pl.Int64))),
            TREND_SEGMENTS.conform(recomputed.filter(pl.col("segment") >= pl.col("final_segment"))),
        ]
    ).sort("symbol", "segment")
    new_bars = bars.group_by("symbol").len().join(state.select("symbol", "bars"), on="symbol")
    totals = new_bars.select("symbol", bars=pl.col("bars") + pl.col("len") - CONTEXT_BARS)
    machine_rows = state.select("symbol").with_columns(
        **{name: pl.Series(machines[:, i]) for i, name in enumerate(MACHINE)}
    )
    cutoffs = dict(first.iter_rows())
    return emitted, cutoffs, segments, _state(rows, bars, totals, machine_rows)


def _state(
    rows: pl.DataFrame, bars: pl.DataFrame, totals: pl.DataFrame, machines: pl.DataFrame
) -> pl.DataFrame:
    """State rows after the symbols' last bars: `rows` are trend_history rows reaching back to the
    final segment's start, `bars` reach back CONTEXT_BARS bars (or to the first), `totals` counts
    every bar of each symbol. Both are sorted by symbol and date, and a symbol's segments never
    decrease, so every field is a row of its symbol's run, found by position: a group or a window
    over the symbols' strings hashes every row (a sixth of a first load's trend work)."""
    first, last = _runs(rows["symbol"])
    # A symbol with no stored bar before the ones a new bar can relabel has no final segment yet.
    labelled = last - first >= REWRITABLE
    segments = rows["segment"].to_numpy()
    final_segment = segments[last[labelled] - REWRITABLE]
    # The final segment's first row: runs and segments both ascend, so one search finds them all.
    runs = np.repeat(np.arange(len(last), dtype=np.int64), last - first + 1)
    keys = (runs << 32) | segments
    if not np.all(keys[1:] >= keys[:-1]):
        raise ValueError("trend rows must be sorted by symbol and date, segments ascending")
    starts = np.searchsorted(keys, (np.flatnonzero(labelled) << 32) | final_segment)
    state = rows[last[labelled]].select(
        "market",
        "symbol",
        last_date="date",
        final_segment=pl.Series(final_segment),
        final_segment_start=rows["date"].gather(starts),
    )
    bar_first, bar_last = _runs(bars["symbol"])
    context_rows = np.maximum(bar_first, bar_last - CONTEXT_BARS + 1)
    context = bars[context_rows].select("symbol", context_start="date")
    return (
        state.join(totals, on="symbol")
        .join(context, on="symbol")
        .join(machines, on="symbol")
        .select(
            "market",
            "symbol",
            "last_date",
            *totals.drop("symbol").columns,
            "final_segment",
            "final_segment_start",
            "context_start",
            *machines.drop("symbol").columns,
        )
        .sort("symbol")
    )


def _runs(symbols: pl.Series) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The first and last row of each symbol's run of rows (the rows are sorted by symbol)."""
    ends = np.flatnonzero((symbols != symbols.shift(-1)).fill_null(True).to_numpy())
    starts = np.concatenate([[0], ends[:-1] + 1]) if len(ends) else ends
    return starts.astype(np.int64), ends.astype(np.int64)


def _emitted(
    state: pl.DataFrame, bars: pl.DataFrame, tail: pl.DataFrame, machines: NDArray[np.int64]
) -> pl.DataFrame:
    """The last REWRITABLE stored bars and the new ones: averages, signal, label and segment;
    `machines` ends in each symbol's state after its last bar."""
    lengths = bars.group_by("symbol", maintain_order=True).len()["len"].to_numpy()
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    emit_from = CONTEXT_BARS - REWRITABLE
    out_offsets = np.concatenate([[0], np.cumsum(lengths - emit_from)]).astype(np.int64)
    # The newest final bar (segment anchor) and the REWRITABLE bars after it, as stored.
    anchors = tail.filter(pl.int_range(pl.len(), 0, -1).over("symbol") <= REWRITABLE + 1)
    codes = anchors["trend"].replace_strict(_CODE, return_dtype=pl.Int8).to_numpy()
    short, mid, long_, signal, labels = _relabel(
        kernel_input(bars["close"].to_numpy(), np.float64),
        kernel_input(bars["high"].to_numpy(), np.float64),
        kernel_input(bars["low"].to_numpy(), np.float64),
        offsets,
        (state["bars"].to_numpy() - CONTEXT_BARS).astype(np.int64),
        emit_from,
        kernel_input(codes.reshape(-1, REWRITABLE + 1)[:, 1:], np.int8),
        machines,
        out_offsets,
    )
    anchor = anchors.group_by("symbol", maintain_order=True).first()
    emitted = (
        bars.filter(pl.int_range(pl.len()).over("symbol") >= emit_from)
        .select("market", "symbol", "date", "timestamp", price="close")
        .with_columns(
            _code=pl.Series(labels),
            signal=pl.Series(signal),
            short_term_average=pl.Series(short),
            mid_term_average=pl.Series(mid),
            long_term_average=pl.Series(long_),
            trend=named(labels.astype(np.int64) + 1, TREND_NAMES),
            strength=named(method.strength(signal), method.STRENGTHS),
        )
        .join(anchor.select("symbol", _anchor="trend", _segment="segment"), on="symbol")
    )
    previous = pl.col("trend").shift(1).over("symbol").fill_null(pl.col("_anchor"))
    changes = (pl.col("trend") != previous).cast(pl.Int64).cum_sum().over("symbol")
    return TREND_HISTORY.conform(emitted.with_columns(segment=pl.col("_segment") + changes))


@numba.njit(cache=True, nogil=True)
def _relabel(
    close: NDArray[np.float64],
    high: NDArray[np.float64],
    low: NDArray[np.float64],
    offsets: NDArray[np.int64],
    first_rows: NDArray[np.int64],
    emit_from: int,
    stored_labels: NDArray[np.int8],
    machines: NDArray[np.int64],
    out_offsets: NDArray[np.int64],
) -> tuple[
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.int8],
]:  # pragma: no cover - compiled; covered through append_tables
    total = out_offsets[-1]
    short, mid, long_, signal = np.empty(total), np.empty(total), np.empty(total), np.empty(total)
    labels = np.empty(total, np.int8)
    kept = stored_labels.shape[1]
    for j in range(len(offsets) - 1):
        lo, hi = offsets[j], offsets[j + 1]
        c, h, lw = close[lo:hi], high[lo:hi], low[lo:hi]
        tr = h - lw
        for k in range(1, hi - lo):
            tr[k] = max(max(tr[k], abs(h[k] - c[k - 1])), abs(lw[k] - c[k - 1]))
        base, a0 = out_offsets[j], first_rows[j]
        for k in range(emit_from, hi - lo):
            i, t = base + k - emit_from, a0 + k
            short[i] = method._window_mean_at(c, a0, t, method.SHORT_WINDOW)
            mid[i] = method._window_mean_at(c, a0, t, method.MID_WINDOW)
            long_[i] = method._window_mean_at(c, a0, t, method.LONG_WINDOW)
            atr = method._window_mean_at(tr, a0, t, method.ATR_WINDOW)
            signal[i] = 0.0 if atr == 0.0 else (short[i] - mid[i]) / atr
        own = labels[base : out_offsets[j + 1]]
        own[:kept] = stored_labels[j]
        method._advance(
            signal[base : out_offsets[j + 1]],
            own,
            kept,
            machines[j],
            method.ENTER,
            method.EXIT,
            method.CONFIRM_BARS,
        )
    return short, mid, long_, signal, labels
