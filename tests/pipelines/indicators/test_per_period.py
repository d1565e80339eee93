"""The per-period oracle (`per_period.py`): the spec's members for the last bar of each symbol, any period."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import talib

from tests.pipelines.indicators.oracle import bars_frame, random_walk
from tests.pipelines.indicators.per_period import (
    indicators_frame,
    latest_indicators,
    latest_indicators_frame,
)

MEMBERS = {
    "adx",
    "atr",
    "bollinger_bands",
    "ema",
    "fibonacci_retracement",
    "macd",
    "obv",
    "roc",
    "rsi",
    "sma",
    "stochastic_oscillator",
    "vwap",
}


def _three_symbols() -> pl.DataFrame:
    return pl.concat(
        [
            bars_frame(random_walk(30, 400), "AAA"),
            bars_frame(random_walk(31, 250, start=2.0), "BBB"),
            bars_frame(random_walk(32, 20), "CCC"),
        ]
    )


def test_latest_indicators_has_exactly_the_spec_members_and_nesting() -> None:
    bars = bars_frame(random_walk(1, 300), "BTC")
    result = latest_indicators(bars, 14)
    assert set(result) == {"period", "symbol", "indicators"}
    assert result["symbol"] == "BTC"
    indicators = result["indicators"]
    assert set(indicators) == MEMBERS
    assert set(indicators["bollinger_bands"]) == {"upper", "lower", "middle"}
    assert set(indicators["macd"]) == {"histogram", "macd_line", "signal_line"}
    assert set(indicators["stochastic_oscillator"]) == {"k", "d"}
    fib = indicators["fibonacci_retracement"]
    assert set(fib) == {"high", "low", "levels"}
    assert list(fib["levels"]) == ["0", "23.6", "38.2", "50", "61.8", "78.6", "100"]


@pytest.mark.parametrize(
    ("asked", "used"), [(-5, 2), (0, 2), (1, 2), (2, 2), (30, 30), (365, 365), (1000, 365)]
)
def test_period_is_clamped_to_2_through_365(asked: int, used: int) -> None:
    bars = bars_frame(random_walk(2, 50), "ETH")
    assert latest_indicators(bars, asked)["period"] == used


@pytest.mark.parametrize("period", [2, 14, 30])
def test_latest_values_equal_talib_on_the_last_bar(period: int) -> None:
    arrays = random_walk(3, 500)
    got = latest_indicators(bars_frame(arrays, "SOL"), period)["indicators"]
    h, lo, c, v = arrays["high"], arrays["low"], arrays["close"], arrays["volume"]
    upper, middle, lower = talib.BBANDS(c, period, 2.0, 2.0)
    k, d = talib.STOCH(h, lo, c, period, 3, talib.MA_Type.SMA, 3, talib.MA_Type.SMA)
    line, signal, hist = talib.MACD(c, 12, 26, 9)
    expected = {
        "sma": talib.SMA(c, period)[-1],
        "ema": talib.EMA(c, period)[-1],
        "rsi": talib.RSI(c, period)[-1],
        "atr": talib.ATR(h, lo, c, period)[-1],
        "adx": talib.ADX(h, lo, c, period)[-1],
        "roc": talib.ROC(c, period)[-1],
        "obv": talib.OBV(c, v)[-1],
    }
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, rel=1e-9), name
    assert got["bollinger_bands"] == pytest.approx(
        {"upper": upper[-1], "middle": middle[-1], "lower": lower[-1]}, rel=1e-9
    )
    assert got["stochastic_oscillator"] == pytest.approx({"k": k[-1], "d": d[-1]}, rel=1e-9)
    assert got["macd"] == pytest.approx(
        {"macd_line": line[-1], "signal_line": signal[-1], "histogram": hist[-1]}, rel=1e-9
    )
    assert got["fibonacci_retracement"]["high"] == pytest.approx(np.max(h[-period:]))
    assert got["fibonacci_retracement"]["low"] == pytest.approx(np.min(lo[-period:]))


def test_frame_variant_gives_one_row_per_symbol_equal_to_the_last_row_of_the_full_series() -> None:
    bars = _three_symbols()
    latest = latest_indicators_frame(bars, 30)
    assert latest["symbol"].to_list() == ["AAA", "BBB", "CCC"]
    assert latest["period"].to_list() == [30, 30, 30]
    full_last = indicators_frame(bars, 30).group_by("symbol", maintain_order=True).last()
    assert latest.drop("period").equals(full_last.select(latest.drop("period").columns))


def test_history_shorter_than_the_lookback_gives_nulls_not_nan() -> None:
    latest = latest_indicators_frame(_three_symbols(), 30).filter(pl.col("symbol") == "CCC")
    row = latest.row(0, named=True)
    assert row["sma"] is None
    assert row["adx"] is None
    assert row["macd"]["macd_line"] is None
    assert row["obv"] is not None  # OBV has no lookback


def _walk(value: object) -> list[float]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _walk(v)]
    return [value] if isinstance(value, float) else []


def test_no_nan_or_infinity_anywhere_even_with_zero_prices_and_volumes() -> None:
    arrays = random_walk(4, 200)
    arrays["close"][50:60] = 0.0
    arrays["low"][50:60] = 0.0
    arrays["volume"][:] = 0.0
    bars = pl.concat([bars_frame(arrays, "ZZZ"), bars_frame(random_walk(5, 200), "YYY")])
    for period in (2, 14, 30, 365):
        full = (
            indicators_frame(bars, period)
            .unnest("bollinger_bands", "macd", "stochastic_oscillator", "fibonacci_retracement")
            .unnest("levels")
        )
        numeric = full.select(pl.selectors.float())
        assert (
            numeric.select(pl.all().is_nan().any() | pl.all().is_infinite().any()).row(0)
            == (False,) * numeric.width
        )
        for symbol in ("ZZZ", "YYY"):
            one = bars.filter(pl.col("symbol") == symbol)
            assert all(math.isfinite(x) for x in _walk(latest_indicators(one, period)))
