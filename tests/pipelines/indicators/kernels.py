"""The per-period TA-Lib kernels on (bars x symbols) panels: an oracle for the pipeline's
all-period indicators (`pipelines/indicators/all_periods.py`, `recursive.py`), itself tested
against TA-Lib.

Every symbol's recursion runs in one row loop: a Python loop over rows (days) of vectorized numpy
operations across all symbols at once. The formulas and seeds are TA-Lib's; see docs/indicators.md.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from pipelines.indicators.kernels import (
    SHIFT_WINDOW_LIMIT,
    Panel,
    block_window,
    nan_panel,
    rolling_sum,
    shift_window,
)

__all__ = ["Panel", "rolling_sum"]


def running_sum(x: Panel, n: int) -> Panel:
    """Sum of the last n rows kept as TA-Lib keeps it (add the new row, subtract the oldest).

    Same arithmetic as TA-Lib's SMA, hence its exact values; x must hold no NaN before its
    last real row (a NaN would stay in the running total).
    """
    out = nan_panel(x)
    if x.shape[0] < n:
        return out
    total = _seed_sum(x, 0, n - 2)
    for t in range(n - 1, x.shape[0]):
        total += x[t]
        out[t] = total
        total -= x[t - n + 1]
    return out


def rolling_max(x: Panel, n: int) -> Panel:
    """Highest of the last n rows (NaN before row n-1)."""
    if n <= SHIFT_WINDOW_LIMIT:
        return shift_window(x, n, np.maximum)
    return block_window(x, n, np.maximum, -np.inf)


def rolling_min(x: Panel, n: int) -> Panel:
    """Lowest of the last n rows (NaN before row n-1)."""
    if n <= SHIFT_WINDOW_LIMIT:
        return shift_window(x, n, np.minimum)
    return block_window(x, n, np.minimum, np.inf)


def ema_recursion(x: Panel, k: float, seed_row: int, seed: NDArray[np.float64]) -> Panel:
    """TA-Lib's EMA step from `seed` on `seed_row`: `out[t] = (x[t] - out[t-1]) * k + out[t-1]`."""
    out = nan_panel(x)
    if seed_row >= x.shape[0]:
        return out
    out[seed_row] = seed
    step = np.empty(x.shape[1])
    for t in range(seed_row + 1, x.shape[0]):
        np.subtract(x[t], out[t - 1], out=step)
        step *= k
        np.add(step, out[t - 1], out=out[t])
    return out


def wilder_recursion(x: Panel, n: int, seed_row: int, seed: NDArray[np.float64]) -> Panel:
    """Wilder's smoothing as TA-Lib writes it: `out[t] = (out[t-1] * (n-1) + x[t]) / n`."""
    out = nan_panel(x)
    if seed_row >= x.shape[0]:
        return out
    out[seed_row] = seed
    for t in range(seed_row + 1, x.shape[0]):
        row = out[t]
        np.multiply(out[t - 1], n - 1, out=row)
        row += x[t]
        row /= n
    return out


def wilder_sum_recursion(x: Panel, n: int, seed_row: int, seed: NDArray[np.float64]) -> Panel:
    """Wilder's running sum (ADX's DM and TR): `out[t] = out[t-1] - out[t-1] / n + x[t]`."""
    out = nan_panel(x)
    if seed_row >= x.shape[0]:
        return out
    out[seed_row] = seed
    for t in range(seed_row + 1, x.shape[0]):
        row = out[t]
        np.divide(out[t - 1], n, out=row)
        np.subtract(out[t - 1], row, out=row)
        row += x[t]
    return out


def _seed_sum(x: Panel, first: int, last: int) -> NDArray[np.float64]:
    """Sum of rows first..last (inclusive), added in row order as TA-Lib does."""
    total = np.zeros(x.shape[1])
    for t in range(first, last + 1):
        total += x[t]
    return total


def _seed_mean(x: Panel, first: int, last: int) -> NDArray[np.float64]:
    """Mean of rows first..last (inclusive), summed in row order as TA-Lib does."""
    return _seed_sum(x, first, last) / (last - first + 1)


def sma(close: Panel, n: int) -> Panel:
    """TA-Lib SMA: mean of the last n closes; first value on row n-1."""
    return running_sum(close, n) / n


