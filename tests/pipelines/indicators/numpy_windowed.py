"""The numpy passes that computed the windowed members before `all_periods.windowed`: the oracle it must equal bit for bit."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from pipelines.indicators.all_periods import Grid, fib_column
from pipelines.indicators.fibonacci import FIBONACCI_RATIOS
from pipelines.indicators.panel import (
    BBANDS_DEVIATIONS,
    PERIOD_MAX,
    PERIOD_MIN,
    STOCH_SMOOTHING,
    Panels,
)
from tests.pipelines.indicators.kernels import Panel

_STOCH_OFFSETS = 5
"""Bars back from the last one whose fast %K the slow %K and %D of the last bar need."""


def _from_last(x: Panel, lengths: NDArray[np.int64], depth: int) -> NDArray[np.float64]:
    """(depth, symbols): row k holds each symbol's value k bars before its last (NaN before its first)."""
    index = (lengths - 1)[None, :] - np.arange(depth)[:, None]
    columns = np.broadcast_to(np.arange(x.shape[1]), index.shape)
    return np.where(index >= 0, x[np.maximum(index, 0), columns], np.nan)


def _windows(back: NDArray[np.float64], count: int) -> Grid:
    """Sum of the last n values for n = PERIOD_MIN..: suffix sums, as (symbols, periods)."""
    sums = np.cumsum(back, axis=0)
    return sums[PERIOD_MIN - 1 : PERIOD_MIN - 1 + count].T.copy()


def _extremes(back: NDArray[np.float64], count: int, op: np.ufunc) -> Grid:
    return op.accumulate(back, axis=0)[PERIOD_MIN - 1 : PERIOD_MIN - 1 + count].T.copy()


def _stoch(p: Panels, count: int) -> tuple[Grid, Grid]:
    """Slow %K and %D (SMA 3/3) of the last bar from fast %K on the last five bars."""
    depth = PERIOD_MAX + _STOCH_OFFSETS
    high = _from_last(p.high, p.lengths, depth)
    low = _from_last(p.low, p.lengths, depth)
    close = _from_last(p.close, p.lengths, depth)
    fast: list[Grid] = []
    for offset in range(_STOCH_OFFSETS):
        highest = _extremes(high[offset:], count, np.maximum)
        lowest = _extremes(low[offset:], count, np.minimum)
        span = highest - lowest
        flat = np.abs(span) <= 1e-14 * (np.abs(highest) + np.abs(lowest))
        with np.errstate(invalid="ignore", divide="ignore"):
            k = (close[offset][:, None] - lowest) / span * 100.0
        k[flat] = 0.0
        fast.append(k)
    slowk, slowd = STOCH_SMOOTHING
    slow = [np.sum(fast[o : o + slowk], axis=0) / slowk for o in range(slowd)]
    d: Grid = np.sum(slow, axis=0) / slowd
    return np.where(np.isnan(d), np.nan, slow[0]), d


def windowed(p: Panels, count: int) -> dict[str, Grid]:
    """SMA, Bollinger Bands, ROC, VWAP, Fibonacci and Stochastic of the last bar, every period;
    non-finite values as NaN (as `all_periods_frame` stored them)."""
    depth = PERIOD_MAX + 1
    close = _from_last(p.close, p.lengths, depth)
    periods = np.arange(PERIOD_MIN, PERIOD_MIN + count, dtype=np.float64)
    middle = _windows(close, count) / periods
    # Deviations from the last close: exact for a flat window, small cancellation otherwise.
    shifted = close - close[0]
    mean = _windows(shifted, count) / periods
    variance = _windows(shifted * shifted, count) / periods - mean * mean
    deviation = BBANDS_DEVIATIONS * np.sqrt(np.maximum(variance, 0.0))
    base = close[PERIOD_MIN : PERIOD_MIN + count].T
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        roc = (close[0][:, None] / base - 1.0) * 100.0
    roc[base == 0.0] = np.nan
    high = _from_last(p.high, p.lengths, depth)
    low = _from_last(p.low, p.lengths, depth)
    volume = _from_last(p.volume, p.lengths, depth)
    traded = _windows(volume, count)
    with np.errstate(invalid="ignore", divide="ignore"):
        vwap = _windows((high + low + close) / 3.0 * volume, count) / traded
    vwap[traded == 0.0] = np.nan
    highest = _extremes(high, count, np.maximum)
    lowest = _extremes(low, count, np.minimum)
    k, d = _stoch(p, count)
    out = {
        "sma": middle,
        "bb_upper": middle + deviation,
        "bb_middle": middle,
        "bb_lower": middle - deviation,
        "roc": roc,
        "vwap": vwap,
        "fib_high": highest,
        "fib_low": lowest,
        "stoch_k": k,
        "stoch_d": d,
    }
    for name, ratio in FIBONACCI_RATIOS.items():
        out[fib_column(name)] = highest - ratio * (highest - lowest)
    out["fib_0"], out["fib_100"] = highest, lowest
    return {name: np.where(np.isfinite(g), g, np.nan) for name, g in out.items()}
