"""MeteringMiddleware on a tiny Litestar app: order of checks, bodies, headers, charging by status."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import httpx
import msgspec
import pytest
from litestar import Litestar, Request, Response, get
from litestar.exceptions import HTTPException, NotFoundException, ServiceUnavailableException
from litestar.middleware import DefineMiddleware
from litestar.response import Stream

from api.auth import AuthenticationMiddleware
from api.errors import ApiFailure, handle_api_error
from api.metering import MeteringMiddleware, charge_rows, report_points
from api.metering.backends import open_store
from api.metering.config import Limits, MeteringConfig
from api.metering.middleware import unpriced
from api.metering.model import key_id_of
from api.metering.plugin import MeteringPlugin
from api.metering.store import MeteringStore

from .conftest import FakeClock, StoreFactory

pytestmark = pytest.mark.anyio

HEADERS = ("x-tokens-cost", "x-tokens-limit", "x-tokens-limit-today", "x-tokens-remaining",
           "x-tokens-remaining-today")  # fmt: skip
FAILURES = {"NOPE": NotFoundException, "DOWN": ServiceUnavailableException}
GATE: dict[str, asyncio.Event] = {}
"""The slow route waits on GATE["open"]; each test makes its own Event (one per event loop)."""


@get("/api/v1/ping", opt={"operation": "ping", "key": "optional"})
async def ping() -> dict[str, str]:
    return {"text": "pong"}


@get("/api/v1/status")
async def status() -> dict[str, str]:
    return {"status": "ok"}


@get("/api/v2/{market:str}/newsroom/get-recent-briefs/{symbol:str}", opt={"operation": "get-recent-briefs"})  # fmt: skip
async def briefs(request: Request[Any, Any, Any]) -> Any:
    symbol = request.path_params["symbol"]
    if symbol == "CURRENT":  # the client's copy is current: what an If-None-Match match answers
        return Response(content=b"", status_code=304)
    if symbol in FAILURES:
        raise FAILURES[symbol]()
    if symbol in ("BAD", "INVALID"):
        raise HTTPException(status_code=400 if symbol == "BAD" else 422, detail="bad")
    return {"briefs": []}


@get("/api/v2/{market:str}/technical-analysis/get-price-history/{symbol:str}", opt={"operation": "get-price-history"})  # fmt: skip
async def price_history(request: Request[Any, Any, Any]) -> dict[str, int]:
    points = int(request.query_params.get("points", 1600))  # a stand-in for limit/from/to narrowing
    report_points(request, points)
    return {"points": points}


@get("/api/v2/crypto/trades/get-recent-buys", opt={"operation": "get-recent-buys"})
async def slow() -> dict[str, bool]:
    await GATE["open"].wait()
    return {"done": True}


@get("/api/v2/{market:str}/newsroom/stream-briefs/{symbol:str}", opt={"operation": "get-recent-briefs"})  # fmt: skip
async def streamed_briefs() -> Stream:
    async def chunks() -> AsyncIterator[bytes]:
        for part in STREAMED:
            yield part

    return Stream(chunks(), media_type="application/json")


STREAMED = (b'{"briefs":', b"[]", b"}")


@get("/api/v2/{market:str}/bulk/{dataset:str}", opt={"operation": "bulk-export"})
async def bulk(request: Request[Any, Any, Any]) -> Stream:
    """A row-priced route: counts its rows (`rows`), has them charged, then streams."""
    await charge_rows(request, int(request.query_params.get("rows", 0)))

    async def chunks() -> AsyncIterator[bytes]:
        for part in (b"symbol\n", b"BTC\n"):
            yield part

    return Stream(chunks(), media_type="text/csv")


def make_app(store: MeteringStore, config: MeteringConfig) -> Litestar:
    return Litestar(
        route_handlers=[ping, status, briefs, price_history, slow, streamed_briefs, bulk],
        exception_handlers={ApiFailure: handle_api_error},  # what a route raises (charge_rows)
        middleware=[
            DefineMiddleware(AuthenticationMiddleware, store=store),
            DefineMiddleware(MeteringMiddleware, store=store, config=config),
        ],
    )


@asynccontextmanager
async def serving(store: MeteringStore, config: MeteringConfig) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client for the app, served on the test's own loop (concurrent requests allowed)."""
    transport = httpx.ASGITransport(app=cast("Any", make_app(store, config)))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


