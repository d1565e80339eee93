"""What a run does for each symbol of a domain: append new bars, recompute in full, keep, or drop."""

from __future__ import annotations

import hashlib
import inspect
from types import ModuleType

import polars as pl

APPEND = "append"
FULL = "full"
UNCHANGED = "unchanged"
REMOVED = "removed"
MODES = (APPEND, FULL, UNCHANGED, REMOVED)
STATE_COLUMNS = ("symbol", "code_version", "history_id", "last_date", "bars")
"""What the modes read of a domain's state rows (every state table has them)."""


def code_version(*modules: ModuleType) -> str:
    """A hash of the modules' source: any change to a domain's computation makes its stored state
    stale, so its symbols are recomputed in full once (detected, not declared)."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()[:16]


def symbol_modes(
    prices: pl.DataFrame, state: pl.DataFrame, version: str, full: bool = False
) -> pl.DataFrame:
    """One row per symbol of either frame: `symbol`, `mode`, and the state's `last_date` and
    `bars` (null unless appending: the new bars are those dated after `last_date`).

    `prices` holds price_state rows (symbol, last_date, history_id), `state` the domain's state
    rows (STATE_COLUMNS at least).
    """
    known = state.select(
        "symbol",
        pl.col("code_version").alias("_version"),
        pl.col("history_id").alias("_history"),
        pl.col("last_date").alias("_last"),
        pl.col("bars").alias("_bars"),
    )
    joined = prices.select("symbol", "history_id", "last_date").join(
        known, on="symbol", how="full", coalesce=True
    )
    stale = (
        pl.lit(full)
        | (pl.col("_version") != version)
        | (pl.col("_history") != pl.col("history_id"))
        | (pl.col("_last") > pl.col("last_date"))
    )
    mode = (
        pl.when(pl.col("history_id").is_null())
        .then(pl.lit(REMOVED))
        .when(pl.col("_history").is_null() | stale)
        .then(pl.lit(FULL))
        .when(pl.col("_last") < pl.col("last_date"))
        .then(pl.lit(APPEND))
        .otherwise(pl.lit(UNCHANGED))
    )
    appending = mode == APPEND
    return joined.select(
        "symbol",
        mode.alias("mode"),
        pl.when(appending).then(pl.col("_last")).alias("last_date"),
        pl.when(appending).then(pl.col("_bars")).alias("bars"),
    ).sort("symbol")
