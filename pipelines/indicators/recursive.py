"""Recursive indicators as per-symbol state advanced by numba kernels, bit-identical to the numpy oracle (same operation order)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import numba
import numpy as np
import polars as pl
from numba import types
from numba.extending import intrinsic
from numpy.typing import NDArray

from pipelines.catalog.state import INDICATOR_GRIDS, INDICATOR_SCALARS
from pipelines.indicators.panel import MACD_PERIODS, PERIOD_MAX, PERIOD_MIN
from pipelines.platform.compiled import kernel_input

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

ALL_PERIODS: Ints = np.arange(PERIOD_MIN, PERIOD_MAX + 1, dtype=np.int64)
"""The production periods 2..365 (`indicator_snapshots`)."""

SCALARS: tuple[str, ...] = INDICATOR_SCALARS
"""The float64 fields with one value per symbol (the catalog's `indicator_state` columns, one
declaration), in kernel argument order."""

GRIDS: tuple[str, ...] = INDICATOR_GRIDS
"""The float64 fields with one value per (symbol, period), in kernel argument order."""

LATEST: tuple[str, ...] = (
    "ema",
    "rsi",
    "atr",
    "adx",
    "macd_line",
    "macd_signal",
    "macd_histogram",
    "obv",
)
"""The keys of `latest`: (symbols, periods) grids for the first four, (symbols,) for the rest."""

CAPTURED: tuple[str, ...] = ("ema", "rsi", "adx")
"""The keys of `advance_capturing`'s per-bar values, each (new bars, periods)."""


@dataclass(frozen=True, eq=False)
class RecursiveState:
    """Everything the recursions need to continue, one row per symbol.

    Before a symbol's first bar: bars 0, prices and per-period values NaN, sums 0 (and
    dx_total 0). A value stays NaN until its period is seeded, as TA-Lib's lookback says.
    """

    periods: Ints
    """(periods,) sorted, distinct, >= 2: column j of every grid is period periods[j]."""
    symbol: NDArray[np.str_]
    """(symbols,) the row's symbol (only carried along: the kernels never read it)."""
    bars: Ints
    """(symbols,) bars consumed so far = the 0-based row index of the symbol's next bar."""
    prev_close: Floats
    """Close, high and low of the last bar consumed (true range, directional movement)."""
    prev_high: Floats
    prev_low: Floats
    close_sum: Floats
    """Sums over every bar consumed, in bar order, from 0.0: the seeds of every period (and of
    MACD's slow EMA). Gains, losses, TR and DM count 0 on bar 0 (no previous close), as in TA-Lib.
    One TR sum serves both ATR's seed and ADX's TR seed."""
    gain_sum: Floats
    loss_sum: Floats
    tr_sum: Floats
    plus_dm_sum: Floats
    minus_dm_sum: Floats
    macd_fast: Floats
    """MACD's EMAs (fast and slow from bar 25, signal from bar 33; NaN before)."""
    macd_slow: Floats
    macd_signal: Floats
    macd_fast_sum: Floats
    """Sum of closes 14..25 (fast seed) and of MACD lines 25..33 (signal seed)."""
    macd_signal_sum: Floats
    obv: Floats
    """On-balance volume on the last bar (NaN before the first)."""
    ema: Floats
    """(symbols, periods) EMA."""
    avg_gain: Floats
    """(symbols, periods) Wilder-smoothed gain and loss (RSI)."""
    avg_loss: Floats
    atr: Floats
    """(symbols, periods) ATR."""
    plus_dm: Floats
    """(symbols, periods) Wilder sums of +DM, -DM and TR (ADX)."""
    minus_dm: Floats
    tr: Floats
    adx: Floats
    """(symbols, periods) ADX (NaN before bar 2n-1)."""
    dx_total: Floats
    """(symbols, periods) sum of the defined DX of bars n..2n-1 (ADX's seed), 0 before."""

    def __len__(self) -> int:
        return len(self.bars)

    def take(self, rows: NDArray[np.integer] | Sequence[int] | slice) -> RecursiveState:
        """The state of the given rows (indices, a boolean mask or a slice), in that order."""
        index = rows if isinstance(rows, slice) else np.asarray(rows)
        return replace(
            self,
            **{f: np.ascontiguousarray(getattr(self, f)[index]) for f in _ROW_FIELDS},
        )

    def copy(self) -> RecursiveState:
        return replace(self, **{f: getattr(self, f).copy() for f in _ROW_FIELDS})


