"""The spec's Indicators resource: every member on the last bar of each symbol, for any period."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from pipelines.indicators.panel import clamp_period, compute_panels, nest, to_panels


def latest_indicators_frame(
    bars: pl.DataFrame, period: int, by: Sequence[str] = ("symbol",)
) -> pl.DataFrame:
    """One row per symbol: its keys, `period` (clamped 2..365), the last bar's `date`, and one
    column per Indicators member (structs for bollinger_bands, fibonacci_retracement, macd and
    stochastic_oscillator); null where the symbol's history is shorter than the lookback.

    `bars` are daily OHLCV rows (DAILY_PRICES columns) sorted by `by` then date. Recursive
    members (EMA, RSI, ATR, ADX, MACD, OBV) run over the symbol's whole history, as TA-Lib does.
    """
    n = clamp_period(period)
    panels = to_panels(bars, by)
    last_row = panels.lengths - 1
    columns = np.arange(len(panels.lengths))
    values = {
        name: _finite(panel[last_row, columns]) for name, panel in compute_panels(panels, n).items()
    }
    last_dates = bars.select(*by, "date").group_by(by, maintain_order=True).last()["date"]
    flat = pl.DataFrame({name: pl.Series(name, v, nan_to_null=True) for name, v in values.items()})
    return pl.concat(
        [panels.keys, pl.DataFrame({"period": [n] * len(columns), "date": last_dates}), nest(flat)],
        how="horizontal",
    )


def latest_indicators(bars: pl.DataFrame, period: int) -> dict[str, Any]:
    """The Indicators resource of one symbol as a plain dict: {period, symbol, indicators}.

    `bars` hold one symbol's daily bars sorted by date. Members are floats or None.
    """
    symbols = bars["symbol"].unique()
    if len(symbols) != 1:
        raise ValueError(f"latest_indicators takes one symbol's bars, got {len(symbols)} symbols")
    row = latest_indicators_frame(bars, period).row(0, named=True)
    members = ("period", "symbol", "date")
    return {
        "period": row["period"],
        "symbol": row["symbol"],
        "indicators": {k: v for k, v in sorted(row.items()) if k not in members},
    }


def _finite(values: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(values), values, np.nan)
