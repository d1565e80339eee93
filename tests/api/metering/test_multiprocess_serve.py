"""Metering through the real server: `mi serve --workers 2` (granian), one key, many clients.

One server per backend (SQLite file, Redis) serves every test of this module; each test has its own
key, so their rate windows, slots and budgets are apart. Invariants are read from the responses'
balance headers and from the store's ledger (opened by the test as a third process).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import httpx
import pytest
import redis

from api.metering.backends import open_store
from api.metering.config import load_config
from api.metering.model import Account
from api.metering.store import MeteringStore
from api.settings import ApiSettings

from .conftest import (
    BAD_STRATEGY,
    BALANCE_HEADERS,
    IN_FLIGHT_MESSAGE,
    NOT_MATERIALIZED,
    PING,
    REDIS_URL,
    MiServer,
    assert_refused_in_flight,
    hold_in_flight,
    mi_keys_create,
    mi_serve,
    open_charges,
    publish_prices,
    tokens,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RATE_MESSAGE = "rate limit exceeded: at most 300 requests per 60 seconds"


@dataclass
class Served:
    server: MiServer
    env: dict[str, str]
    url: str
    """The metering store URL the server and `mi keys` use."""


@pytest.fixture(scope="module", params=["sqlite", "redis"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:  # fmt: skip
    """`mi serve --workers 2` on an empty data dir (routes needing tables answer 503)."""
    root = tmp_path_factory.mktemp(f"serve-{request.param}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MI_METERING_")}
    env["MI_DATA_DIR"] = str(root / "data")
    publish_prices(ApiSettings(data_dir=root / "data").warehouse_dir)
    prefix = f"mi:test:{uuid.uuid4().hex}:"
    if request.param == "redis":
        url = f"{REDIS_URL}?prefix={prefix}"
        env["MI_METERING_URL"] = url
    else:
        url = f"sqlite://{root / 'data' / 'metering.sqlite3'}"
    try:
        with mi_serve(env, root / "serve.log") as server:
            yield Served(server, env, url)
    finally:
        if request.param == "redis":
            client = redis.Redis.from_url(REDIS_URL)
            keys = list(client.scan_iter(match=f"{prefix}*"))
            if keys:
                client.delete(*keys)
            client.close()


@pytest.fixture
async def store(served: Served) -> AsyncIterator[MeteringStore]:
    """The store the server's workers use, opened by the test (the operator's view)."""
    opened = open_store(served.url, load_config())
    yield opened
    await opened.close()


async def new_key(store: MeteringStore, plan: str, key: str | None = None) -> tuple[str, Account]:
    """A key made with the store API (`key`: one made otherwise, e.g. by `mi keys create`)."""
    key = key or await store.create_key(plan, "e2e")
    account = await store.authenticate(key)
    assert account is not None
    return key, account


async def fire(served: Served, key: str, paths: list[str], connections: int) -> list[httpx.Response]:  # fmt: skip
    """All `paths` at once over up to `connections` parallel connections."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=served.server.base, limits=limits, timeout=60) as http:
        return list(await asyncio.gather(*(http.get(path, headers=headers) for path in paths)))


