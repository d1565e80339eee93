"""The strategies' signals as numpy panels over whole histories: an oracle for the carried signals."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipelines.simulator.backtests import Prices
from pipelines.simulator.engine import Mask, Panel
from tests.pipelines.indicators import kernels


@dataclass(frozen=True)
class Signals:
    """At each bar's close, on indicators seeded on the symbol's first bar (TA-Lib's seeds), so a
    bar's signal never depends on the backtest window."""

    entry: Mask
    exit: Mask


def crossed_above(a: Panel, b: Panel) -> Mask:
    """a > b on this bar and a <= b on the previous one (False where either is undefined)."""
    result = np.zeros(a.shape, np.bool_)
    with np.errstate(invalid="ignore"):
        np.logical_and(a[1:] > b[1:], a[:-1] <= b[:-1], out=result[1:])
    return result


def crossed_below(a: Panel, b: Panel) -> Mask:
    return crossed_above(b, a)


def aggressive_signals(p: Prices) -> Signals:
    """Entry: EMA(10) crosses above EMA(30) with RSI(14) < 70. Exit: EMA(10) crosses below EMA(30)."""
    fast, slow = kernels.ema(p.close, 10), kernels.ema(p.close, 30)
    rsi = kernels.rsi(p.close, 14)
    with np.errstate(invalid="ignore"):
        entry = crossed_above(fast, slow) & (rsi < 70.0)
    return Signals(entry=entry, exit=crossed_below(fast, slow))


def conservative_signals(p: Prices) -> Signals:
    """Entry: the first bar on which close > SMA(200), EMA(20) > EMA(50) and ADX(14) > 20 all hold
    (after a bar on which they did not), unless close < SMA(50). Exit: close < SMA(50)."""
    sma50 = kernels.sma(p.close, 50)
    with np.errstate(invalid="ignore"):
        trend = (
            (p.close > kernels.sma(p.close, 200))
            & (kernels.ema(p.close, 20) > kernels.ema(p.close, 50))
            & (kernels.adx(p.high, p.low, p.close, 14) > 20.0)
        )
        exit_signal: Mask = p.close < sma50
    started = trend.copy()
    started[1:] &= ~trend[:-1]
    return Signals(entry=started & ~exit_signal, exit=exit_signal)


NUMPY_SIGNALS = {"aggressive": aggressive_signals, "conservative": conservative_signals}
