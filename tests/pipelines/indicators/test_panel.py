"""The panel layer agrees with the expressions where TA-Lib has no oracle (VWAP, Fibonacci)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.indicators.panel import to_panels
from tests.pipelines.indicators.expressions import FIBONACCI_RATIOS, fibonacci_retracement, vwap
from tests.pipelines.indicators.oracle import C, H, L, V, bars_frame, random_walk
from tests.pipelines.indicators.per_period import compute_panels


@pytest.mark.parametrize("period", [2, 14, 30, 200, 365])
def test_panel_vwap_and_fibonacci_equal_the_expressions(period: int) -> None:
    frame = bars_frame(random_walk(40, 1600))
    panels = compute_panels(to_panels(frame), period)
    expressions = frame.select(
        vwap(H, L, C, V, period), fibonacci_retracement(H, L, period)
    ).unnest("fibonacci_retracement")
    levels = expressions["levels"].struct.unnest()
    pairs = {
        "vwap": expressions["vwap"],
        "fib_high": expressions["high"],
        "fib_low": expressions["low"],
    }
    pairs |= {f"fib_{name}": levels[name] for name in FIBONACCI_RATIOS}
    for name, series in pairs.items():
        ours = series.fill_null(np.nan).to_numpy()
        np.testing.assert_allclose(panels[name][:, 0], ours, rtol=1e-12, err_msg=name)


def test_unsorted_bars_are_refused() -> None:
    a, b = bars_frame(random_walk(1, 5), "AAA"), bars_frame(random_walk(2, 5), "BBB")
    interleaved = pl.concat([a.head(2), b, a.tail(3)])
    with pytest.raises(ValueError, match="sorted"):
        to_panels(interleaved)
