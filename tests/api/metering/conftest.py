"""Fixtures for metering tests: a settable clock and a store on each backend (SQLite, Redis)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import redis

from api.metering.backends import open_store
from api.metering.config import MeteringConfig, load_config
from api.metering.model import Account, Charge, LedgerEntry
from api.metering.store import MeteringStore
from pipelines.catalog import Manifest, PartitionFile, write_manifest
from tests.api.conftest import price_frame

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


# -- the real server (`mi serve`) and a private redis-server, for the multi-process and fault tests


MI = str(Path(sys.executable).with_name("mi"))
BALANCE_HEADERS = ("x-tokens-cost", "x-tokens-limit", "x-tokens-limit-today",
                   "x-tokens-remaining", "x-tokens-remaining-today")  # fmt: skip
PING = "/api/v1/ping"
BAD_STRATEGY = "/api/v2/crypto/trades/get-backtest-history/BTC/bogus?years={years}"
"""A 400 (strategy outside aggressive/conservative) charged the full route cost: 8 to 20 by years."""
NOT_MATERIALIZED = "/api/v2/crypto/technical-analysis/get-indicators/BTC"
"""A 503 (no indicator tables in the test warehouse): 8 tokens up front, 1 net."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def mi_keys_create(env: Mapping[str, str], plan: str) -> str:
    """`mi keys create` on the store named by `env`; the key is the last line of its output."""
    created = subprocess.run(
        [MI, "keys", "create", "--plan", plan, "--name", "e2e"],
        env=dict(env),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return created.stdout.strip().splitlines()[-1]


def children(pid: int) -> list[int]:
    """The direct child processes of `pid` (granian's workers of its main process)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(child) for child in task.read_text().split()]
    return sorted(found)


@contextmanager
def mi_serve(
    env: Mapping[str, str], log: Path, workers: int = 2, host: str = "127.0.0.1"
) -> Iterator[MiServer]:
    """`mi serve --workers N` (granian) on a free port of a loopback `host`; killed (whole tree) on exit."""
    port = free_port(host)
    base = f"http://{host}:{port}"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [MI, "serve", "--host", host, "--port", str(port), "--workers", str(workers)],
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: cleanup reaches respawned workers too
        )
    server = MiServer(process, base, port)
    try:
        deadline = time.monotonic() + 60
        while len(children(process.pid)) < workers or not _answers(base):
            assert process.poll() is None, f"mi serve exited early:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"mi serve not ready:\n{log.read_text()[-3000:]}"
            time.sleep(0.1)
        server.workers = children(process.pid)
        yield server
    finally:
        stop_group(process)


def stop_group(process: subprocess.Popen[bytes], grace: float = 10) -> None:
    """SIGTERM to the server's process group, then SIGKILL to whatever is left of it (a worker
    granian respawned after a test killed one is in the group too, but was never a known pid)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=grace)


def _answers(base: str) -> bool:
    try:
        httpx.get(f"{base}{PING}", timeout=1)
    except httpx.TransportError:
        return False
    return True


@dataclass
class MiServer:
    process: subprocess.Popen[bytes]
    base: str
    port: int
    workers: list[int] = field(default_factory=list)


@contextmanager
def private_redis(directory: Path) -> Iterator[PrivateRedis]:
    """A redis-server of this test alone on a free loopback port (never the shared one)."""
    instance = PrivateRedis(free_port(), directory)
    try:
        instance.start()
        yield instance
    finally:
        instance.kill()


@dataclass
class PrivateRedis:
    """Append-only file with `appendfsync always` in `directory`: a restart keeps every write."""

    port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with (self.directory / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(
                [
                    "redis-server",
                    "--bind",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--dir",
                    str(self.directory),
                    "--save",
                    "",
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "always",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        client = redis.Redis(port=self.port, socket_timeout=1)
        deadline = time.monotonic() + 20
        try:
            while True:
                try:
                    if client.ping():
                        return
                except redis.ConnectionError:
                    assert self.process.poll() is None, "redis-server exited"
                    assert time.monotonic() < deadline, "redis-server not ready"
                    time.sleep(0.05)
        finally:
            client.close()

    def shutdown(self) -> None:
        """SHUTDOWN NOSAVE (nothing is lost: the append-only file is fsynced on every write)."""
        assert self.process is not None
        client = redis.Redis(port=self.port, socket_timeout=2)
        with contextlib.suppress(redis.ConnectionError):
            client.shutdown(nosave=True)
        client.close()
        self.process.wait(timeout=20)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.process is not None:
            self.process.wait(timeout=20)


def open_charges(entries: Sequence[LedgerEntry]) -> Iterator[int]:
    """Replaying the ledger in order: charges not yet settled after each row (= slots in use).

    A charge recorded with its settlement (a plan without limits: it has a status) opens nothing.
    """
    open_now = 0
    for entry in entries:
        if entry.kind == "charge" and entry.status == 0:
            open_now += 1
        elif entry.kind in ("credit", "settle"):
            open_now -= 1
        yield open_now


IN_FLIGHT_MESSAGE = "too many simultaneous requests: at most 10 in flight"


def tokens(response: httpx.Response) -> dict[str, int]:
    return {name: int(response.headers[name]) for name in BALANCE_HEADERS}


async def hold_in_flight(store: MeteringStore, account: Account, count: int = 10) -> list[Charge]:
    """`count` pings admitted through the store and not settled: requests in flight, as another
    worker's would be (the in-flight rule is then checked without relying on a burst's timing)."""
    charges = [(await store.admit(account, "ping", 1)).charge for _ in range(count)]
    held = [charge for charge in charges if charge is not None]
    assert len(held) == count
    return held


def assert_refused_in_flight(response: httpx.Response) -> None:
    """The in-flight 429: its message, Retry-After 1 and nothing charged."""
    assert response.status_code == 429
    assert response.json() == {"success": False, "message": IN_FLIGHT_MESSAGE}
    assert response.headers["retry-after"] == "1"
    assert tokens(response)["x-tokens-cost"] == 0


def publish_prices(warehouse: Path) -> None:
    """A warehouse with only daily prices: enough for the routes to parse and answer."""
    relative = "daily_prices/crypto-1.parquet"
    (warehouse / "daily_prices").mkdir(parents=True)
    price_frame([float(day) for day in range(1, 100)]).write_parquet(warehouse / relative)
    stamp = datetime.now(UTC).isoformat()
    entry = PartitionFile(path=relative, rows=99, written_at=stamp)
    write_manifest(
        warehouse, Manifest(version=1, updated_at=stamp, tables={"daily_prices": {"crypto": entry}})
    )
