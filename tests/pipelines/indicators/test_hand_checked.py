"""Tiny frames whose expected values a reader can check by hand, for both implementations."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.indicators.panel import to_panels
from tests.pipelines.indicators.expressions import (
    FIBONACCI_RATIOS,
    fibonacci_retracement,
    obv,
    roc,
    sma,
    vwap,
)
from tests.pipelines.indicators.oracle import C, H, L, V, bars_frame
from tests.pipelines.indicators.per_period import compute_panels


def _bars(
    close: list[float],
    high: list[float] | None = None,
    low: list[float] | None = None,
    volume: list[float] | None = None,
) -> pl.DataFrame:
    arrays = {
        "open": np.array(close),
        "high": np.array(high if high is not None else close),
        "low": np.array(low if low is not None else close),
        "close": np.array(close),
        "volume": np.array(volume if volume is not None else [1.0] * len(close)),
    }
    return bars_frame(arrays)


def _panel(frame: pl.DataFrame, name: str, period: int) -> list[float | None]:
    values = compute_panels(to_panels(frame), period)[name][:, 0]
    return [None if np.isnan(x) else float(x) for x in values]


def test_sma_is_the_mean_of_the_last_n_closes() -> None:
    frame = _bars([1.0, 2.0, 3.0, 4.0, 5.0])
    expected = [None, None, 2.0, 3.0, 4.0]
    assert frame.select(sma(C, 3))["sma"].to_list() == expected
    assert _panel(frame, "sma", 3) == expected


def test_roc_is_the_percent_change_over_n_bars() -> None:
    frame = _bars([10.0, 20.0, 11.0, 30.0, 0.0, 15.0])
    expected = [None, None, 10.0, 50.0, -100.0, -50.0]
    assert frame.select(roc(C, 2))["roc"].to_list() == pytest.approx(expected)
    assert _panel(frame, "roc", 2) == pytest.approx(expected)


def test_roc_from_a_zero_base_is_null_where_talib_answers_zero() -> None:
    frame = _bars([0.0, 5.0, 10.0])
    assert frame.select(roc(C, 1))["roc"].to_list() == [None, None, 100.0]
    assert _panel(frame, "roc", 2) == [None, None, None]


def test_obv_adds_volume_on_up_closes_and_subtracts_on_down_closes() -> None:
    frame = _bars([10.0, 11.0, 11.0, 9.0, 12.0], volume=[100.0, 20.0, 30.0, 40.0, 50.0])
    expected = [100.0, 120.0, 120.0, 80.0, 130.0]
    assert frame.select(obv(C, V))["obv"].to_list() == expected
    assert _panel(frame, "obv", 2) == expected


def test_vwap_weights_the_typical_price_by_volume_and_is_null_without_volume() -> None:
    frame = _bars(
        [10.0, 20.0, 30.0, 40.0],
        high=[11.0, 22.0, 33.0, 44.0],
        low=[9.0, 18.0, 27.0, 36.0],
        volume=[1.0, 3.0, 0.0, 0.0],
    )
    # Typical prices 10, 20, 30, 40: (10*1 + 20*3) / 4 = 17.5, (20*3 + 30*0) / 3 = 20.
    expected = [None, 17.5, 20.0, None]
    assert frame.select(vwap(H, L, C, V, 2))["vwap"].to_list() == pytest.approx(expected)
    assert _panel(frame, "vwap", 2) == pytest.approx(expected)


def test_fibonacci_levels_are_measured_from_the_window_high_down() -> None:
    frame = _bars([9.0, 10.0, 8.0, 8.5], high=[10.0, 12.0, 11.0, 9.0], low=[8.0, 9.0, 7.0, 8.0])
    levels = {
        "0": 12.0,
        "23.6": 10.82,
        "38.2": 10.09,
        "50": 9.5,
        "61.8": 8.91,
        "78.6": 8.07,
        "100": 7.0,
    }  # high 12, low 7, range 5: level p = 12 - p/100 * 5
    expected = {"high": 12.0, "low": 7.0, "levels": levels}
    rows = frame.select(fibonacci_retracement(H, L, 3))["fibonacci_retracement"].to_list()
    unfilled = {"high": None, "low": None, "levels": dict.fromkeys(FIBONACCI_RATIOS)}
    assert rows[:2] == [unfilled, unfilled]
    for row in rows[2:]:
        assert row["high"] == expected["high"]
        assert row["low"] == expected["low"]
        assert row["levels"] == pytest.approx(levels)
    for name in FIBONACCI_RATIOS:
        assert _panel(frame, f"fib_{name}", 3)[2:] == pytest.approx([levels[name]] * 2)
