"""Time the whole simulator on a synthetic market: `python -m pipelines.simulator.bench [symbols] [days]`."""

from __future__ import annotations

import sys
import time
from datetime import date, timedelta

import numpy as np
import polars as pl

from pipelines.simulator.assets import SimulatorConfig, simulator_tables


def synthetic_bars(symbols: int, days: int, seed: int = 0) -> pl.DataFrame:
    """Random walks with regime-switching drift, one bar per calendar day."""
    rng = np.random.default_rng(seed)
    drift = np.repeat(rng.normal(0.0, 0.004, (days // 100 + 1, symbols)), 100, axis=0)[:days]
    close = 100.0 * np.exp(np.cumsum(rng.normal(drift, 0.025), axis=0))
    open_ = np.vstack([close[:1], close[:-1]])
    day0 = date(2022, 1, 1)
    return pl.DataFrame(
        {
            "symbol": np.repeat([f"S{j:04d}" for j in range(symbols)], days),
            "date": [day0 + timedelta(days=i) for i in range(days)] * symbols,
            "open": open_.T.ravel(),
            "high": np.maximum(open_, close).T.ravel() * 1.01,
            "low": np.minimum(open_, close).T.ravel() * 0.99,
            "close": close.T.ravel(),
            "volume": 1.0,
        }
    )


def main(symbols: int = 1_000, days: int = 1_600) -> None:
    bars = synthetic_bars(symbols, days)
    instruments = pl.DataFrame({"symbol": bars["symbol"].unique(), "name": "n"})
    trends = pl.DataFrame(
        schema={"symbol": pl.String, "is_running": pl.Boolean, "trend": pl.String,
                "trend_duration_days": pl.Int64}
    )  # fmt: skip
    started = time.perf_counter()
    tables = simulator_tables(bars, instruments, trends, "crypto", SimulatorConfig())
    elapsed = time.perf_counter() - started
    rows = {name: frame.height for name, frame in tables.items()}
    print(f"{symbols} symbols x {days} days: {elapsed:.2f} s; rows {rows}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