async def test_hundreds_of_parallel_requests_on_two_workers_never_overspend(
    served: Served, store: MeteringStore
) -> None:
    """A sandbox key with 150 tokens left today takes 400 requests at once (64 connections).

    Asserted: every response carries the balance headers with the cost its status calls for;
    no remaining is ever below zero; sum of x-tokens-cost == ledger sum == drop in both remainders;
    replaying the ledger, never more than 10 charges are open at once (in flight), and every
    charge is settled; the budget ends exhausted (token-limit 401s) and what is left is exact.
    """
    budget = 150
    key, account = await new_key(store, "sandbox", mi_keys_create(served.env, "sandbox"))
    drain = await store.admit(account, "drain", 1000 - budget)  # leaves 150 tokens for today
    assert drain.charge is not None
    await store.settle(drain.charge, 200)
    before = await store.balance(account)
    assert before.remaining_today == budget
    start = len(await store.ledger(account.key_id))

    kinds = [PING, BAD_STRATEGY.format(years=1), BAD_STRATEGY.format(years=5), NOT_MATERIALIZED]
    expected = {(PING, 200): 1, (kinds[1], 400): 8, (kinds[2], 400): 16, (NOT_MATERIALIZED, 503): 1}
    paths = [kinds[index % len(kinds)] for index in range(400)]
    responses = await fire(served, key, paths, connections=64)

    statuses: Counter[int] = Counter()
    for path, response in zip(paths, responses, strict=True):
        statuses[response.status_code] += 1
        balance = tokens(response)  # every response of a valid key carries the five headers
        assert balance["x-tokens-limit"] == 3000
        assert balance["x-tokens-limit-today"] == 1000
        assert balance["x-tokens-remaining"] >= 0
        assert balance["x-tokens-remaining-today"] >= 0
        if response.status_code == 401:
            assert response.json()["error_code"] == "DAILY_TOKEN_LIMIT"
            assert balance["x-tokens-cost"] == 0
        elif response.status_code == 429:
            assert response.json() == {"success": False, "message": IN_FLIGHT_MESSAGE}
            assert int(response.headers["retry-after"]) >= 1
            assert balance["x-tokens-cost"] == 0
        else:
            assert balance["x-tokens-cost"] == expected[path, response.status_code], response.text
    assert statuses[401] > 0, statuses  # the budget was exhausted
    assert set(statuses) <= {200, 400, 401, 429, 503}, statuses

    after = await store.balance(account)
    entries = (await store.ledger(account.key_id))[start:]
    cost = sum(tokens(response)["x-tokens-cost"] for response in responses)
    assert cost == sum(entry.tokens for entry in entries)
    assert cost == before.remaining_today - after.remaining_today
    assert cost == before.remaining - after.remaining
    assert cost <= budget
    replay = list(open_charges(entries))
    assert max(replay) <= 10
    assert replay[-1] == 0  # every charge settled
    assert sum(entry.kind == "charge" for entry in entries) == sum(
        statuses[status] for status in (200, 400, 503)
    )
    # What is left is exactly spendable, and not a token more.
    async with httpx.AsyncClient(base_url=served.server.base, timeout=30) as http:
        served_pings = 0
        while (await http.get(PING, headers={"Authorization": f"Bearer {key}"})).status_code == 200:
            served_pings += 1
            assert served_pings <= budget
    assert served_pings == after.remaining_today


async def test_the_11th_request_in_flight_is_refused_and_never_admitted(
    served: Served, store: MeteringStore
) -> None:
    """Ten requests of one quant key held in flight (admitted through the store by this test, as
    another worker would, and not yet settled): the 11th, sent to the server, answers 429 with
    Retry-After and costs 0; once one of the ten settles, the next is served.

    Then 150 simultaneous pings over 150 connections to the two workers: every answer is a 200 or
    that 429, and the ledger (a charge opens a slot, its settle frees it) never shows more than
    10 open. (How many overlap depends on the burst's timing, so the refusal itself is checked
    with the held slots above, not expected of the burst.)
    """
    key, account = await new_key(store, "quant")
    headers = {"Authorization": f"Bearer {key}"}
    held = await hold_in_flight(store, account)
    async with httpx.AsyncClient(base_url=served.server.base, timeout=30) as http:
        assert_refused_in_flight(await http.get(PING, headers=headers))
        await store.settle(held.pop(), 200)
        assert (await http.get(PING, headers=headers)).status_code == 200
    for charge in held:
        await store.settle(charge, 200)

    responses = await fire(served, key, [PING] * 150, connections=150)
    statuses = Counter(response.status_code for response in responses)
    assert set(statuses) <= {200, 429}, statuses
    for response in responses:
        if response.status_code == 429:
            assert response.json() == {"success": False, "message": IN_FLIGHT_MESSAGE}
            assert response.headers["retry-after"] == "1"
            assert tokens(response)["x-tokens-cost"] == 0
        else:
            assert tokens(response)["x-tokens-cost"] == 1
    entries = await store.ledger(account.key_id)
    replay = list(open_charges(entries))
    assert max(replay) == 10  # the ten held slots; the burst never went above them
    assert replay[-1] == 0
    served_total = 10 + 1 + statuses[200]  # held, the one after, the burst's
    assert sum(entry.tokens for entry in entries) == served_total
    assert (await store.balance(account)).remaining == 250_000 - served_total