@pytest.fixture
async def client(
    make_store: StoreFactory, config: MeteringConfig
) -> AsyncIterator[httpx.AsyncClient]:
    """The app on its own store instance, as a server worker apart from the CLI's `store`."""
    async with serving(make_store(), config) as http:
        yield http


@pytest.fixture
async def key(store: MeteringStore) -> str:
    return await store.create_key("sandbox", "middleware")


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def tokens(response: httpx.Response) -> dict[str, int]:
    return {name: int(response.headers[name]) for name in HEADERS}


BRIEFS = "/api/v2/crypto/newsroom/get-recent-briefs/BTC"


async def spent(store: MeteringStore) -> int:
    total = 0
    for record in await store.list_keys():
        entries = await store.ledger(record.key_id)
        total += sum(entry.tokens for entry in entries if entry.kind != "topup")
    return total


# -- authentication ------------------------------------------------------------------------------


async def test_metered_route_without_key_is_401_unauthorized_without_headers(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get(BRIEFS)
    assert response.status_code == 401
    assert response.json() == {"success": False, "message": "unauthorized"}
    assert not any(name in response.headers for name in HEADERS)


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"Bearer",
        b"Bearer ",
        b"Basic dXNlcjpwYXNz",
        b"Token {key}",
        b"{key}",
        b"Bearer {key}x",
        b"Bearer {key}" + b"A" * 300,
        "Bearer {key}é".encode("latin-1"),
        b"Bearer mi_live_0000000000_00000000000000000000000000000000",
    ],
    ids=[
        "empty",
        "scheme-only",
        "scheme-space",
        "basic",
        "wrong-scheme",
        "no-scheme",
        "tampered",
        "very-long",
        "non-ascii",
        "unknown-key",
    ],
)
async def test_malformed_or_unknown_authorization_is_401_and_charges_nothing(
    client: httpx.AsyncClient, store: MeteringStore, key: str, value: bytes
) -> None:
    header = value.replace(b"{key}", key.encode())
    for path in (BRIEFS, "/api/v1/ping"):
        response = await client.get(path, headers=[(b"authorization", header)])
        assert response.status_code == 401, response.text
        assert response.json() == {"success": False, "message": "unauthorized"}
        assert "x-tokens-cost" not in response.headers
    assert await spent(store) == 0


async def test_two_authorization_headers_are_401_even_when_both_name_the_key(
    client: httpx.AsyncClient, store: MeteringStore, key: str
) -> None:
    """Ambiguous credentials are refused, not resolved by picking one; nothing is charged."""
    value = f"Bearer {key}".encode()
    response = await client.get(BRIEFS, headers=[(b"authorization", value)] * 2)
    assert response.status_code == 401
    assert response.json() == {"success": False, "message": "unauthorized"}
    assert "x-tokens-cost" not in response.headers
    assert await spent(store) == 0
    assert (await client.get(BRIEFS, headers=[(b"authorization", value)])).status_code == 200


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
async def test_bearer_scheme_is_case_insensitive(
    client: httpx.AsyncClient, key: str, scheme: str
) -> None:
    response = await client.get(BRIEFS, headers={"Authorization": f"{scheme} {key}"})
    assert response.status_code == 200


async def test_revoked_key_is_refused_on_the_next_request(
    client: httpx.AsyncClient, store: MeteringStore, key: str
) -> None:
    assert (await client.get(BRIEFS, headers=bearer(key))).status_code == 200
    account = await store.authenticate(key)
    assert account is not None
    await store.revoke(account.key_id)  # as `mi keys revoke` does, from another process
    response = await client.get(BRIEFS, headers=bearer(key))
    assert response.status_code == 401
    assert response.json() == {"success": False, "message": "unauthorized"}


# -- ping and public routes ----------------------------------------------------------------------


async def test_ping_without_key_is_free_and_has_no_headers(
    client: httpx.AsyncClient, store: MeteringStore, key: str
) -> None:
    response = await client.get("/api/v1/ping")
    assert response.status_code == 200
    assert response.json() == {"text": "pong"}
    assert "x-tokens-cost" not in response.headers
    assert await spent(store) == 0


