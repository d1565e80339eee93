"""Volume indicators (TA-Lib group): on-balance volume and a rolling volume-weighted average price."""

from __future__ import annotations

import polars as pl

from tests.pipelines.indicators.expressions._expr import bar_index, check_period, finite_or_null


def obv(close: pl.Expr, volume: pl.Expr) -> pl.Expr:
    """On-balance volume, TA-Lib `OBV(close, volume)`.

    `obv[0] = volume[0]`; then volume is added on an up close, subtracted on a down close and
    ignored on an unchanged close. Cumulative from the first bar given, so it depends on where the
    history starts; lookback 0. Same as TA-Lib.
    """
    direction = close.diff().sign()
    signed = pl.when(bar_index() == 0).then(volume).otherwise(direction * volume)
    return finite_or_null(signed.cum_sum()).alias("obv")


def vwap(
    high: pl.Expr, low: pl.Expr, close: pl.Expr, volume: pl.Expr, timeperiod: int = 30
) -> pl.Expr:
    """Rolling volume-weighted average price over the last n bars (TA-Lib has no VWAP).

    `vwap[t] = sum(tp * volume) / sum(volume)` over bars t-n+1..t, with the typical price
    `tp = (high + low + close) / 3`. Null before bar n-1 and wherever the window's volume is
    entirely zero (no trade, no price to weight).
    """
    n = check_period("timeperiod", timeperiod, minimum=1)
    typical = (high + low + close) / 3.0
    traded = (volume != 0.0).cast(pl.Int32).rolling_sum(n)
    value = (typical * volume).rolling_sum(n) / volume.rolling_sum(n)
    return finite_or_null(pl.when(traded > 0).then(value)).alias("vwap")


__all__ = ["obv", "vwap"]
