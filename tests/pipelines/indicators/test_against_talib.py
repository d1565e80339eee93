"""Every TA-Lib-backed indicator, as an expression and as a panel kernel, equals TA-Lib."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import talib
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.indicators.panel import to_panels
from tests.pipelines.indicators.oracle import (
    CASES,
    PANEL_COLUMNS,
    Arrays,
    assert_matches,
    bars_frame,
    evaluate,
    random_walk,
)
from tests.pipelines.indicators.per_period import compute_panels

PERIODS = (2, 14, 30, 200, 365)
SEEDS = (0, 1, 2)


def _check_expressions(arrays: Arrays, period: int, label: str) -> None:
    frame = bars_frame(arrays)
    for case in CASES:
        reference = case.talib(arrays, period)
        ours = evaluate(case, frame, period)
        assert_matches(ours, reference, case.scale(arrays), f"{label} {case.name}({period})")


def _check_panels(arrays: Arrays, period: int, label: str) -> None:
    panels = compute_panels(to_panels(bars_frame(arrays)), period)
    for case in CASES:
        reference = case.talib(arrays, period)
        ours = panels[PANEL_COLUMNS[case.name]][:, 0]
        assert_matches(ours, reference, case.scale(arrays), f"{label} panel {case.name}({period})")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("period", PERIODS)
def test_expressions_equal_talib_on_random_walks(seed: int, period: int) -> None:
    _check_expressions(random_walk(seed, 1600), period, f"seed {seed}")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("period", PERIODS)
def test_panel_kernels_equal_talib_on_random_walks(seed: int, period: int) -> None:
    _check_panels(random_walk(seed, 1600), period, f"seed {seed}")


def _flat(days: int, price: float = 5.0) -> Arrays:
    ones = np.ones(days)
    return {
        "open": price * ones,
        "high": price * ones,
        "low": price * ones,
        "close": price * ones,
        "volume": 10.0 * ones,
    }


def _ramp(days: int, step: float) -> Arrays:
    close = 100.0 + step * np.arange(days)
    return {
        "open": close,
        "high": close + 0.5,
        "low": close - 0.5,
        "close": close,
        "volume": np.full(days, 3.0),
    }


def _spike(days: int) -> Arrays:
    close = np.ones(days)
    close[days // 2] = 1e6
    return {"open": close, "high": close, "low": close, "close": close, "volume": np.zeros(days)}


def _tiny(days: int) -> Arrays:
    close = 1e-9 * (1.0 + 0.01 * np.sin(np.arange(days)))
    return {
        "open": close,
        "high": close * 1.01,
        "low": close * 0.99,
        "close": close,
        "volume": np.ones(days),
    }


def _pips(days: int) -> Arrays:
    close = 1.1 + 1e-5 * np.round(3.0 * np.sin(np.arange(days)))
    return {
        "open": close,
        "high": close + 1e-5,
        "low": close - 1e-5,
        "close": close,
        "volume": np.ones(days),
    }


EDGE_SERIES = {
    "constant prices": _flat(400),
    "monotonic up": _ramp(400, 1.0),
    "monotonic down": _ramp(400, -0.2),
    "single spike": _spike(400),
    "zero volume": {**random_walk(7, 400), "volume": np.zeros(400)},
    "prices near 1e-9": _tiny(400),
    "forex pip moves": _pips(400),
}


@pytest.mark.parametrize("name", sorted(EDGE_SERIES))
@pytest.mark.parametrize("period", [2, 14, 30, 365])
def test_edge_series_equal_talib(name: str, period: int) -> None:
    _check_expressions(EDGE_SERIES[name], period, name)
    _check_panels(EDGE_SERIES[name], period, name)


@pytest.mark.parametrize("days", [1, 2, 5, 14, 15, 27, 33, 34, 60])
@pytest.mark.parametrize("period", [2, 14, 30])
def test_series_shorter_than_the_lookback_are_null_where_talib_is_nan(
    days: int, period: int
) -> None:
    arrays = random_walk(days, days)
    _check_expressions(arrays, period, f"{days} bars")
    _check_panels(arrays, period, f"{days} bars")


def test_over_symbol_equals_talib_per_symbol() -> None:
    walks = {
        "AAA": random_walk(10, 300),
        "BBB": random_walk(11, 120, start=0.5),
        "CCC": random_walk(12, 40, start=20_000.0),
    }
    frame = pl.concat([bars_frame(a, symbol) for symbol, a in walks.items()])
    for case in CASES:
        column = frame.select(case.ours(14).over("symbol").alias("out"))["out"]
        if case.field is not None:
            column = column.struct.field(case.field)
        ours = column.fill_null(np.nan).to_numpy()
        offset = 0
        for symbol, arrays in walks.items():
            days = len(arrays["close"])
            reference = case.talib(arrays, 14)
            assert_matches(
                ours[offset : offset + days], reference, case.scale(arrays), f"{symbol} {case.name}"
            )
            offset += days


def test_panels_of_symbols_with_different_histories_equal_talib_per_symbol() -> None:
    walks = {
        "AAA": random_walk(20, 300),
        "BBB": random_walk(21, 90, start=3.0),
        "CCC": random_walk(22, 10),
    }
    frame = pl.concat([bars_frame(a, symbol) for symbol, a in walks.items()])
    panels = to_panels(frame)
    computed = compute_panels(panels, 14)
    for case in CASES:
        long = panels.to_long(computed[PANEL_COLUMNS[case.name]])
        offset = 0
        for symbol, arrays in walks.items():
            days = len(arrays["close"])
            assert_matches(
                long[offset : offset + days],
                case.talib(arrays, 14),
                case.scale(arrays),
                f"{symbol} panel {case.name}",
            )
            offset += days


positive_walks = st.builds(
    lambda seed, days, start: random_walk(seed, days, start),
    st.integers(0, 2**32 - 1),
    st.integers(1, 120),
    st.floats(1e-4, 1e5),
)


@settings(max_examples=40, deadline=None)
@given(arrays=positive_walks, period=st.integers(2, 40))
def test_property_random_positive_series_equal_talib(arrays: Arrays, period: int) -> None:
    _check_expressions(arrays, period, "hypothesis")
    _check_panels(arrays, period, "hypothesis")


def test_the_stochastic_at_the_periods_high_is_talibs_to_the_bit() -> None:
    # TA-Lib 0.8 computes (close - low) / (high - low) * 100: exactly 100 at the high, where the
    # older (close - low) / ((high - low) / 100) rounds to 100 plus one ulp for some spans.
    spans = np.random.default_rng(11).random(20_000) * 1e-3
    old_rounding = spans / (spans / 100.0) > 100.0
    high = np.sort(spans[old_rounding])[:400]  # rising: every close below is the period's high
    low = np.zeros_like(high)
    close = high.copy()
    arrays = {
        "open": close,
        "high": high,
        "low": low,
        "close": close,
        "volume": np.ones_like(close),
    }
    panels = compute_panels(to_panels(bars_frame(arrays)), 14)
    k, d = talib.STOCH(high, low, close, 14, 3, 0, 3, 0)
    assert np.array_equal(panels[PANEL_COLUMNS["stoch.k"]][:, 0], k, equal_nan=True)
    assert np.array_equal(panels[PANEL_COLUMNS["stoch.d"]][:, 0], d, equal_nan=True)
    assert np.nanmax(k) == 100.0
