"""Standard Webhooks signatures: the `webhook-*` headers and the `v1` HMAC-SHA256 of each delivery."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

# The names and formats of the Standard Webhooks specification (standardwebhooks.com), so that a
# receiver verifies with any of its libraries (`standardwebhooks` on PyPI and npm, Svix, ...).
ID_HEADER = "webhook-id"
"""The event id: the same on every retry of one event, so receivers can deduplicate."""
TIMESTAMP_HEADER = "webhook-timestamp"
"""Unix seconds of this attempt; signed, so a captured request cannot be replayed later."""
SIGNATURE_HEADER = "webhook-signature"
"""`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" keyed by the secret's bytes>`."""

SECRET_PREFIX = "whsec_"
SECRET_BYTES = (24, 64)
"""The key sizes the specification asks for: at least 192 bits, at most 512."""


class SecretError(ValueError):
    """A secret that is not `whsec_` followed by the base64 of 24 to 64 random bytes."""


def secret_key(secret: str) -> bytes:
    """The HMAC key a `whsec_<base64>` secret stands for; SecretError for anything else."""
    if not secret.startswith(SECRET_PREFIX):
        raise SecretError(f"a secret starts with {SECRET_PREFIX!r} (then base64)")
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except binascii.Error:
        raise SecretError(f"the part after {SECRET_PREFIX!r} is not base64") from None
    low, high = SECRET_BYTES
    if not low <= len(key) <= high:
        raise SecretError(f"a secret holds {low} to {high} bytes, not {len(key)}")
    return key


def new_secret() -> str:
    """A fresh secret for a subscription: `whsec_` and the base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def sign(secret: str, event_id: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for `body` of event `event_id` sent at `timestamp`."""
    content = f"{event_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signed_headers(secret: str, event_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Every header a delivery carries besides the client's own (User-Agent)."""
    return {
        "content-type": "application/json",
        ID_HEADER: event_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(secret, event_id, timestamp, body),
    }
