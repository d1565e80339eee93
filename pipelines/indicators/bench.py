"""Benchmark (not a test): the panel indicator layer vs a per-symbol TA-Lib loop, same indicators.

Run: `.venv/bin/python -m pipelines.indicators.bench [--symbols 1000] [--days 1600] [--period 30]`.
Both sides start from the same long OHLCV frame sorted by symbol and date and keep every output
series; the TA-Lib side computes SMA, EMA, RSI, MACD, BBANDS, STOCH, ATR, OBV, ADX, ROC, the
rolling high/low (MAX/MIN) and a rolling VWAP from two SUMs. Prints the median of the repeats.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import date, timedelta
from functools import partial

import numpy as np
import polars as pl

from pipelines.indicators.panel import (
    BBANDS_DEVIATIONS,
    MACD_PERIODS,
    STOCH_SMOOTHING,
    clamp_period,
    indicators_frame,
)
from pipelines.indicators.snapshot import latest_indicators, latest_indicators_frame


def random_walk_bars(symbols: int, days: int, seed: int = 0) -> pl.DataFrame:
    """Geometric random-walk OHLCV bars, sorted by symbol then date."""
    rng = np.random.default_rng(seed)
    close = 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.02, (symbols, days)), axis=1))
    open_ = close * np.exp(rng.normal(0.0, 0.01, (symbols, days)))
    high = np.maximum(open_, close) * np.exp(np.abs(rng.normal(0.0, 0.01, (symbols, days))))
    low = np.minimum(open_, close) * np.exp(-np.abs(rng.normal(0.0, 0.01, (symbols, days))))
    volume = rng.integers(0, 1_000_000, (symbols, days)).astype(np.float64)
    start = date(2020, 1, 1)
    dates = pl.date_range(start, start + timedelta(days=days - 1), eager=True)
    return pl.DataFrame(
        {
            "symbol": np.repeat([f"S{i:05d}" for i in range(symbols)], days),
            "date": pl.concat([dates] * symbols),
            "open": open_.ravel(),
            "high": high.ravel(),
            "low": low.ravel(),
            "close": close.ravel(),
            "volume": volume.ravel(),
        }
    )


def talib_loop(bars: pl.DataFrame, period: int) -> list[tuple[np.ndarray, ...]]:
    """The same indicators, one TA-Lib call per indicator per symbol."""
    import talib  # test-only dependency: imported here so the library never needs it

    n = clamp_period(period)
    fast, slow, signal = MACD_PERIODS
    slowk, slowd = STOCH_SMOOTHING
    results: list[tuple[np.ndarray, ...]] = []
    for group in bars.partition_by("symbol", maintain_order=True):
        h, lo, c, v = (group[name].to_numpy() for name in ("high", "low", "close", "volume"))
        typical = (h + lo + c) / 3.0
        results.append(
            (
                talib.SMA(c, n),
                talib.EMA(c, n),
                talib.RSI(c, n),
                *talib.MACD(c, fast, slow, signal),
                *talib.BBANDS(c, n, BBANDS_DEVIATIONS, BBANDS_DEVIATIONS),
                *talib.STOCH(h, lo, c, n, slowk, talib.MA_Type.SMA, slowd, talib.MA_Type.SMA),
                talib.ATR(h, lo, c, n),
                talib.OBV(c, v),
                talib.ADX(h, lo, c, n),
                talib.ROC(c, n),
                talib.MAX(h, n),
                talib.MIN(lo, n),
                talib.SUM(typical * v, n) / talib.SUM(v, n),
            )
        )
    return results


def _median_seconds(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--symbols", type=int, default=1000)
    parser.add_argument("--days", type=int, default=1600)
    parser.add_argument("--period", type=int, nargs="+", default=[14, 30, 365])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    bars = random_walk_bars(args.symbols, args.days)
    one = bars.filter(pl.col("symbol") == bars["symbol"][0])
    print(f"{args.symbols} symbols x {args.days} days, median of {args.repeats} runs")
    for period in args.period:
        ours = _median_seconds(partial(indicators_frame, bars, period), args.repeats)
        theirs = _median_seconds(partial(talib_loop, bars, period), args.repeats)
        latest_all = _median_seconds(partial(latest_indicators_frame, bars, period), args.repeats)
        latest_one = _median_seconds(partial(latest_indicators, one, period), args.repeats)
        print(
            f"period {period:>3}: indicator layer {ours:.3f} s, TA-Lib loop {theirs:.3f} s, "
            f"ratio {ours / theirs:.2f}; latest only: all symbols {latest_all:.3f} s, "
            f"one symbol {latest_one * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