def ema(close: Panel, n: int) -> Panel:
    """TA-Lib EMA: seeded with the mean of rows 0..n-1 on row n-1, k = 2/(n+1)."""
    if close.shape[0] < n:
        return nan_panel(close)
    return ema_recursion(close, 2.0 / (n + 1), n - 1, _seed_mean(close, 0, n - 1))


def _diff(x: Panel) -> Panel:
    out = nan_panel(x)
    np.subtract(x[1:], x[:-1], out=out[1:])
    return out


def rsi(close: Panel, n: int) -> Panel:
    """TA-Lib RSI: Wilder-smoothed gains and losses seeded on row n; 0 where both are 0."""
    if close.shape[0] <= n:
        return nan_panel(close)
    change = _diff(close)
    gain = np.where(change > 0.0, change, 0.0)
    loss = np.where(change < 0.0, -change, 0.0)
    both = np.concatenate([gain, loss], axis=1)
    smooth = wilder_recursion(both, n, n, _seed_mean(both, 1, n))
    avg_gain, avg_loss = np.split(smooth, 2, axis=1)
    total = avg_gain + avg_loss
    with np.errstate(invalid="ignore", divide="ignore"):
        value = 100.0 * (avg_gain / total)
    value[total == 0.0] = 0.0
    return np.where(np.isnan(close), np.nan, value)


def true_range(high: Panel, low: Panel, close: Panel) -> Panel:
    """TA-Lib TRANGE: max(high-low, |high-prev close|, |low-prev close|); NaN on row 0."""
    out = nan_panel(high)
    previous = close[:-1]
    span = high[1:] - low[1:]
    np.maximum(span, np.abs(high[1:] - previous), out=span)
    np.maximum(span, np.abs(low[1:] - previous), out=out[1:])
    return out


def atr(high: Panel, low: Panel, close: Panel, n: int) -> Panel:
    """TA-Lib ATR: mean of TR rows 1..n on row n, then Wilder smoothing."""
    if high.shape[0] <= n:
        return nan_panel(high)
    tr = true_range(high, low, close)
    return wilder_recursion(tr, n, n, _seed_mean(tr, 1, n))


def directional_movement(high: Panel, low: Panel) -> tuple[Panel, Panel]:
    """(+DM, -DM) as TA-Lib counts them: only the larger move counts, ties count zero."""
    up = _diff(high)
    down = -_diff(low)
    plus = np.where((up > 0.0) & (up > down), up, 0.0)
    minus = np.where((down > 0.0) & (up < down), down, 0.0)
    plus[0] = np.nan
    minus[0] = np.nan
    return plus, minus