async def test_ping_with_valid_key_costs_one_token_and_carries_headers(
    client: httpx.AsyncClient, key: str
) -> None:
    response = await client.get("/api/v1/ping", headers=bearer(key))
    assert response.status_code == 200
    assert tokens(response) == dict(zip(HEADERS, (1, 3000, 1000, 2999, 999), strict=True))


async def test_status_route_is_not_metered(client: httpx.AsyncClient, key: str) -> None:
    response = await client.get("/api/v1/status", headers=bearer(key))
    assert response.status_code == 200
    assert "x-tokens-cost" not in response.headers


async def test_unknown_path_is_404_and_not_charged(
    client: httpx.AsyncClient, store: MeteringStore, key: str
) -> None:
    response = await client.get("/api/v2/crypto/nothing-here", headers=bearer(key))
    assert response.status_code == 404
    assert "x-tokens-cost" not in response.headers
    assert await spent(store) == 0


# -- charging and headers ------------------------------------------------------------------------


async def test_success_carries_the_five_balance_headers(
    client: httpx.AsyncClient, key: str
) -> None:
    response = await client.get(BRIEFS + "?limit=30", headers=bearer(key))
    assert response.status_code == 200
    assert tokens(response) == dict(zip(HEADERS, (5, 3000, 1000, 2995, 995), strict=True))


@pytest.mark.parametrize(
    ("symbol", "status", "net"),
    [("BTC", 200, 3), ("BAD", 400, 3), ("NOPE", 404, 1), ("INVALID", 422, 1), ("DOWN", 503, 1)],
)
async def test_headers_state_the_cost_net_of_same_request_credit(
    client: httpx.AsyncClient, store: MeteringStore, key: str, symbol: str, status: int, net: int
) -> None:
    response = await client.get(
        f"/api/v2/crypto/newsroom/get-recent-briefs/{symbol}", headers=bearer(key)
    )
    assert response.status_code == status
    assert tokens(response) == dict(
        zip(HEADERS, (net, 3000, 1000, 3000 - net, 1000 - net), strict=True)
    )
    assert await spent(store) == net


async def test_a_304_is_free_yet_admitted_like_any_request(
    client: httpx.AsyncClient, store: MeteringStore, key: str
) -> None:
    """decisions.md, Conditional requests: 0 tokens with the balance headers; it still goes through
    the admit (so it counts toward the rate and connection limits), then is credited in full."""
    response = await client.get(
        "/api/v2/crypto/newsroom/get-recent-briefs/CURRENT", headers=bearer(key)
    )
    assert response.status_code == 304
    assert tokens(response) == dict(zip(HEADERS, (0, 3000, 1000, 3000, 1000), strict=True))
    entries = await store.ledger(key_id_of(key) or "")
    assert [(e.kind, e.status, e.tokens) for e in entries] == [
        ("charge", 0, 3),
        ("credit", 304, -3),
    ]
    assert await spent(store) == 0


@pytest.mark.parametrize(
    ("query", "cost"),
    [
        ("", 5),
        ("?limit=10&points=10", 2),
        ("?limit=200&points=200", 4),
        ("?points=50", 3),
        ("?points=30", 2),
        ("?limit=30&points=60", 2),
    ],
)
async def test_price_history_is_charged_by_points_returned_never_above_the_up_front_cost(
    client: httpx.AsyncClient, key: str, query: str, cost: int
) -> None:
    response = await client.get(
        f"/api/v2/crypto/technical-analysis/get-price-history/BTC{query}", headers=bearer(key)
    )
    assert response.status_code == 200
    assert int(response.headers["x-tokens-cost"]) == cost
    assert int(response.headers["x-tokens-remaining"]) == 3000 - cost


