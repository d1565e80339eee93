"""Trend tables updated day by day through the warehouse equal one full run of the last day."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.catalog import TREND_HISTORY, TREND_SEGMENTS
from pipelines.incremental.modes import APPEND, FULL
from pipelines.trends.update import TRENDS
from pipelines.warehouse.store import Warehouse
from tests.pipelines.synthetic import FIRST_DAY, Vendor, run_day, walks

SYMBOLS = ["AAA", "BBB", "CCC", "DDD", "NEW"]
WALL_CLOCK = ("last_updated",)
"""Columns holding when a run happened, not what it computed."""


def tables(warehouse: Warehouse) -> tuple[pl.DataFrame, pl.DataFrame]:
    history = warehouse.read(TREND_HISTORY).sort("symbol", "date")
    segments = warehouse.read(TREND_SEGMENTS).drop(WALL_CLOCK).sort("symbol", "segment")
    return history, segments


@pytest.mark.parametrize("market", ["crypto", "forex"])
def test_days_appended_from_state_equal_one_full_run(tmp_path: Path, market: str) -> None:
    bars = walks(SYMBOLS, 1000, seed=7)
    listed_late = (pl.col("symbol") != "NEW") | (pl.col("date") >= FIRST_DAY + timedelta(days=420))
    source = Vendor(bars.filter(listed_late), market)
    daily = Warehouse(tmp_path / "daily")
    counts = []
    for n, day in enumerate((500, 501, 502, 503, 560, 561, 860, 999)):
        runs = run_day(
            daily,
            source,
            SYMBOLS,
            FIRST_DAY + timedelta(days=day),
            f"d{n}",
            [TRENDS],
            market,
            shard_symbols=2,
        )
        counts.append(runs[0].counts)
    once = Warehouse(tmp_path / "once")
    run_day(
        once,
        source,
        SYMBOLS,
        FIRST_DAY + timedelta(days=999),
        "once",
        [TRENDS],
        market,
        shard_symbols=2,
    )
    history, segments = tables(daily)
    expected_history, expected_segments = tables(once)
    assert history.equals(expected_history)
    assert segments.equals(expected_segments)
    assert counts[0][FULL] == 5
    assert counts[-1][APPEND] == 5


def test_the_days_after_a_listing_equal_one_full_run(tmp_path: Path) -> None:
    """A symbol listed two bars before the first run is, on the next days, the only one of its
    shard computed in full (too young to carry state): its few neutral bars label without
    failing, and the days equal one full run of the last."""
    bars = walks(SYMBOLS, 520, seed=11)
    listed = (pl.col("symbol") != "NEW") | (pl.col("date") >= FIRST_DAY + timedelta(days=498))
    source = Vendor(bars.filter(listed))
    daily, once = Warehouse(tmp_path / "daily"), Warehouse(tmp_path / "once")
    counts = []
    for n, day in enumerate((500, 501, 502)):
        through = FIRST_DAY + timedelta(days=day)
        runs = run_day(daily, source, SYMBOLS, through, f"d{n}", [TRENDS], shard_symbols=8)
        counts.append(runs[0].counts)
    run_day(once, source, SYMBOLS, FIRST_DAY + timedelta(days=502), "once", [TRENDS])
    history, segments = tables(daily)
    expected_history, expected_segments = tables(once)
    assert history.equals(expected_history)
    assert segments.equals(expected_segments)
    assert (counts[1][FULL], counts[1][APPEND]) == (1, 4)
    assert history.filter(pl.col("symbol") == "NEW")["trend"].unique().to_list() == ["neutral"]
