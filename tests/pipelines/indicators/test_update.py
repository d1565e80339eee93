"""Indicator snapshots updated day by day from carried state equal one full computation of the last day."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.catalog import INDICATOR_SNAPSHOTS
from pipelines.incremental.modes import APPEND, FULL, UNCHANGED
from pipelines.indicators.update import INDICATORS
from pipelines.warehouse.store import Warehouse
from tests.pipelines.synthetic import FIRST_DAY, Vendor, run_day, walks

SYMBOLS = ["AAA", "BBB", "CCC", "NEW"]


def snapshots(warehouse: Warehouse) -> pl.DataFrame:
    return warehouse.read(INDICATOR_SNAPSHOTS).sort("symbol", "period")


@pytest.mark.parametrize("market", ["crypto", "stocks"])
def test_days_appended_from_state_equal_one_full_run(tmp_path: Path, market: str) -> None:
    bars = walks(SYMBOLS, 900)
    # NEW lists late: its first run loads its whole (short) history.
    source = Vendor(
        bars.filter(
            (pl.col("symbol") != "NEW") | (pl.col("date") >= FIRST_DAY + timedelta(days=700))
        ),
        market,
    )
    daily = Warehouse(tmp_path / "daily")
    modes = []
    for n, day in enumerate((600, 601, 602, 640, 760, 761, 899)):
        runs = run_day(
            daily,
            source,
            SYMBOLS,
            FIRST_DAY + timedelta(days=day),
            f"d{n}",
            [INDICATORS],
            market,
            shard_symbols=2,
        )
        modes.append(runs[0].counts)
    once = Warehouse(tmp_path / "once")
    run_day(
        once,
        source,
        SYMBOLS,
        FIRST_DAY + timedelta(days=899),
        "once",
        [INDICATORS],
        market,
        shard_symbols=2,
    )
    assert snapshots(daily).equals(snapshots(once))
    assert modes[0][FULL] == 3
    assert modes[1][APPEND] + modes[1][UNCHANGED] == 3  # a weekend brings stocks no bar
    assert modes[3][APPEND] == 3
    assert modes[-1][APPEND] == 4


def test_a_symbol_whose_bars_are_revised_is_recomputed_from_its_first_bar(tmp_path: Path) -> None:
    bars = walks(SYMBOLS[:2], 500)
    warehouse = Warehouse(tmp_path / "w")
    run_day(
        warehouse, Vendor(bars), SYMBOLS[:2], FIRST_DAY + timedelta(days=400), "a", [INDICATORS]
    )
    revised = bars.with_columns(
        close=pl.when(
            (pl.col("symbol") == "AAA") & (pl.col("date") == FIRST_DAY + timedelta(days=400))
        )
        .then(pl.col("close") * 1.001)
        .otherwise(pl.col("close"))
    )
    runs = run_day(
        warehouse, Vendor(revised), SYMBOLS[:2], FIRST_DAY + timedelta(days=420), "b", [INDICATORS]
    )
    assert runs[0].counts[FULL] == 1
    assert runs[0].counts[APPEND] == 1
    once = Warehouse(tmp_path / "once")
    run_day(once, Vendor(revised), SYMBOLS[:2], FIRST_DAY + timedelta(days=420), "o", [INDICATORS])
    assert snapshots(warehouse).equals(snapshots(once))
