"""One retry policy for every outbound call: which failures to retry, how long to wait, when to stop."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from functools import partial
from typing import TypeVar

import stamina

T = TypeVar("T")

RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
"""HTTP statuses another attempt may cure: a timeout, too early, too many requests, a server
failure. Every other status is an answer, and asking again gets the same one."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try: attempts in all, exponential waits with jitter, and their caps.

    Retry n (1-based) waits `min(wait_max, wait_initial * 2^(n-1) + U(0, wait_jitter))`
    (stamina's schedule), or what the server asked for in `Retry-After`, capped at
    `retry_after_max` (`wait_max` when None) and without jitter.
    """

    attempts: int = 5
    """Attempts in all, the first included (1: never retry)."""
    wait_initial: float = 1.0
    """Seconds before the first retry; doubled before each further one."""
    wait_max: float = 60.0
    wait_jitter: float = 1.0
    """Up to this many random seconds added to each exponential wait, so that the retries of
    many callers that failed together do not come back together."""
    retry_after_max: float | None = None
    timeout: float | None = None
    """Longest time one call may take, its waits included (None: the attempts alone bound it)."""

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, not {self.attempts}")
        waits = (self.wait_initial, self.wait_max, self.wait_jitter, self.retry_after_max or 0.0)
        if min(waits) < 0:
            raise ValueError(f"waits must not be negative: {self}")

    @property
    def server_wait_max(self) -> float:
        """The longest `Retry-After` honoured; a longer one is cut to this."""
        return self.wait_max if self.retry_after_max is None else self.retry_after_max

    def backoff(self, retry: int, rand: float) -> float:
        """Seconds before retry number `retry` (1-based), `rand` in [0, 1) drawing the jitter.

        The schedule `retrying` keeps, for a caller whose retries are not a loop in one process
        (the webhook outbox stores the instant of the next attempt).
        """
        return min(self.wait_max, self.wait_initial * 2 ** (retry - 1) + self.wait_jitter * rand)

    def server_wait(self, retry_after: float) -> float:
        """The wait a server asked for, capped."""
        return min(max(retry_after, 0.0), self.server_wait_max)


class RetryableError(Exception):
    """A failure another attempt may cure; `retry_after`: the seconds the server asked for."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """A `Retry-After` header as seconds from `now`: delta-seconds or an HTTP date (a past date
    is 0); None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def retrying(
    policy: RetryPolicy, on: tuple[type[Exception], ...] = (RetryableError,)
) -> Iterator[stamina.Attempt]:
    """Attempts of a block, retried on the failures `on` as `policy` says; the last failure
    propagates. `for attempt in retrying(policy): with attempt: ...` (`attempt.num` is 1-based).

    `stamina.set_testing(True)` (the tests) makes every wait zero.
    """
    return iter(
        stamina.retry_context(
            on=partial(_wait_for, policy, on),
            attempts=policy.attempts,
            timeout=policy.timeout,
            wait_initial=policy.wait_initial,
            wait_max=policy.wait_max,
            wait_jitter=policy.wait_jitter,
            wait_exp_base=2,
        )
    )


def call(
    policy: RetryPolicy,
    attempt: Callable[[], T],
    on: tuple[type[Exception], ...] = (RetryableError,),
) -> T:
    """`attempt()` until it returns, retried as `retrying` does."""
    for each in retrying(policy, on):
        with each:
            return attempt()
    raise AssertionError("unreachable: the last failure propagates")


def _wait_for(
    policy: RetryPolicy, on: tuple[type[Exception], ...], error: Exception
) -> bool | float:
    """Whether to retry `error`; for a server that said when (`Retry-After`), the capped wait
    (stamina waits exactly that instead of its exponential schedule)."""
    if not isinstance(error, on):
        return False
    if isinstance(error, RetryableError) and error.retry_after is not None:
        return policy.server_wait(error.retry_after)
    return True
