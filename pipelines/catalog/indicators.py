"""Analytics tables of the indicators domain: every Indicators member for every period, latest bar."""

from __future__ import annotations

import polars as pl

from pipelines.catalog.schema import Column, Table

FIRST_PERIOD = 2
LAST_PERIOD = 365
"""The analysis windows, in days, that `indicator_snapshots` holds for every symbol: the pipeline
computes each of them, and get-indicators clamps its `period` to them."""
PERIOD_COUNT = LAST_PERIOD - FIRST_PERIOD + 1

FIBONACCI_LEVEL_COLUMNS: dict[str, str] = {
    "0": "fib_0",
    "23.6": "fib_23_6",
    "38.2": "fib_38_2",
    "50": "fib_50",
    "61.8": "fib_61_8",
    "78.6": "fib_78_6",
    "100": "fib_100",
}
"""Level name of the spec's `fibonacci_retracement.levels` -> its column."""


def _value(name: str, what: str) -> Column:
    return Column(name, pl.Float64(), what, nullable=True)


INDICATOR_SNAPSHOTS = Table(
    name="indicator_snapshots",
    description=(
        "The spec's Indicators members on each symbol's latest bar for every period 2..365 "
        "(TA-Lib-exact; see docs/indicators.md); null where the history is shorter than the lookback."
    ),
    columns=(
        Column("market", pl.String(), "market of the instrument"),
        Column("symbol", pl.String(), "canonical upper-case symbol"),
        Column("period", pl.Int64(), "analysis window in days, 2..365"),
        Column("date", pl.Date(), "day of the latest bar the values are for (UTC)"),
        Column("timestamp", pl.Int64(), "midnight UTC of `date`, unix epoch milliseconds"),
        _value("sma", "SMA(close, period)"),
        _value("ema", "EMA(close, period), seeded with the SMA of the first `period` closes"),
        _value("rsi", "RSI(close, period), 0..100"),
        _value("atr", "ATR(high, low, close, period)"),
        _value("adx", "ADX(high, low, close, period), 0..100"),
        _value("roc", "ROC(close, period), percent"),
        _value("obv", "OBV(close, volume) over the whole stored history (no period)"),
        _value("vwap", "volume-weighted typical price of the last `period` bars"),
        _value("bb_upper", "Bollinger upper band: SMA + 2 population standard deviations"),
        _value("bb_middle", "Bollinger middle band: SMA(close, period)"),
        _value("bb_lower", "Bollinger lower band: SMA - 2 population standard deviations"),
        _value("macd_line", "MACD(12, 26, 9) line (no period)"),
        _value("macd_signal", "MACD(12, 26, 9) signal line (no period)"),
        _value("macd_histogram", "MACD(12, 26, 9) histogram (no period)"),
        _value("stoch_k", "STOCH(fastk=period, 3 SMA, 3 SMA) slow %K, 0..100"),
        _value("stoch_d", "STOCH(fastk=period, 3 SMA, 3 SMA) slow %D, 0..100"),
        _value("fib_high", "highest high of the last `period` bars"),
        _value("fib_low", "lowest low of the last `period` bars"),
        *(
            _value(column, f"Fibonacci level {name}: fib_high - {name}% of (fib_high - fib_low)")
            for name, column in FIBONACCI_LEVEL_COLUMNS.items()
        ),
    ),
    key=("market", "symbol", "period"),
)

TABLES: tuple[Table, ...] = (INDICATOR_SNAPSHOTS,)
