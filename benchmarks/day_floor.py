"""What a new day's run cannot avoid, measured on the warehouse of the benchmark's own day.

A new day changes every indicator snapshot and every symbol's carried state, so its run must
write those files whole, and it must read each symbol's trailing bars and carried state at least
once. This times exactly that and nothing else, in this process, warm: the day's new files (those
its manifest names and the full run's did not) written again from their rows with the warehouse's
own writer, and the full run's carried states and the bars from the earliest context start on
read once. Added to the day run again with nothing new (the process, Dagster and the steps that
find nothing), it is the floor under a new day with no computing at all: what the daily goal
leaves for the computing is the goal minus this floor.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import polars as pl

from pipelines.catalog import DAILY_PRICES, TABLES, PartitionFile, Table, read_manifest
from pipelines.catalog.state import (
    BACKTEST_STATE,
    INDICATOR_STATE,
    PRICE_STATE,
    SIGNAL_STATE,
    STATE_TABLES,
    TREND_STATE,
)
from pipelines.warehouse.store import write_parquet

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


def current_files(warehouse: Path) -> dict[str, PartitionFile]:
    """Every file the warehouse's manifest names, by path, with its table's name as the path's
    first part (`<table>/market=<m>/...`)."""
    manifest = read_manifest(warehouse)
    if manifest is None:
        return {}
    return {f.path: f for parts in manifest.tables.values() for f in parts.values()}


def day_io(warehouse: Path, before: Mapping[str, PartitionFile]) -> DayIO:
    """Time the I/O of the day the warehouse now holds over `before` (the full run's files, which
    the warehouse keeps for its garbage collector's grace, ten minutes)."""
    new = sorted(set(current_files(warehouse)) - set(before))
    if not new:
        raise ValueError("the day wrote no new file: nothing to measure")
    frames = [(_table(path), pl.read_parquet(warehouse / path)) for path in new]
    scratch = Path(tempfile.mkdtemp(prefix="day-floor-"))
    try:
        write_seconds = min(_write_all(frames, scratch) for _ in range(REPEATS))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    reads = [_read_inputs(warehouse, before) for _ in range(REPEATS)]
    read_seconds, bars, states = min(reads)
    return DayIO(
        write_seconds=write_seconds,
        read_seconds=read_seconds,
        files=len(new),
        bytes_written=sum((warehouse / path).stat().st_size for path in new),
        bars_read=bars,
        state_rows_read=states,
    )


def _table(path: str) -> Table:
    name = path.split("/", 1)[0]
    table = TABLES.get(name) or STATE_TABLES.get(name)
    if table is None:
        raise ValueError(f"{path}: not a file of a catalog table")
    return table


def _write_all(frames: list[tuple[Table, pl.DataFrame]], scratch: Path) -> float:
    start = time.perf_counter()
    for i, (table, frame) in enumerate(frames):
        write_parquet(frame, scratch / f"{i}.parquet", compressed=table.compressed)
    return time.perf_counter() - start


def _read_inputs(warehouse: Path, before: Mapping[str, PartitionFile]) -> tuple[float, int, int]:
    """(seconds, bars, state rows): the carried states, then the bars from their earliest context
    start on, read once."""
    carried = {t.name for t in CARRIED}
    start = time.perf_counter()
    states = [
        pl.read_parquet(warehouse / path)
        for path in sorted(before)
        if path.split("/", 1)[0] in carried
    ]
    bars = _trailing_bars(warehouse, before, _earliest_context(states))
    return time.perf_counter() - start, bars, sum(s.height for s in states)


def _earliest_context(states: list[pl.DataFrame]) -> date:
    """The earliest day any domain's next run reads bars from (its states' `context_start`)."""
    starts = [s["context_start"].min() for s in states if "context_start" in s.columns]
    found = [d for d in starts if isinstance(d, date)]
    if not found:
        raise ValueError("no carried state with a context start")
    return min(found)


def _trailing_bars(warehouse: Path, before: Mapping[str, PartitionFile], since: date) -> int:
    """Read every bar dated `since` or later from the full run's price files; their count."""
    paths = [str(warehouse / p) for p in sorted(before) if p.startswith(f"{DAILY_PRICES.name}/")]
    frame = pl.scan_parquet(paths).filter(pl.col("date") >= since).collect()
    return frame.height
