"""Every indicator on each symbol's latest bar for EVERY period 2..365 at once: (symbols x periods).

Windowed members come from sums and running extremes over the bars counted back from each
symbol's last bar (one cumulative pass serves every window length). Recursive members (EMA, RSI,
ATR, ADX) run one loop over days whose state is a (symbols x periods) array: period n is seeded
on its own row (TA-Lib's seed) and only the periods already seeded take part in a step, which is
a prefix of the period axis because periods are sorted. MACD and OBV do not depend on the period.
See docs/indicators.md ("Every period at once").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from numpy.typing import NDArray

from pipelines.indicators import kernels
from pipelines.indicators.fibonacci import FIBONACCI_RATIOS
from pipelines.indicators.kernels import Panel
from pipelines.indicators.panel import (
    BBANDS_DEVIATIONS,
    MACD_PERIODS,
    PERIOD_MAX,
    PERIOD_MIN,
    STOCH_SMOOTHING,
    Panels,
    to_panels,
)

Grid = NDArray[np.float64]
"""(symbols, periods) float64: column i is period PERIOD_MIN + i; NaN = no value."""

SYMBOL_CHUNK = 128
"""Symbols per pass of the recursive loop: keeps the (chunk x periods) states in cache."""

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


def _zero_first(x: Panel) -> Panel:
    """Row 0 (no previous bar) as 0, so cumulative sums from row 1 are TA-Lib's seed sums."""
    out = x.copy()
    out[0] = 0.0
    return out