async def test_token_limit_401_has_code_upgrade_url_and_zero_cost_headers(
    client: httpx.AsyncClient, store: MeteringStore, config: MeteringConfig, key: str
) -> None:
    account = await store.authenticate(key)
    assert account is not None
    admission = await store.admit(account, "bulk", 998)
    assert admission.charge is not None
    await store.settle(admission.charge, 200)
    response = await client.get(BRIEFS, headers=bearer(key))
    assert response.status_code == 401
    assert response.json() == {
        "success": False,
        "error_code": "DAILY_TOKEN_LIMIT",
        "limit_type": "daily",
        "upgrade_url": config.upgrade_url,
        "message": "daily token limit reached",
    }
    assert tokens(response) == dict(zip(HEADERS, (0, 3000, 1000, 2002, 2), strict=True))
    assert await spent(store) == 998


async def test_monthly_token_limit_401(
    client: httpx.AsyncClient, store: MeteringStore, clock: FakeClock, key: str
) -> None:
    account = await store.authenticate(key)
    assert account is not None
    for _ in range(3):
        admission = await store.admit(account, "bulk", 1000)
        assert admission.charge is not None
        await store.settle(admission.charge, 200)
        clock.advance(86_400)
    response = await client.get(BRIEFS, headers=bearer(key))
    assert response.status_code == 401
    assert response.json()["error_code"] == "MONTHLY_TOKEN_LIMIT"
    assert response.json()["limit_type"] == "monthly"


# -- limits --------------------------------------------------------------------------------------


async def test_301st_request_in_a_minute_is_429_with_retry_after_and_no_charge(
    client: httpx.AsyncClient, store: MeteringStore, clock: FakeClock
) -> None:
    key = await store.create_key("quant")
    for _ in range(300):
        assert (await client.get("/api/v1/ping", headers=bearer(key))).status_code == 200
    clock.advance(20)
    response = await client.get("/api/v1/ping", headers=bearer(key))
    assert response.status_code == 429
    assert response.json() == {
        "success": False,
        "message": "rate limit exceeded: at most 300 requests per 60 seconds",
    }
    assert response.headers["retry-after"] == "40"
    assert tokens(response)["x-tokens-cost"] == 0
    assert tokens(response)["x-tokens-remaining"] == 250_000 - 300


async def test_the_429_message_names_the_configured_limits(
    store_url: str, config: MeteringConfig, clock: FakeClock
) -> None:
    """An operator's [limits] are what a refused client reads, not the defaults."""
    tight = msgspec.structs.replace(config, limits=Limits(requests_per_window=2, window_seconds=30))
    store = open_store(store_url, tight, clock)
    try:
        key = await store.create_key("quant")
        async with serving(store, tight) as client:
            for _ in range(2):
                assert (await client.get("/api/v1/ping", headers=bearer(key))).status_code == 200
            response = await client.get("/api/v1/ping", headers=bearer(key))
    finally:
        await store.close()
    assert response.status_code == 429
    assert response.json()["message"] == "rate limit exceeded: at most 2 requests per 30 seconds"


async def test_11th_simultaneous_request_is_429(
    client: httpx.AsyncClient, store: MeteringStore, key: str
) -> None:
    GATE["open"] = asyncio.Event()
    path = "/api/v2/crypto/trades/get-recent-buys"
    in_flight = [asyncio.create_task(client.get(path, headers=bearer(key))) for _ in range(10)]
    for _ in range(200):
        if await spent(store) == 30:
            break
        await asyncio.sleep(0.01)
    response = await client.get(path, headers=bearer(key))
    assert response.status_code == 429
    assert int(response.headers["retry-after"]) >= 1
    assert tokens(response)["x-tokens-cost"] == 0
    GATE["open"].set()
    assert [done.status_code for done in await asyncio.gather(*in_flight)] == [200] * 10
    assert (await client.get(path, headers=bearer(key))).status_code == 200


def crypto_only(config: MeteringConfig, plan: str) -> MeteringConfig:
    """`config` with `plan` entitled to the crypto market only."""
    narrowed = msgspec.structs.replace(config.plans[plan], markets=("crypto",))
    return msgspec.structs.replace(config, plans={**config.plans, plan: narrowed})


