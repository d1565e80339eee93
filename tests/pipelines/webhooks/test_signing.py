"""Standard Webhooks signatures: `v1,<base64 HMAC-SHA256>` over "<id>.<timestamp>.<body>"."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime

import pytest
import standardwebhooks

from pipelines.webhooks import signing

KEY = bytes(range(24))
SECRET = "whsec_" + base64.b64encode(KEY).decode()
BODY = b'{"id":"evt_1"}'


def test_the_signature_is_base64_hmac_sha256_of_id_timestamp_body_keyed_by_the_secret_bytes() -> (
    None
):
    # Independent oracle: the specification's recipe, written out with hashlib.
    digest = hmac.new(KEY, b"evt_1.1700000000." + BODY, hashlib.sha256).digest()
    expected = "v1," + base64.b64encode(digest).decode()
    assert signing.sign(SECRET, "evt_1", 1_700_000_000, BODY) == expected


def test_the_headers_are_the_specifications() -> None:
    headers = signing.signed_headers(SECRET, "evt_1", 1_700_000_000, BODY)
    assert headers["webhook-id"] == "evt_1"
    assert headers["webhook-timestamp"] == "1700000000"
    assert headers["webhook-signature"] == signing.sign(SECRET, "evt_1", 1_700_000_000, BODY)


def test_the_standardwebhooks_library_signs_the_same_bytes() -> None:
    when = datetime.fromtimestamp(1_700_000_000, UTC)
    theirs = standardwebhooks.Webhook(SECRET).sign("evt_1", when, BODY.decode())
    assert signing.sign(SECRET, "evt_1", 1_700_000_000, BODY) == theirs


@pytest.mark.parametrize(
    ("secret", "message"),
    [
        (base64.b64encode(KEY).decode(), "starts with 'whsec_'"),
        ("whsec_not base64!", "not base64"),
        ("whsec_" + base64.b64encode(bytes(23)).decode(), "24 to 64 bytes, not 23"),
        ("whsec_" + base64.b64encode(bytes(65)).decode(), "24 to 64 bytes, not 65"),
    ],
)
def test_a_secret_is_whsec_and_the_base64_of_24_to_64_bytes(secret: str, message: str) -> None:
    with pytest.raises(signing.SecretError, match=message):
        signing.secret_key(secret)


def test_a_new_secret_is_a_valid_secret_of_32_random_bytes() -> None:
    first, second = signing.new_secret(), signing.new_secret()
    assert len(signing.secret_key(first)) == 32
    assert first != second
