"""News freshness: an article is served by search-briefs after the first scheduled refresh that
follows its publication, so its latency is at most the cadence (15 minutes by default) plus a
refresh's run time (measured by the benchmarks, not here).

The embedded market publishes by the clock; the refreshes run as `mi materialize --job news` at the
news schedule's ticks (`MI_NOW`), and the API reads the warehouse on the real clock, so the
articles are taken from the last day.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dagster._utils.schedules import cron_string_iterator
from litestar.testing import TestClient

from api.app import asgi_app
from pipelines.catalog import BRIEFS
from pipelines.definitions import build_definitions
from pipelines.platform.settings import load_settings
from pipelines.warehouse.store import Warehouse

pytestmark = pytest.mark.slow

MI = str(Path(sys.executable).with_name("mi"))
MARKET = "crypto"


def materialize(data_dir: Path, now: datetime, *args: str) -> None:
    env = {
        **os.environ,
        "MI_DATA_DIR": str(data_dir),
        "MI_INSTRUMENTS": "8",
        "MI_END_DATE": now.date().isoformat(),
        "MI_NOW": now.isoformat(),
    }
    done = subprocess.run(
        [MI, "materialize", "--market", MARKET, *args], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def schedule_ticks(after: datetime) -> Iterator[datetime]:
    """The news schedule's ticks from `after` on, as the default definitions declare them."""
    settings = load_settings({"MI_DATA_DIR": "unused"})
    schedule = build_definitions(settings).resolve_schedule_def("news_refresh_schedule")
    cron = schedule.cron_schedule
    assert isinstance(cron, str)
    return cron_string_iterator(after.timestamp(), cron, schedule.execution_timezone)


def ticks_between(start: datetime, end: datetime) -> Iterator[datetime]:
    """The schedule's ticks in (start, end]."""
    for tick in schedule_ticks(start):
        if tick > end:
            return
        if tick > start:
            yield tick


def served(data_dir: Path, symbol: str) -> set[str]:
    """Article ids search-briefs serves for `symbol` (the API started on the data dir now)."""
    key = (
        subprocess.run(
            [MI, "keys", "create", "--plan", "internal", "--name", "freshness"],
            env={**os.environ, "MI_DATA_DIR": str(data_dir)},
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MI_DATA_DIR", str(data_dir))
        app = asgi_app()
    with TestClient(app) as client:
        path = f"/api/v2/{MARKET}/newsroom/search-briefs/{symbol}?limit=500"
        response = client.get(path, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return {brief["article_id"] for brief in body["briefs"]}


def test_an_article_is_served_after_the_first_scheduled_refresh_following_its_publication(
    tmp_path: Path,
) -> None:
    now = datetime.now(UTC)
    loaded_at = next(schedule_ticks(now - timedelta(hours=23)))
    data_dir, saved = tmp_path / "data", tmp_path / "loaded"
    materialize(data_dir, loaded_at)
    shutil.copytree(data_dir, saved)
    warehouse = Warehouse(data_dir / "warehouse")
    before = set(warehouse.read(BRIEFS, [MARKET])["article_id"])

    # Which articles the embedded market publishes after the load: a refresh at the latest tick.
    materialize(data_dir, list(ticks_between(loaded_at, now))[-1], "--job", "news")
    briefs = warehouse.read(BRIEFS, [MARKET])
    new = briefs.filter(~briefs["article_id"].is_in(list(before))).sort("timestamp")
    assert new.height > 0, "the embedded market published nothing in 23 hours"
    article = new.row(0, named=True)
    published = datetime.fromtimestamp(article["timestamp"] / 1000, UTC)
    symbol = article["symbols"][0]

    shutil.rmtree(data_dir)
    shutil.copytree(saved, data_dir)
    refresh_at = next(schedule_ticks(published))
    earlier = list(ticks_between(loaded_at, published - timedelta(microseconds=1)))
    if earlier:
        materialize(data_dir, earlier[-1], "--job", "news")
        assert article["article_id"] not in served(data_dir, symbol)
    materialize(data_dir, refresh_at, "--job", "news")
    assert article["article_id"] in served(data_dir, symbol)
    assert timedelta(0) <= refresh_at - published <= timedelta(minutes=15)
