"""Every indicator on each symbol's latest bar for EVERY period 2..365 at once: (symbols x periods)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
import polars as pl
from numpy.typing import NDArray

from pipelines.indicators import recursive
from pipelines.indicators.fibonacci import FIBONACCI_RATIOS
from pipelines.indicators.panel import (
    BBANDS_DEVIATIONS,
    PERIOD_MAX,
    PERIOD_MIN,
    STOCH_SMOOTHING,
    Panels,
)
from pipelines.platform.compiled import kernel_input

Grid = NDArray[np.float64]
"""(symbols, periods) float64: column i is period PERIOD_MIN + i; NaN = no value."""


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

WINDOWED: tuple[str, ...] = (
    "sma",
    "roc",
    "vwap",
    "bb_upper",
    "bb_middle",
    "bb_lower",
    "stoch_k",
    "stoch_d",
    "fib_high",
    "fib_low",
    *(fib_column(name) for name in FIBONACCI_RATIOS),
)
"""The members `windowed` computes (the others are the recursive state's, `recursive.latest`)."""

# Where each member goes on the first axis of the kernels' output (FLAT_MEMBERS order); the
# Fibonacci levels follow each other from _LEVELS in FIBONACCI_RATIOS order.
_SMA = FLAT_MEMBERS.index("sma")
_ROC = FLAT_MEMBERS.index("roc")
_VWAP = FLAT_MEMBERS.index("vwap")
_UPPER = FLAT_MEMBERS.index("bb_upper")
_MIDDLE = FLAT_MEMBERS.index("bb_middle")
_LOWER = FLAT_MEMBERS.index("bb_lower")
_K = FLAT_MEMBERS.index("stoch_k")
_D = FLAT_MEMBERS.index("stoch_d")
_HIGH = FLAT_MEMBERS.index("fib_high")
_LOW = FLAT_MEMBERS.index("fib_low")
_LEVELS = FLAT_MEMBERS.index(fib_column(next(iter(FIBONACCI_RATIOS))))
_RATIOS = np.array(list(FIBONACCI_RATIOS.values()), dtype=np.float64)


@dataclass(frozen=True)
class Bars:
    """Daily bars of many symbols as flat float64 columns, one symbol after the other."""

    close: NDArray[np.float64]
    high: NDArray[np.float64]
    low: NDArray[np.float64]
    volume: NDArray[np.float64]
    offsets: NDArray[np.int64]
    """(symbols + 1,): symbol s's bars are rows offsets[s]..offsets[s+1], oldest first."""

    @property
    def symbols(self) -> int:
        return len(self.offsets) - 1


def flat_bars(bars: pl.DataFrame, by: Sequence[str] = ("symbol",)) -> tuple[Bars, pl.DataFrame]:
    """The bars (sorted by `by`, then date) as `Bars`, and the row of each symbol's last bar."""
    keys = list(by)
    changed = pl.any_horizontal(pl.col(c).ne_missing(pl.col(c).shift(1)) for c in keys)
    starts = np.flatnonzero(bars.select(changed).to_series().to_numpy())
    offsets = np.append(starts, bars.height).astype(np.int64)
    if not bars.select(keys)[starts].is_unique().all():
        raise ValueError("bars must be sorted by symbol (each symbol's bars contiguous)")

    def column(name: str) -> NDArray[np.float64]:
        return kernel_input(bars[name].cast(pl.Float64).to_numpy(), np.float64)

    flat = Bars(column("close"), column("high"), column("low"), column("volume"), offsets)
    return flat, bars[offsets[1:] - 1]


def panel_bars(p: Panels) -> Bars:
    """The panels' bars as `Bars` (symbols in panel column order)."""
    offsets = np.concatenate([[0], np.cumsum(p.lengths)]).astype(np.int64)
    close, high, low, volume = (
        kernel_input(p.to_long(x), np.float64) for x in (p.close, p.high, p.low, p.volume)
    )
    return Bars(close, high, low, volume, offsets)


@numba.njit(cache=True, inline="always", nogil=True)
def _max(a: float, b: float) -> float:
    """np.maximum on scalars: NaN if either is NaN, the second of two equal values (-0.0, 0.0)."""
    return a if a > b or a != a else b


@numba.njit(cache=True, inline="always", nogil=True)
def _min(a: float, b: float) -> float:
    """np.minimum on scalars, as `_max`."""
    return a if a < b or a != a else b


@numba.njit(cache=True, inline="always", nogil=True)
def _finite(x: float) -> float:
    """NaN for infinity: the output never holds a non-finite number."""
    return x if math.isfinite(x) else np.nan


@numba.njit(cache=True, inline="always", nogil=True)
def _back(x: NDArray[np.float64], first: int, last: int, k: int) -> float:
    """The value k bars before the symbol's last (rows first..last), NaN before its first."""
    return x[last - k] if last - k >= first else np.nan


# The operations of the numpy passes this replaced (tests/pipelines/indicators/numpy_windowed.py),
# in their order, so the same bits: sums accumulate from the last bar back (a window of n bars is
# the sum after n of them), extremes compare the running value first, the stochastic's SMAs add
# from the last bar back.
@numba.njit(cache=True, parallel=True, error_model="numpy", nogil=True)
def _windowed_kernel(
    close: NDArray[np.float64],
    high: NDArray[np.float64],
    low: NDArray[np.float64],
    volume: NDArray[np.float64],
    offsets: NDArray[np.int64],
    ratios: NDArray[np.float64],
    deviations: float,
    slowk: int,
    slowd: int,
    out: NDArray[np.float64],
) -> None:
    count = out.shape[2]
    depth = slowk + slowd - 1
    for s in numba.prange(offsets.size - 1):
        first, last = offsets[s], offsets[s + 1] - 1
        c0 = _back(close, first, last, 0)
        h0 = _back(high, first, last, 0)
        l0 = _back(low, first, last, 0)
        v0 = _back(volume, first, last, 0)
        shifted = c0 - c0
        closes, shifts, squares = c0, shifted, shifted * shifted
        traded, weighted = v0, (h0 + l0 + c0) / 3.0 * v0
        highest, lowest = h0, l0
        for k in range(1, count + 1):
            c = _back(close, first, last, k)
            h = _back(high, first, last, k)
            lo = _back(low, first, last, k)
            v = _back(volume, first, last, k)
            shifted = c - c0
            closes += c
            shifts += shifted
            squares += shifted * shifted
            traded += v
            weighted += (h + lo + c) / 3.0 * v
            highest = _max(highest, h)
            lowest = _min(lowest, lo)
            j = k - 1
            n = float(k + 1)
            middle = closes / n
            mean = shifts / n
            variance = squares / n - mean * mean
            # Deviations from the last close: exact for a flat window.
            deviation = deviations * math.sqrt(_max(variance, 0.0))
            out[_SMA, s, j] = _finite(middle)
            out[_MIDDLE, s, j] = _finite(middle)
            out[_UPPER, s, j] = _finite(middle + deviation)
            out[_LOWER, s, j] = _finite(middle - deviation)
            base = _back(close, first, last, k + 1)
            out[_ROC, s, j] = np.nan if base == 0.0 else _finite((c0 / base - 1.0) * 100.0)
            out[_VWAP, s, j] = np.nan if traded == 0.0 else _finite(weighted / traded)
            out[_HIGH, s, j] = _finite(highest)
            out[_LOW, s, j] = _finite(lowest)
            for r in range(ratios.size):
                # Levels "0" and "100" are the extremes themselves.
                ratio = ratios[r]
                level = highest - ratio * (highest - lowest)
                if ratio == 0.0:
                    level = highest
                elif ratio == 1.0:
                    level = lowest
                out[_LEVELS + r, s, j] = _finite(level)
        # Stochastic: fast %K of the last `depth` bars (each from its own backward extremes),
        # then slow %K = SMA(slowk) of fast %K and %D = SMA(slowd) of slow %K.
        fast = np.empty((depth, count))
        for o in range(depth):
            c = _back(close, first, last, o)
            highest = _back(high, first, last, o)
            lowest = _back(low, first, last, o)
            for k in range(1, count + 1):
                highest = _max(highest, _back(high, first, last, o + k))
                lowest = _min(lowest, _back(low, first, last, o + k))
                span = highest - lowest
                if abs(span) <= 1e-14 * (abs(highest) + abs(lowest)):
                    fast[o, k - 1] = 0.0
                else:
                    fast[o, k - 1] = (c - lowest) / span * 100.0
        for j in range(count):
            d = 0.0
            slow_first = 0.0
            for o in range(slowd):
                total = fast[o, j]
                for i in range(1, slowk):
                    total += fast[o + i, j]
                slow = total / slowk
                if o == 0:
                    d = slow
                    slow_first = slow
                else:
                    d += slow
            d = d / slowd
            out[_K, s, j] = np.nan if d != d else _finite(slow_first)
            out[_D, s, j] = _finite(d)


@numba.njit(cache=True, nogil=True)
def _copy_finite(values: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    """out = values, with NaN for infinity."""
    for s in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[s, j] = _finite(values[s, j])


def _members(bars: Bars, count: int, state: recursive.RecursiveState | None) -> NDArray[np.float64]:
    """(FLAT_MEMBERS, symbols, periods): every member of each symbol's last bar, NaN where none
    (the recursive ones from `state`, left unset when None)."""
    out = np.empty((len(FLAT_MEMBERS), bars.symbols, count))
    slowk, slowd = STOCH_SMOOTHING
    _windowed_kernel(
        bars.close,
        bars.high,
        bars.low,
        bars.volume,
        bars.offsets,
        _RATIOS,
        BBANDS_DEVIATIONS,
        slowk,
        slowd,
        out,
    )
    if state is not None:
        for name, values in recursive.latest(state).items():
            # MACD and OBV (one value per symbol) repeat on every period.
            grid = values[:, :count] if values.ndim == 2 else values[:, None]
            grid = kernel_input(np.broadcast_to(grid, (bars.symbols, count)), np.float64)
            _copy_finite(grid, out[FLAT_MEMBERS.index(name)])
    return out


def windowed(bars: Bars, count: int) -> dict[str, Grid]:
    """SMA, Bollinger Bands, ROC, VWAP, Fibonacci and Stochastic (WINDOWED) of each symbol's last
    bar for periods PERIOD_MIN.. (`count` of them); NaN where none (or infinite).

    Every window is counted back from the last bar, so one backward pass serves every length; it
    reads the last PERIOD_MAX + 5 bars (the stochastic's %D needs fast %K five bars back).
    """
    out = _members(bars, count, None)
    return {name: out[FLAT_MEMBERS.index(name)] for name in WINDOWED}


def state_of(
    bars: Bars, symbols: Sequence[str], count: int = PERIOD_MAX - PERIOD_MIN + 1
) -> recursive.RecursiveState:
    """The recursive members' state after each symbol's last bar, from its first bar."""
    periods = np.arange(PERIOD_MIN, PERIOD_MIN + count, dtype=np.int64)
    start = recursive.empty(symbols, periods)
    return recursive.advance(start, bars.close, bars.high, bars.low, bars.volume, bars.offsets)


def recursive_state(
    p: Panels, count: int = PERIOD_MAX - PERIOD_MIN + 1
) -> recursive.RecursiveState:
    """The recursive members' state after each panel symbol's last bar, from its first bar."""
    symbols = p.keys[p.keys.columns[0]].cast(pl.String).to_list()
    return state_of(panel_bars(p), symbols, count)


def latest_all_periods(
    p: Panels,
    max_period: int = PERIOD_MAX,
    state: recursive.RecursiveState | None = None,
) -> dict[str, Grid]:
    """Every flat member (FLAT_MEMBERS) of each symbol's last bar, periods PERIOD_MIN..max_period,
    NaN where none (or infinite).

    The windowed members read each symbol's last PERIOD_MAX + 5 bars of `p`; the recursive ones
    come from `state` (its rows in `p`'s symbol order), or from the whole of `p` when None.
    """
    count = max_period - PERIOD_MIN + 1
    carried = state if state is not None else recursive_state(p, count)
    out = _members(panel_bars(p), count, carried)
    return {name: out[i] for i, name in enumerate(FLAT_MEMBERS)}


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
    flat, heads = flat_bars(bars, by)
    count = max_period - PERIOD_MIN + 1
    if state is None:
        state = state_of(flat, heads[by[0]].cast(pl.String).to_list(), count)
    last = [c for c in ("date", "timestamp") if c in bars.columns]
    return grid_frame(flat, heads.select(by), heads.select(last), state, count)


def grid_frame(
    bars: Bars,
    keys: pl.DataFrame,
    last: pl.DataFrame,
    state: recursive.RecursiveState,
    count: int,
) -> pl.DataFrame:
    """`all_periods_frame` of flat bars: `keys` and `last` (one row per symbol, in the bars'
    order) are repeated on its rows, before and after `period`."""
    members = _members(bars, count, state)
    rows = np.repeat(np.arange(bars.symbols), count)
    periods = np.tile(np.arange(PERIOD_MIN, PERIOD_MIN + count, dtype=np.int64), bars.symbols)
    values = [
        pl.Series(name, members[i].reshape(-1), nan_to_null=True)
        for i, name in enumerate(FLAT_MEMBERS)
    ]
    return pl.concat(
        [keys[rows], pl.DataFrame({"period": periods}), last[rows], pl.DataFrame(values)],
        how="horizontal",
    )
