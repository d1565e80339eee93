"""Technical indicators as pure polars expressions (`Expr -> Expr`), numerically equal to TA-Lib
where it has them: an oracle for the pipeline's panels, the only one for VWAP and Fibonacci."""

from pipelines.indicators.fibonacci import FIBONACCI_RATIOS
from tests.pipelines.indicators.expressions.fibonacci import fibonacci_retracement
from tests.pipelines.indicators.expressions.momentum import adx, macd, roc, rsi, stoch
from tests.pipelines.indicators.expressions.overlap import bbands, ema, sma
from tests.pipelines.indicators.expressions.volatility import atr, true_range
from tests.pipelines.indicators.expressions.volume import obv, vwap

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
