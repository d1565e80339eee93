"""get-price-history: rules 1-4 (full series, most recent N, range then limit, points reported),
oldest first, 422s, and a property test against a straightforward oracle."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.plugins import InitPluginProtocol
from litestar.testing import TestClient
from litestar.types import ASGIApp, Receive, Scope, Send

from api.metering.middleware import POINTS_SCOPE_KEY
from api.queries.technical_analysis import price_sql
from api.routes.technical_analysis import price_points
from api.warehouse import DuckDBSnapshot
from pipelines.catalog import read_manifest
from tests.api.routes.conftest import (
    START,
    ClientFor,
    Warehouse,
    instruments_frame,
    ms,
    prices_frame,
)

Client = TestClient[Litestar]
URL = "/api/v2/crypto/technical-analysis/get-price-history/BTC"
DAY = 86_400_000
T0 = ms(START)


def oracle(
    closes: list[float], limit: int | None, start: int | None, end: int | None
) -> list[dict[str, Any]]:
    """The spec's rules written plainly: every day, then the range, then the last `limit`."""
    points = [
        {"timestamp": T0 + i * DAY, "price": c, "volume": 10.0 * c} for i, c in enumerate(closes)
    ]
    points = [p for p in points if (start is None or p["timestamp"] >= start)]
    points = [p for p in points if (end is None or p["timestamp"] <= end)]
    return points[-limit:] if limit is not None else points


def without_dates(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in p.items() if k != "date"} for p in body["price_history"]]


def test_rule_1_no_parameters_return_the_full_series_oldest_first(api: Client) -> None:
    body = api.get(URL).json()
    assert [p["price"] for p in body["price_history"]] == [100.0 + i for i in range(10)]
    assert body["price_history"][0] == {
        "timestamp": T0,
        "date": "2024-01-01",
        "price": 100.0,
        "volume": 1000.0,
    }


def test_rule_2_limit_returns_the_most_recent_n(api: Client) -> None:
    body = api.get(f"{URL}?limit=3").json()
    assert [p["date"] for p in body["price_history"]] == ["2024-01-08", "2024-01-09", "2024-01-10"]


def test_rule_3_from_and_to_are_inclusive_and_limit_caps_within_the_range(api: Client) -> None:
    narrowed = api.get(f"{URL}?from={T0 + DAY}&to={T0 + 5 * DAY}").json()["price_history"]
    assert [p["price"] for p in narrowed] == [101.0, 102.0, 103.0, 104.0, 105.0]
    capped = api.get(f"{URL}?from={T0 + DAY}&to={T0 + 5 * DAY}&limit=2").json()["price_history"]
    assert [p["price"] for p in capped] == [104.0, 105.0]


def test_the_symbol_is_matched_case_insensitively(api: Client) -> None:
    assert api.get(URL.replace("BTC", "btc")).json() == api.get(URL).json()


def test_a_range_with_no_points_is_an_empty_200(api: Client) -> None:
    response = api.get(f"{URL}?from={T0 + 100 * DAY}")
    assert response.status_code == 200
    assert response.json() == {"price_history": []}


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("limit=0", "limit"),
        ("limit=-1", "limit"),
        ("limit=abc", "limit"),
        ("from=x", "from"),
        ("to=1.5", "to"),
        (f"from={T0 + DAY}&to={T0}", "from"),
    ],
)
def test_bad_parameters_are_a_422_naming_the_parameter(
    api: Client, query: str, parameter: str
) -> None:
    response = api.get(f"{URL}?{query}")
    assert response.status_code == 422
    assert f"'{parameter}'" in response.json()["error"]


@pytest.mark.parametrize(
    ("query", "parameter", "meant"),
    [
        ("from=1700000000", "from", "send 1700000000000"),
        ("to=1000000000", "to", "send 1000000000000"),
        ("from=0&to=9999999999", "to", "(2286-11-20T17:46:39Z)"),
    ],
)
def test_an_instant_that_can_only_be_seconds_is_a_422_naming_the_unit(
    api: Client, query: str, parameter: str, meant: str
) -> None:
    """docs/clients.md: `from=1700000000` is seconds, never silently the whole history in 1970."""
    response = api.get(f"{URL}?{query}")
    assert response.status_code == 422
    error = response.json()["error"]
    assert error.startswith(f"Invalid parameter '{parameter}': is in epoch milliseconds;")
    assert meant in error


@pytest.mark.parametrize("query", ["from=0", "from=999999999", f"to={10**10}", "from=-1700000000"])
def test_values_outside_the_seconds_window_are_milliseconds(api: Client, query: str) -> None:
    assert api.get(f"{URL}?{query}").status_code == 200


def test_a_symbol_of_another_market_is_a_404(api: Client) -> None:
    assert api.get(URL.replace("BTC", "EURUSD")).status_code == 404
    assert api.get(URL.replace("crypto", "forex").replace("BTC", "EURUSD")).json() == {
        "price_history": []
    }


class PointsProbe(InitPluginProtocol):
    """Records what the handler told metering (the scope key `report_points` writes)."""

    def __init__(self) -> None:
        self.seen: list[object] = []

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        def middleware(app: ASGIApp) -> ASGIApp:
            async def record(scope: Scope, receive: Receive, send: Send) -> None:
                await app(scope, receive, send)
                self.seen.append(dict(scope).get(POINTS_SCOPE_KEY))

            return record

        app_config.middleware.append(middleware)
        return app_config


