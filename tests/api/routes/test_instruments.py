"""Instrument routes: list-symbols paging and clamps, get-detail, search ranking, market rules."""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from tests.api.routes.conftest import ClientFor, Warehouse, instruments_frame

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


def delisting(symbol: str, day: str, kind: str = "delisting") -> dict[str, object]:
    return {
        "market": "crypto",
        "symbol": symbol,
        "date": date.fromisoformat(day),
        "kind": kind,
        "ratio": None,
        "amount": None,
        "reason": "acquired",
        "source": "file_drop",
    }


@pytest.fixture
def delisted_api(warehouse: Warehouse, client_for: ClientFor) -> Client:
    """ETH delisted long ago, SOL's delisting announced for a day still to come, XBT's listing
    too (it is not listed yet), ADA listed long ago."""
    actions = pl.DataFrame(
        [
            delisting("ETH", "2020-01-02"),
            delisting("SOL", "2999-01-01"),
            delisting("XBT", "2999-01-01", "listing"),
            delisting("ADA", "2019-01-01", "listing"),
        ],
        schema_overrides={"ratio": pl.Float64, "amount": pl.Float64},
    )
    warehouse.publish(instruments=instruments_frame(), corporate_actions=actions)
    return client_for()


def test_list_symbols_leaves_out_what_was_delisted_by_the_day(delisted_api: Client) -> None:
    """decisions.md, Corporate actions: the instruments listed at the time; SOL still trades, XBT
    does not yet."""
    listed = delisted_api.get("/api/v2/crypto/instruments/list-symbols").json()["symbols"]
    assert listed == ["ADA", "BCH", "BTC", "BTCB", "SOL", "WBTC"]


def test_include_delisted_lists_every_instrument(delisted_api: Client) -> None:
    url = "/api/v2/crypto/instruments/list-symbols?include_delisted=true"
    everything = delisted_api.get(url).json()["symbols"]
    assert everything == ["ADA", "BCH", "BTC", "BTCB", "ETH", "SOL", "WBTC", "XBT"]
    same = delisted_api.get(url.replace("true", "false")).json()["symbols"]
    assert "ETH" not in same


def test_search_finds_a_delisted_instrument_only_when_asked(delisted_api: Client) -> None:
    url = "/api/v2/crypto/instruments/search-instruments/ethereum"
    assert delisted_api.get(url).json() == {"instruments": []}
    found = delisted_api.get(f"{url}?include_delisted=true").json()["instruments"]
    assert [i["symbol"] for i in found] == ["ETH"]


@pytest.mark.parametrize("value", ["yes", "1", "True", ""])
@pytest.mark.parametrize("route", ["list-symbols", "search-instruments/eth"])
def test_include_delisted_is_true_or_false(delisted_api: Client, value: str, route: str) -> None:
    response = delisted_api.get(f"/api/v2/crypto/instruments/{route}?include_delisted={value}")
    assert response.status_code == 422
    assert "'include_delisted'" in response.json()["error"]


def test_a_delisted_instrument_still_answers_its_own_routes(delisted_api: Client) -> None:
    assert delisted_api.get("/api/v2/crypto/instruments/get-detail/eth").status_code == 200