_ROW_FIELDS: tuple[str, ...] = ("symbol", "bars", *SCALARS, *GRIDS)
"""Every field with one row per symbol."""


def _check_periods(periods: Sequence[int] | Ints) -> Ints:
    out = np.asarray(periods, dtype=np.int64)
    if out.ndim != 1 or len(out) == 0:
        raise ValueError("periods must be a non-empty 1-D sequence")
    if out[0] < 2 or not bool(np.all(np.diff(out) > 0)):
        raise ValueError("periods must be sorted, distinct and >= 2")
    return out


def empty(
    symbols: Sequence[str] | NDArray[np.str_], periods: Sequence[int] | Ints
) -> RecursiveState:
    """The state of symbols with no bar yet: advancing it seeds each period as TA-Lib does."""
    p = _check_periods(periods)
    names = np.asarray(list(symbols), dtype=np.str_)
    count = len(names)
    nan_scalars = {"prev_close", "prev_high", "prev_low", "macd_fast", "macd_slow"}
    nan_scalars |= {"macd_signal", "obv"}
    scalars = {f: np.full(count, np.nan) if f in nan_scalars else np.zeros(count) for f in SCALARS}
    grids = {
        f: np.zeros((count, len(p))) if f == "dx_total" else np.full((count, len(p)), np.nan)
        for f in GRIDS
    }
    return RecursiveState(
        periods=p, symbol=names, bars=np.zeros(count, dtype=np.int64), **scalars, **grids
    )


def concat(states: Sequence[RecursiveState]) -> RecursiveState:
    """The rows of several states (same periods) one after the other."""
    if not states:
        raise ValueError("concat needs at least one state")
    first = states[0]
    for s in states[1:]:
        if not np.array_equal(s.periods, first.periods):
            raise ValueError("states with different periods cannot be concatenated")
    return replace(
        first, **{f: np.concatenate([getattr(s, f) for s in states]) for f in _ROW_FIELDS}
    )


def state_schema(periods: int) -> pl.Schema:
    """Columns of `to_frame` for a state with `periods` periods."""
    grid = pl.Array(pl.Float64, periods)
    return pl.Schema(
        {
            "symbol": pl.String(),
            "bars": pl.Int64(),
            **{f: pl.Float64() for f in SCALARS},
            **dict.fromkeys(GRIDS, grid),
        }
    )


STATE_SCHEMA: pl.Schema = state_schema(len(ALL_PERIODS))
"""`to_frame`'s columns for the production periods (ALL_PERIODS)."""


def to_frame(state: RecursiveState) -> pl.DataFrame:
    """One row per symbol (STATE_SCHEMA's columns); the periods are not stored (see from_frame)."""
    schema = state_schema(len(state.periods))
    columns = [pl.Series(f, getattr(state, f), dtype=schema[f]) for f in _ROW_FIELDS]
    return pl.DataFrame(columns, schema=schema)


def from_frame(frame: pl.DataFrame, periods: Sequence[int] | Ints) -> RecursiveState:
    """The state `to_frame` wrote (other columns are ignored); `periods` must be the ones it
    was built for: the frame only knows how many there are."""
    p = _check_periods(periods)
    schema = state_schema(len(p))
    found = {name: frame.schema.get(name) for name in schema}
    if found != dict(schema):
        raise ValueError(f"state frame columns {found} are not {dict(schema)}")
    frame = frame.select(schema.names())
    if sum(frame.null_count().row(0)) > 0:
        raise ValueError("state frame holds nulls")
    values = {
        f: np.ascontiguousarray(frame[f].to_numpy(), dtype=np.float64) for f in (*SCALARS, *GRIDS)
    }
    if frame.height == 0:
        values |= {f: np.empty((0, len(p))) for f in GRIDS}
    return RecursiveState(
        periods=p,
        symbol=np.asarray(frame["symbol"].to_list(), dtype=np.str_),
        bars=np.ascontiguousarray(frame["bars"].to_numpy(), dtype=np.int64),
        **values,
    )