async def test_plan_without_the_market_is_402_after_authentication_and_limits(
    store: MeteringStore, config: MeteringConfig
) -> None:
    key = await store.create_key("sandbox")
    async with serving(store, crypto_only(config, "sandbox")) as client:
        forex = "/api/v2/forex/newsroom/get-recent-briefs/EURUSD"
        assert (await client.get(forex)).status_code == 401  # authentication first
        response = await client.get(forex, headers=bearer(key))
        assert response.status_code == 402
        assert response.json()["success"] is False
        assert "forex" in response.json()["message"]
        assert tokens(response) == dict(zip(HEADERS, (0, 3000, 1000, 3000, 1000), strict=True))
        assert (await client.get(BRIEFS, headers=bearer(key))).status_code == 200


async def test_the_market_entitlement_reads_any_spelling_and_leaves_unknown_markets_to_404(
    store: MeteringStore, config: MeteringConfig
) -> None:
    """A real market in another case is still outside the plan (402); a market that does not
    exist is left to the route (its 404), never the plan's 402."""
    key = await store.create_key("sandbox")
    async with serving(store, crypto_only(config, "sandbox")) as client:
        shouted = await client.get(
            "/api/v2/FOREX/newsroom/get-recent-briefs/EURUSD", headers=bearer(key)
        )
        assert shouted.status_code == 402
        unknown = await client.get(
            "/api/v2/mars/newsroom/get-recent-briefs/EURUSD", headers=bearer(key)
        )
        assert unknown.status_code != 402
        crypto = await client.get(
            "/api/v2/Crypto/newsroom/get-recent-briefs/BTC", headers=bearer(key)
        )
        assert crypto.status_code != 402


async def test_internal_plan_headers_mark_unlimited(client: httpx.AsyncClient, store: MeteringStore) -> None:  # fmt: skip
    key = await store.create_key("internal")
    response = await client.get(BRIEFS, headers=bearer(key))
    assert tokens(response) == dict(zip(HEADERS, (3, -1, -1, -1, -1), strict=True))


# -- fail closed ---------------------------------------------------------------------------------


async def test_unreachable_store_answers_503_with_retry_after(config: MeteringConfig) -> None:
    down = open_store("redis://127.0.0.1:1/0", config)
    async with serving(down, config) as client:
        key = "mi_live_" + "a" * 10 + "_" + "b" * 32
        response = await client.get(BRIEFS, headers=bearer(key))
        assert response.status_code == 503
        assert int(response.headers["retry-after"]) >= 1
        assert "error" in response.json()
        assert (await client.get("/api/v1/status")).status_code == 200
    await down.close()


async def test_a_key_whose_plan_the_config_no_longer_has_is_503_and_charged_nothing(
    store_url: str, store: MeteringStore, config: MeteringConfig, clock: FakeClock
) -> None:
    """A deploy that removed a plan while keys still hold it: the service cannot price their
    requests, so it answers 503 in the spec's envelope (never 500), serves nothing, charges
    nothing; the other plans' keys are served as before."""
    stranded, kept = await store.create_key("sandbox"), await store.create_key("quant")
    without = {name: plan for name, plan in config.plans.items() if name != "sandbox"}
    narrowed = msgspec.structs.replace(config, plans=without)
    deployed = open_store(store_url, narrowed, clock)
    try:
        async with serving(deployed, narrowed) as client:
            response = await client.get(BRIEFS, headers=bearer(stranded))
            assert response.status_code == 503
            assert response.json() == {"error": unpriced("sandbox")}
            assert int(response.headers["retry-after"]) >= 1
            assert (await client.get(BRIEFS, headers=bearer(kept))).status_code == 200
        assert await spent(store) == 3  # the quant key's request only
    finally:
        await deployed.close()


# -- wiring --------------------------------------------------------------------------------------


async def test_plugin_wires_the_middleware_and_reports_store_health(
    make_store: StoreFactory, store: MeteringStore, config: MeteringConfig
) -> None:
    plugin = MeteringPlugin(make_store(), config)
    app = Litestar(route_handlers=[ping, briefs], plugins=[plugin])
    key = await store.create_key("pro")
    transport = httpx.ASGITransport(app=cast("Any", app))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        assert (await client.get(BRIEFS)).status_code == 401
        response = await client.get(BRIEFS, headers=bearer(key))
        assert int(response.headers["x-tokens-cost"]) == 3
    check = await plugin.health_check.run()
    assert (check.status, plugin.health_check.name) == ("ok", "metering")


