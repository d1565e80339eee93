"""Long OHLCV bars as (bars x symbols) panels aligned on each symbol's first bar, and the indicators' fixed parameters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.catalog import FIRST_PERIOD, LAST_PERIOD
from pipelines.indicators.kernels import Panel

PERIOD_MIN, PERIOD_MAX = FIRST_PERIOD, LAST_PERIOD  # the catalog's periods of indicator_snapshots
MACD_PERIODS = (12, 26, 9)
STOCH_SMOOTHING = (3, 3)
BBANDS_DEVIATIONS = 2.0


@dataclass(frozen=True)
class Panels:
    """OHLCV of many symbols as panels, with what is needed to go back to a long frame."""

    keys: pl.DataFrame
    """One row per symbol (the key columns), in panel column order."""
    lengths: np.ndarray
    """Bars per symbol."""
    high: Panel
    low: Panel
    close: Panel
    volume: Panel

    def to_long(self, panel: Panel) -> np.ndarray:
        """The panel's real cells in symbol-then-bar order (the order of the sorted bars)."""
        by_symbol = np.ravel(panel, order="F")
        rows = panel.shape[0]
        if bool((self.lengths == rows).all()):
            return by_symbol
        starts = np.arange(len(self.lengths)) * rows
        return by_symbol[np.repeat(starts, self.lengths) + _offsets(self.lengths)]


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ..., len-1 for every group, concatenated."""
    total = int(lengths.sum())
    group_starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total) - group_starts


def to_panels(bars: pl.DataFrame, by: Sequence[str] = ("symbol",)) -> Panels:
    """Pivot long bars (sorted by `by`, then date) into panels aligned on each symbol's first bar."""
    keys = list(by)
    groups = (
        bars.select(keys)
        .with_row_index("_row")
        .group_by(keys, maintain_order=True)
        .agg(pl.col("_row").first().alias("_start"), pl.len().alias("_len"))
    )
    lengths = groups["_len"].to_numpy().astype(np.int64)
    starts = groups["_start"].to_numpy().astype(np.int64)
    if not np.array_equal(starts[1:], (starts + lengths)[:-1]):
        raise ValueError("bars must be sorted by symbol (each symbol's bars contiguous)")
    rows = int(lengths.max()) if len(lengths) else 0
    column = np.repeat(np.arange(len(lengths)), lengths)
    row = _offsets(lengths)

    def panel(name: str) -> Panel:
        out = np.full((rows, len(lengths)), np.nan)
        out[row, column] = bars[name].cast(pl.Float64).to_numpy()
        return out

    return Panels(
        keys=groups.select(keys),
        lengths=lengths,
        high=panel("high"),
        low=panel("low"),
        close=panel("close"),
        volume=panel("volume"),
    )
