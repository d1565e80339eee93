"""Technical indicators as pure polars expressions, numerically equal to TA-Lib where it has them."""

from pipelines.indicators.fibonacci import FIBONACCI_RATIOS, fibonacci_retracement
from pipelines.indicators.momentum import adx, macd, roc, rsi, stoch
from pipelines.indicators.overlap import bbands, ema, sma
from pipelines.indicators.volatility import atr, true_range
from pipelines.indicators.volume import obv, vwap

__all__ = [
    "FIBONACCI_RATIOS",
    "adx",
    "atr",
    "bbands",
    "ema",
    "fibonacci_retracement",
    "macd",
    "obv",
    "roc",
    "rsi",
    "sma",
    "stoch",
    "true_range",
    "vwap",
]
