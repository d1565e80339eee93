"""Event payloads (msgspec Structs, the documented wire schema) and stable event ids."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import msgspec

SCHEMA_VERSION = 1


class Payload(msgspec.Struct, kw_only=True, omit_defaults=False):
    """Base of every event's `data`: field names are the wire names, nothing is renamed."""


class NewsPublished(Payload):
    """`news.published`: a brief matching the subscription's symbols and/or keywords appeared."""

    market: str
    article_id: str
    published_at: str
    title: str | None
    symbols: list[str]
    sentiment: float | None
    tone: str | None
    topic: str
    link: str | None
    summary: str
    """The first 280 characters of the body."""


class TradeExecuted(Payload):
    """`trade.executed`: a strategy bought (entered) or sold (exited) in its full-history backtest."""

    market: str
    symbol: str
    strategy: str
    side: str
    """`buy` or `sell`."""
    date: str
    price: float
    """Fill price, slippage included."""
    units: float
    exit_reason: str | None
    profit: float | None
    """Sell only: the trade's profit net of fees."""
    profit_percent: float | None


class ActionChanged(Payload):
    """`trade.action_changed`: a strategy's current action differs from the one seen last."""

    market: str
    symbol: str
    strategy: str
    date: str
    action: str
    previous_action: str
    message: str


class PortfolioUpdated(Payload):
    """`portfolio.updated`: the full-history backtest portfolio's value at a new latest bar."""

    market: str
    symbol: str
    strategy: str
    date: str
    years: int
    initial_investment: float
    final_value: float
    total_profit: float
    profit_percent: float


class SentimentShift(Payload):
    """`sentiment.shift`: a day's net sentiment moved at least the threshold from its trailing mean."""

    market: str
    symbol: str
    date: str
    net_sentiment: float
    """(positive - negative) / total of the day, in -1..1."""
    baseline: float
    """Mean net sentiment of the previous `window_days` days with enough briefs."""
    change: float
    direction: str
    """`up` or `down`."""
    positive: int
    neutral: int
    negative: int
    total: int


class CustomRow(Payload):
    """`custom.<name>`: one new row of the operator's table, as column -> value."""

    feed: str
    table: str
    row: dict[str, Any]


class WebhookTest(Payload):
    """`webhook.test`: sent by `mi webhooks test`; carries no market data."""

    subscription: str
    customer: str
    message: str


D = TypeVar("D", bound=Payload)


class Envelope(msgspec.Struct, Generic[D], kw_only=True):
    """The JSON body of every delivery."""

    id: str
    """Stable id: the same facts always give the same id (a re-run emits no duplicate)."""
    type: str
    occurred_at: str
    """When the fact happened (ISO 8601, UTC); a day's facts use 00:00 UTC."""
    schema_version: int = SCHEMA_VERSION
    data: D


PAYLOADS: dict[str, type[Payload]] = {
    "news.published": NewsPublished,
    "trade.executed": TradeExecuted,
    "trade.action_changed": ActionChanged,
    "portfolio.updated": PortfolioUpdated,
    "sentiment.shift": SentimentShift,
    "webhook.test": WebhookTest,
}
"""Payload type per event type; `custom.*` carries CustomRow."""


def payload_type(event_type: str) -> type[Payload]:
    return CustomRow if event_type.startswith("custom.") else PAYLOADS[event_type]


_ENCODER = msgspec.json.Encoder()


def event_id(event_type: str, *facts: object) -> str:
    """`evt_` + 32 hex of SHA-256 over the type and the identifying facts."""
    text = "\x1f".join([event_type, *(str(f) for f in facts)])
    return "evt_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Event:
    """One derived event: its body (fixed at derivation) and what subscriptions match on."""

    id: str
    type: str
    occurred_at: str
    body: bytes
    market: str
    symbols: tuple[str, ...] = ()
    strategy: str | None = None
    text: str = ""
    """Lower-cased searchable text (news title and body) for keyword criteria."""


def make_event(
    event_type: str,
    facts: tuple[object, ...],
    occurred_at: str,
    data: Payload,
    market: str,
    symbols: tuple[str, ...] = (),
    strategy: str | None = None,
    text: str = "",
) -> Event:
    ident = event_id(event_type, *facts)
    envelope = Envelope(id=ident, type=event_type, occurred_at=occurred_at, data=data)
    return Event(
        id=ident,
        type=event_type,
        occurred_at=occurred_at,
        body=_ENCODER.encode(envelope),
        market=market,
        symbols=symbols,
        strategy=strategy,
        text=text.lower(),
    )


def decode(body: bytes) -> Envelope[Any]:
    """A receiver's decoder: the envelope with `data` typed by the event's `type`."""
    event_type = msgspec.json.decode(body, type=dict[str, Any])["type"]
    return msgspec.json.decode(body, type=Envelope[payload_type(event_type)])  # type: ignore[misc]


def make_test_event(subscription_id: str, customer: str, now: float) -> Event:
    """A `webhook.test` event for one subscription, unique per call (its id includes `now`)."""
    stamp = datetime.fromtimestamp(now, UTC).isoformat()
    data = WebhookTest(
        subscription=subscription_id,
        customer=customer,
        message="Test event from the Market Intelligence webhooks service.",
    )
    return make_event("webhook.test", (subscription_id, repr(now)), stamp, data, market="")
