"""Fixtures for the SDK's tests: keys, a wire recorder, clients, and a server with tiny limits."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from market_intelligence import AsyncClient, Client

from api.metering.config import DEFAULT_CONFIG_PATH
from tests.served import ServedApi, clean_env, serving

THROTTLE = {"requests_per_window": 3, "window_seconds": 2}
"""The limited server's rate limit: a fourth request within 2 seconds answers 429."""
TEST_PLANS = """
[plans.tiny]
limited = false
monthly_budget = 100
daily_cap = 6
markets = ["crypto", "forex", "commodities", "stocks"]

[plans.crypto_only]
limited = false
monthly_budget = 100_000
daily_cap = 100_000
markets = ["crypto"]
"""
"""`tiny`: a daily cap below one scorecard; `crypto_only`: a plan without the other markets."""
LIVE_MARKETS = "crypto,forex,stocks"
"""The limited server has not launched commodities."""


@dataclass(frozen=True)
class Exchange:
    """One request as it went over the wire and the response it got."""

    path: str
    query: str
    request_headers: httpx.Headers
    status: int
    response_headers: httpx.Headers
    sent_at: float
    answered_at: float


@dataclass
class Recorder:
    """httpx event hooks keeping every exchange, so a test sees what the client really sent."""

    exchanges: list[Exchange] = field(default_factory=list)
    _sent: dict[int, float] = field(default_factory=dict)

    def on_request(self, request: httpx.Request) -> None:
        self._sent[id(request)] = time.monotonic()

    def on_response(self, response: httpx.Response) -> None:
        request = response.request
        self.exchanges.append(
            Exchange(
                path=request.url.path,
                query=request.url.query.decode(),
                request_headers=request.headers,
                status=response.status_code,
                response_headers=response.headers,
                sent_at=self._sent.pop(id(request)),
                answered_at=time.monotonic(),
            )
        )

    async def aon_request(self, request: httpx.Request) -> None:
        self.on_request(request)

    async def aon_response(self, response: httpx.Response) -> None:
        self.on_response(response)

    @property
    def statuses(self) -> list[int]:
        return [exchange.status for exchange in self.exchanges]

    def sync_http(self) -> httpx.Client:
        return httpx.Client(
            timeout=30, event_hooks={"request": [self.on_request], "response": [self.on_response]}
        )

    def async_http(self) -> httpx.AsyncClient:
        hooks = {"request": [self.aon_request], "response": [self.aon_response]}
        return httpx.AsyncClient(timeout=30, event_hooks=hooks)  # type: ignore[arg-type]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture(scope="session")
def internal_key(served_api: ServedApi) -> str:
    """A key of the `internal` plan (metered, never limited) on the embedded-market server."""
    return served_api.new_key("internal")


@pytest.fixture
def client(served_api: ServedApi, internal_key: str, recorder: Recorder) -> Iterator[Client]:
    """A fresh sync client (empty ETag cache) whose every exchange `recorder` keeps."""
    http = recorder.sync_http()
    with Client(internal_key, base_url=served_api.base, http=http) as made:
        yield made
    http.close()


@asynccontextmanager
async def async_client(
    base: str, key: str, recorder: Recorder, **options: float
) -> AsyncIterator[AsyncClient]:
    """An AsyncClient on `recorder`'s hooks; both closed on exit, in the test's event loop."""
    async with (
        recorder.async_http() as http,
        AsyncClient(key, base_url=base, http=http, **options) as made,  # type: ignore[arg-type]
    ):
        yield made


def limited_config(path: Path) -> Path:
    """The default metering configuration with THROTTLE's rate limit and TEST_PLANS added."""
    text = DEFAULT_CONFIG_PATH.read_text()
    for name, value in THROTTLE.items():
        text, count = re.subn(rf"(?m)^{name} = \d+", f"{name} = {value}", text)
        assert count == 1, f"{name} not found in {DEFAULT_CONFIG_PATH}"
    path.write_text(text + TEST_PLANS)
    return path


@pytest.fixture(scope="session")
def limited_api(
    embedded_market: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServedApi]:
    """`mi serve` over the embedded market with THROTTLE, TEST_PLANS, commodities not launched,
    and a metering store of its own (its limits never touch the other server's keys)."""
    scratch = tmp_path_factory.mktemp("limited")
    env = clean_env(
        embedded_market,
        MI_METERING_CONFIG=str(limited_config(scratch / "metering.toml")),
        MI_METERING_URL=f"sqlite://{scratch / 'metering.sqlite3'}",
        MI_LIVE_MARKETS=LIVE_MARKETS,
    )
    with serving(env, scratch / "serve.log") as served:
        yield served
