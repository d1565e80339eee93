"""Serving: bytes built once per data version, ETag per version and parameters, 304, new versions."""

from __future__ import annotations

import time

from litestar import Litestar
from litestar.testing import TestClient

from tests.api.routes.conftest import ClientFor, Warehouse, prices_frame

Client = TestClient[Litestar]
URL = "/api/v2/crypto/technical-analysis/get-price-history/BTC"


def wait_for(client: Client, url: str, etag: str, seconds: float = 5.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        current = client.get(url).headers["ETag"]
        if current != etag:
            return current
        time.sleep(0.05)
    raise AssertionError("the new data version was not picked up")


def test_a_200_carries_an_etag_that_differs_by_parameters(api: Client) -> None:
    full, limited = api.get(URL), api.get(f"{URL}?limit=2")
    assert full.headers["ETag"].startswith('"v1-')
    assert full.headers["ETag"] != limited.headers["ETag"]
    assert api.get(URL).headers["ETag"] == full.headers["ETag"]


def test_if_none_match_with_the_current_etag_is_a_304_without_body(api: Client) -> None:
    etag = api.get(URL).headers["ETag"]
    response = api.get(URL, headers={"If-None-Match": f'"other", {etag}'})
    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["ETag"] == etag


def test_a_stale_etag_gets_the_full_body(api: Client) -> None:
    response = api.get(URL, headers={"If-None-Match": '"v0-0000"'})
    assert response.status_code == 200
    assert len(response.json()["price_history"]) == 10


def test_normalized_parameters_share_one_cached_body(api: Client) -> None:
    lower = api.get(URL.replace("BTC", "btc"))
    assert lower.headers["ETag"] == api.get(URL).headers["ETag"]
    clamped = api.get("/api/v2/crypto/instruments/list-symbols?limit=5000")
    assert (
        clamped.headers["ETag"]
        == api.get("/api/v2/crypto/instruments/list-symbols?limit=1000").headers["ETag"]
    )


def test_a_new_manifest_version_is_served_without_restart(
    base_warehouse: Warehouse, client_for: ClientFor
) -> None:
    client = client_for()
    etag = client.get(URL).headers["ETag"]
    base_warehouse.publish(daily_prices=prices_frame([1.0, 2.0]))
    new_etag = wait_for(client, URL, etag)
    assert new_etag.startswith('"v2-')
    assert [p["price"] for p in client.get(URL).json()["price_history"]] == [1.0, 2.0]
    assert client.get(URL, headers={"If-None-Match": etag}).status_code == 200
