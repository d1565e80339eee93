"""The snapshot checks find the rows that break them, however the rows are ordered."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.indicators.all_periods import FLAT_MEMBERS
from pipelines.indicators.checks import (
    BOUNDED,
    incomplete_symbols,
    non_finite_rows,
    out_of_range_rows,
)


def _rows(periods: dict[str, list[int]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "symbol": [s for s, ps in periods.items() for _ in ps],
            "period": [p for ps in periods.values() for p in ps],
        }
    )


@pytest.mark.parametrize("shuffled", [False, True])
def test_a_symbol_without_one_row_per_period_is_found(shuffled: bool) -> None:
    frame = _rows({"A": [2, 3, 4], "B": [2, 3], "C": [2, 3, 3], "D": [2, 3, 4, 5], "E": [2, 3, 4]})
    if shuffled:
        frame = frame.sample(fraction=1.0, shuffle=True, seed=3)
    found = incomplete_symbols(frame, periods=3).sort("symbol")
    assert found.schema == pl.Schema({"symbol": pl.String, "rows": pl.UInt32, "periods": pl.UInt32})
    assert found.rows() == [("B", 2, 2), ("C", 3, 2), ("D", 4, 4)]


def test_complete_symbols_in_order_are_not_found() -> None:
    assert incomplete_symbols(_rows({"A": [2, 3], "B": [2, 3]}), periods=2).is_empty()
    assert incomplete_symbols(_rows({}).cast({"symbol": pl.String, "period": pl.Int64})).is_empty()


def test_rows_with_nan_or_infinity_are_found_and_nulls_are_not() -> None:
    clean = pl.DataFrame({c: [1.0, None, 2.0] for c in FLAT_MEMBERS})
    assert non_finite_rows(clean).is_empty()
    assert non_finite_rows(clean).schema == clean.schema
    dirty = clean.with_columns(
        sma=pl.Series([1.0, float("nan"), None]), fib_100=pl.Series([2.0, 1.0, float("-inf")])
    )
    assert non_finite_rows(dirty)["fib_100"].to_list() == [1.0, float("-inf")]


def _oscillators(values: list[float | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {"symbol": "A", "period": list(range(2, 2 + len(values)))}
        | {c: pl.Series(values, dtype=pl.Float64) for c in BOUNDED}
    )


def test_an_oscillator_outside_0_100_is_found_and_null_is_not() -> None:
    found = out_of_range_rows(_oscillators([0.0, 100.0, None, 100.5, -0.25, 50.0]))
    assert found["stoch_k"].to_list() == [100.5, -0.25]


def test_an_oscillator_a_rounding_past_100_is_not_found() -> None:
    # A smoothed oscillator is a running sum divided by its period: it can round past 100.
    hair = float(np.nextafter(100.0, 200.0))
    assert out_of_range_rows(_oscillators([hair, -1e-12])).is_empty()
