"""The incremental rule, through the whole product: after any sequence of daily runs (each with its
news refresh, some with a refresh mid-day too), every warehouse table equals what one full run of the
last day writes on a fresh warehouse, whatever the shards.

Runs are `mi materialize` of the embedded market (its real definitions, a small universe), in this
process. "The same tables" is `tests.warehouses.assert_same_warehouse`.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar.testing import TestClient

from api.app import create_app
from api.settings import ApiSettings
from mi.cli import main
from pipelines.catalog import open_storage
from pipelines.catalog.manifest import read_manifest
from tests.warehouses import assert_same_warehouse as same

FIRST_DAY = date(2026, 2, 2)
INSTRUMENTS = "16"
MARKETS = "crypto,forex"
"""A market trading every day and one trading on weekdays (each domain's own tests cover all four)."""
SHARD_SYMBOLS = 4
"""Several shards per market in the incremental warehouse; the full run keeps the default (one)."""
BRIEFS_ROUTE = "/api/v2/crypto/newsroom/get-recent-briefs/BTC"
"""A news route, answered from the briefs a refresh writes."""
Step = tuple[int, bool]
"""Days to move on, and whether a news refresh runs at noon of the new day before its daily run."""


def materialize(
    data_dir: Path, day: date, *args: str, now: str = "", shard_symbols: int = SHARD_SYMBOLS
) -> None:
    env = {"MI_DATA_DIR": str(data_dir), "MI_INSTRUMENTS": INSTRUMENTS, "MI_NOW": now}
    env |= {"MI_END_DATE": day.isoformat(), "MI_SHARD_SYMBOLS": str(shard_symbols)}
    result = CliRunner().invoke(main, ["materialize", "--market", MARKETS, *args], env=env)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def first_load(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Where the examples run, and a copy of it after the first load of FIRST_DAY.

    Each example restores the copy to the same path (mtimes kept): the warehouse records the
    source files it read by path, and a moved file drop is read again.
    """
    base = tmp_path_factory.mktemp("incremental")
    data_dir, saved = base / "data", base / "first-load"
    materialize(data_dir, FIRST_DAY)
    shutil.copytree(data_dir, saved)
    return data_dir, saved


def restored(first_load: tuple[Path, Path]) -> Path:
    """The data dir as the first load left it (each example starts from there)."""
    data_dir, saved = first_load
    shutil.rmtree(data_dir)
    shutil.copytree(saved, data_dir)
    return data_dir


NEXT_DAY = FIRST_DAY + timedelta(days=1)
NOON, EVENING = f"{NEXT_DAY.isoformat()}T12:00:00Z", f"{NEXT_DAY.isoformat()}T18:00:00Z"
"""The clock of the next day's news refreshes: the evening one finds articles the noon one did not."""


def refreshed_at_noon(first_load: tuple[Path, Path]) -> Path:
    """The first load's data dir after the next day's noon news refresh."""
    data_dir = restored(first_load)
    materialize(data_dir, NEXT_DAY, "--job", "news", now=NOON)
    return data_dir


def assert_same_warehouse(incremental: Path, full: Path) -> None:
    warehouse = "warehouse"
    same(open_storage(incremental / warehouse), incremental, open_storage(full / warehouse), full)


def days_of(steps: Sequence[Step]) -> list[tuple[date, bool]]:
    day, out = FIRST_DAY, []
    for gap, news_at_noon in steps:
        day += timedelta(days=gap)
        out.append((day, news_at_noon))
    return out


@pytest.mark.slow
@pytest.mark.timeout(900)
@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(st.tuples(st.integers(1, 5), st.booleans()), min_size=1, max_size=3))
def test_daily_runs_equal_one_full_run_of_the_last_day(
    first_load: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory, steps: list[Step]
) -> None:
    incremental = restored(first_load)
    last = FIRST_DAY
    for day, news_at_noon in days_of(steps):
        if news_at_noon:
            materialize(incremental, day, "--job", "news", now=f"{day.isoformat()}T12:00:00Z")
        materialize(incremental, day)
        last = day
    assert_same_warehouse(incremental, full_run(last, tmp_path_factory))


FULL_RUNS: dict[date, Path] = {}


def full_run(day: date, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh warehouse materialized for `day` in one run (once per day: runs are deterministic)."""
    if day not in FULL_RUNS:
        data_dir = tmp_path_factory.mktemp("full")
        materialize(data_dir, day, shard_symbols=1_000)
        FULL_RUNS[day] = data_dir
    return FULL_RUNS[day]


def test_a_news_refresh_rewrites_only_the_news_segments_its_articles_fall_in(
    first_load: tuple[Path, Path],
) -> None:
    """raw_news and briefs are logs in time segments: a refresh's cost does not grow with history."""
    data_dir = restored(first_load)
    before = read_manifest(data_dir / "warehouse")
    materialize(data_dir, NEXT_DAY, "--job", "news", now=NOON)
    after = read_manifest(data_dir / "warehouse")
    assert before is not None
    assert after is not None
    for table in ("raw_news", "briefs"):
        for market in MARKETS.split(","):
            old, new = before.partitions(table, market), after.partitions(table, market)
            assert f"{market}/2025" in old, "the embedded history spans closed years"
            rewritten = {key for key in new if new[key] != old.get(key)}
            assert rewritten == {f"{market}/{NEXT_DAY:%Y-%m}"}, (table, market)
            assert sum(f.rows for f in new.values()) > sum(f.rows for f in old.values())


def test_a_news_refresh_or_a_daily_run_that_finds_nothing_new_publishes_no_version(
    first_load: tuple[Path, Path],
) -> None:
    """A quiet refresh (every 15 minutes, all night) leaves the warehouse as it was: its data
    version, which every ETag of the API carries, stands. A refresh with new articles moves it."""
    data_dir = refreshed_at_noon(first_load)
    refreshed = read_manifest(data_dir / "warehouse")
    materialize(data_dir, NEXT_DAY, "--job", "news", now=NOON)
    assert read_manifest(data_dir / "warehouse") == refreshed
    materialize(data_dir, NEXT_DAY, "--job", "news", now=EVENING)
    later = read_manifest(data_dir / "warehouse")
    assert refreshed is not None
    assert later is not None
    assert later.version > refreshed.version
    materialize(data_dir, NEXT_DAY, "--job", "daily", now=EVENING)
    daily = read_manifest(data_dir / "warehouse")
    materialize(data_dir, NEXT_DAY, "--job", "daily", now=EVENING)
    assert read_manifest(data_dir / "warehouse") == daily


def test_the_apis_etags_stand_across_a_refresh_that_finds_nothing_new(
    first_load: tuple[Path, Path],
) -> None:
    """What a client sees of a quiet refresh: its `If-None-Match` still answers 304 (free); a
    refresh with new articles answers the new body."""
    data_dir = refreshed_at_noon(first_load)
    app = create_app(
        ApiSettings(data_dir=data_dir, live_markets=("crypto", "forex"), manifest_poll_seconds=0.05)
    )
    with TestClient(app) as client:
        first = client.get(BRIEFS_ROUTE)
        assert first.status_code == 200, first.text
        etag = first.headers["ETag"]
        materialize(data_dir, NEXT_DAY, "--job", "news", now=NOON)
        time.sleep(0.2)  # four polls of the manifest
        quiet = client.get(BRIEFS_ROUTE, headers={"If-None-Match": etag})
        assert quiet.status_code == 304
        materialize(data_dir, NEXT_DAY, "--job", "news", now=EVENING)
        deadline = time.monotonic() + 5
        while (answer := client.get(BRIEFS_ROUTE, headers={"If-None-Match": etag})).status_code == 304:  # fmt: skip
            assert time.monotonic() < deadline, "the refresh with new articles was not served"
            time.sleep(0.05)
        assert answer.status_code == 200
        assert answer.headers["ETag"] != etag
