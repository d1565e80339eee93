"""The strategies' entry and exit signals bar by bar, from state carried after each symbol's last bar.

The indicators behind them (EMA 10/20/30/50, RSI 14, ADX 14: TA-Lib's, seeded on the symbol's
first bar) are the recursive kernel's (`pipelines.indicators.recursive`), captured on every new bar;
SMA 50 and 200 are TA-Lib's running sums (add the new close, subtract the one leaving the window),
kept in the state with the closes they still need. A bar's signals never depend on where a run
started: the whole history is the same computation from an empty state.

aggressive: entry when EMA(10) crosses above EMA(30) with RSI(14) < 70; exit when it crosses below.
conservative: entry on the first bar on which close > SMA(200), EMA(20) > EMA(50) and ADX(14) > 20
all hold (after a bar on which they did not), unless close < SMA(50); exit when close < SMA(50).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import polars as pl
from numpy.typing import NDArray

from pipelines.indicators import recursive
from pipelines.platform.compiled import kernel_input

PERIODS = np.array([10, 14, 20, 30, 50], dtype=np.int64)
"""The recursive indicators' periods the signals read (columns of the captured values)."""
EMA_FAST, RSI_N, EMA_TREND_FAST, EMA_SLOW, EMA_TREND_SLOW = range(5)
"""Column of each period in PERIODS: 10, 14, 20, 30, 50."""
SMA_EXIT, SMA_TREND = 50, 200
RSI_CEILING = 70.0
ADX_FLOOR = 20.0
CONTEXT_BARS = SMA_TREND - 1
"""Closes before the new ones a run reads again: the running sums subtract the one leaving."""
COLUMNS = ("aggressive_entry", "aggressive_exit", "conservative_entry", "conservative_exit")


@dataclass(frozen=True, eq=False)
class SignalState:
    """Per symbol: the recursive indicators' state and what the signals carry besides."""

    indicators: recursive.RecursiveState
    sma_exit_total: NDArray[np.float64]
    sma_trend_total: NDArray[np.float64]
    trending: NDArray[np.bool_]
    """The conservative trend held on the last bar (a new entry needs a bar without it)."""


def empty(symbols: list[str]) -> SignalState:
    count = len(symbols)
    return SignalState(
        recursive.empty(symbols, PERIODS), np.zeros(count), np.zeros(count), np.zeros(count, bool)
    )


def advance(
    state: SignalState, closes: pl.DataFrame, new_from: NDArray[np.int64]
) -> tuple[SignalState, pl.DataFrame]:
    """(the state after every symbol's new bars, their signals as COLUMNS, one row per new bar).

    `closes` holds each symbol's bars in the state's symbol order, sorted by date: the last
    CONTEXT_BARS stored ones (all, when fewer) then the new ones from row `new_from[j]` of its
    rows; columns close, high, low, volume.
    """
    lengths = closes.group_by("symbol", maintain_order=True).len()["len"].to_numpy()
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # a row is new from its symbol's row new_from[j] on: its place within the symbol against it
    place = np.arange(offsets[-1]) - np.repeat(offsets[:-1], lengths)
    new = closes.filter(pl.Series(place >= np.repeat(new_from, lengths)))
    new_offsets = np.concatenate([[0], np.cumsum(lengths - new_from)]).astype(np.int64)
    before = state.indicators
    close, high, low, volume = (new[c].to_numpy() for c in ("close", "high", "low", "volume"))
    indicators, captured = recursive.advance_capturing(
        before, close, high, low, volume, new_offsets
    )
    exit_total, trend_total = state.sma_exit_total.copy(), state.sma_trend_total.copy()
    trending = state.trending.copy()
    out = np.zeros((len(new), 4), np.bool_)
    _signals(
        kernel_input(closes["close"].to_numpy(), np.float64),
        offsets,
        before.bars - new_from,
        new_offsets,
        captured["ema"],
        captured["rsi"],
        captured["adx"],
        before.ema[:, EMA_FAST].copy(),
        before.ema[:, EMA_SLOW].copy(),
        exit_total,
        trend_total,
        trending,
        out,
    )
    frame = new.select("symbol", "date").with_columns(
        **{name: pl.Series(out[:, i]) for i, name in enumerate(COLUMNS)}
    )
    return SignalState(indicators, exit_total, trend_total, trending), frame


@numba.njit(cache=True, nogil=True)
def _signals(
    close: NDArray[np.float64],
    offsets: NDArray[np.int64],
    first_rows: NDArray[np.int64],
    new_offsets: NDArray[np.int64],
    ema: NDArray[np.float64],
    rsi: NDArray[np.float64],
    adx: NDArray[np.float64],
    fast_before: NDArray[np.float64],
    slow_before: NDArray[np.float64],
    exit_total: NDArray[np.float64],
    trend_total: NDArray[np.float64],
    trending: NDArray[np.bool_],
    out: NDArray[np.bool_],
) -> None:  # pragma: no cover - compiled; covered through `advance`
    for j in range(len(offsets) - 1):
        lo, hi, a0 = offsets[j], offsets[j + 1], first_rows[j]
        count = new_offsets[j + 1] - new_offsets[j]
        fast_prev, slow_prev, was_trending = fast_before[j], slow_before[j], trending[j]
        for i in range(count):
            r = new_offsets[j] + i
            k = hi - lo - count + i
            t = a0 + k
            c = close[lo + k]
            exit_total[j] += c
            sma_exit = np.nan
            if t >= SMA_EXIT - 1:
                sma_exit = exit_total[j] / SMA_EXIT
                exit_total[j] -= close[lo + k - SMA_EXIT + 1]
            trend_total[j] += c
            sma_trend = np.nan
            if t >= SMA_TREND - 1:
                sma_trend = trend_total[j] / SMA_TREND
                trend_total[j] -= close[lo + k - SMA_TREND + 1]
            fast, slow = ema[r, EMA_FAST], ema[r, EMA_SLOW]
            out[r, 0] = fast > slow and fast_prev <= slow_prev and rsi[r, RSI_N] < RSI_CEILING
            out[r, 1] = slow > fast and slow_prev <= fast_prev
            trend = (
                c > sma_trend
                and ema[r, EMA_TREND_FAST] > ema[r, EMA_TREND_SLOW]
                and adx[r, RSI_N] > ADX_FLOOR
            )
            leaving = c < sma_exit
            out[r, 2] = trend and not was_trending and not leaving
            out[r, 3] = leaving
            fast_prev, slow_prev, was_trending = fast, slow, trend
        trending[j] = was_trending


def to_frame(state: SignalState) -> pl.DataFrame:
    """One row per symbol: the recursive state's columns and the signals' own."""
    return recursive.to_frame(state.indicators).with_columns(
        sma_exit_total=pl.Series(state.sma_exit_total),
        sma_trend_total=pl.Series(state.sma_trend_total),
        trending=pl.Series(state.trending),
    )


def from_frame(frame: pl.DataFrame) -> SignalState:
    """The state `to_frame` wrote (other columns are ignored), in the frame's row order."""
    return SignalState(
        recursive.from_frame(frame, PERIODS),
        frame["sma_exit_total"].to_numpy().astype(np.float64),
        frame["sma_trend_total"].to_numpy().astype(np.float64),
        frame["trending"].to_numpy().astype(np.bool_),
    )


def signals_from_start(bars: pl.DataFrame) -> pl.DataFrame:
    """COLUMNS for every bar of `bars` (sorted by symbol then date), from each symbol's first bar."""
    symbols = bars["symbol"].unique(maintain_order=True).to_list()
    _, frame = advance(empty(symbols), bars, np.zeros(len(symbols), np.int64))
    return frame
