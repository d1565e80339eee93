"""Momentum indicators (TA-Lib group): RSI, MACD, Stochastic, ADX and ROC as polars expressions."""

from __future__ import annotations

import polars as pl

from tests.pipelines.indicators.expressions._expr import (
    check_period,
    finite_or_null,
    null_before,
    seeded_recursion,
)
from tests.pipelines.indicators.expressions.overlap import ema_unmasked
from tests.pipelines.indicators.expressions.volatility import true_range


def rsi(close: pl.Expr, timeperiod: int = 14) -> pl.Expr:
    """Relative strength index, TA-Lib `RSI(close, timeperiod=14)`.

    Gains and losses of the close-to-close changes are Wilder-smoothed: seeded with their simple
    means over changes 1..n (bar n), then `avg[t] = (avg[t-1] (n-1) + x[t]) / n`.
    `rsi = 100 * avg_gain / (avg_gain + avg_loss)`, and 0 when both averages are 0 (a flat
    window), as TA-Lib answers; lookback n. Same as TA-Lib.
    """
    n = check_period("timeperiod", timeperiod)
    change = close.diff()
    gain = change.clip(lower_bound=0.0)
    loss = (-change).clip(lower_bound=0.0)
    avg_gain = seeded_recursion(gain, 1.0 / n, gain.rolling_mean(n), n)
    avg_loss = seeded_recursion(loss, 1.0 / n, loss.rolling_mean(n), n)
    total = avg_gain + avg_loss
    value = pl.when(total == 0.0).then(0.0).otherwise(100.0 * (avg_gain / total))
    return finite_or_null(pl.when(total.is_not_null()).then(value)).alias("rsi")


def macd(
    close: pl.Expr, fastperiod: int = 12, slowperiod: int = 26, signalperiod: int = 9
) -> pl.Expr:
    """MACD, TA-Lib `MACD(close, fastperiod=12, slowperiod=26, signalperiod=9)`.

    `macd_line = EMA_fast - EMA_slow`, `signal_line = EMA_signal(macd_line)`,
    `histogram = macd_line - signal_line`. As in TA-Lib both EMAs are seeded on the same bar
    (slow-1, each with the mean of its own last n closes), the signal EMA is seeded with the mean
    of the first `signal` MACD values, and all three outputs start on bar slow+signal-2 (33 for
    12/26/9). Returns a struct {macd_line, signal_line, histogram}. Same as TA-Lib.
    """
    fast = check_period("fastperiod", fastperiod)
    slow = check_period("slowperiod", slowperiod)
    signal_n = check_period("signalperiod", signalperiod, minimum=1)
    fast, slow = min(fast, slow), max(fast, slow)  # TA-Lib swaps them the same way
    seed_index = slow - 1
    line = ema_unmasked(close, fast, seed_index) - ema_unmasked(close, slow, seed_index)
    first_valid = seed_index + signal_n - 1
    signal = ema_unmasked(line, signal_n, first_valid)
    return pl.struct(
        finite_or_null(null_before(line - signal, first_valid)).alias("histogram"),
        finite_or_null(null_before(line, first_valid)).alias("macd_line"),
        finite_or_null(null_before(signal, first_valid)).alias("signal_line"),
    ).alias("macd")


def stoch(
    high: pl.Expr,
    low: pl.Expr,
    close: pl.Expr,
    fastk_period: int = 5,
    slowk_period: int = 3,
    slowd_period: int = 3,
) -> pl.Expr:
    """Slow stochastic, TA-Lib `STOCH(h, l, c, fastk_period=5, slowk_period=3, slowd_period=3)`.

    `fast_k = 100 (close - LL) / (HH - LL)` over the last `fastk_period` bars (0 for a flat
    window), `k = SMA(fast_k, slowk_period)`, `d = SMA(k, slowd_period)` (TA-Lib's default SMA
    smoothing). Both start on bar fastk+slowk+slowd-3 (TA-Lib's lookback). Returns {k, d}.
    Same as TA-Lib.
    """
    fastk_n = check_period("fastk_period", fastk_period, minimum=1)
    slowk_n = check_period("slowk_period", slowk_period, minimum=1)
    slowd_n = check_period("slowd_period", slowd_period, minimum=1)
    highest = high.rolling_max(fastk_n)
    lowest = low.rolling_min(fastk_n)
    span = highest - lowest
    flat = span.abs() <= 1e-14 * (highest.abs() + lowest.abs())
    fast_k = pl.when(flat).then(0.0).otherwise((close - lowest) / span * 100.0)
    slow_k = fast_k.rolling_mean(slowk_n)
    slow_d = slow_k.rolling_mean(slowd_n)
    first_valid = fastk_n + slowk_n + slowd_n - 3
    return pl.struct(
        finite_or_null(null_before(slow_k, first_valid)).alias("k"),
        finite_or_null(null_before(slow_d, first_valid)).alias("d"),
    ).alias("stoch")


