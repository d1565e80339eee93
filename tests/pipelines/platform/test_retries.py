"""The one retry policy: Retry-After in seconds and as an HTTP date, jitter bounds, caps, and
which failures are retried, through a connector against a real loopback server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
import stamina
from stamina.instrumentation import RetryDetails, set_on_retry_hooks

from pipelines.platform.retries import RetryableError, RetryPolicy, call, retry_after_seconds
from pipelines.prices.sources.base import SourceError
from pipelines.prices.sources.http import HttpFetcher, HttpPolicy
from tests.pipelines.prices.loopback import Reply, route, serve

NOW = 1_800_000_000.0


@pytest.fixture
def waits() -> Iterator[list[float]]:
    """The waits retries really make (the suite's no-wait testing mode off), as scheduled."""
    scheduled: list[float] = []

    def record(details: RetryDetails) -> None:
        scheduled.append(details.wait_for)

    stamina.set_testing(False)
    set_on_retry_hooks([record])
    yield scheduled
    set_on_retry_hooks(None)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("37", 37.0),
        (" 0 ", 0.0),
        ("Fri, 15 Jan 2027 08:00:10 GMT", 10.0),  # NOW is 08:00:00 that day
        ("Fri, 15 Jan 2027 07:59:00 GMT", 0.0),  # a date already past: at once
        ("soon", None),
        ("-5", None),
        (None, None),
    ],
)
def test_retry_after_is_read_as_seconds_or_as_an_http_date(
    header: str | None, seconds: float | None
) -> None:
    assert retry_after_seconds(header, NOW) == seconds


@pytest.mark.parametrize(
    ("retry", "rand", "expected"),
    [
        (1, 0.0, 2.0),
        (1, 0.999, 2.999),
        (2, 0.5, 4.5),
        (3, 0.0, 8.0),
        (7, 0.0, 60.0),
        (7, 0.9, 60.0),
    ],
)
def test_backoff_doubles_plus_jitter_up_to_the_cap(
    retry: int, rand: float, expected: float
) -> None:
    policy = RetryPolicy(wait_initial=2.0, wait_max=60.0, wait_jitter=1.0)
    assert policy.backoff(retry, rand) == pytest.approx(expected)


def test_a_servers_wait_is_capped_by_its_own_cap_or_else_by_wait_max() -> None:
    assert RetryPolicy(wait_max=60.0).server_wait(3600.0) == 60.0
    assert RetryPolicy(wait_max=60.0, retry_after_max=600.0).server_wait(3600.0) == 600.0
    assert RetryPolicy(wait_max=60.0).server_wait(-3.0) == 0.0


def test_a_policy_without_an_attempt_or_with_a_negative_wait_is_refused() -> None:
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError, match="negative"):
        RetryPolicy(wait_jitter=-1.0)


def test_waits_grow_exponentially_within_their_jitter_bounds(waits: list[float]) -> None:
    failures = iter(range(4))

    def flaky() -> str:
        if next(failures) < 3:
            raise RetryableError("busy")
        return "done"

    policy = RetryPolicy(attempts=4, wait_initial=0.01, wait_max=0.025, wait_jitter=0.004)
    assert call(policy, flaky) == "done"
    first, second, third = waits
    assert 0.01 <= first <= 0.014
    assert 0.02 <= second <= 0.024
    # 0.04 and its jitter, cut to wait_max. stamina reports a wait as the difference of two running
    # sums of waits (`idle_for`), so the cap comes back within a rounding of the sums.
    assert third == pytest.approx(0.025, rel=1e-12, abs=0)


def test_only_the_named_failures_are_retried_and_the_last_one_propagates(
    waits: list[float],
) -> None:
    calls: list[int] = []

    def refused() -> None:
        calls.append(1)
        raise KeyError("an answer, not a failure")

    with pytest.raises(KeyError):
        call(RetryPolicy(attempts=3, wait_initial=0.0, wait_jitter=0.0), refused)
    assert len(calls) == 1

    def busy() -> None:
        calls.append(2)
        raise RetryableError("busy", retry_after=0.0)

    with pytest.raises(RetryableError, match="busy"):
        call(RetryPolicy(attempts=3), busy)
    assert calls == [1, 2, 2, 2]
    assert waits == [0.0, 0.0]


def _fetcher(**policy: float) -> HttpFetcher:
    return HttpFetcher(
        HttpPolicy(timeout_seconds=5.0, max_retries=2, **policy, allowed_hosts=("127.0.0.1",))
    )


def test_a_connector_waits_what_retry_after_says_in_seconds_capped(waits: list[float]) -> None:
    busy = Reply(429, body=b"slow down", headers={"Retry-After": "30"})
    with serve([(route("/bars"), [busy, Reply(body=b"[]")])]) as server:
        answer = _fetcher(max_backoff_seconds=0.05).get(f"{server.base_url}/bars", {})
    assert answer.content == b"[]"
    assert waits == [0.05]


def test_a_connector_waits_until_retry_after_as_an_http_date(waits: list[float]) -> None:
    # A date already past: retry at once, instead of the exponential wait (0.5 s here).
    past = format_datetime(datetime.now(UTC) - timedelta(minutes=1), usegmt=True)
    busy = Reply(503, body=b"busy", headers={"Retry-After": past})
    with serve([(route("/bars"), [busy, Reply(body=b"[]")])]) as server:
        answer = _fetcher(backoff_seconds=0.5).get(f"{server.base_url}/bars", {})
    assert answer.content == b"[]"
    assert waits == [0.0]


def test_a_connector_stops_after_its_attempts_and_says_how_many(waits: list[float]) -> None:
    down = Reply(500, body=b"down")
    with serve([(route("/bars"), [down])]) as server, pytest.raises(SourceError) as error:
        _fetcher(backoff_seconds=0.001, jitter_seconds=0.001).get(f"{server.base_url}/bars", {})
    assert len(server.requests) == 3
    assert "HTTP 500 after 3 attempt(s)" in str(error.value)
    assert len(waits) == 2
    assert all(0.001 <= w <= 0.003 for w in waits)
