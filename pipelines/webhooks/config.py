"""The operator-editable webhooks file: subscriptions, delivery policy, sentiment rule, custom feeds."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urlsplit

import msgspec
from msgspec import UNSET, UnsetType

from pipelines.platform.config_files import ConfigFileError, decode, read_toml
from pipelines.platform.outbound import (
    OutboundPolicy,
    OutboundRefused,
    Resolver,
    UnresolvedHost,
    is_loopback,
    pin,
)
from pipelines.platform.retries import RetryPolicy
from pipelines.webhooks.signing import SecretError, secret_key

EVENT_TYPES: tuple[str, ...] = (
    "news.published",
    "trade.executed",
    "trade.action_changed",
    "portfolio.updated",
    "sentiment.shift",
)
"""Every built-in event type; custom feeds add `custom.<name>`."""


class WebhookConfigError(ConfigFileError):
    """The webhooks file is invalid; the message names the entry and what is wrong."""


class UrlRefusedError(WebhookConfigError):
    """A receiver URL that deliveries may not go to: not HTTPS (and not an allowed loopback), or
    a host that resolves to an address inside a network (SSRF) and is not in `allowed_hosts`."""


class UnresolvedHostError(WebhookConfigError):
    """The receiver's host does not resolve now: no verdict on its addresses yet."""


@dataclass(frozen=True)
class Subscription:
    """One customer's receiver, what it wants, and how fast and long we may talk to it."""

    id: str
    customer: str
    url: str
    secret: str
    events: tuple[str, ...]
    """Event types (`news.published`) or families (`trade.*`); `*` is every type."""
    markets: tuple[str, ...] = ()
    """Markets to match; empty means every market."""
    symbols: tuple[str, ...] = ()
    """Upper-case symbols; an event matches when it names one of them. Empty: no symbol filter."""
    keywords: tuple[str, ...] = ()
    """Lower-case words; a news event matches when its title or body contains one."""
    strategies: tuple[str, ...] = ()
    timeout_seconds: float = 10.0
    """The whole attempt (connection, request, the receiver's answer) within this, not per read."""
    rate_limit_per_second: float = 5.0
    enabled: bool = True

    def wants(self, event_type: str) -> bool:
        family = event_type.split(".", 1)[0]
        return any(p in ("*", event_type, f"{family}.*") for p in self.events)


class DeliveryPolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Retry schedule and the switches shared by every subscription."""

    max_attempts: int = 8
    backoff_base_seconds: float = 2.0
    backoff_max_seconds: float = 3600.0
    backoff_jitter_seconds: float = 2.0
    retry_after_max_seconds: float = 3600.0
    """Longest Retry-After honoured; a longer one is cut to this."""
    lease_seconds: float = 120.0
    """How long a claimed delivery stays with one worker before another may take it over."""
    allow_http_loopback: bool = False
    """Test/dev switch: plain http:// allowed to loopback hosts only."""
    allowed_hosts: tuple[str, ...] = ()
    """Hosts deliveries may go to although they resolve to a loopback, private, link-local or
    cloud-metadata address: a receiver in the operator's own network, or the tests' receiver."""
    ca_file: str | None = None
    """Extra CA bundle to trust for receivers (tests, private CAs); None: the system store."""
    parallel_receivers: int = 16
    """Receivers a worker delivers to at once (a receiver's own deliveries go one at a time): a
    slow receiver holds its lane only, never the others'."""

    @property
    def retry(self) -> RetryPolicy:
        """The retry schedule as the project's one retry policy (`pipelines/platform/retries.py`)."""
        return RetryPolicy(
            attempts=self.max_attempts,
            wait_initial=self.backoff_base_seconds,
            wait_max=self.backoff_max_seconds,
            wait_jitter=self.backoff_jitter_seconds,
            retry_after_max=self.retry_after_max_seconds,
        )


