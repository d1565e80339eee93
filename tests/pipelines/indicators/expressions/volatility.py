"""Volatility indicators (TA-Lib group): true range and Wilder's average true range."""

from __future__ import annotations

import polars as pl

from tests.pipelines.indicators.expressions._expr import (
    check_period,
    finite_or_null,
    seeded_recursion,
)


def true_range(high: pl.Expr, low: pl.Expr, close: pl.Expr) -> pl.Expr:
    """TA-Lib `TRANGE`: max(high - low, |high - prev close|, |low - prev close|); null on bar 0."""
    previous = close.shift(1)
    spans = pl.max_horizontal(high - low, (high - previous).abs(), (low - previous).abs())
    return pl.when(previous.is_not_null()).then(spans)


def atr(high: pl.Expr, low: pl.Expr, close: pl.Expr, timeperiod: int = 14) -> pl.Expr:
    """Average true range, TA-Lib `ATR(high, low, close, timeperiod=14)`.

    `atr[n] = mean(TR[1 .. n])`, then Wilder: `atr[t] = (atr[t-1] (n-1) + TR[t]) / n`;
    lookback n. Same as TA-Lib.
    """
    n = check_period("timeperiod", timeperiod)
    tr = true_range(high, low, close)
    return finite_or_null(seeded_recursion(tr, 1.0 / n, tr.rolling_mean(n), n)).alias("atr")


__all__ = ["atr", "true_range"]
