"""Several API hosts, one Redis metering store: the limits of a key hold across hosts as on one.

Two `mi serve` processes stand for two hosts: each binds its own loopback address (127.0.0.1 and
127.0.0.2), has its own data directory (its own copy of the warehouse) and shares nothing with the
other but `MI_METERING_URL`. Requests for one key are spread over both, alternating, as a
round-robin load balancer would; the test reads the ledger from the store as a third process.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

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
    IN_FLIGHT_MESSAGE,
    NOT_MATERIALIZED,
    PING,
    REDIS_URL,
    MiServer,
    assert_refused_in_flight,
    hold_in_flight,
    mi_serve,
    open_charges,
    publish_prices,
    tokens,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOSTS = ("127.0.0.1", "127.0.0.2")
RATE_MESSAGE = "rate limit exceeded: at most 300 requests per 60 seconds"


@dataclass
class Cluster:
    servers: list[MiServer]
    url: str
    """The Redis metering URL every host uses."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One `mi serve` per loopback address, each with its own data dir, one shared Redis prefix."""
    prefix = f"mi:test:{uuid.uuid4().hex}:"
    url = f"{REDIS_URL}?prefix={prefix}"
    try:
        with ExitStack() as stack:
            servers = [stack.enter_context(_host(tmp_path_factory, host, url)) for host in HOSTS]
            assert len({server.base for server in servers}) == len(HOSTS)
            yield Cluster(servers, url)
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
        client.close()


def _host(factory: pytest.TempPathFactory, host: str, url: str) -> Iterator[MiServer]:
    root = factory.mktemp(f"host-{host}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MI_METERING_")}
    env |= {"MI_DATA_DIR": str(root / "data"), "MI_METERING_URL": url}
    publish_prices(ApiSettings(data_dir=root / "data").warehouse_dir)
    return mi_serve(env, Path(root / "serve.log"), workers=1, host=host)


@pytest.fixture
async def store(cluster: Cluster) -> AsyncIterator[MeteringStore]:
    opened = open_store(cluster.url, load_config())
    yield opened
    await opened.close()


async def new_key(store: MeteringStore, plan: str) -> tuple[str, Account]:
    key = await store.create_key(plan, "multihost")
    account = await store.authenticate(key)
    assert account is not None
    return key, account


