"""Every period at once: the latest-bar grid equals TA-Lib and the one-period snapshot, period by period."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import talib

from pipelines.catalog import INDICATOR_SNAPSHOTS
from pipelines.indicators.all_periods import (
    FLAT_MEMBERS,
    WINDOWED,
    all_periods_frame,
    fib_column,
    flat_bars,
    windowed,
)
from pipelines.indicators.fibonacci import FIBONACCI_RATIOS
from pipelines.indicators.panel import to_panels
from pipelines.indicators.recursive import ALL_PERIODS
from tests.pipelines.indicators import numpy_windowed
from tests.pipelines.indicators.oracle import (
    CASES,
    Arrays,
    assert_matches,
    bars_frame,
    random_walk,
)
from tests.pipelines.indicators.per_period import latest_indicators_frame

CASE_COLUMNS = {
    "sma": "sma",
    "ema": "ema",
    "rsi": "rsi",
    "atr": "atr",
    "adx": "adx",
    "roc": "roc",
    "bbands.upper": "bb_upper",
    "bbands.middle": "bb_middle",
    "bbands.lower": "bb_lower",
    "stoch.k": "stoch_k",
    "stoch.d": "stoch_d",
    "macd.macd_line": "macd_line",
    "macd.signal_line": "macd_signal",
    "macd.histogram": "macd_histogram",
    "obv": "obv",
}
"""Oracle case -> indicator_snapshots column."""

RANDOM_PERIODS = [int(p) for p in np.random.default_rng(7).integers(4, 365, 5)]
SAMPLED_PERIODS = sorted({2, 3, 14, 30, 200, 365, *RANDOM_PERIODS})


def _universe() -> tuple[pl.DataFrame, dict[str, Arrays]]:
    arrays = {
        "LONG": random_walk(11, 1600),
        "MID": random_walk(12, 300, start=1.1),
        "TINY": random_walk(13, 12, start=50.0),
    }
    bars = pl.concat([bars_frame(a, symbol) for symbol, a in arrays.items()])
    return bars, arrays


@pytest.fixture(scope="module")
def universe() -> tuple[pl.DataFrame, dict[str, Arrays]]:
    return _universe()


@pytest.fixture(scope="module")
def grid(universe: tuple[pl.DataFrame, dict[str, Arrays]]) -> pl.DataFrame:
    return all_periods_frame(universe[0])


@pytest.mark.parametrize("period", SAMPLED_PERIODS)
def test_every_sampled_period_equals_talib_on_each_symbols_latest_bar(
    universe: tuple[pl.DataFrame, dict[str, Arrays]], grid: pl.DataFrame, period: int
) -> None:
    for symbol, arrays in universe[1].items():
        row = grid.filter((pl.col("symbol") == symbol) & (pl.col("period") == period))
        assert row.height == 1
        for case in CASES:
            ours = row[CASE_COLUMNS[case.name]].cast(pl.Float64).fill_null(np.nan).to_numpy()
            reference = case.talib(arrays, period)[-1:]
            assert_matches(ours, reference, case.scale(arrays), f"{symbol} {case.name} n={period}")


@pytest.mark.parametrize("period", SAMPLED_PERIODS)
def test_the_window_extremes_are_talibs_max_and_min(
    universe: tuple[pl.DataFrame, dict[str, Arrays]], grid: pl.DataFrame, period: int
) -> None:
    arrays = universe[1]["LONG"]
    row = grid.filter((pl.col("symbol") == "LONG") & (pl.col("period") == period)).row(
        0, named=True
    )
    high = talib.MAX(arrays["high"], period)[-1]
    low = talib.MIN(arrays["low"], period)[-1]
    assert row["fib_high"] == high
    assert row["fib_low"] == low
    assert row["fib_0"] == high
    assert row["fib_100"] == low
    assert row["fib_61_8"] == pytest.approx(high - 0.618 * (high - low), rel=1e-12)


@pytest.mark.slow
def test_every_period_equals_the_one_period_snapshot(
    universe: tuple[pl.DataFrame, dict[str, Arrays]], grid: pl.DataFrame
) -> None:
    bars = universe[0]
    for period in range(2, 366):
        snapshot = latest_indicators_frame(bars, period)
        flat = snapshot.select(
            "symbol",
            pl.col("bollinger_bands").struct.field("upper").alias("bb_upper"),
            pl.col("bollinger_bands").struct.field("middle").alias("bb_middle"),
            pl.col("bollinger_bands").struct.field("lower").alias("bb_lower"),
            pl.col("macd").struct.field("macd_line"),
            pl.col("macd").struct.field("signal_line").alias("macd_signal"),
            pl.col("macd").struct.field("histogram").alias("macd_histogram"),
            pl.col("stochastic_oscillator").struct.field("k").alias("stoch_k"),
            pl.col("stochastic_oscillator").struct.field("d").alias("stoch_d"),
            pl.col("fibonacci_retracement").struct.field("high").alias("fib_high"),
            pl.col("fibonacci_retracement").struct.field("low").alias("fib_low"),
            *(
                pl.col("fibonacci_retracement")
                .struct.field("levels")
                .struct.field(name)
                .alias(fib_column(name))
                for name in FIBONACCI_RATIOS
            ),
            "sma",
            "ema",
            "rsi",
            "atr",
            "adx",
            "roc",
            "obv",
            "vwap",
        )
        ours = grid.filter(pl.col("period") == period)
        for member in FLAT_MEMBERS:
            expected = flat[member].cast(pl.Float64).fill_null(np.nan).to_numpy()
            actual = ours[member].cast(pl.Float64).fill_null(np.nan).to_numpy()
            np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), member)
            scale = np.nanmax(np.abs(expected), initial=1.0)
            np.testing.assert_allclose(
                actual, expected, rtol=1e-9, atol=1e-12 * scale, err_msg=f"{member} n={period}"
            )


def test_a_history_shorter_than_the_lookback_gives_null_not_a_guess(grid: pl.DataFrame) -> None:
    tiny = grid.filter(pl.col("symbol") == "TINY")
    # 12 bars: SMA needs n <= 12, RSI n <= 11, ADX 2n-1 <= 11, STOCH n+3 <= 11.
    assert tiny.filter(pl.col("sma").is_not_null())["period"].max() == 12
    assert tiny.filter(pl.col("rsi").is_not_null())["period"].max() == 11
    assert tiny.filter(pl.col("adx").is_not_null())["period"].max() == 6
    assert tiny.filter(pl.col("stoch_d").is_not_null())["period"].max() == 8
    assert tiny["macd_line"].null_count() == tiny.height


def test_one_row_per_symbol_and_period_with_the_latest_date(
    universe: tuple[pl.DataFrame, dict[str, Arrays]], grid: pl.DataFrame
) -> None:
    assert grid.height == 3 * 364
    assert grid.select(pl.struct("symbol", "period").is_unique().all()).item()
    last = universe[0].group_by("symbol").agg(pl.col("date").max())
    joined = grid.join(last, on="symbol", suffix="_last")
    assert (joined["date"] == joined["date_last"]).all()


def test_the_catalog_columns_are_the_kernels_members() -> None:
    assert INDICATOR_SNAPSHOTS.column_names[:5] == [
        "market",
        "symbol",
        "period",
        "date",
        "timestamp",
    ]
    assert tuple(INDICATOR_SNAPSHOTS.column_names[5:]) == FLAT_MEMBERS


# --- the windowed kernel equals the numpy passes it replaced -----------------------------------


def _windowed_universe() -> dict[str, Arrays]:
    out = {f"L{days}": random_walk(days, days) for days in (1, 2, 12, 365, 366, 369, 370, 371)}
    out["LONG"] = random_walk(40, 1_600)
    flat = random_walk(41, 400)
    for key in ("open", "high", "low", "close"):
        flat[key][:] = 5.0  # zero variance, a flat stochastic window
    out["FLAT"] = flat
    no_volume = random_walk(42, 300)
    no_volume["volume"][:] = 0.0  # no VWAP
    out["NO_VOLUME"] = no_volume
    ticks = random_walk(43, 500)
    out["TICKS"] = {k: np.round(v) if k != "volume" else v for k, v in ticks.items()}  # ties
    zero = random_walk(44, 500)
    zero["close"][-40] = 0.0  # a ROC base of 0: no ROC for period 39
    zero["close"][-100] = 1e-310  # a subnormal base: an infinite ROC, stored as none
    out["ZERO_BASE"] = zero
    return out


def test_the_windowed_kernel_equals_the_numpy_passes_bit_for_bit() -> None:
    arrays = _windowed_universe()
    bars = pl.concat([bars_frame(a, symbol) for symbol, a in arrays.items()])
    p = to_panels(bars)
    expected = numpy_windowed.windowed(p, len(ALL_PERIODS))
    flat, _ = flat_bars(bars)
    ours = windowed(flat, len(ALL_PERIODS))
    assert set(ours) == set(expected) == set(WINDOWED)
    for name, grid in expected.items():
        np.testing.assert_array_equal(
            ours[name].view(np.uint64), grid.view(np.uint64), err_msg=name, strict=True
        )
    assert np.isnan(ours["roc"][list(arrays).index("ZERO_BASE"), [37, 97]]).all()


def test_the_bars_of_a_symbol_must_be_contiguous() -> None:
    a, b = bars_frame(random_walk(1, 20), "A"), bars_frame(random_walk(2, 20), "B")
    with pytest.raises(ValueError, match="contiguous"):
        all_periods_frame(pl.concat([a.head(10), b, a.tail(10)]))
