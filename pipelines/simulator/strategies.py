"""The `aggressive` and `conservative` strategies: entry/exit signal panels from the indicator kernels.

Signals are evaluated at a bar's close on indicators computed over each symbol's whole history
(TA-Lib seeds on the symbol's first bar), so a bar's signal never depends on the backtest window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pipelines.indicators import kernels
from pipelines.simulator.engine import ExitRules, Mask, Panel

STRATEGIES: tuple[str, ...] = ("aggressive", "conservative")


@dataclass(frozen=True)
class Prices:
    """OHLC panels (bars x symbols), NaN after each symbol's last bar."""

    high: Panel
    low: Panel
    close: Panel


@dataclass(frozen=True)
class Signals:
    entry: Mask
    exit: Mask


@dataclass(frozen=True)
class Strategy:
    name: str
    signals: Callable[[Prices], Signals]
    rules: ExitRules
    entry_reason: str
    """What the entry signal means, in words (the current action's message)."""


def _previous(x: Panel) -> Panel:
    out = np.full(x.shape, np.nan)
    out[1:] = x[:-1]
    return out


def crossed_above(a: Panel, b: Panel) -> Mask:
    """a > b on this bar and a <= b on the previous one (False where either is undefined)."""
    with np.errstate(invalid="ignore"):
        result: Mask = (a > b) & (_previous(a) <= _previous(b))
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


AGGRESSIVE = Strategy(
    name="aggressive",
    signals=aggressive_signals,
    rules=ExitRules(trailing_stop=0.08, take_profit=0.20),
    entry_reason="EMA(10) crossed above EMA(30) with RSI(14) below 70",
)
CONSERVATIVE = Strategy(
    name="conservative",
    signals=conservative_signals,
    rules=ExitRules(stop_loss=0.12),
    entry_reason="close above SMA(200), EMA(20) above EMA(50) and ADX(14) above 20",
)
BY_NAME: dict[str, Strategy] = {s.name: s for s in (AGGRESSIVE, CONSERVATIVE)}
