"""Every indicator on each symbol's latest bar for EVERY period 2..365 at once: (symbols x periods).

Windowed members come from sums and running extremes over the bars counted back from each
symbol's last bar (one cumulative pass serves every window length). Recursive members (EMA, RSI,
ATR, ADX, MACD, OBV) are `recursive.advance` from an empty state over the whole history, then
`recursive.latest`. See docs/indicators.md ("Every period at once").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from numpy.typing import NDArray

from pipelines.indicators import recursive
from pipelines.indicators.fibonacci import FIBONACCI_RATIOS
from pipelines.indicators.kernels import Panel
from pipelines.indicators.panel import (
    BBANDS_DEVIATIONS,
    PERIOD_MAX,
    PERIOD_MIN,
    STOCH_SMOOTHING,
    Panels,
    to_panels,
)

Grid = NDArray[np.float64]
"""(symbols, periods) float64: column i is period PERIOD_MIN + i; NaN = no value."""

_STOCH_OFFSETS = 5
"""Bars back from the last one whose fast %K the slow %K and %D of the last bar need."""


def fib_column(name: str) -> str:
    """`23.6` -> `fib_23_6`: the flat column of a Fibonacci level."""
    return "fib_" + name.replace(".", "_")


FLAT_MEMBERS: tuple[str, ...] = (
    "sma",
    "ema",
    "rsi",
    "atr",
    "adx",
    "roc",
    "obv",
    "vwap",
    "bb_upper",
    "bb_middle",
    "bb_lower",
    "macd_line",
    "macd_signal",
    "macd_histogram",
    "stoch_k",
    "stoch_d",
    "fib_high",
    "fib_low",
    *(fib_column(name) for name in FIBONACCI_RATIOS),
)
"""The flat indicator columns of `indicator_snapshots`, in table order."""


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
            k = (close[offset][:, None] - lowest) / (span / 100.0)
        k[flat] = 0.0
        fast.append(k)
    slowk, slowd = STOCH_SMOOTHING
    slow = [np.sum(fast[o : o + slowk], axis=0) / slowk for o in range(slowd)]
    d: Grid = np.sum(slow, axis=0) / slowd
    return np.where(np.isnan(d), np.nan, slow[0]), d


def windowed(p: Panels, count: int) -> dict[str, Grid]:
    """SMA, Bollinger Bands, ROC, VWAP, Fibonacci and Stochastic of the last bar, every period."""
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
    with np.errstate(invalid="ignore", divide="ignore"):
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
    return out


def recursive_state(
    p: Panels, count: int = PERIOD_MAX - PERIOD_MIN + 1
) -> recursive.RecursiveState:
    """The recursive members' state after each panel symbol's last bar, from its first bar."""
    periods = np.arange(PERIOD_MIN, PERIOD_MIN + count, dtype=np.int64)
    symbols = np.asarray(p.keys[p.keys.columns[0]].cast(pl.String).to_list(), dtype=np.str_)
    offsets = np.concatenate([[0], np.cumsum(p.lengths)]).astype(np.int64)
    close, high, low, volume = (p.to_long(x) for x in (p.close, p.high, p.low, p.volume))
    return recursive.advance(recursive.empty(symbols, periods), close, high, low, volume, offsets)


def _recursive_members(state: recursive.RecursiveState, count: int) -> dict[str, Grid]:
    """EMA, RSI, ATR, ADX (every period) and MACD, OBV (repeated) on each symbol's last bar."""
    out = recursive.latest(state)
    for name in ("macd_line", "macd_signal", "macd_histogram", "obv"):
        out[name] = np.repeat(out[name][:, None], count, axis=1)
    return out


def latest_all_periods(
    p: Panels,
    max_period: int = PERIOD_MAX,
    state: recursive.RecursiveState | None = None,
) -> dict[str, Grid]:
    """Every flat member (FLAT_MEMBERS) of each symbol's last bar, periods PERIOD_MIN..max_period.

    The windowed members read each symbol's last PERIOD_MAX + 5 bars of `p`; the recursive ones
    come from `state` (its rows in `p`'s symbol order), or from the whole of `p` when None.
    """
    count = max_period - PERIOD_MIN + 1
    carried = state if state is not None else recursive_state(p, count)
    out = windowed(p, count) | _recursive_members(carried, count)
    return {name: out[name] for name in FLAT_MEMBERS}


def all_periods_frame(
    bars: pl.DataFrame,
    by: Sequence[str] = ("symbol",),
    max_period: int = PERIOD_MAX,
    state: recursive.RecursiveState | None = None,
) -> pl.DataFrame:
    """One row per (symbol, period): the keys `by`, `period`, the last bar's `date` (and
    `timestamp` when the bars have one), and FLAT_MEMBERS; null where the window is not filled.

    `bars` are daily OHLCV rows sorted by `by` then date: every bar of each symbol, or with
    `state` (the recursive members after each symbol's last bar, in the same symbol order) at
    least its last PERIOD_MAX + 5.
    """
    p = to_panels(bars, by)
    grids = latest_all_periods(p, max_period, state)
    count = max_period - PERIOD_MIN + 1
    symbol_of_row = np.repeat(np.arange(len(p.lengths)), count)
    last = [c for c in ("date", "timestamp") if c in bars.columns]
    heads = bars.select(*by, *last).group_by(by, maintain_order=True).last()
    values = {
        name: pl.Series(name, np.where(np.isfinite(g), g, np.nan).ravel(), nan_to_null=True)
        for name, g in grids.items()
    }
    periods = np.tile(np.arange(PERIOD_MIN, max_period + 1, dtype=np.int64), len(p.lengths))
    return pl.concat(
        [
            heads[symbol_of_row].select(*by),
            pl.DataFrame({"period": periods}),
            heads[symbol_of_row].select(last),
            pl.DataFrame(values),
        ],
        how="horizontal",
    )
