"""Runs as they meet in production: a news refresh racing a daily run, a reader polling through a run.

Each run is a real `mi materialize` process on one data dir (one Dagster instance, one warehouse).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from datetime import date
from pathlib import Path

import pytest

from pipelines.catalog import (
    DAILY_PRICES,
    INDICATOR_SNAPSHOTS,
    RAW_NEWS,
    TREND_HISTORY,
    read_manifest,
    read_partitions,
)
from pipelines.warehouse.store import Warehouse

pytestmark = pytest.mark.slow

MI = str(Path(sys.executable).with_name("mi"))
FIRST_DAY = date(2026, 3, 2)
NEXT_DAY = date(2026, 3, 3)
MARKET = "crypto"


def env(data_dir: Path, day: date, now: str = "") -> dict[str, str]:
    return {
        **os.environ,
        "MI_DATA_DIR": str(data_dir),
        "MI_INSTRUMENTS": "24",
        "MI_END_DATE": day.isoformat(),
        "MI_NOW": now,
    }


def start(data_dir: Path, day: date, *args: str, now: str = "") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [MI, "materialize", "--market", MARKET, *args],
        env=env(data_dir, day, now),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> str:
    output, _ = process.communicate(timeout=300)
    assert process.returncode == 0, output
    return output


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Where the tests run, and a copy of it after the first load of FIRST_DAY (news as of noon)."""
    base = tmp_path_factory.mktemp("runs")
    data_dir, saved = base / "data", base / "loaded"
    finish(start(data_dir, FIRST_DAY, now=f"{FIRST_DAY}T12:00:00Z"))
    shutil.copytree(data_dir, saved)
    return data_dir, saved


@pytest.fixture
def data_dir(loaded: tuple[Path, Path]) -> Path:
    """The loaded warehouse restored at its own path (the file drop is recorded by path)."""
    data_dir, saved = loaded
    shutil.rmtree(data_dir)
    shutil.copytree(saved, data_dir)
    return data_dir


def news_count(warehouse: Warehouse) -> int:
    return warehouse.read(RAW_NEWS, [MARKET]).height


def latest_day(warehouse: Warehouse) -> date:
    return warehouse.read(DAILY_PRICES, [MARKET])["date"].max()  # type: ignore[return-value]


def test_a_news_refresh_racing_a_daily_run_loses_neither_runs_tables(data_dir: Path) -> None:
    warehouse = Warehouse(data_dir / "warehouse")
    articles_before = news_count(warehouse)
    daily = start(data_dir, NEXT_DAY, "--job", "daily")
    news = start(data_dir, NEXT_DAY, "--job", "news", now=f"{NEXT_DAY}T23:00:00Z")
    finish(news)
    finish(daily)
    assert latest_day(warehouse) == NEXT_DAY
    assert news_count(warehouse) > articles_before
    snapshots = warehouse.read(INDICATOR_SNAPSHOTS, [MARKET])
    assert snapshots["date"].max() == NEXT_DAY


def test_a_reader_polling_through_a_daily_run_sees_every_table_of_one_version(
    data_dir: Path,
) -> None:
    """Prices, indicator snapshots and trends of the day move together: whichever manifest a reader
    loads, the three tables' latest day agree (the day before the run, or the day it adds)."""
    warehouse = Warehouse(data_dir / "warehouse")
    seen: set[tuple[int, date, date, date]] = set()
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            manifest = read_manifest(warehouse.root)
            assert manifest is not None
            days = [
                read_partitions(warehouse.storage, table, [MARKET], manifest)["date"].max()
                for table in (DAILY_PRICES, INDICATOR_SNAPSHOTS, TREND_HISTORY)
            ]
            seen.add((manifest.version, *days))  # type: ignore[arg-type]

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        finish(start(data_dir, NEXT_DAY, "--job", "daily"))
    finally:
        done.set()
        reader.join()
    versions = {entry[0] for entry in seen}
    assert len(versions) == 2, f"the reader saw versions {sorted(versions)}"
    assert {entry[1:] for entry in seen} == {(FIRST_DAY,) * 3, (NEXT_DAY,) * 3}
