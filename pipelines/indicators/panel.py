"""Every indicator for every symbol at once: long OHLCV frame -> (bars x symbols) panels -> long frame."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.indicators import kernels
from pipelines.indicators.fibonacci import FIBONACCI_RATIOS
from pipelines.indicators.kernels import Panel

PERIOD_MIN = 2
PERIOD_MAX = 365
MACD_PERIODS = (12, 26, 9)
STOCH_SMOOTHING = (3, 3)
BBANDS_DEVIATIONS = 2.0


def clamp_period(period: int) -> int:
    """The spec's rule: the analysis window in days, clamped to 2..365."""
    return max(PERIOD_MIN, min(PERIOD_MAX, int(period)))


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


def compute_panels(p: Panels, period: int) -> dict[str, Panel]:
    """Every indicator of the spec for one period, as flat-named panels (NaN = no value)."""
    n = clamp_period(period)
    h, lo, c, v = p.high, p.low, p.close, p.volume
    upper, middle, lower = kernels.bbands(c, n, BBANDS_DEVIATIONS)
    highest = kernels.rolling_max(h, n)
    lowest = kernels.rolling_min(lo, n)
    k, d = kernels.stoch_from_extremes(highest, lowest, c, n, *STOCH_SMOOTHING)
    line, signal, histogram = kernels.macd(c, *MACD_PERIODS)
    out: dict[str, Panel] = {
        "adx": kernels.adx(h, lo, c, n),
        "atr": kernels.atr(h, lo, c, n),
        "bb_upper": upper,
        "bb_middle": middle,
        "bb_lower": lower,
        "ema": kernels.ema(c, n),
        "fib_high": highest,
        "fib_low": lowest,
        "macd_histogram": histogram,
        "macd_line": line,
        "macd_signal_line": signal,
        "obv": kernels.obv(c, v),
        "roc": kernels.roc(c, n),
        "rsi": kernels.rsi(c, n),
        "sma": kernels.sma(c, n),
        "stoch_k": k,
        "stoch_d": d,
        "vwap": kernels.vwap(h, lo, c, v, n),
    }
    for name, ratio in FIBONACCI_RATIOS.items():
        out[f"fib_{name}"] = highest - ratio * (highest - lowest)
    out["fib_0"] = highest
    out["fib_100"] = lowest
    return out


def nest(flat: pl.DataFrame) -> pl.DataFrame:
    """Flat indicator columns -> the spec's members, nested ones as structs."""
    levels = pl.struct(pl.col(f"fib_{name}").alias(name) for name in FIBONACCI_RATIOS)
    return flat.select(
        pl.exclude(r"^(bb|fib|macd|stoch)_.*$"),
        pl.struct(
            pl.col("bb_upper").alias("upper"),
            pl.col("bb_lower").alias("lower"),
            pl.col("bb_middle").alias("middle"),
        ).alias("bollinger_bands"),
        pl.struct(
            pl.col("fib_high").alias("high"), pl.col("fib_low").alias("low"), levels.alias("levels")
        ).alias("fibonacci_retracement"),
        pl.struct(
            pl.col("macd_histogram").alias("histogram"),
            pl.col("macd_line").alias("macd_line"),
            pl.col("macd_signal_line").alias("signal_line"),
        ).alias("macd"),
        pl.struct(pl.col("stoch_k").alias("k"), pl.col("stoch_d").alias("d")).alias(
            "stochastic_oscillator"
        ),
    )


def _finite_column(name: str, values: np.ndarray) -> pl.Series:
    """NaN and infinity become null: the output never holds a non-finite number."""
    values[np.isinf(values)] = np.nan
    return pl.Series(name, values, nan_to_null=True)


def indicators_frame(
    bars: pl.DataFrame, period: int, by: Sequence[str] = ("symbol",)
) -> pl.DataFrame:
    """Every indicator on every bar of every symbol for one period: the bars' key columns and date
    plus one column per spec member (structs for the nested ones); null where TA-Lib has no value."""
    p = to_panels(bars, by)
    panels = compute_panels(p, period)
    flat = pl.DataFrame([_finite_column(name, p.to_long(panel)) for name, panel in panels.items()])
    return pl.concat([bars.select(*by, "date"), nest(flat)], how="horizontal")
