"""The delivery worker: signed POSTs, retries on the project's retry policy, dead letters.

Every attempt goes through the pipeline's outbound policy (`pipelines.platform.outbound`, docs/webhooks.md):
the receiver's host is resolved once and the connection pinned to the checked address, at most
64 KiB of its answer is read, and the whole attempt holds the subscription's timeout as one
deadline. Receivers are delivered to side by side, each one's deliveries in order, so one slow
receiver holds its own lane only.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Protocol

import httpx

from pipelines.platform.outbound import (
    Fetched,
    OutboundPolicy,
    OutboundRefused,
    Resolver,
    UnresolvedHost,
    async_client,
    fetch,
)
from pipelines.platform.retries import RETRYABLE_STATUSES, retry_after_seconds
from pipelines.webhooks.config import (
    DeliveryPolicy,
    Subscription,
    WebhookConfigError,
    WebhooksConfig,
    outbound_policy,
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
    resolve: Resolver | None = None
    """How receiver hosts resolve (None: the system's resolver)."""

    @property
    def policy(self) -> DeliveryPolicy:
        return self.config.delivery

    def close(self) -> None:
        """Nothing to release: each run of deliveries opens and closes its own connections."""

    def deliver_due(self, limit: int | None = None) -> list[Outcome]:
        """Attempt every delivery due now (at most `limit`); the outcomes in the order they ended
        (a subscription's own in the order they were claimed)."""
        return asyncio.run(self._deliver_due(limit))

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
        """One attempt of one claimed delivery, recorded in the outbox."""

        async def one() -> Outcome:
            async with async_client(self._client_policy(), USER_AGENT) as client:
                return await self._attempt(client, claimed)

        return asyncio.run(one())

    async def _deliver_due(self, limit: int | None) -> list[Outcome]:
        outcomes: list[Outcome] = []
        deferred: list[str] = []  # rate-limited this run: not claimed again
        lanes: dict[str, asyncio.Task[Outcome]] = {}  # subscription -> its attempt in flight
        async with async_client(self._client_policy(), USER_AGENT) as client:
            while True:
                room = limit is None or len(outcomes) + len(lanes) < limit
                claimed = None
                if room and len(lanes) < self.policy.parallel_receivers:
                    now = self.clock.now()
                    skip = [*deferred, *lanes]
                    claimed = self.outbox.claim(now, self.policy.lease_seconds, skip)
                if claimed is not None:
                    lanes[claimed.subscription_id] = asyncio.create_task(
                        self._attempt(client, claimed)
                    )
                    continue
                if not lanes:
                    return outcomes
                done, _ = await asyncio.wait(lanes.values(), return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    outcome = task.result()
                    del lanes[outcome.subscription_id]
                    if outcome.result == "deferred":
                        deferred.append(outcome.subscription_id)
                    outcomes.append(outcome)

    def _client_policy(self) -> OutboundPolicy:
        """What the run's client is built with (its CA bundle and a deadline no attempt exceeds)."""
        longest = max((s.timeout_seconds for s in self.config.subscriptions), default=10.0)
        return OutboundPolicy(ca_file=self.policy.ca_file, deadline_seconds=longest)

    async def _attempt(self, client: httpx.AsyncClient, claimed: Claimed) -> Outcome:
        now = self.clock.now()
        try:
            sub = self.config.subscription(claimed.subscription_id)
            policy = outbound_policy(self.policy, sub.url, sub.timeout_seconds)
        except WebhookConfigError as error:
            return self._dead(claimed, None, f"refused: {error}")
        slot = self.outbox.take_slot(sub.id, now, 1.0 / sub.rate_limit_per_second)
        if slot is not None:
            self.outbox.retry_later(claimed, slot, None, "rate limited", count=False)
            return Outcome(sub.id, claimed.event_id, "deferred", error="rate limited")
        headers = signed_headers(sub.secret, claimed.event_id, int(now), claimed.body)
        try:
            answer = await fetch(
                client,
                "POST",
                sub.url,
                policy,
                headers=headers,
                content=claimed.body,
                truncate=True,
                resolve=self.resolve,
            )
        except UnresolvedHost as error:
            return self._retry(claimed, None, f"connection error: {error}")
        except OutboundRefused as error:  # the host resolves inside a network now (rebinding)
            return self._dead(claimed, None, f"refused: {error}")
        except TimeoutError:
            return self._retry(
                claimed, None, f"timeout: no whole answer within {sub.timeout_seconds}s"
            )
        except httpx.TransportError as error:
            return self._retry(claimed, None, f"connection error: {error!r}")
        return self._answered(claimed, sub, answer)

    def _answered(self, claimed: Claimed, sub: Subscription, answer: Fetched) -> Outcome:
        status = answer.status
        if 200 <= status < 300:
            self.outbox.delivered(claimed, status, self.clock.now())
            return Outcome(sub.id, claimed.event_id, "delivered", status)
        failure = f"HTTP {status}: {answer.body[:200].decode('utf-8', 'replace')}"
        if status in RETRYABLE_STATUSES:
            wait = retry_after_seconds(answer.headers.get("Retry-After"), self.clock.now())
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
