"""Fibonacci retracement levels over the high/low of the last n bars, as a polars expression."""

from __future__ import annotations

import polars as pl

from pipelines.indicators.fibonacci import FIBONACCI_RATIOS
from tests.pipelines.indicators.expressions._expr import check_period, finite_or_null


def _level(highest: pl.Expr, lowest: pl.Expr, ratio: float) -> pl.Expr:
    """The price `ratio` of the way down from the high; the end levels are the extremes exactly."""
    if ratio == 0.0:
        return highest
    if ratio == 1.0:
        return lowest
    return highest - ratio * (highest - lowest)


def fibonacci_retracement(high: pl.Expr, low: pl.Expr, timeperiod: int = 30) -> pl.Expr:
    """Retracement levels of the range of the last n bars, measured from the high down.

    `high_n = max(high[t-n+1 .. t])`, `low_n = min(low[t-n+1 .. t])`,
    `level[p] = high_n - p/100 * (high_n - low_n)` for p in 0, 23.6, 38.2, 50, 61.8, 78.6, 100
    (so level "0" is the high and level "100" the low). Null before bar n-1.
    Returns a struct {high, low, levels: {"0", "23.6", ..., "100"}}.
    """
    n = check_period("timeperiod", timeperiod, minimum=1)
    highest = high.rolling_max(n)
    lowest = low.rolling_min(n)
    levels = pl.struct(
        finite_or_null(_level(highest, lowest, ratio)).alias(name)
        for name, ratio in FIBONACCI_RATIOS.items()
    )
    return pl.struct(
        finite_or_null(highest).alias("high"),
        finite_or_null(lowest).alias("low"),
        levels.alias("levels"),
    ).alias("fibonacci_retracement")
