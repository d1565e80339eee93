"""Webhook events, the incremental price fetch and `mi sql` read the warehouse through the configured
storage, here an s3:// root on moto's S3 server: the same results as from a local directory."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.catalog import BRIEFS, CURRENT_ACTIONS, DAILY_PRICES, LocalStorage, S3Location
from pipelines.platform.settings import load_settings
from pipelines.warehouse.object_store import ObjectWarehouse
from pipelines.webhooks.config import WebhooksConfig
from pipelines.webhooks.outbox import Outbox
from pipelines.webhooks.service import derive_events, webhook_settings
from tests.pipelines.webhooks.conftest import START, subscription
from tests.pipelines.webhooks.test_derive import D0, actions, briefs
from tests.s3 import moto_endpoint, new_bucket


def price_frame(closes: list[float]) -> pl.DataFrame:
    days = [date(2024, 1, 1) + timedelta(days=i) for i in range(len(closes))]
    stamps = [int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() * 1000) for d in days]
    bars = {"open": closes, "high": closes, "low": closes, "close": closes}
    frame = {"market": "crypto", "symbol": "BTC", "date": days, "timestamp": stamps, **bars}
    return DAILY_PRICES.conform(pl.DataFrame({**frame, "volume": 1.0, "source": "test"}))


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_endpoint() as url:
        yield url


@pytest.fixture
def location(endpoint: str) -> S3Location:
    return S3Location.parse(f"s3://{new_bucket(endpoint)}/wh", endpoint_url=endpoint)


def test_mi_warehouse_url_is_the_storage_every_reader_uses(tmp_path: Path) -> None:
    env = {"MI_DATA_DIR": str(tmp_path), "MI_WAREHOUSE_URL": "s3://b/p"}
    s3 = load_settings({**env, "MI_S3_ENDPOINT_URL": "http://127.0.0.1:9"}).warehouse
    assert s3 == S3Location("b", "p", "http://127.0.0.1:9")
    assert load_settings({"MI_DATA_DIR": str(tmp_path)}).warehouse == LocalStorage(
        tmp_path / "warehouse"
    )
    assert webhook_settings(tmp_path, {}, warehouse=s3).warehouse == s3
    assert webhook_settings(tmp_path, {}).warehouse == LocalStorage(tmp_path / "warehouse")


def test_events_are_derived_from_an_s3_warehouse(location: S3Location, outbox: Outbox) -> None:
    store = ObjectWarehouse(location)
    config = WebhooksConfig(subscriptions=(subscription("https://x.example/h"),))
    store.write(BRIEFS, "crypto", briefs(("a1", ["BTC"], "old news")))
    store.write(CURRENT_ACTIONS, "crypto", actions("Buy"))
    assert derive_events(location, outbox, config, START) == {"news": 0, "actions": 0}
    store.write(BRIEFS, "crypto", briefs(("a1", ["BTC"], "old news"), ("a2", ["BTC"], "new")))
    store.write(CURRENT_ACTIONS, "crypto", actions("Sell", D0 + timedelta(days=1)))
    assert derive_events(location, outbox, config, START + 60) == {"news": 1, "actions": 1}


def test_mi_sql_queries_an_s3_warehouse(location: S3Location, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mi.cli import main

    ObjectWarehouse(location).write(DAILY_PRICES, "crypto", price_frame([1.0, 2.0]))
    env = {
        "MI_DATA_DIR": str(tmp_path),
        "MI_WAREHOUSE_URL": location.url,
        "MI_S3_ENDPOINT_URL": str(location.endpoint_url),
    }
    sql = "select count(*) as n, max(close) as top from daily_prices"
    result = CliRunner().invoke(main, ["sql", "--format", "csv", sql], env=env)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["n,top", "2,2.0"]
    assert not (tmp_path / "warehouse.duckdb").exists()