async def test_the_301st_request_in_a_minute_is_429_with_retry_after(
    served: Served, store: MeteringStore
) -> None:
    """300 pings (8 at a time, so never 11 in flight) are all served; the 301st and 302nd get the
    rate 429 with Retry-After in 1..60 and cost nothing; exactly 300 tokens are in the ledger."""
    key, account = await new_key(store, "quant")
    headers = {"Authorization": f"Bearer {key}"}
    gate = asyncio.Semaphore(8)
    async with httpx.AsyncClient(base_url=served.server.base, timeout=60) as http:

        async def ping() -> httpx.Response:
            async with gate:
                return await http.get(PING, headers=headers)

        first = await asyncio.gather(*(ping() for _ in range(300)))
        assert Counter(response.status_code for response in first) == {200: 300}
        remaining = [tokens(response)["x-tokens-remaining"] for response in first]
        assert min(remaining) == 250_000 - 300  # the last settle sees all 300 charges
        assert max(remaining) < 250_000
        for _ in range(2):  # a refused request takes no slot: the next is refused too
            refused = await http.get(PING, headers=headers)
            assert refused.status_code == 429
            assert refused.json() == {"success": False, "message": RATE_MESSAGE}
            assert 1 <= int(refused.headers["retry-after"]) <= 60
            assert tokens(refused)["x-tokens-cost"] == 0
            assert tokens(refused)["x-tokens-remaining"] == 250_000 - 300
    entries = await store.ledger(account.key_id)
    assert sum(entry.tokens for entry in entries) == 300
    assert Counter(entry.kind for entry in entries) == {"charge": 300, "settle": 300}


def raw_get(port: int, path: str, authorization: bytes) -> tuple[int, dict[str, str], bytes]:
    """A GET with an Authorization header of arbitrary bytes (httpx would refuse non-ASCII)."""
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n".encode()
        + b"Authorization: "
        + authorization
        + b"\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(request)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines)
    }
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"Bearer",
        b"Basic dXNlcjpwYXNz",
        b"Token {key}",
        b"{key}",
        b"Bearer {key}" + b"A" * 4000,
        "Bearer {key}é".encode(),
        "Bearer {key}é".encode("latin-1"),
        "Bearer ключ".encode(),
    ],
    ids=[
        "empty",
        "scheme-only",
        "basic",
        "wrong-scheme",
        "no-scheme",
        "very-long",
        "non-ascii-utf8",
        "non-ascii-latin1",
        "cyrillic",
    ],
)
async def test_malformed_authorization_through_the_server_is_401_and_charges_nothing(
    served: Served, store: MeteringStore, value: bytes
) -> None:
    key, account = await new_key(store, "sandbox")
    header = value.replace(b"{key}", key.encode())
    for path in (PING, NOT_MATERIALIZED):
        status, headers, body = raw_get(served.server.port, path, header)
        assert status == 401, body
        assert json.loads(body) == {"success": False, "message": "unauthorized"}
        assert not any(name in headers for name in BALANCE_HEADERS)
    assert await store.ledger(account.key_id) == []
    assert (await store.balance(account)).remaining_today == 1000
