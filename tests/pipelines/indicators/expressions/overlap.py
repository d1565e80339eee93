"""Overlap studies (TA-Lib group): SMA, EMA and Bollinger Bands as pure polars expressions."""

from __future__ import annotations

import polars as pl

from tests.pipelines.indicators.expressions._expr import (
    check_period,
    finite_or_null,
    seeded_recursion,
)


def sma(close: pl.Expr, timeperiod: int = 30) -> pl.Expr:
    """Simple moving average, TA-Lib `SMA(close, timeperiod=30)`.

    `sma[t] = mean(close[t-n+1 .. t])`; lookback n-1 (null before). Same as TA-Lib.
    """
    n = check_period("timeperiod", timeperiod)
    return finite_or_null(close.rolling_mean(n)).alias("sma")


def ema_unmasked(close: pl.Expr, n: int, seed_index: int) -> pl.Expr:
    """EMA with k = 2/(n+1) whose seed is the mean of the n values ending on `seed_index`."""
    return seeded_recursion(close, 2.0 / (n + 1), close.rolling_mean(n), seed_index)


def ema(close: pl.Expr, timeperiod: int = 30) -> pl.Expr:
    """Exponential moving average, TA-Lib `EMA(close, timeperiod=30)`.

    `ema[n-1] = mean(close[0 .. n-1])`, then `ema[t] = ema[t-1] + k (close[t] - ema[t-1])` with
    `k = 2/(n+1)`; lookback n-1. Same as TA-Lib (its default, non-Metastock, seeding), unlike
    `ewm_mean`, which seeds from the first value.
    """
    n = check_period("timeperiod", timeperiod)
    return finite_or_null(ema_unmasked(close, n, n - 1)).alias("ema")


def bbands(
    close: pl.Expr, timeperiod: int = 5, nbdevup: float = 2.0, nbdevdn: float = 2.0
) -> pl.Expr:
    """Bollinger Bands, TA-Lib `BBANDS(close, timeperiod=5, nbdevup=2, nbdevdn=2, matype=SMA)`.

    `middle = SMA(n)`, `upper = middle + nbdevup * sd`, `lower = middle - nbdevdn * sd`, where sd
    is the population standard deviation (divisor n) of the same n closes; lookback n-1.
    Returns a struct {upper, middle, lower}. Same as TA-Lib.
    """
    n = check_period("timeperiod", timeperiod)
    middle = close.rolling_mean(n)
    deviation = close.rolling_std(n, ddof=0)
    return pl.struct(
        finite_or_null(middle + nbdevup * deviation).alias("upper"),
        finite_or_null(middle).alias("middle"),
        finite_or_null(middle - nbdevdn * deviation).alias("lower"),
    ).alias("bbands")


__all__ = ["bbands", "ema", "sma"]
