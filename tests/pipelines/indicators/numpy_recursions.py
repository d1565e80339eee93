"""The numpy loop over days that computed the recursive members before `recursive.py`: the oracle it must equal bit for bit."""

from __future__ import annotations

import numpy as np

from pipelines.indicators.all_periods import Grid
from pipelines.indicators.panel import PERIOD_MIN, Panels
from tests.pipelines.indicators import kernels
from tests.pipelines.indicators.kernels import Panel

SYMBOL_CHUNK = 128
"""Symbols per pass of the recursive loop: keeps the (chunk x periods) states in cache."""


def _zero_first(x: Panel) -> Panel:
    """Row 0 (no previous bar) as 0, so cumulative sums from row 1 are TA-Lib's seed sums."""
    out = x.copy()
    out[0] = 0.0
    return out


class Recursions:
    """The loop over days for one chunk of symbols: EMA, RSI, ATR and ADX states per period.

    Periods are PERIOD_MIN..PERIOD_MIN+count-1 (column i is period i + 2). Period n is seeded on
    its own row with TA-Lib's seed (sums from a cumulative sum in row order, as TA-Lib adds
    them), and only the already seeded periods take the step, a prefix of the period axis.
    """

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
        loop = Recursions(
            p.close[:rows, columns], p.high[:rows, columns], p.low[:rows, columns], count
        )
        ends = {int(t): np.flatnonzero(lengths - 1 == t) for t in np.unique(lengths - 1)}
        for t in range(rows):
            loop.step(t)
            if t in ends:
                for name, grid in loop.latest().items():
                    out[name][first + ends[t]] = grid[ends[t]]
    return out
