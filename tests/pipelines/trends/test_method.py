"""Trend labels and segments: hand-made shapes, generated series, and the segment arithmetic."""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import polars as pl
import pytest

from pipelines.catalog import TREND_HISTORY, TREND_SEGMENTS
from pipelines.trends import checks, method
from pipelines.trends.frames import trend_history, trend_segments
from tests.pipelines.trends.helpers import bars


def _trends(closes: dict[str, np.ndarray]) -> tuple[pl.DataFrame, pl.DataFrame]:
    history = trend_history(bars(closes))
    return history, trend_segments(history, last_updated=1_700_000_000_000)


def _random_walks(count: int, days: int, seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    steps = rng.normal(0.0, 0.03, (count, days))
    return {f"S{i}": 100.0 * np.exp(np.cumsum(steps[i])) for i in range(count)}


def test_a_monotonic_rise_is_one_up_segment() -> None:
    _, segments = _trends({"UP": np.linspace(100.0, 300.0, 300)})
    assert segments["trend"].to_list() == ["up"]
    assert segments["is_running"].to_list() == [True]


def test_a_monotonic_fall_is_one_down_segment() -> None:
    _, segments = _trends({"DOWN": np.linspace(300.0, 100.0, 300)})
    assert segments["trend"].to_list() == ["down"]


def test_a_v_shape_is_down_then_up() -> None:
    v = np.concatenate([np.linspace(200.0, 100.0, 150), np.linspace(100.0, 200.0, 150)[1:]])
    _, segments = _trends({"V": v})
    directions = [t for t in segments["trend"].to_list() if t != "neutral"]
    assert directions == ["down", "up"]
    assert segments["trend"][0] == "down"
    assert segments["trend"][-1] == "up"
    # The turn is found near the bottom: the up segment starts within the signal's lag of it.
    up = segments.filter(pl.col("trend") == "up").row(0, named=True)
    assert 149 <= (up["started_on"] - date(2024, 1, 1)).days <= 149 + method.MID_WINDOW


def test_noise_around_a_flat_line_creates_no_short_segments() -> None:
    rng = np.random.default_rng(5)
    flat = {f"N{i}": 100.0 + rng.normal(0.0, 0.5, 800) for i in range(20)}
    history, segments = _trends(flat)
    assert (history["trend"] == "neutral").all()
    assert segments.height == len(flat)


def _assert_no_short_segments(segments: pl.DataFrame) -> None:
    """CONFIRM_BARS labelled days at least; a finished segment also has its end bar."""
    finished = segments.filter(~pl.col("is_running"))
    assert (finished["bars"] >= method.CONFIRM_BARS + 1).all()
    running = segments.filter(pl.col("is_running") & (pl.col("segment") > 0))
    assert (running["bars"] >= method.CONFIRM_BARS).all()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_series_satisfy_every_segment_invariant(seed: int) -> None:
    walks = _random_walks(15, 1600, seed)
    walks["SHORT"] = walks["S0"][:7]
    history, segments = _trends(walks)
    TREND_HISTORY.conform(history)
    TREND_SEGMENTS.conform(segments)
    assert checks.non_finite(history).is_empty()
    assert checks.non_finite(segments).is_empty()
    assert checks.bad_labels(history).is_empty()
    assert checks.discontiguous(segments).is_empty()
    assert checks.running_not_once(segments).is_empty()
    assert checks.wrong_durations(segments).is_empty()
    _assert_no_short_segments(segments)


def _segments_by_sorting(history: pl.DataFrame) -> pl.DataFrame:
    """The segments as the rule says them, the slow way: every segment after the first gets its
    start bar again as the previous segment's end bar, then all rows are sorted and grouped."""
    previous = pl.col("segment").shift(1).over("symbol")
    ends = (
        history.filter(pl.col("segment") != previous)
        .filter(pl.col("segment") > 0)
        .with_columns(pl.col("segment") - 1)
    )
    rows = pl.concat([history, ends]).sort("symbol", "segment", "date")
    return rows.group_by("symbol", "segment", maintain_order=True).agg(
        started_on=pl.col("date").first(),
        ended_on=pl.col("date").last(),
        close=pl.col("price").last(),
        max_price=pl.col("price").max(),
        min_price=pl.col("price").min(),
        max_price_date=pl.col("date").get(pl.col("price").arg_max()),
        short_term_average=pl.col("short_term_average").last(),
        signal_strength=pl.col("signal").mean(),
        bars=pl.len(),
    )


@pytest.mark.parametrize("seed", [4, 5])
def test_segments_end_on_the_next_segments_start_bar_as_sorting_every_row_gives(
    seed: int,
) -> None:
    walks = _random_walks(12, 700, seed)
    walks["TWO"] = walks["S1"][:2]
    history, segments = _trends(walks)
    expected = _segments_by_sorting(history)
    assert segments.select(expected.columns).equals(expected)


def test_segments_of_shuffled_rows_equal_those_of_rows_in_symbol_and_date_order() -> None:
    history, segments = _trends(_random_walks(6, 500))
    shuffled = history.sample(fraction=1.0, shuffle=True, seed=9)
    assert trend_segments(shuffled, last_updated=1_700_000_000_000).equals(segments)


def test_durations_add_up_to_the_symbols_span() -> None:
    history, segments = _trends(_random_walks(5, 900))
    total = segments.group_by("symbol").agg(pl.col("trend_duration_days").sum())
    span = history.group_by("symbol").agg(
        (pl.col("date").max() - pl.col("date").min()).dt.total_days().alias("span")
    )
    joined = total.join(span, on="symbol")
    assert (joined["trend_duration_days"] == joined["span"]).all()


def test_each_days_label_is_its_segments_trend() -> None:
    history, segments = _trends(_random_walks(5, 900))
    joined = history.join(segments, on=["symbol", "segment"], suffix="_segment")
    assert (joined["trend"] == joined["trend_segment"]).all()


def test_extremes_are_inside_the_segment_and_are_its_highest_and_lowest_close() -> None:
    history, segments = _trends(_random_walks(5, 900))
    for row in segments.iter_rows(named=True):
        inside = history.filter(
            (pl.col("symbol") == row["symbol"])
            & pl.col("date").is_between(row["started_on"], row["ended_on"])
        )
        assert row["max_price"] == inside["price"].max()
        assert row["min_price"] == inside["price"].min()
        assert row["max_price_close"] == row["max_price"]
        assert row["started_on"] <= row["max_price_date"] <= row["ended_on"]
        assert row["started_on"] <= row["min_price_date"] <= row["ended_on"]


def _hand_history() -> pl.DataFrame:
    """8 bars, two segments: bars 0-3 'up' (segment 0), bars 4-7 'down' (segment 1)."""
    prices = [100.0, 110.0, 95.0, 120.0, 90.0, 99.0, 81.0, 108.0]
    days = [date(2024, 1, 1) + timedelta(days=i) for i in range(8)]
    return pl.DataFrame(
        {
            "market": "crypto",
            "symbol": "HAND",
            "date": days,
            "timestamp": [(d - date(1970, 1, 1)).days * 86_400_000 for d in days],
            "price": prices,
            "trend": ["up"] * 4 + ["down"] * 4,
            "strength": ["weak"] * 8,
            "signal": [1.0, 2.0, 3.0, 4.0, -1.0, -2.0, -3.0, -6.0],
            "short_term_average": np.arange(8, dtype=float),
            "mid_term_average": np.arange(8, dtype=float) + 10,
            "long_term_average": np.arange(8, dtype=float) + 20,
            "segment": [0] * 4 + [1] * 4,
        }
    )


def test_peak_gain_and_loss_are_percent_moves_from_the_start_close_on_8_bars() -> None:
    segments = trend_segments(_hand_history(), last_updated=5)
    first, second = segments.sort("segment").iter_rows(named=True)
    # Segment 0 spans bars 0..4 (it ends where segment 1 starts): closes 100 110 95 120 90.
    assert first["start_close"] == 100.0
    assert first["close"] == 90.0
    assert first["peak_gain"] == pytest.approx(20.0)  # 120 / 100 - 1
    assert first["peak_loss"] == pytest.approx(-10.0)  # 90 / 100 - 1
    assert (first["max_price"], first["max_price_date"]) == (120.0, date(2024, 1, 4))
    assert (first["min_price"], first["min_price_trend"]) == (90.0, "down")
    assert first["trend_duration_days"] == 4
    assert first["bars"] == 5
    assert first["signal_strength"] == pytest.approx((1 + 2 + 3 + 4 - 1) / 5)
    assert first["short_term_average"] == 4.0  # the end bar's
    assert not first["is_running"]
    # Segment 1, running: bars 4..7, closes 90 99 81 108, from 90.
    assert second["started_on"] == first["ended_on"] == date(2024, 1, 5)
    assert second["peak_gain"] == pytest.approx(20.0)  # 108 / 90 - 1
    assert second["peak_loss"] == pytest.approx(-10.0)  # 81 / 90 - 1
    assert second["close"] == 108.0
    assert second["trend_duration_days"] == 3
    assert second["is_running"]
    assert second["last_updated"] == 5


def test_a_listing_younger_than_the_warm_up_that_never_turns_stays_neutral() -> None:
    """A symbol listed a few bars ago, alone in its panel (the day after its listing it is the
    only one computed in full): its few bars are neutral, and labelling them does not fail."""
    for days in (1, 2, method.WARMUP_BARS - 1):
        history, segments = _trends({"NEW": np.full(days, 100.0)})
        assert history["trend"].to_list() == ["neutral"] * days
        assert segments["trend"].to_list() == ["neutral"]


def test_strength_labels_follow_the_documented_bounds() -> None:
    signal = np.array([0.0, -0.99, 1.0, -1.5, 1.99, 2.0, -7.0])
    labels = [method.STRENGTHS[i] for i in method.strength(signal)]
    assert labels == ["weak", "weak", "moderate", "moderate", "moderate", "strong", "strong"]


def test_hysteresis_keeps_a_trend_until_the_signal_falls_inside_the_exit_band() -> None:
    state = np.array([method.UP, method.UP, method.UP, method.NEUTRAL], np.int8)
    signal = np.array([0.5, 0.2, -1.0, 0.5])
    assert method.wanted(state, signal).tolist() == [
        method.UP,
        method.NEUTRAL,
        method.DOWN,
        method.NEUTRAL,
    ]
