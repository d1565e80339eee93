"""Incremental runs against an HTTP vendor: the daily job asks Binance only for bars from the newest
stored one on (recorded klines, replayed on a loopback server)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, cast

import dagster as dg
import pytest

from pipelines.catalog import DAILY_PRICES
from pipelines.instruments.assets import build_instruments
from pipelines.prices.assets import build_daily_prices
from pipelines.prices.sources.binance import BinanceSource
from pipelines.prices.sources.config import SourceRegistry
from pipelines.prices.sources.http import HttpFetcher, HttpPolicy, ListedInstrument
from pipelines.warehouse.store import Warehouse
from tests.pipelines.prices.loopback import Loopback, Reply, route, serve
from tests.pipelines.synthetic import materialize_daily

MARKETS = ("crypto", "forex", "commodities", "stocks")


def ms(day: date) -> str:
    return str(int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000))


def run_day(warehouse: Warehouse, server: Loopback, day: date) -> dg.ExecuteInProcessResult:
    """The daily job's instruments and prices steps for `day`, Binance serving crypto."""
    binance = BinanceSource(
        [ListedInstrument("BTC", "Bitcoin")],
        "sources.toml",
        server.base_url,
        start_date=date(2024, 1, 1),
        http=HttpFetcher(HttpPolicy(max_retries=0, allowed_hosts=("127.0.0.1",))),
        today=lambda: day,  # the newest kline Binance has is the run's day
    )
    return materialize_daily(
        warehouse,
        [build_instruments(embedded=False), build_daily_prices(embedded=False)],
        day,
        ["crypto"],
        {"price_sources": SourceRegistry(dict.fromkeys(MARKETS, binance))},
    )


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    return Warehouse(tmp_path / "warehouse")


def test_a_new_day_asks_binance_only_from_the_newest_stored_bar(warehouse: Warehouse) -> None:
    history = Reply(fixture="binance/klines_BTCUSDT_2024-01-01.json")
    new_day = Reply(fixture="binance/klines_BTCUSDT_2024-01-04.json")
    routes = [
        (route("/api/v3/klines", startTime=ms(date(2024, 1, 1))), [history]),
        (route("/api/v3/klines", startTime=ms(date(2024, 1, 3))), [new_day]),
    ]
    with serve(routes) as server:
        run_day(warehouse, server, date(2024, 1, 3))
        result = run_day(warehouse, server, date(2024, 1, 4))
    starts = [r.query["startTime"] for r in server.requests]
    assert starts == [ms(date(2024, 1, 1)), ms(date(2024, 1, 3))]
    prices = warehouse.read(DAILY_PRICES).sort("date")
    assert prices["date"].to_list() == [date(2024, 1, d) for d in (1, 2, 3, 4)]
    assert prices["close"].to_list()[-1] == 44151.10
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["fresh"]
    assert checks["no_missing_trading_days"]
    [event] = [
        m
        for m in result.asset_materializations_for_node("raw_daily_prices")
        if m.asset_key == dg.AssetKey("daily_prices")
    ]
    crypto = cast(dict[str, Any], event.metadata["markets"].value)["crypto"]
    assert (crypto["appended"], crypto["reloaded"]) == (1, 0)
    assert crypto["fetched"] == {"2024-01-03": "1 symbols"}