def test_rule_4_the_number_of_points_returned_is_reported_to_metering(
    base_warehouse: Warehouse, client_for: ClientFor
) -> None:
    probe = PointsProbe()
    client = client_for(plugins=[probe])
    client.get(URL)
    client.get(f"{URL}?limit=4")
    etag = client.get(f"{URL}?limit=4").headers["ETag"]
    client.get(f"{URL}?limit=4", headers={"If-None-Match": etag})
    client.get(f"{URL}?from={T0}&to={T0 + DAY}")
    assert probe.seen == [10, 4, 4, 4, 2]


SERIES = [float((i * 37) % 101) for i in range(40)]
stamps = st.one_of(st.none(), st.integers(T0 - 3 * DAY, T0 + 43 * DAY))


@pytest.fixture
def series_client(warehouse: Warehouse, client_for: ClientFor) -> Client:
    warehouse.publish(instruments=instruments_frame(), daily_prices=prices_frame(SERIES))
    return client_for()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(limit=st.one_of(st.none(), st.integers(1, 50)), start=stamps, end=stamps)
def test_price_history_over_http_equals_the_oracle(
    series_client: Client, limit: int | None, start: int | None, end: int | None
) -> None:
    params = {k: v for k, v in {"limit": limit, "from": start, "to": end}.items() if v is not None}
    response = series_client.get(URL, params=params)
    if start is not None and end is not None and start > end:
        assert response.status_code == 422
        return
    assert without_dates(response.json()) == oracle(SERIES, limit, start, end)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("series")


@settings(max_examples=40, deadline=None)
@given(
    closes=st.lists(st.floats(0.01, 1e6, allow_nan=False), max_size=45),
    limit=st.one_of(st.none(), st.integers(1, 60)),
    start=stamps,
    end=stamps,
)
def test_price_history_query_on_random_series_equals_the_oracle(
    scratch: Path, closes: list[float], limit: int | None, start: int | None, end: int | None
) -> None:
    warehouse = Warehouse(scratch / f"w{abs(hash((tuple(closes), limit, start, end)))}")
    warehouse.publish(daily_prices=prices_frame(closes) if closes else prices_frame([1.0]).clear())
    manifest = read_manifest(warehouse.root)
    assert manifest is not None
    snapshot = DuckDBSnapshot.in_place(warehouse.root, manifest)
    try:
        params = [p for p in ("crypto", "BTC", start, end, limit) if p is not None]
        found = asyncio.run(
            snapshot.fetch(price_sql("split", start, end, limit), params)
        ).to_dicts()
        body = {
            "price_history": [
                {"timestamp": p.timestamp, "price": p.price, "volume": p.volume}
                for p in price_points(found).price_history
            ]
        }
        assert body["price_history"] == oracle(closes, limit, start, end)
    finally:
        snapshot.close()


ADJUSTED = "/api/v2/stocks/technical-analysis/get-price-history/AAPL"


@pytest.fixture
def split_api(warehouse: Warehouse, client_for: ClientFor) -> Client:
    """AAPL trades 400, 400, then 100 from the 4-for-1 split on day 2, and pays 1 a share on day
    4 (the close before it: 100); volume is 10 x the traded close."""
    closes = [400.0, 400.0, 100.0, 100.0, 100.0]
    prices = prices_frame(closes, market="stocks", symbol="AAPL")
    day = [START + timedelta(days=n) for n in range(len(closes))]
    factors = pl.DataFrame(
        {
            "market": "stocks",
            "symbol": "AAPL",
            "date": [day[2], day[4]],
            "bars_from": [day[0], day[2]],
            "split_ratio": [4.0, 1.0],
            "dividend_factor": [0.99, 0.99],
            "dividend": [0.0, 1.0],
        }
    )
    warehouse.publish(
        instruments=instruments_frame(), daily_prices=prices, price_adjustments=factors
    )
    return client_for()


def served(api: Client, query: str = "") -> list[tuple[float, float]]:
    body = api.get(f"{ADJUSTED}{query}").json()
    return [(p["price"], p["volume"]) for p in body["price_history"]]


def test_the_default_series_is_split_adjusted_prices_and_volume(split_api: Client) -> None:
    """decisions.md, Corporate actions: earlier prices divided by the later splits' ratios, volume
    multiplied by them; the latest bar as traded."""
    expected = [(100.0, 16_000.0)] * 2 + [(100.0, 1_000.0)] * 3
    assert served(split_api) == expected
    assert served(split_api, "?adjustment=split") == expected


def test_all_scales_the_bars_before_each_ex_date_by_its_dividend_factor(split_api: Client) -> None:
    assert served(split_api, "?adjustment=all") == [
        (pytest.approx(99.0), 16_000.0),
        (pytest.approx(99.0), 16_000.0),
        (pytest.approx(99.0), 1_000.0),
        (pytest.approx(99.0), 1_000.0),
        (100.0, 1_000.0),
    ]


def test_raw_is_as_traded(split_api: Client) -> None:
    assert served(split_api, "?adjustment=raw") == [
        (400.0, 4_000.0),
        (400.0, 4_000.0),
        (100.0, 1_000.0),
        (100.0, 1_000.0),
        (100.0, 1_000.0),
    ]


def test_limit_and_range_select_points_of_the_adjusted_series(split_api: Client) -> None:
    assert served(split_api, "?adjustment=raw&limit=3") == [(100.0, 1_000.0)] * 3
    first = ms(START)
    assert served(split_api, f"?to={first}") == [(100.0, 16_000.0)]


@pytest.mark.parametrize("value", ["total", "Split", "", "none"])
def test_another_adjustment_is_a_422_naming_the_parameter(split_api: Client, value: str) -> None:
    response = split_api.get(f"{ADJUSTED}?adjustment={value}")
    assert response.status_code == 422
    assert "'adjustment'" in response.json()["error"]