class _Recursions:
    """The loop over days for one chunk of symbols: EMA, RSI, ATR and ADX states per period."""

    def __init__(self, close: Panel, high: Panel, low: Panel, count: int) -> None:
        self.count = count
        self.close = close
        change = np.diff(close, axis=0, prepend=np.nan)
        gain = _zero_first(np.where(change > 0.0, change, 0.0))
        loss = _zero_first(np.where(change < 0.0, -change, 0.0))
        plus, minus = kernels.directional_movement(high, low)
        tr = _zero_first(kernels.true_range(high, low, close))
        self.gain_loss = np.stack([gain, loss])  # (2, rows, symbols)
        self.dm_tr = np.stack([_zero_first(plus), _zero_first(minus), tr])  # (3, rows, symbols)
        self.tr = tr
        self.sums_close = np.cumsum(close, axis=0)
        self.sums_gain_loss = np.cumsum(self.gain_loss, axis=1)
        self.sums_tr = np.cumsum(tr, axis=0)
        self.sums_dm_tr = np.cumsum(self.dm_tr, axis=1)
        shape = (close.shape[1], count)
        self.n = np.arange(PERIOD_MIN, PERIOD_MIN + count, dtype=np.float64)
        self.ema = np.full(shape, np.nan)
        self.wilder = np.full((2, *shape), np.nan)  # smoothed gain, loss
        self.atr = np.full(shape, np.nan)
        self.dm_sums = np.full((3, *shape), np.nan)  # Wilder sums of +DM, -DM, TR
        self.adx = np.full(shape, np.nan)
        self.dx_total = np.zeros(shape)

    def step(self, t: int) -> None:
        """Advance every seeded period to row t and seed the periods whose seed row is t."""
        n = self.n
        # Period index i is n = i + 2. EMA: recursion for n <= t, seed n = t + 1 (row n - 1).
        a = min(max(t - 1, 0), self.count)
        state = self.ema[:, :a]
        state += (self.close[t][:, None] - state) * (2.0 / (n[:a] + 1.0))
        if 1 <= t <= self.count:
            self.ema[:, t - 1] = self.sums_close[t] / (t + 1)
        # RSI, ATR: recursion for n < t, seed n = t (rows 1..n).
        a = min(max(t - 2, 0), self.count)
        w = self.wilder[:, :, :a]
        w *= n[:a] - 1.0
        w += self.gain_loss[:, t, :, None]
        w /= n[:a]
        w = self.atr[:, :a]
        w *= n[:a] - 1.0
        w += self.tr[t][:, None]
        w /= n[:a]
        if 2 <= t < self.count + 2:
            self.wilder[:, :, t - 2] = self.sums_gain_loss[:, t] / t
            self.atr[:, t - 2] = self.sums_tr[t] / t
        self._adx_step(t)

    def _adx_step(self, t: int) -> None:
        n = self.n
        # Wilder sums: recursion for n <= t, seed n = t + 1 (sum of rows 1..n-1).
        a = min(max(t - 1, 0), self.count)
        s = self.dm_sums[:, :, :a]
        s -= s / n[:a]
        s += self.dm_tr[:, t, :, None]
        if 1 <= t <= self.count:
            self.dm_sums[:, :, t - 1] = self.sums_dm_tr[:, t]
        if a == 0:
            return
        plus, minus = s[0], s[1]
        total = plus + minus
        with np.errstate(invalid="ignore", divide="ignore"):
            dx = np.abs(minus - plus) / total
        dx *= 100.0
        undefined = total == 0.0
        # ADX: recursion for 2n - 1 < t; DX summed for n <= t <= 2n - 1; seeded on t = 2n - 1.
        r = min(max(t // 2 - 1, 0), a)
        adx = self.adx[:, :r]
        updated = (adx * (n[:r] - 1.0) + dx[:, :r]) / n[:r]
        np.copyto(adx, updated, where=~undefined[:, :r])
        self.dx_total[:, r:a] += np.where(undefined[:, r:a], 0.0, dx[:, r:a])
        i = (t + 1) // 2 - 2
        if t % 2 == 1 and 0 <= i < self.count:
            self.adx[:, i] = self.dx_total[:, i] / n[i]

    def latest(self) -> dict[str, Grid]:
        g, loss = self.wilder
        total = g + loss
        with np.errstate(invalid="ignore", divide="ignore"):
            rsi = 100.0 * (g / total)
        rsi[total == 0.0] = 0.0
        return {"ema": self.ema, "rsi": rsi, "atr": self.atr, "adx": self.adx}


def recursive(p: Panels, count: int, chunk: int = SYMBOL_CHUNK) -> dict[str, Grid]:
    """EMA, RSI, ATR and ADX of each symbol's last bar for every period (one loop over days)."""
    symbols = len(p.lengths)
    out = {name: np.full((symbols, count), np.nan) for name in ("ema", "rsi", "atr", "adx")}
    for first in range(0, symbols, chunk):
        columns = slice(first, min(first + chunk, symbols))
        lengths = p.lengths[columns]
        rows = int(lengths.max())
        loop = _Recursions(
            p.close[:rows, columns], p.high[:rows, columns], p.low[:rows, columns], count
        )
        ends = {int(t): np.flatnonzero(lengths - 1 == t) for t in np.unique(lengths - 1)}
        for t in range(rows):
            loop.step(t)
            if t in ends:
                for name, grid in loop.latest().items():
                    out[name][first + ends[t]] = grid[ends[t]]
    return out


def latest_all_periods(p: Panels, max_period: int = PERIOD_MAX) -> dict[str, Grid]:
    """Every flat member (FLAT_MEMBERS) of each symbol's last bar, periods PERIOD_MIN..max_period."""
    count = max_period - PERIOD_MIN + 1
    out = windowed(p, count) | recursive(p, count)
    last = (p.lengths - 1, np.arange(len(p.lengths)))
    line, signal, histogram = kernels.macd(p.close, *MACD_PERIODS)
    obv = kernels.obv(p.close, p.volume)
    for name, panel in (
        ("macd_line", line),
        ("macd_signal", signal),
        ("macd_histogram", histogram),
        ("obv", obv),
    ):
        out[name] = np.repeat(panel[last][:, None], count, axis=1)
    return {name: out[name] for name in FLAT_MEMBERS}


def all_periods_frame(
    bars: pl.DataFrame, by: Sequence[str] = ("symbol",), max_period: int = PERIOD_MAX
) -> pl.DataFrame:
    """One row per (symbol, period): the keys `by`, `period`, the last bar's `date` (and
    `timestamp` when the bars have one), and FLAT_MEMBERS; null where the window is not filled.

    `bars` are daily OHLCV rows sorted by `by` then date.
    """
    p = to_panels(bars, by)
    grids = latest_all_periods(p, max_period)
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
