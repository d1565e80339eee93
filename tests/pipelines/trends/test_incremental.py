"""Trend tables carried from state equal the tables computed from each symbol's first bar."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.catalog import TREND_HISTORY, TREND_SEGMENTS
from pipelines.trends.incremental import (
    CONTEXT_BARS,
    MATURE_BARS,
    REWRITABLE,
    _state,
    append_tables,
    full_tables,
)
from tests.pipelines.trends.helpers import bars

UPDATED = 1_700_000_000_000


def _walks(seed: int, count: int, days: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    steps = rng.normal(0.0, 0.03, (count, days)) + rng.normal(0.0, 0.004, (count, 1))
    return {f"S{i}": 100.0 * np.exp(np.cumsum(steps[i])) for i in range(count)}


def _carry(all_bars: pl.DataFrame, cuts: list[int]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Compute through cuts[0] bars in full, then append each next piece from the carried state,
    replacing rows the way the warehouse does (history from each cutoff, segments per symbol)."""
    numbered = all_bars.with_columns(_row=pl.int_range(pl.len()).over("symbol"))
    first = numbered.filter(pl.col("_row") < cuts[0]).drop("_row")
    history, segments, state = full_tables(first, UPDATED)
    for start, end in zip(cuts, [*cuts[1:], None], strict=True):
        piece = numbered.filter(pl.col("_row") >= start)
        if end is not None:
            piece = piece.filter(pl.col("_row") < end)
        context = numbered.join(state.select("symbol", "context_start"), on="symbol").filter(
            (pl.col("date") >= pl.col("context_start")) & (pl.col("_row") < start)
        )
        window = pl.concat([context.drop("context_start"), piece]).drop("_row")
        tail = history.join(state.select("symbol", "final_segment_start"), on="symbol").filter(
            pl.col("date") >= pl.col("final_segment_start")
        )
        rows, cutoffs, new_segments, state = append_tables(
            state, window, tail.drop("final_segment_start"), segments, UPDATED
        )
        cut = pl.DataFrame({"symbol": list(cutoffs), "_cut": list(cutoffs.values())})
        history = pl.concat(
            [
                history.join(cut, on="symbol", how="left")
                .filter(pl.col("_cut").is_null() | (pl.col("date") < pl.col("_cut")))
                .drop("_cut"),
                rows,
            ]
        ).sort("symbol", "date")
        segments = new_segments
    return history, segments


@pytest.mark.parametrize("cuts", [[MATURE_BARS, MATURE_BARS + 1], [500, 700, 701, 702, 950]])
def test_appended_days_equal_the_tables_of_one_whole_computation(cuts: list[int]) -> None:
    everything = bars(_walks(4, 12, 1000))
    expected_history, expected_segments, _ = full_tables(everything, UPDATED)
    history, segments = _carry(everything, cuts)
    assert history.equals(TREND_HISTORY.conform(expected_history).sort("symbol", "date"))
    assert segments.equals(TREND_SEGMENTS.conform(expected_segments).sort("symbol", "segment"))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 1000), steps=st.lists(st.integers(1, 40), min_size=1, max_size=6))
def test_any_sequence_of_appends_equals_the_whole_computation(seed: int, steps: list[int]) -> None:
    days = CONTEXT_BARS + 10 + sum(steps)
    everything = bars(_walks(seed, 3, days))
    cuts = list(np.cumsum([CONTEXT_BARS + 10, *steps[:-1]]))
    expected_history, expected_segments, _ = full_tables(everything, UPDATED)
    history, segments = _carry(everything, [int(c) for c in cuts])
    assert history.equals(TREND_HISTORY.conform(expected_history).sort("symbol", "date"))
    assert segments.equals(TREND_SEGMENTS.conform(expected_segments).sort("symbol", "segment"))


def test_the_state_is_each_symbols_last_rows_final_segment_and_context() -> None:
    everything = bars(_walks(7, 5, 600))
    history, _, state = full_tables(everything, UPDATED)
    for symbol in ["S0", "S3"]:
        mine = history.filter(pl.col("symbol") == symbol)
        row = state.filter(pl.col("symbol") == symbol).row(0, named=True)
        final = mine["segment"][-(REWRITABLE + 1)]
        assert row["last_date"] == mine["date"][-1]
        assert row["bars"] == mine.height
        assert row["final_segment"] == final
        assert row["final_segment_start"] == mine.filter(pl.col("segment") == final)["date"][0]
        assert row["context_start"] == mine["date"][-CONTEXT_BARS]


def test_a_state_of_rows_whose_segments_go_down_is_refused() -> None:
    history, _, _ = full_tables(bars(_walks(8, 2, 400)), UPDATED)
    broken = history.with_columns(segment=pl.col("segment").reverse().over("symbol"))
    with pytest.raises(ValueError, match="segments ascending"):
        _state_of(broken)


def _state_of(history: pl.DataFrame) -> pl.DataFrame:
    totals = history.group_by("symbol").agg(bars=pl.len())
    machines = totals.select("symbol").with_columns(
        machine_state=pl.lit(0), machine_pending=pl.lit(0), machine_run=pl.lit(0)
    )
    return _state(history, history, totals, machines)