async def test_health_check_fails_when_the_store_is_unreachable(config: MeteringConfig) -> None:
    plugin = MeteringPlugin(open_store("redis://127.0.0.1:1/0", config), config)
    check = await plugin.health_check.run()
    assert (check.status, check.latency_ms) == ("error", None)
    await plugin.store.close()


# -- the held response ---------------------------------------------------------------------------


async def test_a_streamed_response_is_settled_on_its_first_chunk_and_passed_through_whole(
    client: httpx.AsyncClient, store: MeteringStore, key: str
) -> None:
    """A route that streams (more_body) is not held: the settle runs on its first chunk, the balance
    headers go out with it, and every chunk follows unchanged; it costs what the same operation
    costs unstreamed, and the ledger has its charge and its settle with the status."""
    plain = await client.get(BRIEFS, headers=bearer(key))
    response = await client.get("/api/v2/crypto/newsroom/stream-briefs/BTC", headers=bearer(key))
    assert response.status_code == 200
    assert response.content == b"".join(STREAMED)
    assert tokens(response)["x-tokens-cost"] == tokens(plain)["x-tokens-cost"] > 0
    assert tokens(response)["x-tokens-remaining"] == (
        tokens(plain)["x-tokens-remaining"] - tokens(plain)["x-tokens-cost"]
    )
    account = await store.authenticate(key)
    assert account is not None
    entries = await store.ledger(account.key_id)
    assert [(e.kind, e.status) for e in entries][-2:] == [("charge", 0), ("settle", 200)]


class _Handler:
    """What the middleware reads of a Litestar route handler: its `opt`."""

    def __init__(self) -> None:
        self.opt = {"operation": "get-recent-briefs"}


