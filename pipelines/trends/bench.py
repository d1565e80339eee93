"""Benchmark (not a test): the analytics layer of one market, indicator_snapshots + trend tables.

Run: `.venv/bin/python -m pipelines.trends.bench [--symbols 1000] [--days 1600]`. Prints the
seconds of each step and the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import resource
import time
from datetime import UTC, datetime

import polars as pl

from pipelines.indicators.assets import snapshots
from pipelines.indicators.bench import random_walk_bars
from pipelines.trends.assets import trend_tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--symbols", type=int, default=1000)
    parser.add_argument("--days", type=int, default=1600)
    args = parser.parse_args()
    bars = random_walk_bars(args.symbols, args.days).with_columns(
        market=pl.lit("crypto"),
        timestamp=pl.col("date").cast(pl.Datetime("ms")).cast(pl.Int64),
    )
    start = time.perf_counter()
    table = snapshots(bars, "crypto")
    indicators = time.perf_counter() - start
    start = time.perf_counter()
    history, segments = trend_tables(bars, "crypto", datetime.now(UTC))
    trends = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{args.symbols} symbols x {args.days} days: indicator_snapshots {table.height} rows "
        f"{indicators:.2f} s; trend_history {history.height} rows + trend_segments "
        f"{segments.height} rows {trends:.2f} s; total {indicators + trends:.2f} s; "
        f"peak RSS {peak:.0f} MiB"
    )


if __name__ == "__main__":
    main()