def adx(high: Panel, low: Panel, close: Panel, n: int) -> Panel:
    """TA-Lib ADX: Wilder sums of +DM, -DM, TR seeded over rows 1..n-1; first ADX on 2n-1.

    DX is undefined where the smoothed TR or the DI sum is 0: it then counts 0 in the seed mean
    and leaves ADX unchanged afterwards, as in TA-Lib.
    """
    out = nan_panel(high)
    if high.shape[0] < 2 * n:
        return out
    plus, minus = directional_movement(high, low)
    stacked = np.concatenate([plus, minus, true_range(high, low, close)], axis=1)
    sums = wilder_sum_recursion(stacked, n, n - 1, _seed_sum(stacked, 1, n - 1))
    plus_sum, minus_sum, tr_sum = np.split(sums, 3, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        minus_di = 100.0 * (minus_sum / tr_sum)
        plus_di = 100.0 * (plus_sum / tr_sum)
        di_sum = minus_di + plus_di
        dx = 100.0 * (np.abs(minus_di - plus_di) / di_sum)
    undefined = (tr_sum == 0.0) | (di_sum == 0.0)
    dx[undefined] = np.nan
    first = 2 * n - 1
    out[first] = _seed_mean(np.nan_to_num(dx, nan=0.0), n, first)
    step = np.empty(high.shape[1])
    for t in range(first + 1, high.shape[0]):
        np.multiply(out[t - 1], n - 1, out=step)
        step += dx[t]
        step /= n
        np.copyto(step, out[t - 1], where=undefined[t])
        out[t] = step
    return np.where(np.isnan(close), np.nan, out)


def roc(close: Panel, n: int) -> Panel:
    """TA-Lib ROC `(close/close[n ago] - 1) * 100`, except NaN (not 0) where the base is 0."""
    out = nan_panel(close)
    base = close[:-n]
    with np.errstate(invalid="ignore", divide="ignore"):
        value = (close[n:] / base - 1.0) * 100.0
    value[base == 0.0] = np.nan
    out[n:] = value
    return out


def bbands(close: Panel, n: int, nbdev: float = 2.0) -> tuple[Panel, Panel, Panel]:
    """(upper, middle, lower): SMA(n) +/- nbdev population standard deviations of the window.

    The variance is E[d^2] - E[d]^2 of d = close - the column's first close: shifting by a
    constant leaves it unchanged and keeps the cancellation small.
    """
    middle = sma(close, n)
    d = close - close[:1]
    mean_d = rolling_sum(d, n) / n
    variance = rolling_sum(d * d, n) / n - mean_d * mean_d
    deviation = np.sqrt(np.maximum(variance, 0.0))
    return middle + nbdev * deviation, middle, middle - nbdev * deviation


def stoch(
    high: Panel, low: Panel, close: Panel, fastk: int, slowk: int = 3, slowd: int = 3
) -> tuple[Panel, Panel]:
    """TA-Lib STOCH with SMA smoothing: (slow %K, slow %D), both from row fastk+slowk+slowd-3."""
    highest = rolling_max(high, fastk)
    lowest = rolling_min(low, fastk)
    return stoch_from_extremes(highest, lowest, close, fastk, slowk, slowd)


def stoch_from_extremes(
    highest: Panel, lowest: Panel, close: Panel, fastk: int, slowk: int = 3, slowd: int = 3
) -> tuple[Panel, Panel]:
    """STOCH given the window's rolling high and low (shared with the Fibonacci levels)."""
    span = highest - lowest
    flat = np.abs(span) <= 1e-14 * (np.abs(highest) + np.abs(lowest))
    with np.errstate(invalid="ignore", divide="ignore"):
        fast_k = (close - lowest) / span * 100.0
    fast_k[flat] = 0.0
    # The running sums start on fast %K's first row, as TA-Lib's do on its output buffer.
    start = fastk - 1
    slow_k = nan_panel(close)
    slow_d = nan_panel(close)
    slow_k[start:] = running_sum(fast_k[start:], slowk) / slowk
    start += slowk - 1
    slow_d[start:] = running_sum(slow_k[start:], slowd) / slowd
    slow_k[: start + slowd - 1] = np.nan
    return slow_k, slow_d


def macd(
    close: Panel, fast: int = 12, slow: int = 26, signal: int = 9
) -> tuple[Panel, Panel, Panel]:
    """TA-Lib MACD: (macd_line, signal_line, histogram), all from row slow+signal-2 (33)."""
    fast, slow = min(fast, slow), max(fast, slow)
    seed_row = slow - 1
    first = seed_row + signal - 1
    if close.shape[0] <= first:
        empty = nan_panel(close)
        return empty, empty.copy(), empty.copy()
    fast_ema = ema_recursion(
        close, 2.0 / (fast + 1), seed_row, _seed_mean(close, slow - fast, seed_row)
    )
    slow_ema = ema_recursion(close, 2.0 / (slow + 1), seed_row, _seed_mean(close, 0, seed_row))
    line = fast_ema - slow_ema
    signal_line = ema_recursion(line, 2.0 / (signal + 1), first, _seed_mean(line, seed_row, first))
    line[:first] = np.nan
    return line, signal_line, line - signal_line


def obv(close: Panel, volume: Panel) -> Panel:
    """TA-Lib OBV: volume[0], then + volume on an up close, - on a down close."""
    signed = np.sign(_diff(close)) * volume
    signed[0] = volume[0]
    return np.cumsum(signed, axis=0)


def vwap(high: Panel, low: Panel, close: Panel, volume: Panel, n: int) -> Panel:
    """Rolling VWAP of the typical price over n rows; NaN where the window traded nothing."""
    typical = (high + low + close) / 3.0
    traded = rolling_sum(volume, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = rolling_sum(typical * volume, n) / traded
    value[traded == 0.0] = np.nan
    return value