async def sent_by_a_route_that_raises_after_starting(
    store: MeteringStore, config: MeteringConfig, key: str
) -> list[Any]:
    """What the middleware sent for a route that starts its answer, then raises (re-raised)."""

    async def breaks_midway(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("after the start, before the body")

    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {
        "type": "http",
        "route_handler": _Handler(),
        "headers": [(b"authorization", f"Bearer {key}".encode())],
        "path_params": {"market": "crypto", "symbol": "BTC"},
        "query_string": b"",
    }
    metering = MeteringMiddleware(breaks_midway, store=store, config=config)
    middleware = AuthenticationMiddleware(metering, store=store)
    with pytest.raises(RuntimeError, match="after the start"):
        await middleware(cast("Any", scope), receive, send)
    return sent


async def test_a_route_that_raises_after_starting_its_answer_sends_nothing_and_bills_a_failure(
    store: MeteringStore, config: MeteringConfig, key: str
) -> None:
    """The held start never goes out when the route then raises: the server answers its own 500,
    and the ledger has the charge credited down to the failure floor (1 token, status 500)."""
    assert await sent_by_a_route_that_raises_after_starting(store, config, key) == []
    account = await store.authenticate(key)
    assert account is not None
    entries = await store.ledger(account.key_id)
    assert [(e.kind, e.status) for e in entries] == [("charge", 0), ("credit", 500)]
    assert sum(e.tokens for e in entries) == 1


# -- plans without limits: the route first, then one record step --------------------------------


async def ledger_rows(store: MeteringStore, key: str) -> list[tuple[str, str, int, int]]:
    key_id = key_id_of(key)
    assert key_id is not None
    return [(e.kind, e.route, e.status, e.tokens) for e in await store.ledger(key_id)]


async def test_a_plan_without_limits_is_charged_by_status_in_one_settled_row(
    client: httpx.AsyncClient, store: MeteringStore
) -> None:
    """Nothing to check before the work: each request is one ledger row, recorded before its
    response goes out, at the same net cost by status as the two-step path charges."""
    key = await store.create_key("internal")
    expected = {
        BRIEFS: (200, 3),
        "/api/v2/crypto/newsroom/get-recent-briefs/NOPE": (404, 1),
        "/api/v2/crypto/newsroom/get-recent-briefs/BAD": (400, 3),
        "/api/v2/crypto/newsroom/get-recent-briefs/INVALID": (422, 1),
        "/api/v2/crypto/newsroom/get-recent-briefs/DOWN": (503, 1),
        "/api/v2/crypto/technical-analysis/get-price-history/BTC?points=30": (200, 2),
    }
    for path, (status, cost) in expected.items():
        response = await client.get(path, headers=bearer(key))
        assert response.status_code == status
        assert tokens(response) == dict(zip(HEADERS, (cost, -1, -1, -1, -1), strict=True))
    routes = ["get-recent-briefs"] * 5 + ["get-price-history"]
    assert await ledger_rows(store, key) == [
        ("charge", route, status, cost)
        for route, (status, cost) in zip(routes, expected.values(), strict=True)
    ]


async def test_a_plan_without_limits_records_nothing_before_its_route_and_has_no_slot_limit(
    client: httpx.AsyncClient, store: MeteringStore
) -> None:
    GATE["open"] = asyncio.Event()
    key = await store.create_key("internal")
    path = "/api/v2/crypto/trades/get-recent-buys"
    waiting = [asyncio.create_task(client.get(path, headers=bearer(key))) for _ in range(15)]
    await asyncio.sleep(0.1)  # all fifteen are inside the route, none recorded yet
    assert await ledger_rows(store, key) == []
    GATE["open"].set()
    assert [done.status_code for done in await asyncio.gather(*waiting)] == [200] * 15
    assert len(await ledger_rows(store, key)) == 15


async def test_a_key_revoked_while_its_route_runs_gets_401_and_the_answer_is_dropped(
    client: httpx.AsyncClient, store: MeteringStore
) -> None:
    """The record step checks revocation with the charge: the finished response is not sent."""
    GATE["open"] = asyncio.Event()
    key = await store.create_key("internal")
    assert (await client.get(BRIEFS, headers=bearer(key))).status_code == 200  # key now cached
    path = "/api/v2/crypto/trades/get-recent-buys"
    running = asyncio.create_task(client.get(path, headers=bearer(key)))
    await asyncio.sleep(0.05)
    account = await store.authenticate(key)
    assert account is not None
    await store.revoke(account.key_id)
    GATE["open"].set()
    response = await running
    assert response.status_code == 401
    assert response.json() == {"success": False, "message": "unauthorized"}
    assert not any(name in response.headers for name in HEADERS)
    assert await ledger_rows(store, key) == [("charge", "get-recent-briefs", 200, 3)]


async def test_a_plan_without_limits_gets_503_and_nothing_when_the_record_cannot_commit(
    tmp_path: Path, config: MeteringConfig
) -> None:
    """Fail closed after the work too: the held response is dropped for the store's 503."""
    store = open_store(f"sqlite://{tmp_path / 'metering.sqlite3'}", config)
    key = await store.create_key("internal")
    async with serving(store, config) as client:
        assert (await client.get(BRIEFS, headers=bearer(key))).status_code == 200
        await store.close()  # the key stays cached; every store step now fails
        response = await client.get(BRIEFS, headers=bearer(key))
    assert response.status_code == 503
    assert response.json() == {"error": "token accounting is temporarily unavailable; retry later"}
    assert response.headers["retry-after"] == "5"
    assert not any(name in response.headers for name in HEADERS)


async def test_a_streamed_answer_of_a_plan_without_limits_is_recorded_on_its_first_chunk(
    client: httpx.AsyncClient, store: MeteringStore
) -> None:
    key = await store.create_key("internal")
    response = await client.get("/api/v2/crypto/newsroom/stream-briefs/BTC", headers=bearer(key))
    assert response.status_code == 200
    assert response.content == b"".join(STREAMED)
    assert tokens(response)["x-tokens-cost"] == 3
    assert await ledger_rows(store, key) == [("charge", "get-recent-briefs", 200, 3)]


async def test_a_route_of_a_plan_without_limits_that_raises_sends_nothing_and_bills_a_failure(
    store: MeteringStore, config: MeteringConfig
) -> None:
    key = await store.create_key("internal")
    assert await sent_by_a_route_that_raises_after_starting(store, config, key) == []
    assert await ledger_rows(store, key) == [("charge", "get-recent-briefs", 500, 1)]


async def test_a_plan_without_limits_but_without_the_market_is_402_at_no_cost(
    store: MeteringStore, config: MeteringConfig
) -> None:
    key = await store.create_key("internal")
    async with serving(store, crypto_only(config, "internal")) as client:
        response = await client.get(
            "/api/v2/forex/newsroom/get-recent-briefs/EURUSD", headers=bearer(key)
        )
    assert response.status_code == 402
    assert tokens(response) == dict(zip(HEADERS, (0, -1, -1, -1, -1), strict=True))
    assert await ledger_rows(store, key) == [("charge", "get-recent-briefs", 402, 0)]


async def test_a_plan_with_a_budget_but_no_rate_limits_still_takes_the_two_step_path(
    store_url: str, config: MeteringConfig
) -> None:
    """`limited = false` lifts rate and connection limits only: a budget is checked before the work."""
    budgeted = msgspec.structs.replace(config.plans["internal"], monthly_budget=100, daily_cap=50)
    with_budget = msgspec.structs.replace(config, plans={**config.plans, "internal": budgeted})
    store = open_store(store_url, with_budget)
    try:
        key = await store.create_key("internal")
        async with serving(store, with_budget) as client:
            response = await client.get(BRIEFS, headers=bearer(key))
        assert tokens(response) == dict(zip(HEADERS, (3, 100, 50, 97, 47), strict=True))
        assert [row[0] for row in await ledger_rows(store, key)] == ["charge", "settle"]
    finally:
        await store.close()


# -- costs counted from the rows returned (bulk export) --------------------------------------------

BULK = "/api/v2/crypto/bulk/daily-prices"


@pytest.mark.parametrize(("rows", "cost"), [(0, 10), (9_000, 10), (25_500, 26)])
async def test_a_row_priced_route_is_charged_for_its_rows_before_its_body_is_sent(
    client: httpx.AsyncClient, store: MeteringStore, rows: int, cost: int
) -> None:
    key = await store.create_key("quant")
    response = await client.get(f"{BULK}?rows={rows}", headers=bearer(key))
    assert response.status_code == 200
    assert response.content == b"symbol\nBTC\n"
    assert tokens(response) == dict(
        zip(HEADERS, (cost, 250_000, 25_000, 250_000 - cost, 25_000 - cost), strict=True)
    )
    charges = [row[3] for row in await ledger_rows(store, key) if row[0] == "charge"]
    assert charges == ([10, cost - 10] if cost > 10 else [10])


async def test_rows_that_do_not_fit_the_balance_answer_the_token_limit_401_and_charge_nothing(
    client: httpx.AsyncClient, store: MeteringStore
) -> None:
    key = await store.create_key("quant")
    account = await store.authenticate(key)
    assert account is not None
    admission = await store.admit(account, "spent", 24_980)
    assert admission.charge is not None
    await store.settle(admission.charge, 200)
    response = await client.get(f"{BULK}?rows=25_500", headers=bearer(key))
    assert response.status_code == 401
    assert response.json()["error_code"] == "DAILY_TOKEN_LIMIT"
    assert tokens(response) == dict(zip(HEADERS, (0, 250_000, 25_000, 225_020, 20), strict=True))
    assert (await client.get(f"{BULK}?rows=20_000", headers=bearer(key))).status_code == 200


async def test_a_plan_that_excludes_the_operation_is_402_at_no_cost(
    client: httpx.AsyncClient, store: MeteringStore, key: str
) -> None:
    """decisions.md, Bulk export: sandbox answers 402, after authentication and limits."""
    response = await client.get(f"{BULK}?rows=5", headers=bearer(key))
    assert response.status_code == 402
    assert response.json() == {
        "success": False,
        "message": "your plan (sandbox) does not include bulk-export",
    }
    assert tokens(response) == dict(zip(HEADERS, (0, 3000, 1000, 3000, 1000), strict=True))


async def test_a_plan_without_limits_is_charged_the_whole_row_cost_in_one_row(
    client: httpx.AsyncClient, store: MeteringStore
) -> None:
    key = await store.create_key("internal")
    response = await client.get(f"{BULK}?rows=42_001", headers=bearer(key))
    assert response.status_code == 200
    assert tokens(response) == dict(zip(HEADERS, (43, -1, -1, -1, -1), strict=True))
    assert await ledger_rows(store, key) == [("charge", "bulk-export", 200, 43)]
