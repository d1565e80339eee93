"""Every failure of the API reaches the SDK's caller as its typed error, with the envelope's fields."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from market_intelligence import (
    ApiError,
    BadRequest,
    Client,
    InvalidParameter,
    MarketNotAvailable,
    NotFound,
    PaymentRequired,
    TokenLimit,
    Unauthorized,
    parse_retry_after,
)

from tests.served import ServedApi

from .conftest import Recorder, async_client

pytestmark = pytest.mark.slow

Call = Callable[[Client], object]

FAILURES: list[tuple[str, Call, type[ApiError], int, str]] = [
    ("unknown symbol", lambda c: c.get_indicators("crypto", "NOPE"), NotFound, 404, "NOPE"),
    ("unknown market", lambda c: c.list_symbols("bonds"), NotFound, 404, "bonds"),  # type: ignore[arg-type]
    ("crypto-only route on forex", lambda c: c.get_detail("forex", "EURUSD"), NotFound, 404, "crypto"),
    ("non-crypto route on crypto", lambda c: c.get_current_trend("crypto", "BTC"), NotFound, 404, "forex"),
    ("market not launched", lambda c: c.list_symbols("commodities"), MarketNotAvailable, 404, "is not available yet"),
    ("strategy outside the two", lambda c: c.get_current_action("BTC", "reckless"), BadRequest, 400, "aggressive"),  # type: ignore[arg-type]
    ("strategy query outside the two", lambda c: c.get_recent_buys(strategy="yolo"), BadRequest, 400, "yolo"),  # type: ignore[arg-type]
    ("price-history limit below 1", lambda c: c.get_price_history("crypto", "BTC", limit=0), InvalidParameter, 422, "limit"),
    ("from after to", lambda c: c.get_price_history("crypto", "BTC", start=2_000, end=1_000), InvalidParameter, 422, ""),
    ("fill outside the two", lambda c: c.get_backtest_summary("BTC", "aggressive", fill="open"), InvalidParameter, 422, "'fill'"),  # type: ignore[arg-type]
    ("backtest trades of a fill outside the two", lambda c: c.get_backtest_history("BTC", "aggressive", fill="NEXT_OPEN"), InvalidParameter, 422, "next_open"),  # type: ignore[arg-type]
]  # fmt: skip
"""What is asked, the error class, the status, a word the message holds."""


@pytest.fixture
def limited_client(limited_api: ServedApi) -> Client:
    return Client(limited_api.new_key("internal"), base_url=limited_api.base, retry_attempts=1)


@pytest.mark.parametrize(
    ("call", "error", "status", "word"),
    [pytest.param(*failure[1:], id=failure[0]) for failure in FAILURES],
)
def test_each_failure_raises_its_typed_error_with_the_envelope_message_and_the_balance(
    limited_client: Client, call: Call, error: type[ApiError], status: int, word: str
) -> None:
    """Errors of the spec's table: status -> class; the `error` string is the message; the balance
    headers of the failed response are on the error and on the client."""
    with limited_client, pytest.raises(error) as raised:
        call(limited_client)
    assert type(raised.value) is error
    assert raised.value.status_code == status
    assert word in raised.value.message
    assert raised.value.message == raised.value.body["error"]
    assert raised.value.balance is not None
    assert limited_client.balance == raised.value.balance


def test_an_unknown_key_is_unauthorized_with_no_balance(limited_api: ServedApi) -> None:
    """401 for a key the service does not know: the pipeline envelope, no account so no headers."""
    with Client("not-a-key", base_url=limited_api.base) as stranger:
        with pytest.raises(Unauthorized) as raised:
            stranger.ping()
        assert type(raised.value) is Unauthorized
        assert raised.value.body == {"success": False, "message": "unauthorized"}
        assert raised.value.balance is None
        assert stranger.balance is None


def test_a_request_over_the_daily_cap_is_a_token_limit_error_naming_the_daily_limit(
    limited_api: ServedApi,
) -> None:
    """The token-limit 401: `error_code`, `limit_type` and `upgrade_url` on the error, nothing
    charged (the `tiny` plan's daily cap, 6, is below a scorecard's 10 tokens)."""
    tiny = Client(limited_api.new_key("tiny"), base_url=limited_api.base)
    with tiny, pytest.raises(TokenLimit) as raised:
        tiny.scorecard("stocks", "AAPL")
    limit = raised.value
    assert isinstance(limit, Unauthorized)
    assert (limit.error_code, limit.limit_type) == ("DAILY_TOKEN_LIMIT", "daily")
    assert limit.upgrade_url.startswith("https://")
    assert limit.balance is not None
    assert (limit.balance.cost, limit.balance.remaining_today) == (0, 6)


def test_a_market_outside_the_plan_is_payment_required(limited_api: ServedApi) -> None:
    """402 for a plan without the market (`crypto_only` asking for forex); not charged."""
    with Client(limited_api.new_key("crypto_only"), base_url=limited_api.base) as narrow:
        narrow.list_symbols("crypto")
        with pytest.raises(PaymentRequired) as raised:
            narrow.list_symbols("forex")
    assert "forex" in raised.value.message
    assert raised.value.balance is not None
    assert raised.value.balance.cost == 0


def test_the_async_client_raises_the_same_typed_errors(limited_api: ServedApi) -> None:
    async def fail() -> tuple[type[ApiError], ...]:
        key = limited_api.new_key("internal")
        async with async_client(limited_api.base, key, Recorder(), retry_attempts=1) as aclient:
            raised: list[type[ApiError]] = []
            for call in (
                aclient.get_indicators("crypto", "NOPE"),
                aclient.get_backtest_summary("BTC", "bogus"),  # type: ignore[arg-type]
                aclient.list_symbols("commodities"),
            ):
                try:
                    await call
                except ApiError as error:
                    raised.append(type(error))
            return tuple(raised)

    assert asyncio.run(fail()) == (NotFound, BadRequest, MarketNotAvailable)


NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("7", 7.0),
        (" 0 ", 0.0),
        (format_datetime(NOW + timedelta(seconds=90), usegmt=True), 90.0),
        ("Mon, 02 Mar 2026 12:00:30 GMT", 30.0),
        (format_datetime(NOW - timedelta(minutes=5), usegmt=True), 0.0),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_is_read_as_delta_seconds_or_as_an_http_date(
    header: str | None, seconds: Any
) -> None:
    """RFC 9110 Retry-After: delta-seconds or an HTTP date (counted from now; a past date is 0)."""
    assert parse_retry_after(header, now=NOW.timestamp()) == seconds