def _directional_movement(high: pl.Expr, low: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(+DM, -DM) as TA-Lib counts them: only the larger move counts, ties count as zero."""
    up = high.diff()
    down = -low.diff()
    plus = pl.when((up > 0.0) & (up > down)).then(up).otherwise(0.0)
    minus = pl.when((down > 0.0) & (up < down)).then(down).otherwise(0.0)
    valid = up.is_not_null()
    return pl.when(valid).then(plus), pl.when(valid).then(minus)


def adx(high: pl.Expr, low: pl.Expr, close: pl.Expr, timeperiod: int = 14) -> pl.Expr:
    """Average directional index, TA-Lib `ADX(high, low, close, timeperiod=14)`.

    +DM, -DM and TR are Wilder-summed (seed: the sum over bars 1..n-1, then
    `s[t] = s[t-1] - s[t-1]/n + x[t]`); `DI± = 100 DM±/TR`; `DX = 100 |DI- - DI+| / (DI- + DI+)`.
    `adx[2n-1] = mean(DX[n .. 2n-1])`, then `adx[t] = (adx[t-1] (n-1) + DX[t]) / n`. Where DX is
    undefined (zero smoothed TR, or zero DI sum) it counts 0 in the seed mean and leaves ADX
    unchanged afterwards, as TA-Lib does; lookback 2n-1. Same as TA-Lib.
    """
    n = check_period("timeperiod", timeperiod)
    plus_dm, minus_dm = _directional_movement(high, low)
    tr = true_range(high, low, close)

    def wilder_sum(x: pl.Expr) -> pl.Expr:
        # ewm of x scaled by n is the Wilder sum; the seed is the plain sum of bars 1..n-1.
        seed = x.rolling_sum(n - 1) / n if n > 1 else x
        return seeded_recursion(x, 1.0 / n, seed, n - 1)

    tr_sum = wilder_sum(tr)
    plus_di = 100.0 * (wilder_sum(plus_dm) / tr_sum)
    minus_di = 100.0 * (wilder_sum(minus_dm) / tr_sum)
    di_sum = minus_di + plus_di
    defined = (tr_sum != 0.0) & (di_sum != 0.0)
    dx = pl.when(defined).then(100.0 * ((minus_di - plus_di).abs() / di_sum))
    index_seed = 2 * n - 1
    seed = dx.fill_null(0.0).rolling_mean(n)
    smoothed = seeded_recursion(dx, 1.0 / n, seed, index_seed).forward_fill()
    return finite_or_null(null_before(smoothed, index_seed)).alias("adx")


def roc(close: pl.Expr, timeperiod: int = 10) -> pl.Expr:
    """Rate of change in percent, TA-Lib `ROC(close, timeperiod=10)`.

    `roc[t] = (close[t] / close[t-n] - 1) * 100`; lookback n. Differs from TA-Lib in one case:
    where close[t-n] is 0 TA-Lib answers 0.0, this answers null (the change is undefined).
    """
    n = check_period("timeperiod", timeperiod, minimum=1)
    base = close.shift(n)
    value = pl.when(base != 0.0).then((close / base - 1.0) * 100.0)
    return finite_or_null(value).alias("roc")


__all__ = ["adx", "macd", "roc", "rsi", "stoch"]
