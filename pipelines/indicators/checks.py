"""Properties of indicator snapshots as pure functions: each returns the rows that break it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import polars as pl

from pipelines.catalog import INDICATOR_SNAPSHOTS, PERIOD_COUNT
from pipelines.indicators.all_periods import FLAT_MEMBERS

BOUNDED = ("rsi", "adx", "stoch_k", "stoch_d")
"""Oscillators whose values lie in 0..100."""
ROUNDING = 1e-9
"""How far past 0..100 an oscillator may round: the smoothed ones (stochastic %K and %D, ADX) are
running sums divided by their period, as TA-Lib computes them, and a running sum can round a hair
past the bound. The check allows rounding, not a wrong value."""
PERIODS = PERIOD_COUNT


def non_finite_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows with NaN or infinity in any indicator column."""
    # One comparison a value (NaN compares false) finds the usual answer, none, in half the time.
    if all(frame.select((pl.col(FLAT_MEMBERS).abs() < math.inf).all()).row(0)):
        return frame.clear()
    bad = pl.any_horizontal(~pl.col(c).is_finite() for c in FLAT_MEMBERS)
    return frame.filter(bad.fill_null(False))


def out_of_range_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows whose oscillators leave 0..100 by more than rounding."""
    bad = pl.any_horizontal(~pl.col(c).is_between(-ROUNDING, 100.0 + ROUNDING) for c in BOUNDED)
    return frame.filter(bad.fill_null(False)).select("symbol", "period", *BOUNDED)


def incomplete_symbols(frame: pl.DataFrame, periods: int = PERIODS) -> pl.DataFrame:
    """Symbols without exactly one row per period."""
    if _by_symbol_and_period(frame):
        # Each symbol's rows are one run of distinct periods: its length counts both (no hashing).
        runs = frame.select(pl.col("symbol").rle()).unnest("symbol")
        return runs.filter(pl.col("len") != periods).select(
            symbol="value", rows="len", periods="len"
        )
    counts = frame.group_by("symbol").agg(
        pl.len().alias("rows"), pl.col("period").n_unique().alias("periods")
    )
    return counts.filter((pl.col("rows") != periods) | (pl.col("periods") != periods))


def _by_symbol_and_period(frame: pl.DataFrame) -> bool:
    """The rows are sorted by symbol, then strictly by period (as the update computes them)."""
    symbol, period = pl.col("symbol"), pl.col("period")
    before = symbol.shift(1)
    ordered = (symbol > before) | ((symbol == before) & (period > period.shift(1)))
    first = pl.int_range(pl.len()) == 0
    return bool(frame.select((ordered.fill_null(False) | first).all()).item())


def _on_snapshots(
    find: Callable[[pl.DataFrame], pl.DataFrame],
) -> Callable[[Mapping[str, pl.DataFrame]], pl.DataFrame]:
    return lambda rows: find(rows.get(INDICATOR_SNAPSHOTS.name, INDICATOR_SNAPSHOTS.empty()))


CHECKS = {
    "finite_values": (
        "No NaN or infinity in any indicator column (missing values are null).",
        _on_snapshots(non_finite_rows),
    ),
    "oscillators_in_0_100": (
        "rsi, adx, stoch_k and stoch_d lie in 0..100 (give or take float rounding).",
        _on_snapshots(out_of_range_rows),
    ),
    "every_period_per_symbol": (
        "Every symbol has exactly one row for each period 2..365.",
        _on_snapshots(incomplete_symbols),
    ),
}
"""Check name -> (description, property over a shard's computed rows by table)."""
