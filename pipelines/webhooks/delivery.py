"""The delivery worker: signed POSTs, retries on the project's retry policy, dead letters."""

from __future__ import annotations

import random
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import httpx

from pipelines.retries import RETRYABLE_STATUSES, retry_after_seconds
from pipelines.webhooks.config import (
    DeliveryPolicy,
    Resolver,
    Subscription,
    UnresolvedHostError,
    WebhookConfigError,
    WebhooksConfig,
    check_url,
)
from pipelines.webhooks.outbox import Claimed, Outbox
from pipelines.webhooks.signing import signed_headers

USER_AGENT = "market-intelligence-webhooks/1"


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Wall-clock time (the worker's default)."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to."""

    subscription_id: str
    event_id: str
    result: str
    """`delivered`, `retry`, `dead` or `deferred` (rate limit: no attempt made)."""
    status: int | None = None
    error: str | None = None


@dataclass
class Worker:
    """Delivers the outbox's due deliveries; one process or several may run it against one outbox."""

    outbox: Outbox
    config: WebhooksConfig
    clock: Clock = field(default_factory=SystemClock)
    rng: random.Random = field(default_factory=random.Random)
    client_factory: Callable[[], httpx.Client] | None = None
    resolve: Resolver | None = None
    """How receiver hosts resolve (None: the system's resolver)."""
    _client: httpx.Client | None = field(default=None, init=False)

    @property
    def policy(self) -> DeliveryPolicy:
        return self.config.delivery

    def client(self) -> httpx.Client:
        if self._client is None:
            if self.client_factory is not None:
                self._client = self.client_factory()
            else:
                # An explicit context: httpx deprecates verify=<path>.
                verify = ssl.create_default_context(cafile=self.policy.ca_file)
                self._client = httpx.Client(
                    verify=verify, follow_redirects=False, headers={"User-Agent": USER_AGENT}
                )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def deliver_due(self, limit: int | None = None) -> list[Outcome]:
        """Attempt every delivery due now (at most `limit`); return the outcomes in order."""
        outcomes: list[Outcome] = []
        deferred: list[str] = []
        while limit is None or len(outcomes) < limit:
            claimed = self.outbox.claim(self.clock.now(), self.policy.lease_seconds, deferred)
            if claimed is None:
                break
            outcome = self.attempt(claimed)
            if outcome.result == "deferred":
                deferred.append(claimed.subscription_id)
            outcomes.append(outcome)
        return outcomes

    def run(self, until_idle: bool = True, max_wait: float = 60.0) -> list[Outcome]:
        """Deliver, sleeping until the next due delivery; stop when nothing is queued (`until_idle`)."""
        outcomes: list[Outcome] = []
        while True:
            outcomes += self.deliver_due()
            due = self.outbox.next_due()
            if due is None and until_idle:
                return outcomes
            wait = max_wait if due is None else min(max_wait, due - self.clock.now())
            self.clock.sleep(max(wait, 0.01))

    def attempt(self, claimed: Claimed) -> Outcome:
        """One attempt of one claimed delivery, recorded in the outbox.

        The URL is checked again (the host's addresses may have changed since the file was
        loaded: DNS rebinding), and the subscription's rate limit taken from the outbox."""
        now = self.clock.now()
        try:
            sub = self.config.subscription(claimed.subscription_id)
            check_url(sub.url, self.policy, self.resolve)
        except UnresolvedHostError as error:
            return self._retry(claimed, None, f"connection error: {error}")
        except WebhookConfigError as error:
            return self._dead(claimed, None, f"refused: {error}")
        slot = self.outbox.take_slot(sub.id, now, 1.0 / sub.rate_limit_per_second)
        if slot is not None:
            self.outbox.retry_later(claimed, slot, None, "rate limited", count=False)
            return Outcome(sub.id, claimed.event_id, "deferred", error="rate limited")
        return self._send(claimed, sub, now)

    def _send(self, claimed: Claimed, sub: Subscription, now: float) -> Outcome:
        headers = signed_headers(sub.secret, claimed.event_id, int(now), claimed.body)
        try:
            response = self.client().post(
                sub.url, content=claimed.body, headers=headers, timeout=sub.timeout_seconds
            )
        except httpx.TimeoutException as error:
            return self._retry(claimed, None, f"timeout after {sub.timeout_seconds}s ({error!r})")
        except httpx.TransportError as error:
            return self._retry(claimed, None, f"connection error: {error!r}")
        status = response.status_code
        if 200 <= status < 300:
            self.outbox.delivered(claimed, status, self.clock.now())
            return Outcome(sub.id, claimed.event_id, "delivered", status)
        failure = f"HTTP {status}: {response.text[:200]}"
        if status in RETRYABLE_STATUSES:
            wait = retry_after_seconds(response.headers.get("Retry-After"), self.clock.now())
            return self._retry(claimed, status, failure, wait)
        return self._dead(claimed, status, f"{failure} (not retried: an answer, not a failure)")

    def _retry(
        self, claimed: Claimed, status: int | None, error: str, retry_after: float | None = None
    ) -> Outcome:
        attempt = claimed.attempts + 1
        policy = self.policy.retry
        if attempt >= policy.attempts:
            return self._dead(claimed, status, f"{error} (gave up after {attempt} attempts)")
        if retry_after is not None:
            delay = policy.server_wait(retry_after)
        else:
            delay = policy.backoff(attempt, self.rng.random())
        self.outbox.retry_later(claimed, self.clock.now() + delay, status, error)
        return Outcome(claimed.subscription_id, claimed.event_id, "retry", status, error)

    def _dead(self, claimed: Claimed, status: int | None, error: str) -> Outcome:
        self.outbox.dead_letter(claimed, status, error, self.clock.now())
        return Outcome(claimed.subscription_id, claimed.event_id, "dead", status, error)
