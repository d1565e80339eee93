"""The metering section's Redis on another host: a redis-server in a network namespace of its
own, behind a relay that holds each direction for half the added round trip."""

from __future__ import annotations

import pytest
import redis

from benchmarks import remote_redis


def test_the_remote_redis_answers_through_the_relay_no_sooner_than_its_delay() -> None:
    """Commands and replies pass whole (a value larger than one read), and a round trip takes at
    least the delay the relay adds: the sleep is a floor, so only a broken relay is faster."""
    why_not = remote_redis.unavailable()
    if why_not is not None:
        pytest.skip(why_not)
    with remote_redis.remote_redis() as url:
        assert url.startswith("redis://10.")
        client = redis.Redis.from_url(url)
        try:
            value = b"x" * 200_000
            client.set("relayed", value)
            assert client.get("relayed") == value
        finally:
            client.close()
        assert remote_redis.measured_rtt_ms(url, pings=50) >= remote_redis.ADDED_RTT_MS