async def spread(
    cluster: Cluster, key: str, paths: list[str], connections: int
) -> list[httpx.Response]:
    """All `paths` at once, the i-th to host i mod 2, over up to `connections` per host."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    headers = {"Authorization": f"Bearer {key}"}
    clients = [
        httpx.AsyncClient(base_url=server.base, limits=limits, timeout=60)
        for server in cluster.servers
    ]
    try:
        hosts = itertools.cycle(clients)
        return list(await asyncio.gather(*(next(hosts).get(p, headers=headers) for p in paths)))
    finally:
        for client in clients:
            await client.aclose()


async def test_the_budget_holds_across_hosts(cluster: Cluster, store: MeteringStore) -> None:
    """A sandbox key with 150 tokens left today takes 400 requests at once, half on each host.

    Asserted as on one host: never a remaining below zero; Σ x-tokens-cost == Σ ledger == the drop
    in both remainders <= 150; at most 10 charges open at once; what is left is exactly spendable,
    alternating hosts, and not a token more.
    """
    budget = 150
    key, account = await new_key(store, "sandbox")
    drain = await store.admit(account, "drain", 1000 - budget)
    assert drain.charge is not None
    await store.settle(drain.charge, 200)
    before = await store.balance(account)
    start = len(await store.ledger(account.key_id))

    kinds = [PING, BAD_STRATEGY.format(years=1), BAD_STRATEGY.format(years=5), NOT_MATERIALIZED]
    paths = [kinds[index % len(kinds)] for index in range(400)]
    responses = await spread(cluster, key, paths, connections=32)

    statuses = Counter(response.status_code for response in responses)
    assert statuses[401] > 0, statuses  # the budget ran out
    assert set(statuses) <= {200, 400, 401, 429, 503}, statuses
    assert {r.url.host for r in responses} == set(HOSTS)  # both hosts answered and metered
    for response in responses:
        assert tokens(response)["x-tokens-remaining-today"] >= 0
        if response.status_code == 401:
            assert response.json()["error_code"] == "DAILY_TOKEN_LIMIT"
    after = await store.balance(account)
    entries = (await store.ledger(account.key_id))[start:]
    cost = sum(tokens(response)["x-tokens-cost"] for response in responses)
    assert cost == sum(entry.tokens for entry in entries)
    assert cost == before.remaining_today - after.remaining_today
    assert cost == before.remaining - after.remaining
    assert cost <= budget
    replay = list(open_charges(entries))
    assert max(replay) <= 10
    assert replay[-1] == 0

    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx.AsyncClient(base_url=cluster.servers[0].base) as first,
        httpx.AsyncClient(base_url=cluster.servers[1].base) as second,
    ):
        served: Counter[str] = Counter()
        for http in itertools.cycle((first, second)):
            if (await http.get(PING, headers=headers)).status_code != 200:
                break
            served[str(http.base_url.host)] += 1
            assert served.total() <= budget
    assert served.total() == after.remaining_today
    # Alternating hosts spend one budget: neither host has a budget of its own.
    assert after.remaining_today < 2 or set(served) == set(HOSTS)


async def test_the_11th_request_in_flight_across_hosts_is_refused(
    cluster: Cluster, store: MeteringStore
) -> None:
    """Ten requests of one quant key held in flight through the shared store (admitted, not
    settled): the 11th is refused on either host (429, Retry-After, cost 0); once one settles,
    the next is served. Then 150 simultaneous pings, 75 per host over 75 connections each: every
    answer is a 200 or that 429, at most 10 charges are ever open (ledger replay), and the ledger
    sums to exactly the requests served. (The burst's overlap depends on its timing, so the
    refusal is checked with the held slots, not expected of the burst.)"""
    key, account = await new_key(store, "quant")
    headers = {"Authorization": f"Bearer {key}"}
    held = await hold_in_flight(store, account)
    for server in cluster.servers:
        async with httpx.AsyncClient(base_url=server.base, timeout=30) as http:
            assert_refused_in_flight(await http.get(PING, headers=headers))
    for charge in held:
        await store.settle(charge, 200)
    async with httpx.AsyncClient(base_url=cluster.servers[1].base, timeout=30) as http:
        assert (await http.get(PING, headers=headers)).status_code == 200

    responses = await spread(cluster, key, [PING] * 150, connections=75)
    statuses = Counter(response.status_code for response in responses)
    assert set(statuses) <= {200, 429}, statuses
    for response in responses:
        if response.status_code == 429:
            assert response.json() == {"success": False, "message": IN_FLIGHT_MESSAGE}
    entries = await store.ledger(account.key_id)
    replay = list(open_charges(entries))
    assert max(replay) == 10  # the ten held slots; the burst never went above them
    assert replay[-1] == 0
    assert sum(entry.tokens for entry in entries) == 10 + 1 + statuses[200]


async def test_the_301st_request_in_a_minute_is_refused_on_either_host(
    cluster: Cluster, store: MeteringStore
) -> None:
    """300 pings alternating hosts (8 at a time) are all served; the 301st on one host and the
    302nd on the other both get the rate 429 at cost 0; the ledger holds exactly 300 tokens."""
    key, account = await new_key(store, "quant")
    headers = {"Authorization": f"Bearer {key}"}
    gate = asyncio.Semaphore(8)
    async with (
        httpx.AsyncClient(base_url=cluster.servers[0].base, timeout=60) as first,
        httpx.AsyncClient(base_url=cluster.servers[1].base, timeout=60) as second,
    ):

        async def ping(http: httpx.AsyncClient) -> httpx.Response:
            async with gate:
                return await http.get(PING, headers=headers)

        hosts = itertools.cycle((first, second))
        served = await asyncio.gather(*(ping(next(hosts)) for _ in range(300)))
        assert Counter(response.status_code for response in served) == {200: 300}
        for http in (first, second):
            refused = await http.get(PING, headers=headers)
            assert refused.status_code == 429
            assert refused.json() == {"success": False, "message": RATE_MESSAGE}
            assert 1 <= int(refused.headers["retry-after"]) <= 60
            assert tokens(refused)["x-tokens-cost"] == 0
            assert tokens(refused)["x-tokens-remaining"] == 250_000 - 300
    entries = await store.ledger(account.key_id)
    assert sum(entry.tokens for entry in entries) == 300
    assert Counter(entry.kind for entry in entries) == {"charge": 300, "settle": 300}
