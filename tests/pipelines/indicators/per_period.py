"""The per-period indicator layer: every member for ONE period, on every bar (`indicators_frame`)
or on each symbol's last (`latest_indicators_frame`): the oracle the pipeline's all-period
computation (`pipelines/indicators/all_periods.py`) is tested against for every period, itself
tested against TA-Lib. It ran in the pipeline before the all-period grid replaced it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from pipelines.indicators.fibonacci import FIBONACCI_RATIOS
from pipelines.indicators.panel import (
    BBANDS_DEVIATIONS,
    MACD_PERIODS,
    PERIOD_MAX,
    PERIOD_MIN,
    STOCH_SMOOTHING,
    Panels,
    to_panels,
)
from tests.pipelines.indicators import kernels
from tests.pipelines.indicators.kernels import Panel


def clamp_period(period: int) -> int:
    """The spec's rule: the analysis window in days, clamped to 2..365."""
    return max(PERIOD_MIN, min(PERIOD_MAX, int(period)))


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
