"""Daily bars from a close series, for the trend tests."""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import polars as pl

from pipelines.catalog import DAILY_PRICES


def bars(
    closes: dict[str, np.ndarray], market: str = "crypto", start: date = date(2024, 1, 1)
) -> pl.DataFrame:
    """DAILY_PRICES rows: each symbol's closes on consecutive days, high/low 0.5 % around close."""
    frames = []
    for symbol, close in closes.items():
        days = [start + timedelta(days=i) for i in range(len(close))]
        frames.append(
            pl.DataFrame(
                {
                    "market": market,
                    "symbol": symbol,
                    "date": days,
                    "timestamp": [(d - date(1970, 1, 1)).days * 86_400_000 for d in days],
                    "open": close,
                    "high": close * 1.005,
                    "low": close * 0.995,
                    "close": close,
                    "volume": np.ones(len(close)),
                    "source": "test",
                }
            )
        )
    return DAILY_PRICES.conform(pl.concat(frames))