class SentimentRule(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A shift: today's net sentiment differs from the trailing mean by at least `threshold`."""

    window_days: int = 7
    threshold: float = 0.5
    min_briefs: int = 3
    """Briefs the day must have for its net sentiment to count."""


class CustomFeed(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A catalog table whose rows become `custom.<name>` events, identified by `key` columns."""

    name: str
    table: str
    key: tuple[str, ...]
    symbol_column: str | None = "symbol"


@dataclass(frozen=True)
class WebhooksConfig:
    subscriptions: tuple[Subscription, ...] = ()
    delivery: DeliveryPolicy = field(default_factory=DeliveryPolicy)
    sentiment: SentimentRule = field(default_factory=SentimentRule)
    custom: tuple[CustomFeed, ...] = ()

    def subscription(self, subscription_id: str) -> Subscription:
        for sub in self.subscriptions:
            if sub.id == subscription_id:
                return sub
        known = ", ".join(s.id for s in self.subscriptions) or "none"
        raise WebhookConfigError(f"no subscription {subscription_id!r} (configured: {known})")


def check_url(url: str, policy: DeliveryPolicy, resolve: Resolver | None = None) -> None:
    """Raise UrlRefusedError unless deliveries may go to `url`: https:// (or http:// to loopback
    with the dev switch on), to a host whose every address is public unless the host is in
    `policy.allowed_hosts`. UnresolvedHostError when the host does not resolve now.

    A delivery does not call this before it connects: `Worker` pins the connection to the
    addresses `outbound.pin` checked (one resolution), with this policy (`outbound_policy`)."""
    try:
        pin(url, outbound_policy(policy, url), resolve)
    except UnresolvedHost as error:
        raise UnresolvedHostError(str(error)) from None
    except OutboundRefused as error:
        raise UrlRefusedError(str(error)) from None


def outbound_policy(
    policy: DeliveryPolicy, url: str, timeout_seconds: float = 10.0
) -> OutboundPolicy:
    """The outbound policy of a delivery to `url` (docs/webhooks.md): HTTPS only (plain HTTP to a
    loopback host with the dev switch), no redirects, the receiver's answer read up to
    `ANSWER_BYTES`, the whole attempt within `timeout_seconds`.

    Raises UrlRefusedError for a scheme the delivery policy refuses."""
    parts = urlsplit(url)
    _check_scheme(url, parts, policy.allow_http_loopback)
    return OutboundPolicy(
        schemes=frozenset({parts.scheme}),
        allowed_hosts=frozenset(policy.allowed_hosts),
        max_redirects=0,  # a redirect is the receiver's answer (not delivered), never followed
        max_bytes=ANSWER_BYTES,
        deadline_seconds=timeout_seconds,
        ca_file=policy.ca_file,
    )


ANSWER_BYTES = 64 * 1024
"""decisions.md, Operations: at most this much of a receiver's answer is read (the status decides;
the head of the body goes into the delivery's error for a failure)."""


def _check_scheme(url: str, parts: SplitResult, allow_http_loopback: bool) -> None:
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        if allow_http_loopback:
            return
        raise UrlRefusedError(
            f"{url}: plain HTTP is refused; webhooks are HTTPS only "
            "(http:// to loopback needs [delivery] allow_http_loopback = true, for tests and dev)"
        )
    raise UrlRefusedError(f"{url}: webhooks are HTTPS only; use an https:// URL")


class SubscriptionEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A `[[subscriptions]]` table as written: `Subscription`'s keys, the secret given or named by
    `secret_env`; a key left out (UNSET) takes `Subscription`'s default."""

    id: str
    url: str
    events: tuple[str, ...] = ()
    customer: str | UnsetType = UNSET
    secret: str | UnsetType = UNSET
    secret_env: str | UnsetType = UNSET
    markets: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    strategies: tuple[str, ...] = ()
    timeout_seconds: float | UnsetType = UNSET
    rate_limit_per_second: float | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET


class WebhooksFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The webhooks file's tables; each subscription is decoded on its own, so an error names it."""

    subscriptions: tuple[dict[str, Any], ...] = ()
    delivery: DeliveryPolicy = msgspec.field(default_factory=DeliveryPolicy)
    sentiment: SentimentRule = msgspec.field(default_factory=SentimentRule)
    custom: tuple[CustomFeed, ...] = ()


def load_config(
    path: Path | None, env: Mapping[str, str] | None = None, resolve: Resolver | None = None
) -> WebhooksConfig:
    """Parse the webhooks TOML (None or a missing file: no subscriptions)."""
    if path is None or not path.exists():
        return WebhooksConfig()
    raw = read_toml(path, WebhookConfigError)
    return parse_config(raw, os.environ if env is None else env, resolve)


def parse_config(
    raw: Mapping[str, object], env: Mapping[str, str], resolve: Resolver | None = None
) -> WebhooksConfig:
    """The config in `raw`; every receiver URL checked as `check_url` does (a host that does not
    resolve now is accepted: each delivery checks it again)."""
    webhooks: WebhooksFile = decode(raw, WebhooksFile, "webhooks file", WebhookConfigError)
    delivery = msgspec.structs.replace(
        webhooks.delivery, allowed_hosts=tuple(h.lower() for h in webhooks.delivery.allowed_hosts)
    )
    subs = tuple(_subscription(entry, delivery, env, resolve) for entry in webhooks.subscriptions)
    ids = [s.id for s in subs]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise WebhookConfigError(f"subscription ids must be unique: {duplicated}")
    return WebhooksConfig(
        subscriptions=subs,
        delivery=delivery,
        sentiment=webhooks.sentiment,
        custom=tuple(_custom(feed) for feed in webhooks.custom),
    )


def _subscription(
    raw: dict[str, Any],
    delivery: DeliveryPolicy,
    env: Mapping[str, str],
    resolve: Resolver | None,
) -> Subscription:
    where = f"subscription {raw.get('id', '')!r}"
    entry: SubscriptionEntry = decode(raw, SubscriptionEntry, where, WebhookConfigError)
    secret = entry.secret
    if not isinstance(entry.secret_env, UnsetType):
        secret = env.get(entry.secret_env, "")
    if isinstance(secret, UnsetType) or not secret:
        raise WebhookConfigError(f"{where}: a secret (or secret_env) is required")
    try:
        secret_key(secret)
    except SecretError as error:
        raise WebhookConfigError(f"{where}: {error}") from None
    try:
        check_url(entry.url, delivery, resolve)
    except UnresolvedHostError:
        pass  # judged at each delivery, when it resolves
    except UrlRefusedError as error:
        raise UrlRefusedError(f"{where}: {error}") from None
    given = {
        name: value
        for name in ("customer", "timeout_seconds", "rate_limit_per_second", "enabled")
        if not isinstance(value := getattr(entry, name), UnsetType)
    }
    sub = Subscription(
        **{"customer": entry.id, **given},
        id=entry.id,
        url=entry.url,
        secret=secret,
        events=entry.events,
        markets=entry.markets,
        symbols=tuple(s.upper() for s in entry.symbols),
        keywords=tuple(k.lower() for k in entry.keywords),
        strategies=entry.strategies,
    )
    if not sub.events:
        raise WebhookConfigError(f"{where}: list at least one event type")
    if sub.timeout_seconds <= 0 or sub.rate_limit_per_second <= 0:
        raise WebhookConfigError(f"{where}: timeout and rate limit must be > 0")
    return sub


def _custom(feed: CustomFeed) -> CustomFeed:
    if not feed.name or not feed.table or not feed.key:
        raise WebhookConfigError(
            "every [[custom]] entry needs name, table and a non-empty key list"
        )
    return msgspec.structs.replace(feed, symbol_column=feed.symbol_column or None)
