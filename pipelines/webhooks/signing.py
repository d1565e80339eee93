"""Webhook signatures: HMAC-SHA256 over `<timestamp>.<body>`, and the receiver's verification."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

EVENT_ID_HEADER = "Webhook-Id"
"""The event id: the same on every retry of one event, so receivers can deduplicate."""
IDEMPOTENCY_HEADER = "Idempotency-Key"
"""The event id again, under the name many HTTP stacks already honour."""
EVENT_TYPE_HEADER = "Webhook-Event"
TIMESTAMP_HEADER = "Webhook-Timestamp"
"""Unix seconds of this attempt; signed, so a captured request cannot be replayed later."""
SIGNATURE_HEADER = "Webhook-Signature"
"""`v1=<hex HMAC-SHA256 of "<timestamp>.<body>" keyed by the subscription's secret>`."""

DEFAULT_TOLERANCE_SECONDS = 300


class SignatureError(ValueError):
    """A request that does not carry a valid, fresh signature."""


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for `body` sent at `timestamp`."""
    message = str(timestamp).encode("ascii") + b"." + body
    digest = hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()
    return f"v1={digest}"


def signed_headers(
    secret: str, event_id: str, event_type: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """Every header a delivery carries besides Content-Type."""
    return {
        "Content-Type": "application/json",
        EVENT_ID_HEADER: event_id,
        IDEMPOTENCY_HEADER: event_id,
        EVENT_TYPE_HEADER: event_type,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(secret, timestamp, body),
    }


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    now: float,
    tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
) -> None:
    """Raise SignatureError unless `headers` sign `body` with `secret` within `tolerance_seconds` of `now`.

    `headers` is looked up case-insensitively. Several `v1=` values separated by commas are
    accepted (one matching is enough), so a secret can be rotated without downtime.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    stamp = lower.get(TIMESTAMP_HEADER.lower())
    given = lower.get(SIGNATURE_HEADER.lower())
    if stamp is None or given is None:
        raise SignatureError("missing Webhook-Timestamp or Webhook-Signature header")
    try:
        timestamp = int(stamp)
    except ValueError:
        raise SignatureError(f"bad Webhook-Timestamp {stamp!r}") from None
    if abs(now - timestamp) > tolerance_seconds:
        raise SignatureError(f"timestamp {timestamp} is outside the {tolerance_seconds}s tolerance")
    expected = sign(secret, timestamp, body)
    if not any(hmac.compare_digest(expected, v.strip()) for v in given.split(",")):
        raise SignatureError("signature does not match")
