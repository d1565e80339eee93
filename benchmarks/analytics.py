"""The analytics section: the pipeline's indicators vs a per-symbol TA-Lib loop, and the whole layer.

Each measurement runs in its own process (`python -m benchmarks.analytics <job> ...`, one JSON line
on stdout), so peak memory (`ru_maxrss`) is the job's own and runs do not warm each other.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from benchmarks.figures import Figure, Goal
from pipelines.indicators.panel import (
    BBANDS_DEVIATIONS,
    MACD_PERIODS,
    PERIOD_MAX,
    PERIOD_MIN,
    STOCH_SMOOTHING,
)

PERIOD = 30
"""The period of the TA-Lib loop (the API's default); TA-Lib's cost hardly depends on it."""
PERIODS = PERIOD_MAX - PERIOD_MIN + 1
"""The periods the pipeline computes at once (2..365)."""

RATIO_GOAL = Goal("ratio", "<=", 2.0)
LAYER_SECONDS_GOAL = Goal("project", "<", 60.0)
LAYER_MEMORY_GOAL = Goal("project", "<", 2048.0)
JOB_TIMEOUT = 600


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

    n = period
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


def scaled_markets(symbols: int, days: int) -> Iterator[tuple[str, pl.DataFrame, pl.DataFrame]]:
    """One market of `symbols` random walks x `days`: (market, bars, instruments)."""
    bars = random_walk_bars(symbols, days).with_columns(
        market=pl.lit("crypto"),
        timestamp=pl.col("date").cast(pl.Datetime("ms")).cast(pl.Int64),
    )
    instruments = pl.DataFrame({"symbol": bars["symbol"].unique(), "name": "n"})
    yield "crypto", bars, instruments


def embedded_markets(warehouse: Path) -> Iterator[tuple[str, pl.DataFrame, pl.DataFrame]]:
    """Every market of a materialized warehouse, from the files its manifest serves."""
    from pipelines.catalog import DAILY_PRICES, INSTRUMENTS, LocalStorage, read_partitions

    storage = LocalStorage(warehouse)
    manifest = storage.read_manifest()
    for market in manifest.markets(DAILY_PRICES.name) if manifest else []:
        bars = read_partitions(storage, DAILY_PRICES, [market], manifest).sort("symbol", "date")
        yield market, bars, read_partitions(storage, INSTRUMENTS, [market], manifest)


def _seconds(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def ratio_job(
    markets: list[tuple[str, pl.DataFrame, pl.DataFrame]], repeats: int
) -> dict[str, Any]:
    """Median seconds of the pipeline's indicators (`all_periods_frame`: every period 2..365 of
    each symbol's last bar, from its first bar, as a full run computes `indicator_snapshots`) and
    of the TA-Lib loop for one period, summed over the markets. The anchor is TA-Lib's time for
    one period times the periods, the TA-Lib loop's cost of the same answers."""
    from pipelines.indicators.all_periods import all_periods_frame

    first = markets[0][1].filter(pl.col("symbol") == markets[0][1]["symbol"][0])
    all_periods_frame(first), talib_loop(first, PERIOD)  # imports and first-call costs
    ours = sum(_seconds(partial(all_periods_frame, b), repeats) for _, b, _ in markets)
    theirs = sum(_seconds(partial(talib_loop, b, PERIOD), repeats) for _, b, _ in markets)
    return {
        "indicator_layer_s": ours,
        "talib_loop_one_period_s": theirs,
        "talib_loop_s": theirs * PERIODS,
        "periods": PERIODS,
    }


def layer_job(markets: list[tuple[str, pl.DataFrame, pl.DataFrame]]) -> dict[str, Any]:
    """indicator_snapshots (all periods) + trend tables + simulator per market, as a full run
    computes them (from each symbol's first bar)."""
    from pipelines.indicators.all_periods import all_periods_frame
    from pipelines.simulator import scoring
    from pipelines.simulator.backtests import simulate
    from pipelines.simulator.engine import Costs
    from pipelines.trends.incremental import full_tables

    steps = {"indicator_snapshots_s": 0.0, "trends_s": 0.0, "simulator_s": 0.0}
    rows = 0
    for market, bars, instruments in markets:
        start = time.perf_counter()
        rows += all_periods_frame(bars).height
        steps["indicator_snapshots_s"] += time.perf_counter() - start
        start = time.perf_counter()
        _, segments, _ = full_tables(bars, int(time.time() * 1000))
        steps["trends_s"] += time.perf_counter() - start
        start = time.perf_counter()
        simulation = simulate(bars, Costs(), market)
        actions = scoring.simulated_actions(simulation)
        scoring.scorecards(simulation.summaries, actions, instruments, segments)
        steps["simulator_s"] += time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {
        **steps,
        "total_s": sum(steps.values()),
        "peak_rss_mib": peak_mib,
        "snapshot_rows": rows,
    }


def run_job(job: str, data: list[str], repeats: int = 3) -> dict[str, Any]:
    """`job` (ratio|layer) on `data` (["scaled", symbols, days] or ["embedded", warehouse]) in a child."""
    command = [sys.executable, "-m", "benchmarks.analytics", job, "--repeats", str(repeats), *data]
    done = subprocess.run(command, capture_output=True, text=True, timeout=JOB_TIMEOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _figures(label: str, data: list[str], repeats: int, goals: bool) -> list[Figure]:
    """The ratio (always against its goal); time and memory against theirs when `goals`."""
    ratio = run_job("ratio", data, repeats)
    print(f"    {label}: indicators, every period {ratio['indicator_layer_s']:.3f} s, TA-Lib loop "
          f"{ratio['talib_loop_one_period_s']:.3f} s a period", flush=True)  # fmt: skip
    layer = run_job("layer", data)
    seconds_goal, memory_goal = (LAYER_SECONDS_GOAL, LAYER_MEMORY_GOAL) if goals else (None, None)
    print(f"    {label}: whole layer {layer['total_s']:.2f} s, peak {layer['peak_rss_mib']:.0f} MiB",
          flush=True)  # fmt: skip
    return [
        Figure(
            "analytics",
            f"indicators, every period {PERIOD_MIN}..{PERIOD_MAX}, {label}",
            "s",
            ratio["indicator_layer_s"],
            ratio["talib_loop_s"],
            f"TA-Lib loop x {PERIODS} periods",
            RATIO_GOAL,
            ratio,
        ),
        Figure("analytics", f"whole layer, {label}", "s", layer["total_s"], None, "", seconds_goal, layer),
        Figure("analytics", f"whole layer peak RSS, {label}", "MiB", layer["peak_rss_mib"], None, "", memory_goal),
    ]  # fmt: skip


def analytics_section(
    warehouse: Path | None, symbols: int, days: int, repeats: int
) -> list[Figure]:
    """The embedded market (when a materialized warehouse is given) and the scaled universe."""
    figures: list[Figure] = []
    if warehouse is not None:
        figures += _figures("embedded market", ["embedded", str(warehouse)], repeats, goals=False)
    scaled = ["scaled", str(symbols), str(days)]
    # The time and memory goals are stated for 1,000 x 1,600: smaller runs only report theirs.
    goals = symbols >= 1000 and days >= 1600
    figures += _figures(f"{symbols:,} x {days:,}", scaled, repeats, goals=goals)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job", choices=["ratio", "layer"])
    parser.add_argument("kind", choices=["scaled", "embedded"])
    parser.add_argument("args", nargs="+")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.kind == "scaled":
        markets = list(scaled_markets(int(args.args[0]), int(args.args[1])))
    else:
        markets = list(embedded_markets(Path(args.args[0])))
    result = ratio_job(markets, args.repeats) if args.job == "ratio" else layer_job(markets)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
