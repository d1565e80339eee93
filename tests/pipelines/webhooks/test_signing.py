"""The signature: HMAC-SHA256 over "<timestamp>.<body>", and the verification a receiver runs."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from pipelines.webhooks import signing

BODY = b'{"id":"evt_1"}'


def test_the_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    # Independent oracle: the recipe in docs/webhooks.md, written out with hashlib.
    expected = hmac.new(b"secret", b"1700000000." + BODY, hashlib.sha256).hexdigest()
    assert signing.sign("secret", 1_700_000_000, BODY) == f"v1={expected}"


def test_verify_accepts_a_fresh_signed_request() -> None:
    headers = signing.signed_headers("secret", "evt_1", "news.published", 1_700_000_000, BODY)
    signing.verify("secret", headers, BODY, now=1_700_000_100)
    lowered = {k.lower(): v for k, v in headers.items()}
    signing.verify("secret", lowered, BODY, now=1_700_000_000)


@pytest.mark.parametrize(
    ("secret", "body", "now", "message"),
    [
        ("other", BODY, 1_700_000_000, "does not match"),
        ("secret", BODY + b" ", 1_700_000_000, "does not match"),
        ("secret", BODY, 1_700_000_301, "tolerance"),
        ("secret", BODY, 1_699_999_699, "tolerance"),
    ],
)
def test_verify_rejects_wrong_secret_tampered_body_and_stale_timestamp(
    secret: str, body: bytes, now: float, message: str
) -> None:
    headers = signing.signed_headers("secret", "evt_1", "news.published", 1_700_000_000, BODY)
    with pytest.raises(signing.SignatureError, match=message):
        signing.verify(secret, headers, body, now=now)


def test_verify_accepts_any_of_several_signatures_during_a_secret_rotation() -> None:
    headers = {
        signing.TIMESTAMP_HEADER: "1700000000",
        signing.SIGNATURE_HEADER: f"v1=deadbeef, {signing.sign('new', 1_700_000_000, BODY)}",
    }
    signing.verify("new", headers, BODY, now=1_700_000_000)


def test_missing_headers_are_rejected() -> None:
    with pytest.raises(signing.SignatureError, match="missing"):
        signing.verify("secret", {}, BODY, now=0)
