"""Signals carried bar by bar equal the strategies' signals computed over whole histories."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.simulator import signals
from pipelines.simulator.backtests import load_market
from tests.pipelines.simulator.numpy_signals import aggressive_signals, conservative_signals
from tests.pipelines.synthetic import walks


def _numpy_signals(bars: pl.DataFrame) -> pl.DataFrame:
    market = load_market(bars)
    aggressive, conservative = (
        aggressive_signals(market.prices),
        conservative_signals(market.prices),
    )
    return pl.DataFrame(
        {
            "aggressive_entry": market.unpanel(aggressive.entry),
            "aggressive_exit": market.unpanel(aggressive.exit),
            "conservative_entry": market.unpanel(conservative.entry),
            "conservative_exit": market.unpanel(conservative.exit),
        }
    )


def test_signals_from_the_first_bar_equal_the_numpy_strategies() -> None:
    bars = pl.concat([walks(["AAA", "BBB", "CCC"], 700, seed=3), walks(["SHORT"], 120, seed=4)])
    ours = signals.signals_from_start(bars.sort("symbol", "date"))
    assert ours.select(signals.COLUMNS).equals(_numpy_signals(bars.sort("symbol", "date")))
    assert ours.select(pl.sum_horizontal(signals.COLUMNS)).sum().item() > 20  # signals do fire


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 500), cuts=st.lists(st.integers(1, 449), min_size=1, max_size=5))
def test_signals_carried_in_pieces_equal_signals_from_the_start(seed: int, cuts: list[int]) -> None:
    bars = walks(["AAA", "BBB"], 450, seed=seed).sort("symbol", "date")
    expected = signals.signals_from_start(bars)
    numbered = bars.with_columns(_row=pl.int_range(pl.len()).over("symbol"))
    state = signals.empty(["AAA", "BBB"])
    pieces = []
    bounds = sorted(set(cuts))
    for start, end in zip([0, *bounds], [*bounds, 450], strict=True):
        window = numbered.filter(
            (pl.col("_row") >= start - signals.CONTEXT_BARS) & (pl.col("_row") < end)
        )
        new_from = np.full(2, min(start, signals.CONTEXT_BARS), np.int64)
        frame = signals.to_frame(state)
        state, piece = signals.advance(signals.from_frame(frame), window.drop("_row"), new_from)
        pieces.append(piece)
    assert pl.concat(pieces).sort("symbol", "date").equals(expected.sort("symbol", "date"))
