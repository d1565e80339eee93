"""Building blocks shared by the indicators: bar index, seeded recursions, finite-or-null outputs."""

from __future__ import annotations

import polars as pl


def bar_index() -> pl.Expr:
    """0-based position of each bar within the frame (within each group under `.over`)."""
    return pl.int_range(pl.len(), dtype=pl.Int64)


def finite_or_null(expr: pl.Expr) -> pl.Expr:
    """The value where it is finite, null otherwise: no NaN or infinity ever leaves the library."""
    return pl.when(expr.is_finite()).then(expr)


def seeded_recursion(values: pl.Expr, alpha: float, seed: pl.Expr, seed_index: int) -> pl.Expr:
    """`out[seed_index] = seed`, then `out[t] = out[t-1] + alpha * (values[t] - out[t-1])`.

    This is TA-Lib's EMA (alpha = 2/(n+1)) and Wilder smoothing (alpha = 1/n) with TA-Lib's seed
    (a simple mean placed on the seed bar), run natively by `ewm_mean(adjust=False)`: every bar
    before the seed is null, so the recursion starts exactly on the seed. A null in `values` after
    the seed leaves the state unchanged (`ignore_nulls=True`): the caller forward-fills the output
    where it wants the held value (ADX skips undefined DX bars this way).
    """
    index = bar_index()
    started = pl.when(index == seed_index).then(seed).when(index > seed_index).then(values)
    return started.ewm_mean(alpha=alpha, adjust=False, min_samples=1, ignore_nulls=True)


def null_before(expr: pl.Expr, first_valid: int) -> pl.Expr:
    """Null on every bar before `first_valid` (TA-Lib's lookback), the value from there on."""
    return pl.when(bar_index() >= first_valid).then(expr)


def check_period(name: str, value: int, minimum: int = 2) -> int:
    """Reject periods TA-Lib itself rejects, so a bad call fails loudly instead of nulling out."""
    if not isinstance(value, int) or value < minimum or value > 100_000:
        raise ValueError(f"{name} must be an integer in {minimum}..100000, got {value!r}")
    return value
