"""Instrument routes: list-symbols paging and clamps, get-detail, search ranking, market rules."""

from __future__ import annotations

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from tests.api.routes.conftest import ClientFor, Warehouse

Client = TestClient[Litestar]


def test_list_symbols_defaults_to_the_first_100_sorted(api: Client) -> None:
    response = api.get("/api/v2/crypto/instruments/list-symbols")
    assert response.status_code == 200
    assert response.json() == {
        "symbols": ["ADA", "BCH", "BTC", "BTCB", "ETH", "SOL", "WBTC", "XBT"]
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("limit=2", ["ADA", "BCH"]),
        ("limit=2&skip=2", ["BTC", "BTCB"]),
        ("limit=0", ["ADA"]),
        ("limit=-5&skip=-3", ["ADA"]),
        ("skip=7", ["XBT"]),
        ("skip=50", []),
        ("limit=5000&skip=6", ["WBTC", "XBT"]),
    ],
)
def test_list_symbols_limit_and_skip_are_clamped_not_rejected(
    api: Client, query: str, expected: list[str]
) -> None:
    response = api.get(f"/api/v2/crypto/instruments/list-symbols?{query}")
    assert response.status_code == 200
    assert response.json()["symbols"] == expected


def test_list_symbols_serves_every_live_market_case_insensitively(api: Client) -> None:
    response = api.get("/api/v2/FOREX/instruments/list-symbols")
    assert response.json() == {"symbols": ["EURUSD", "GBPUSD"]}
    assert api.get("/api/v2/commodities/instruments/list-symbols").json() == {"symbols": []}


def test_an_ill_typed_limit_is_a_422_naming_it(api: Client) -> None:
    response = api.get("/api/v2/crypto/instruments/list-symbols?limit=abc")
    assert response.status_code == 422
    assert "limit" in response.json()["error"]


def test_an_unknown_market_is_a_404(api: Client) -> None:
    response = api.get("/api/v2/bonds/instruments/list-symbols")
    assert response.status_code == 404
    assert set(response.json()) == {"error"}


def test_a_market_not_launched_is_not_available_yet_naming_the_live_ones(
    base_warehouse: Warehouse, client_for: ClientFor
) -> None:
    client = client_for(live_markets=("crypto", "forex"))
    response = client.get("/api/v2/stocks/instruments/list-symbols")
    assert response.status_code == 404
    assert "is not available yet" in response.json()["error"]
    assert "crypto, forex" in response.json()["error"]


def test_get_detail_returns_the_instrument_in_upper_case(api: Client) -> None:
    response = api.get("/api/v2/crypto/instruments/get-detail/btc")
    assert response.status_code == 200
    assert response.json() == {
        "name": "Bitcoin",
        "symbol": "BTC",
        "logo": "https://logos.example/btc.png",
    }


def test_get_detail_of_an_unknown_symbol_is_a_404(api: Client) -> None:
    response = api.get("/api/v2/crypto/instruments/get-detail/NOPE")
    assert response.status_code == 404
    assert "NOPE" in response.json()["error"]


@pytest.mark.parametrize("route", ["get-detail/EURUSD", "search-instruments/eur"])
def test_crypto_only_instrument_routes_answer_404_naming_crypto_elsewhere(
    api: Client, route: str
) -> None:
    response = api.get(f"/api/v2/forex/instruments/{route}")
    assert response.status_code == 404
    assert "crypto" in response.json()["error"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # exact symbol, then symbol prefixes (shorter first), then name prefixes, then substrings
        ("btc", ["BTC", "BTCB"]),  # WBTC: a symbol substring is not a match
        ("bitcoin", ["BTC", "BCH", "XBT", "BTCB", "WBTC"]),  # shorter names first
        ("b", ["BCH", "BTC", "BTCB", "XBT", "WBTC"]),
        ("SOL", ["SOL"]),
        ("cardano", ["ADA"]),
        ("zzz", []),
    ],
)
def test_search_ranks_exact_symbol_then_prefixes_then_substrings(
    api: Client, query: str, expected: list[str]
) -> None:
    response = api.get(f"/api/v2/crypto/instruments/search-instruments/{query}")
    assert response.status_code == 200
    assert [i["symbol"] for i in response.json()["instruments"]] == expected


def test_search_returns_at_most_five(api: Client) -> None:
    found = api.get("/api/v2/crypto/instruments/search-instruments/a").json()["instruments"]
    assert len(found) == 5
    assert set(found[0]) == {"name", "symbol", "logo"}


def test_without_instruments_the_routes_answer_503_with_retry_after(
    warehouse: Warehouse, client_for: ClientFor
) -> None:
    from tests.api.routes.conftest import prices_frame

    warehouse.publish(daily_prices=prices_frame([1.0]))
    response = client_for().get("/api/v2/crypto/instruments/list-symbols")
    assert response.status_code == 503
    assert "Retry-After" in response.headers
    assert set(response.json()) == {"error"}
