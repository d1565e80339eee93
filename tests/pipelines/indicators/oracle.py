"""TA-Lib as the oracle: generated bars, the reference outputs, and the comparison rule.

Comparison rule: null exactly where TA-Lib answers NaN (its lookback), and elsewhere
`|ours - talib| <= 1e-9 * |talib| + 1e-12 * scale`, where `scale` is the natural size of the
output (the largest |close| for price-valued outputs and MACD, 100 for oscillators, the total
|volume| for OBV). The absolute term only matters for values near zero, where a relative test
measures rounding noise: a MACD of 1e-7 on prices of 1.1, or TA-Lib's running-sum residue of
-5e-15 where the exact answer is 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np
import polars as pl
import talib

from tests.pipelines.indicators.expressions import (
    adx,
    atr,
    bbands,
    ema,
    macd,
    obv,
    roc,
    rsi,
    sma,
    stoch,
)

RTOL = 1e-9
ATOL_PER_SCALE = 1e-12

H, L, C, V = pl.col("high"), pl.col("low"), pl.col("close"), pl.col("volume")

Arrays = dict[str, np.ndarray]


def random_walk(seed: int, days: int, start: float = 100.0) -> Arrays:
    """Geometric random-walk OHLCV with high >= open, close >= low and some zero volumes."""
    rng = np.random.default_rng(seed)
    close = start * np.exp(np.cumsum(rng.normal(0.0, 0.02, days)))
    open_ = close * np.exp(rng.normal(0.0, 0.01, days))
    high = np.maximum(open_, close) * np.exp(np.abs(rng.normal(0.0, 0.01, days)))
    low = np.minimum(open_, close) * np.exp(-np.abs(rng.normal(0.0, 0.01, days)))
    volume = rng.integers(0, 1_000, days).astype(np.float64) * 1_000.0
    return {"open": open_, "high": high, "low": low, "close": close, "volume": volume}


def bars_frame(arrays: Arrays, symbol: str = "AAA") -> pl.DataFrame:
    """A long frame of one symbol's consecutive daily bars."""
    days = len(arrays["close"])
    start = date(2020, 1, 1)
    return pl.DataFrame(
        {
            "symbol": [symbol] * days,
            "date": [start + timedelta(days=i) for i in range(days)],
            **{k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()},
        },
        schema_overrides={"symbol": pl.String, "date": pl.Date},
    )


@dataclass(frozen=True)
class Case:
    """One output of one indicator: how we compute it and what TA-Lib answers."""

    name: str
    ours: Callable[[int], pl.Expr]
    field: str | None
    talib: Callable[[Arrays, int], np.ndarray]
    scale: Callable[[Arrays], float]


def _price(a: Arrays) -> float:
    return float(np.max(np.abs(a["close"]), initial=1.0))


def _oscillator(a: Arrays) -> float:
    return 100.0


def _volume(a: Arrays) -> float:
    return float(np.sum(np.abs(a["volume"]))) + 1.0


def _hlc(a: Arrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return a["high"], a["low"], a["close"]


CASES: tuple[Case, ...] = (
    Case("sma", lambda n: sma(C, n), None, lambda a, n: talib.SMA(a["close"], n), _price),
    Case("ema", lambda n: ema(C, n), None, lambda a, n: talib.EMA(a["close"], n), _price),
    Case("rsi", lambda n: rsi(C, n), None, lambda a, n: talib.RSI(a["close"], n), _oscillator),
    Case("atr", lambda n: atr(H, L, C, n), None, lambda a, n: talib.ATR(*_hlc(a), n), _price),
    Case("adx", lambda n: adx(H, L, C, n), None, lambda a, n: talib.ADX(*_hlc(a), n), _oscillator),
    Case("roc", lambda n: roc(C, n), None, lambda a, n: talib.ROC(a["close"], n), _oscillator),
    Case(
        "bbands.upper",
        lambda n: bbands(C, n),
        "upper",
        lambda a, n: talib.BBANDS(a["close"], n, 2.0, 2.0)[0],
        _price,
    ),
    Case(
        "bbands.middle",
        lambda n: bbands(C, n),
        "middle",
        lambda a, n: talib.BBANDS(a["close"], n, 2.0, 2.0)[1],
        _price,
    ),
    Case(
        "bbands.lower",
        lambda n: bbands(C, n),
        "lower",
        lambda a, n: talib.BBANDS(a["close"], n, 2.0, 2.0)[2],
        _price,
    ),
    Case(
        "stoch.k",
        lambda n: stoch(H, L, C, n, 3, 3),
        "k",
        lambda a, n: talib.STOCH(*_hlc(a), n, 3, 0, 3, 0)[0],
        _oscillator,
    ),
    Case(
        "stoch.d",
        lambda n: stoch(H, L, C, n, 3, 3),
        "d",
        lambda a, n: talib.STOCH(*_hlc(a), n, 3, 0, 3, 0)[1],
        _oscillator,
    ),
    Case(
        "macd.macd_line",
        lambda n: macd(C),
        "macd_line",
        lambda a, n: talib.MACD(a["close"], 12, 26, 9)[0],
        _price,
    ),
    Case(
        "macd.signal_line",
        lambda n: macd(C),
        "signal_line",
        lambda a, n: talib.MACD(a["close"], 12, 26, 9)[1],
        _price,
    ),
    Case(
        "macd.histogram",
        lambda n: macd(C),
        "histogram",
        lambda a, n: talib.MACD(a["close"], 12, 26, 9)[2],
        _price,
    ),
    Case(
        "obv", lambda n: obv(C, V), None, lambda a, n: talib.OBV(a["close"], a["volume"]), _volume
    ),
)
"""Every TA-Lib-backed output of the library."""

PANEL_COLUMNS: dict[str, str] = {
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
    "macd.signal_line": "macd_signal_line",
    "macd.histogram": "macd_histogram",
    "obv": "obv",
}
"""Case name -> the flat panel name `compute_panels` gives the same output."""


def evaluate(case: Case, frame: pl.DataFrame, period: int) -> np.ndarray:
    """Our output for one case as float64 with NaN for null (for the comparison only)."""
    column = frame.select(case.ours(period).alias("out"))["out"]
    if case.field is not None:
        column = column.struct.field(case.field)
    return column.cast(pl.Float64).fill_null(np.nan).to_numpy()


def assert_matches(ours: np.ndarray, reference: np.ndarray, scale: float, label: str) -> None:
    """Null exactly where TA-Lib is NaN; values within the module's tolerance elsewhere."""
    ours = np.asarray(ours, dtype=np.float64)
    assert ours.shape == reference.shape, label
    assert not np.isinf(ours).any(), f"{label}: infinity in output"
    missing, expected_missing = np.isnan(ours), np.isnan(reference)
    mismatch = np.flatnonzero(missing != expected_missing)
    assert mismatch.size == 0, f"{label}: null positions differ from TA-Lib at {mismatch[:10]}"
    np.testing.assert_allclose(
        ours[~missing],
        reference[~missing],
        rtol=RTOL,
        atol=ATOL_PER_SCALE * scale,
        err_msg=label,
    )
