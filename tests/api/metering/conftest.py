"""Fixtures for metering tests: a settable clock and a store on each backend (SQLite, Redis)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from api.metering.config import MeteringConfig, load_config
from api.metering.model import Account
from api.metering.store import MeteringStore, open_store

REDIS_URL = "redis://127.0.0.1:6379/0"


class FakeClock:
    """A clock tests move by hand (no sleeping); starts mid-month, mid-day UTC."""

    def __init__(self, start: datetime = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)) -> None:
        self.now = start.timestamp()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def set(self, moment: datetime) -> None:
        self.now = moment.timestamp()


StoreFactory = Callable[[], MeteringStore]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def config() -> MeteringConfig:
    return load_config()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix of this test alone; every key under it is deleted afterwards."""
    prefix = f"mi:test:{uuid.uuid4().hex}:"
    yield prefix
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{prefix}*"))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path, redis_prefix: str) -> str:
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'metering.sqlite3'}"
    return f"{REDIS_URL}?prefix={redis_prefix}"


@pytest.fixture
async def make_store(
    store_url: str, config: MeteringConfig, clock: FakeClock
) -> AsyncIterator[StoreFactory]:
    """Open stores on the test's backend (several = several workers); all closed afterwards."""
    opened: list[MeteringStore] = []

    def make() -> MeteringStore:
        store = open_store(store_url, config, clock)
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> MeteringStore:
    return make_store()


async def new_account(store: MeteringStore, plan: str = "sandbox") -> Account:
    account = await store.authenticate(await store.create_key(plan, "test"))
    assert account is not None
    return account
