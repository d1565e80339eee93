"""Fixtures for the warehouse tests: a warehouse in a temporary directory and tiny instrument frames."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.catalog.versions import Retention
from pipelines.warehouse.store import Warehouse

ONLY_CURRENT = Retention(keep_all_days=0, retain_days=0)
"""Expiry that keeps nothing but the current version (the warehouse before the version log)."""


def instruments_frame(market: str, *symbols: str) -> pl.DataFrame:
    """Instrument rows of `market`, one per symbol."""
    return pl.DataFrame(
        {
            "market": [market] * len(symbols),
            "symbol": list(symbols),
            "name": [s.lower() for s in symbols],
            "logo": [f"logo://{s}" for s in symbols],
            "source": ["test"] * len(symbols),
        }
    )


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    """A warehouse under tmp_path with its DuckDB file beside it and the default grace."""
    return Warehouse(root=tmp_path / "warehouse", duckdb_path=tmp_path / "warehouse.duckdb")


@pytest.fixture
def graceless_warehouse(tmp_path: Path) -> Warehouse:
    """A warehouse whose garbage collector removes retired files at once."""
    return Warehouse(root=tmp_path / "warehouse", gc_grace=timedelta(0))