@numba.njit(cache=True, nogil=True)
def _nan_max(a: float, b: float) -> float:
    """np.maximum on scalars: NaN if either is NaN (the oracle's true range)."""
    if a >= b or a != a:
        return a
    return b


@numba.njit(cache=True, nogil=True)
def _sign(x: float) -> float:
    """np.sign on a scalar (NaN stays NaN)."""
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    if x == 0.0:
        return 0.0
    return x


def _fma_intrinsic(typingctx: Any, a: Any, b: Any, c: Any) -> Any:
    signature = types.float64(types.float64, types.float64, types.float64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.fma(*args)

    return signature, codegen


_fma = cast(Callable[[float, float, float], float], intrinsic(_fma_intrinsic))
"""a * b + c rounded once (llvm.fma), which numba does not expose."""


@numba.njit(cache=True, inline="always", nogil=True)
def _quotient(a: float, n: float, z: float) -> float:
    """a / n rounded to nearest, the division's own bits, from one product and two FMAs, for an
    integer n in 2..2^40, z = 1 / n rounded and a = +0 or 2^-960 <= |a| <= 2^1000.

    Why (Q = a / n, u = ulp(Q)): q = a z is within 2u of Q, so the remainder a - n q, a multiple
    of u / 2 below 2^53 of them, is exact in the inner FMA, and the outer one rounds
    T = q + (a - n q) z = Q + (Q - q)(n z - 1) once, with |T - Q| < 2u 2^-53. A midpoint m
    between two doubles is at least u / (2n) from Q (a - n m is a nonzero multiple of u / 2), so
    no rounding boundary lies between T and Q: T rounds to the double Q rounds to. The kernel's
    divisions by n are bound by the divider; this is four times their throughput.
    """
    q = a * z
    return _fma(_fma(-n, q, a), z, q)


@numba.njit(cache=True, inline="always", nogil=True)
def _divide(a: float, n: float, z: float, quick: bool) -> float:
    """a / n, as a `_quotient` when `quick` (a constant where inlined: no test per value)."""
    return _quotient(a, n, z) if quick else a / n


QUICK_BARS = 32
"""Bars after a check of a symbol's state during which its divisions by n are `_quotient`s."""
USABLE_LOW = 2.0**-800
USABLE_HIGH = 2.0**900
"""The range of a usable value. Over QUICK_BARS bars a state value at least quarters a bar
(n >= 2) and grows by at most the usable inputs it adds, so every dividend stays in the range
`_quotient` is exact on (a +0 value becomes +0, an input, or an input / n)."""


@numba.njit(cache=True, inline="always", nogil=True)
def _usable(x: float) -> bool:
    """x is +0 or in [USABLE_LOW, USABLE_HIGH] (not NaN, -0, infinite, tiny or huge)."""
    inside = (x >= USABLE_LOW) & (x <= USABLE_HIGH)
    return inside | ((x == 0.0) & (math.copysign(1.0, x) > 0.0))


@numba.njit(cache=True, inline="always", nogil=True)
def _positive(x: float) -> bool:
    """x is in [USABLE_LOW, USABLE_HIGH]."""
    return (x >= USABLE_LOW) & (x <= USABLE_HIGH)


Grids = tuple[Floats, Floats, Floats, Floats, Floats, Floats, Floats, Floats, Floats]
"""One symbol's rows of ema, avg_gain, avg_loss, atr, plus_dm, minus_dm, tr, adx, dx_total."""
Constants = tuple[Floats, Floats, Floats, Floats]
"""Per period: the EMA factor 2 / (n + 1), n, n - 1, and 1 / n rounded."""
Bar = tuple[float, float, float, float, float, float]
"""One bar's close, gain, loss, true range, +DM and -DM."""


@numba.njit(cache=True, nogil=True)
def _all_usable(grids: Grids, half: int, lt: int, le: int) -> bool:
    """Every value the bar's divisions by n start from is usable, and ADX positive (its dividend
    adds a DX in 0..100, possibly tiny)."""
    _, g, lo, a, pd, md, td, x, _ = grids
    fine = True
    for j in range(lt):
        fine &= _usable(g[j]) & _usable(lo[j]) & _usable(a[j])
    for j in range(le):
        fine &= _usable(pd[j]) & _usable(md[j]) & _usable(td[j])
    for j in range(half):
        fine &= _positive(x[j])
    return fine


@numba.njit(cache=True, inline="always", error_model="numpy", nogil=True)
def _mature_step(grids: Grids, constants: Constants, bar: Bar) -> None:
    """A bar's step once every period is past its seeds (t >= 2 max period), with `_quotient`s:
    one pass over the periods, each value's operations in `_step`'s order (the same bits)."""
    e, g, lo, a, pd, md, td, x, _ = grids
    k, n, n1, z = constants
    c, gain, loss, trange, plus, minus = bar
    for j in range(n.size):
        e[j] = e[j] + (c - e[j]) * k[j]
        g[j] = _quotient(g[j] * n1[j] + gain, n[j], z[j])
        lo[j] = _quotient(lo[j] * n1[j] + loss, n[j], z[j])
        a[j] = _quotient(a[j] * n1[j] + trange, n[j], z[j])
        plus_j = pd[j] - _quotient(pd[j], n[j], z[j]) + plus
        minus_j = md[j] - _quotient(md[j], n[j], z[j]) + minus
        td[j] = td[j] - _quotient(td[j], n[j], z[j]) + trange
        pd[j] = plus_j
        md[j] = minus_j
        total = plus_j + minus_j
        dx = abs(minus_j - plus_j) / total * 100.0
        updated = _quotient(x[j] * n1[j] + dx, n[j], z[j])
        x[j] = x[j] if total == 0.0 else updated


@numba.njit(cache=True, inline="always", error_model="numpy", nogil=True)
def _step(
    quick: bool, grids: Grids, constants: Constants, bar: Bar, half: int, lt: int, le: int
) -> None:
    """A bar's step of the seeded periods (p <= t: EMA, Wilder sums and DX; p < t: RSI and ATR;
    2p <= t: ADX), dividing by n with `_quotient`s when `quick`."""
    e, g, lo, a, pd, md, td, x, dt = grids
    k, n, n1, z = constants
    c, gain, loss, trange, plus, minus = bar
    for j in range(le):
        e[j] = e[j] + (c - e[j]) * k[j]
    for j in range(lt):
        g[j] = _divide(g[j] * n1[j] + gain, n[j], z[j], quick)
        lo[j] = _divide(lo[j] * n1[j] + loss, n[j], z[j], quick)
        a[j] = _divide(a[j] * n1[j] + trange, n[j], z[j], quick)
    for j in range(le):
        pd[j] = pd[j] - _divide(pd[j], n[j], z[j], quick) + plus
        md[j] = md[j] - _divide(md[j], n[j], z[j], quick) + minus
        td[j] = td[j] - _divide(td[j], n[j], z[j], quick) + trange
    # DX of the sums (TR cancels); an undefined DX (sum 0) leaves ADX and its seed alone.
    for j in range(half):
        total = pd[j] + md[j]
        dx = abs(md[j] - pd[j]) / total * 100.0
        updated = _divide(x[j] * n1[j] + dx, n[j], z[j], quick)
        x[j] = x[j] if total == 0.0 else updated
    for j in range(half, le):
        total = pd[j] + md[j]
        summed = dt[j] + abs(md[j] - pd[j]) / total * 100.0
        dt[j] = dt[j] if total == 0.0 else summed


# error_model="numpy": IEEE division (no ZeroDivisionError checks, which would also block
# vectorization); every divisor is nonzero except the DX total, which is tested first.
@numba.njit(cache=True, parallel=True, error_model="numpy", nogil=True)
def _advance_kernel(
    periods: Ints,
    macd: Ints,
    bars: Ints,
    prev_close: Floats,
    prev_high: Floats,
    prev_low: Floats,
    close_sum: Floats,
    gain_sum: Floats,
    loss_sum: Floats,
    tr_sum: Floats,
    plus_dm_sum: Floats,
    minus_dm_sum: Floats,
    macd_fast: Floats,
    macd_slow: Floats,
    macd_signal: Floats,
    macd_fast_sum: Floats,
    macd_signal_sum: Floats,
    obv: Floats,
    ema: Floats,
    avg_gain: Floats,
    avg_loss: Floats,
    atr: Floats,
    plus_dm: Floats,
    minus_dm: Floats,
    tr: Floats,
    adx: Floats,
    dx_total: Floats,
    close: Floats,
    high: Floats,
    low: Floats,
    volume: Floats,
    offsets: Ints,
    quick_bars: int,
    capture: bool,
    ema_out: Floats,
    rsi_out: Floats,
    adx_out: Floats,
) -> None:
    count = periods.size
    n = periods.astype(np.float64)
    constants = (2.0 / (n + 1.0), n, n - 1.0, 1.0 / n)
    # MACD's periods come as an argument, not a global: numba freezes globals into the cache.
    fast, slow, signal = macd[0], macd[1], macd[2]
    seed_row = slow - 1
    first_row = seed_row + signal - 1
    k_fast = 2.0 / (fast + 1)
    k_slow = 2.0 / (slow + 1)
    k_signal = 2.0 / (signal + 1)
    for s in numba.prange(bars.size):
        t = bars[s]
        pc, ph, pl_ = prev_close[s], prev_high[s], prev_low[s]
        c_sum, g_sum, l_sum = close_sum[s], gain_sum[s], loss_sum[s]
        r_sum, p_sum, m_sum = tr_sum[s], plus_dm_sum[s], minus_dm_sum[s]
        f_ema, s_ema, sig = macd_fast[s], macd_slow[s], macd_signal[s]
        f_sum, sig_sum, ob = macd_fast_sum[s], macd_signal_sum[s], obv[s]
        grids = (
            ema[s],
            avg_gain[s],
            avg_loss[s],
            atr[s],
            plus_dm[s],
            minus_dm[s],
            tr[s],
            adx[s],
            dx_total[s],
        )
        e, g, lo, a, pd, md, td, x, dt = grids
        # Periods are sorted, so each phase is a prefix of the period axis:
        # p <= t (EMA and Wilder-sum recursions, DX), p < t (RSI/ATR), 2p <= t (ADX recursion).
        le = 0
        lt = 0
        half = 0
        # Bars left (this one included) whose divisions by n are `_quotient`s: the state was
        # found usable (`_all_usable`) less than quick_bars bars ago, and every input and seed
        # since was usable. 0 on a call's first bar: it checks.
        budget = 0
        for i in range(offsets[s], offsets[s + 1]):
            c, h, low_, v = close[i], high[i], low[i], volume[i]
            while le < count and periods[le] <= t:
                le += 1
            while lt < count and periods[lt] < t:
                lt += 1
            while half < count and 2 * periods[half] <= t:
                half += 1
            if t == 0:
                gain = 0.0
                loss = 0.0
                trange = 0.0
                plus = 0.0
                minus = 0.0
                ob = v
            else:
                change = c - pc
                gain = change if change > 0.0 else 0.0
                loss = -change if change < 0.0 else 0.0
                trange = _nan_max(_nan_max(h - low_, abs(h - pc)), abs(low_ - pc))
                up = h - ph
                down = -(low_ - pl_)
                plus = up if up > 0.0 and up > down else 0.0
                minus = down if down > 0.0 and up < down else 0.0
                ob = ob + _sign(change) * v
            c_sum += c
            g_sum += gain
            l_sum += loss
            r_sum += trange
            p_sum += plus
            m_sum += minus
            inputs = _usable(gain) & _usable(loss) & _usable(trange)
            if not (inputs & _usable(plus) & _usable(minus)):
                budget = 0
            elif budget == 0 and quick_bars > 0 and _all_usable(grids, half, lt, le):
                budget = quick_bars
            bar = (c, gain, loss, trange, plus, minus)
            if budget > 0 and half == count:
                _mature_step(grids, constants, bar)
            elif budget > 0:
                _step(True, grids, constants, bar, half, lt, le)
            else:
                _step(False, grids, constants, bar, half, lt, le)
            # Seeds: EMA (mean of closes 0..t) and the Wilder sums (sums of bars 1..t) for
            # p = t + 1, RSI and ATR (means of bars 1..t) for p = t, ADX (mean of the DX of bars
            # n..2n-1) for 2p - 1 = t.
            if le < count and periods[le] == t + 1:
                e[le] = c_sum / (t + 1)
                pd[le] = p_sum
                md[le] = m_sum
                td[le] = r_sum
                if not (_usable(pd[le]) & _usable(md[le]) & _usable(td[le])):
                    budget = 0
            if lt < count and periods[lt] == t:
                g[lt] = g_sum / t
                lo[lt] = l_sum / t
                a[lt] = r_sum / t
                if not (_usable(g[lt]) & _usable(lo[lt]) & _usable(a[lt])):
                    budget = 0
            if half < count and 2 * periods[half] - 1 == t:
                x[half] = dt[half] / n[half]
                if not _positive(x[half]):
                    budget = 0
            if budget > 0:
                budget -= 1
            # MACD: both EMAs seeded on seed_row (fast over its last `fast` closes), signal
            # seeded on first_row with the mean of the lines seed_row..first_row.
            if slow - fast <= t <= seed_row:
                f_sum += c
            if t == seed_row:
                f_ema = f_sum / fast
                s_ema = c_sum / slow
            elif t > seed_row:
                f_ema = (c - f_ema) * k_fast + f_ema
                s_ema = (c - s_ema) * k_slow + s_ema
            if t >= seed_row:
                line = f_ema - s_ema
                if t <= first_row:
                    sig_sum += line
                if t == first_row:
                    sig = sig_sum / signal
                elif t > first_row:
                    sig = (line - sig) * k_signal + sig
            if capture:
                for j in range(count):
                    ema_out[i, j] = e[j]
                    total = g[j] + lo[j]
                    rsi_out[i, j] = 0.0 if total == 0.0 else 100.0 * (g[j] / total)
                    adx_out[i, j] = x[j]
            pc, ph, pl_ = c, h, low_
            t += 1
        bars[s] = t
        prev_close[s], prev_high[s], prev_low[s] = pc, ph, pl_
        close_sum[s], gain_sum[s], loss_sum[s] = c_sum, g_sum, l_sum
        tr_sum[s], plus_dm_sum[s], minus_dm_sum[s] = r_sum, p_sum, m_sum
        macd_fast[s], macd_slow[s], macd_signal[s] = f_ema, s_ema, sig
        macd_fast_sum[s], macd_signal_sum[s], obv[s] = f_sum, sig_sum, ob


def _bars(values: Floats | Sequence[float]) -> Floats:
    return kernel_input(values, np.float64)


def _run(
    state: RecursiveState,
    close: Floats,
    high: Floats,
    low: Floats,
    volume: Floats,
    offsets: Ints,
    capture: bool,
    quick: bool = True,
) -> tuple[RecursiveState, dict[str, Floats]]:
    close_, high_, low_, volume_ = (_bars(x) for x in (close, high, low, volume))
    cuts = kernel_input(offsets, np.int64)
    total = len(close_)
    if any(len(x) != total or x.ndim != 1 for x in (close_, high_, low_, volume_)):
        raise ValueError("close, high, low and volume must be 1-D arrays of the same length")
    if len(cuts) != len(state) + 1 or cuts[0] != 0 or cuts[-1] != total:
        raise ValueError("offsets must have symbols + 1 entries, from 0 to the number of bars")
    if bool(np.any(np.diff(cuts) < 0)):
        raise ValueError("offsets must be non-decreasing")
    out = state.copy()
    rows = total if capture else 0
    captured = {name: np.full((rows, len(state.periods)), np.nan) for name in CAPTURED}
    fast, slow, signal = MACD_PERIODS
    macd = np.array([min(fast, slow), max(fast, slow), signal], dtype=np.int64)
    _advance_kernel(
        out.periods,
        macd,
        out.bars,
        out.prev_close,
        out.prev_high,
        out.prev_low,
        out.close_sum,
        out.gain_sum,
        out.loss_sum,
        out.tr_sum,
        out.plus_dm_sum,
        out.minus_dm_sum,
        out.macd_fast,
        out.macd_slow,
        out.macd_signal,
        out.macd_fast_sum,
        out.macd_signal_sum,
        out.obv,
        out.ema,
        out.avg_gain,
        out.avg_loss,
        out.atr,
        out.plus_dm,
        out.minus_dm,
        out.tr,
        out.adx,
        out.dx_total,
        close_,
        high_,
        low_,
        volume_,
        cuts,
        QUICK_BARS if quick else 0,
        capture,
        captured["ema"],
        captured["rsi"],
        captured["adx"],
    )
    return out, captured


def advance(
    state: RecursiveState,
    close: Floats,
    high: Floats,
    low: Floats,
    volume: Floats,
    offsets: Ints,
    quick: bool = True,
) -> RecursiveState:
    """A new state after each symbol's new bars; `state` itself is left unchanged.

    The bars are flat float64 arrays in the state's row order; symbol s's bars are rows
    offsets[s]..offsets[s+1] (offsets: symbols + 1 entries from 0; a symbol may get none).
    Each symbol continues from its own bar count. `quick=False` divides wherever the kernel
    would multiply by a reciprocal (`_quotient`): the same bits, four times the time.
    """
    return _run(state, close, high, low, volume, offsets, capture=False, quick=quick)[0]


def advance_capturing(
    state: RecursiveState,
    close: Floats,
    high: Floats,
    low: Floats,
    volume: Floats,
    offsets: Ints,
) -> tuple[RecursiveState, dict[str, Floats]]:
    """`advance`, plus ema, rsi and adx of every period on every new bar (CAPTURED).

    Each captured array is (new bars, periods), rows in the input's flat order, NaN where the
    period is not seeded yet (the values `latest` gives after that bar).
    """
    return _run(state, close, high, low, volume, offsets, capture=True)


def latest(state: RecursiveState) -> dict[str, Floats]:
    """The values on each symbol's last bar (LATEST), NaN where TA-Lib has none yet.

    RSI is 0 where the smoothed gain and loss are both 0; MACD is NaN before bar 33.
    """
    total = state.avg_gain + state.avg_loss
    with np.errstate(invalid="ignore", divide="ignore"):
        rsi = 100.0 * (state.avg_gain / total)
    rsi[total == 0.0] = 0.0
    fast, slow, signal = MACD_PERIODS
    valid = state.bars > max(fast, slow) + signal - 2
    line = np.where(valid, state.macd_fast - state.macd_slow, np.nan)
    signal_line = np.where(valid, state.macd_signal, np.nan)
    return {
        "ema": state.ema.copy(),
        "rsi": rsi,
        "atr": state.atr.copy(),
        "adx": state.adx.copy(),
        "macd_line": line,
        "macd_signal": signal_line,
        "macd_histogram": line - signal_line,
        "obv": state.obv.copy(),
    }
