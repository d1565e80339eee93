"""Retries: a real 429 (a rate limit of 3 requests in 2 seconds) and a real 503 (the metering
store stopped) are retried after the server's Retry-After, never sooner, and only so often."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import stamina
from market_intelligence import Client, RateLimited, Unavailable

from tests.api.metering.conftest import private_redis
from tests.served import ServedApi, clean_env, serving

from .conftest import THROTTLE, Exchange, Recorder, async_client

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def retries_that_wait() -> Iterator[None]:
    """The waits are what these tests check: stamina's testing mode (tests/conftest.py) is off."""
    with stamina.set_testing(False):
        yield


BURST = THROTTLE["requests_per_window"] + 1
"""One request more than the window admits: the last answers 429."""


def waited_as_told(refused: Exchange, retried: Exchange) -> None:
    """The retry was sent no sooner than the refusal's Retry-After after it arrived."""
    told = int(refused.response_headers["retry-after"])
    assert told >= 1
    assert retried.sent_at - refused.answered_at >= told - 0.05


def test_a_429_is_retried_after_its_retry_after_and_then_served(
    limited_api: ServedApi, recorder: Recorder
) -> None:
    with recorder.sync_http() as http:
        client = Client(limited_api.new_key("sandbox"), base_url=limited_api.base, http=http)
        for _ in range(BURST):
            client.ping()
    assert recorder.statuses == [200] * (BURST - 1) + [429, 200]
    refused, retried = recorder.exchanges[-2:]
    waited_as_told(refused, retried)
    assert client.balance is not None
    assert client.balance.cost == 1  # the served retry's, not the refusal's 0


def test_with_retries_off_a_429_raises_rate_limited_with_retry_after_and_charges_nothing(
    limited_api: ServedApi,
) -> None:
    client = Client(limited_api.new_key("sandbox"), base_url=limited_api.base, retry_attempts=1)
    with client:
        for _ in range(BURST - 1):
            client.ping()
        with pytest.raises(RateLimited) as raised:
            client.ping()
    assert raised.value.retry_after is not None
    assert 1 <= raised.value.retry_after <= THROTTLE["window_seconds"]
    assert raised.value.balance is not None
    assert raised.value.balance.cost == 0


def test_a_retry_after_longer_than_max_retry_wait_is_not_waited_for(
    limited_api: ServedApi, recorder: Recorder
) -> None:
    """The caller's bound: a wait beyond `max_retry_wait` raises at once, telling how long."""
    with recorder.sync_http() as http:
        client = Client(
            limited_api.new_key("sandbox"), base_url=limited_api.base, max_retry_wait=0.5, http=http
        )
        for _ in range(BURST - 1):
            client.ping()
        started = time.monotonic()
        with pytest.raises(RateLimited):
            client.ping()
    assert time.monotonic() - started < 0.5
    assert recorder.statuses == [200] * (BURST - 1) + [429]


def test_the_async_client_retries_a_429_after_its_retry_after(
    limited_api: ServedApi, recorder: Recorder
) -> None:
    async def burst() -> None:
        key = limited_api.new_key("sandbox")
        async with async_client(limited_api.base, key, recorder) as aclient:
            for _ in range(BURST):
                await aclient.ping()

    asyncio.run(burst())
    assert recorder.statuses == [200] * (BURST - 1) + [429, 200]
    waited_as_told(*recorder.exchanges[-2:])


def test_a_503_of_a_stopped_metering_store_is_retried_after_its_retry_after(
    embedded_market: Path, tmp_path: Path, recorder: Recorder
) -> None:
    """The metering store (a private Redis) stops: metered routes fail closed with 503 and
    Retry-After. The client waits that long, the store is back meanwhile, the retry is served."""
    with private_redis(tmp_path / "redis") as redis_server:
        env = clean_env(embedded_market, MI_METERING_URL=redis_server.url)
        with serving(env, tmp_path / "serve.log") as api, recorder.sync_http() as http:
            client = Client(api.new_key("sandbox"), base_url=api.base, http=http)
            client.ping()
            redis_server.shutdown()
            restart = threading.Timer(1.0, redis_server.start)
            restart.start()
            try:
                pong = client.ping()
            finally:
                restart.join()
    assert pong.text == "pong"
    assert recorder.statuses == [200, 503, 200]
    refused, retried = recorder.exchanges[-2:]
    assert "x-tokens-cost" not in refused.response_headers  # failed closed: no account was read
    waited_as_told(refused, retried)


def test_a_503_that_lasts_is_tried_retry_attempts_times_then_raised_as_unavailable(
    embedded_market: Path, tmp_path: Path, recorder: Recorder
) -> None:
    """The store stays down: two tries in all (`retry_attempts=2`), the second after Retry-After,
    then Unavailable with the server's message and Retry-After."""
    with private_redis(tmp_path / "redis") as redis_server:
        env = clean_env(embedded_market, MI_METERING_URL=redis_server.url)
        with serving(env, tmp_path / "serve.log") as api, recorder.sync_http() as http:
            key = api.new_key("sandbox")
            redis_server.shutdown()
            client = Client(key, base_url=api.base, retry_attempts=2, http=http)
            with pytest.raises(Unavailable) as raised:
                client.ping()
    assert recorder.statuses == [503, 503]
    waited_as_told(*recorder.exchanges)
    assert raised.value.retry_after == int(recorder.exchanges[-1].response_headers["retry-after"])
    assert "retry" in raised.value.message
