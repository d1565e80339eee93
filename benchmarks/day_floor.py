"""What a new day's run cannot avoid, measured on the warehouse of the benchmark's own day.

A new day changes every indicator snapshot and every symbol's carried state, so its run must
write those files whole, and it must read each symbol's trailing bars and carried state at least
once. This times exactly that and nothing else, in this process, warm: the day's new files (those
its manifest names and the full run's did not) written again from their rows by the warehouse's
own `write_file` (into a scratch root), and the full run's carried states and the bars from the
earliest context start on read once through the domains' own `scan`. Added to the day run again
with nothing new (the process, Dagster and the steps that find nothing), it is the floor under a
new day with no computing at all: what the daily goal leaves for the computing is the goal minus
this floor.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import polars as pl

from pipelines.catalog import DAILY_PRICES, TABLES, LocalStorage, Manifest, Table, read_manifest
from pipelines.catalog.state import (
    BACKTEST_STATE,
    INDICATOR_STATE,
    PRICE_STATE,
    SIGNAL_STATE,
    STATE_TABLES,
    TREND_STATE,
)
from pipelines.warehouse.commits import retired_paths
from pipelines.warehouse.store import Warehouse
from pipelines.warehouse.tables import scan

CARRIED = (PRICE_STATE, INDICATOR_STATE, TREND_STATE, SIGNAL_STATE, BACKTEST_STATE)
"""The per-symbol states a daily run's domains carry from one day to the next."""
REPEATS = 3
"""The writes and the reads are each timed this many times and the fastest counts: the first
pays for fresh memory and Polars' first use, which a floor leaves out."""


@dataclass(frozen=True)
class DayIO:
    """The day's file I/O alone: seconds to write its new files and to read its inputs once."""

    write_seconds: float
    read_seconds: float
    files: int
    bytes_written: int
    bars_read: int
    state_rows_read: int

    @property
    def seconds(self) -> float:
        return self.write_seconds + self.read_seconds

    def details(self) -> dict[str, float | int]:
        return {
            "write_seconds": round(self.write_seconds, 2),
            "read_seconds": round(self.read_seconds, 2),
            "files_written": self.files,
            "mb_written": round(self.bytes_written / 1e6),
            "bars_read": self.bars_read,
            "state_rows_read": self.state_rows_read,
        }


def current_manifest(warehouse: Path) -> Manifest:
    """The warehouse's manifest; a warehouse without one has no run to measure."""
    manifest = read_manifest(warehouse)
    if manifest is None:
        raise ValueError(f"{warehouse}: no manifest, so no run to measure")
    return manifest


def day_io(warehouse: Path, before: Manifest) -> DayIO:
    """Time the I/O of the day the warehouse now holds over `before` (the full run's manifest,
    whose files the warehouse keeps for its garbage collector's grace, ten minutes)."""
    now = current_manifest(warehouse)
    new_paths = retired_paths(now, before)  # named now, not before: the day's files
    if not new_paths:
        raise ValueError("the day wrote no new file: nothing to measure")
    storage = LocalStorage(warehouse)
    new = [
        (_table(name), partition, scan(storage, [entry], _table(name)).collect())
        for name, parts in now.tables.items()
        for partition, entry in parts.items()
        if entry.path in new_paths
    ]
    write_seconds = min(_write_all(new) for _ in range(REPEATS))
    read_seconds, bars, states = min(_read_inputs(storage, before) for _ in range(REPEATS))
    return DayIO(
        write_seconds=write_seconds,
        read_seconds=read_seconds,
        files=len(new),
        bytes_written=sum((warehouse / path).stat().st_size for path in new_paths),
        bars_read=bars,
        state_rows_read=states,
    )


def _table(name: str) -> Table:
    table = TABLES.get(name) or STATE_TABLES.get(name)
    if table is None:
        raise ValueError(f"{name}: not a catalog table")
    return table


def _write_all(files: list[tuple[Table, str, pl.DataFrame]]) -> float:
    """Seconds to write every file as a run does (`Warehouse.write_file`), into a scratch root."""
    scratch = Warehouse(root=Path(tempfile.mkdtemp(prefix="day-floor-")))
    try:
        start = time.perf_counter()
        for table, partition, frame in files:
            scratch.write_file(table, partition, frame)
        return time.perf_counter() - start
    finally:
        shutil.rmtree(scratch.root, ignore_errors=True)


def _read_inputs(storage: LocalStorage, before: Manifest) -> tuple[float, int, int]:
    """(seconds, bars, state rows): the carried states, then the bars from their earliest context
    start on, read once."""
    start = time.perf_counter()
    states = [scan(storage, before.tables.get(t.name, {}).values(), t).collect() for t in CARRIED]
    since = _earliest_context(states)
    prices = before.tables.get(DAILY_PRICES.name, {}).values()
    bars = scan(storage, prices, DAILY_PRICES).filter(pl.col("date") >= since).collect()
    return time.perf_counter() - start, bars.height, sum(s.height for s in states)


def _earliest_context(states: list[pl.DataFrame]) -> date:
    """The earliest day any domain's next run reads bars from (its states' `context_start`)."""
    starts = [s["context_start"].min() for s in states if "context_start" in s.columns]
    found = [d for d in starts if isinstance(d, date)]
    if not found:
        raise ValueError("no carried state with a context start")
    return min(found)
