"""The floor under a new day: its new files written and its inputs read once, on a real warehouse."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from benchmarks.day_floor import current_manifest, day_io
from benchmarks.pipeline import Run, incremental_figures
from pipelines.catalog import DAILY_PRICES, Table
from pipelines.catalog.state import TREND_STATE
from pipelines.warehouse.store import Warehouse

FIRST = date(2026, 2, 20)


def rows(table: Table, count: int, **columns: Any) -> pl.DataFrame:
    """`count` rows of `table`: the given columns (a value or a list), zeros and "x" elsewhere."""
    defaults = {pl.String: "x", pl.Date: FIRST, pl.Float64: 1.0, pl.Int64: 0}
    data = {
        name: columns.get(name, [defaults[type(dtype)]] * count)
        for name, dtype in table.schema.items()
    }
    frame = pl.DataFrame({k: v if isinstance(v, list) else [v] * count for k, v in data.items()})
    return table.conform(frame)


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    store = Warehouse(root=tmp_path / "warehouse")
    days = [FIRST + timedelta(days=i) for i in range(10)]
    store.write(DAILY_PRICES, "crypto", rows(DAILY_PRICES, 10, market="crypto", date=days))
    store.write(TREND_STATE, "crypto", rows(TREND_STATE, 1, market="crypto", context_start=days[5]))
    return store


def test_the_day_writes_only_its_new_files_and_reads_bars_from_the_earliest_context_start(
    warehouse: Warehouse,
) -> None:
    before = current_manifest(warehouse.root)
    new = rows(TREND_STATE, 1, market="crypto", context_start=FIRST + timedelta(days=6))
    written = warehouse.write(TREND_STATE, "crypto", new)
    io = day_io(warehouse.root, before)
    assert io.files == 1
    assert io.bytes_written == written.path.stat().st_size
    # the carried state as the full run left it: bars from its context start, the 6th day, on
    assert (io.bars_read, io.state_rows_read) == (5, 1)
    assert io.seconds == io.write_seconds + io.read_seconds > 0


def test_a_day_that_wrote_nothing_new_has_no_floor_to_measure(warehouse: Warehouse) -> None:
    with pytest.raises(ValueError, match="no new file"):
        day_io(warehouse.root, current_manifest(warehouse.root))


def test_a_warehouse_without_a_manifest_has_no_run_to_measure(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no manifest"):
        current_manifest(tmp_path / "warehouse")


def test_a_full_run_without_carried_state_has_no_context_to_read_bars_from(
    tmp_path: Path,
) -> None:
    store = Warehouse(root=tmp_path / "warehouse")
    store.write(DAILY_PRICES, "crypto", rows(DAILY_PRICES, 3, market="crypto"))
    before = current_manifest(store.root)
    store.write(TREND_STATE, "crypto", rows(TREND_STATE, 1, market="crypto"))
    with pytest.raises(ValueError, match="no carried state"):
        day_io(store.root, before)


def test_the_floor_is_the_day_with_nothing_new_plus_its_file_io_as_a_share_of_the_full_run(
    warehouse: Warehouse,
) -> None:
    before = current_manifest(warehouse.root)
    warehouse.write(TREND_STATE, "crypto", rows(TREND_STATE, 1, market="crypto"))
    io = day_io(warehouse.root, before)
    full = Run(5000, date(2026, 3, 2), 50.0, 1900.0)
    daily = Run(5000, date(2026, 3, 3), 8.0, 800.0)
    again = Run(5000, date(2026, 3, 3), 3.5, 700.0)
    floor = incremental_figures(full, daily, again=again, day_files=io)[-1]
    assert floor.name.startswith("a new day's floor (nothing new + the day's file I/O alone)")
    assert (floor.project, floor.anchor, floor.goal) == (round(3.5 + io.seconds, 1), 50.0, None)
    assert floor.details["files_written"] == 1
    assert len(incremental_figures(full, daily, again=again)) == 3
