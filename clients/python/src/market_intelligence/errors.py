"""Typed errors: one exception class per failure the API specification lists, built from its envelope."""

# ruff: noqa: N818 (each error is named for the API's outcome, as the specification names them)
from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from market_intelligence.models import Balance


class MarketIntelligenceError(Exception):
    """Every error this client raises: an answer of the API (`ApiError`), an API it cannot reach
    (`ApiUnreachable`), or a call it will not send (`MissingApiKey`)."""


class ApiUnreachable(MarketIntelligenceError, ConnectionError):
    """No answer from the API: nothing listens at `base_url`, its name does not resolve, or it did
    not answer within the client's `timeout`. Nothing was charged. The message names the URL and
    what to check; `__cause__` is httpx's error."""

    def __init__(self, base_url: str, reason: str) -> None:
        super().__init__(
            f"cannot reach the Market Intelligence API at {base_url} ({reason}): check that it "
            "is running (`mi serve`) and that base_url, or MI_API_URL, points at it"
        )
        self.base_url = base_url
        self.reason = reason


class MissingApiKey(MarketIntelligenceError, ValueError):
    """A metered route called without an API key: the request is not sent (it could only answer
    401). Pass `api_key=` or set MI_API_KEY."""

    def __init__(self) -> None:
        super().__init__(
            "no API key: pass api_key=... or set MI_API_KEY (an operator creates one with "
            "`mi keys create --plan sandbox`)"
        )


class ApiError(MarketIntelligenceError):
    """An answer of the API other than 200 or 304.

    `message` is the body's `error` (controller-level failures) or `message` (pipeline-level ones);
    `body` the decoded JSON (empty when the body was not JSON); `balance` the x-tokens-* headers
    when the response carried them (every metered response with a valid key does).
    """

    status: ClassVar[int] = 0

    def __init__(
        self,
        message: str,
        *,
        status: int,
        body: Mapping[str, Any] | None = None,
        balance: Balance | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status}: {message}")
        self.message = message
        self.status_code = status
        self.body = dict(body or {})
        self.balance = balance
        self.retry_after = retry_after
        """Seconds the server asked to wait (its `Retry-After`), when it sent one."""


class BadRequest(ApiError):
    """400: malformed request, usually a strategy outside aggressive, conservative. Charged: fix the
    request rather than repeat it."""

    status = 400


class Unauthorized(ApiError):
    """401: a missing, malformed or unknown API key. Not charged. Its `str` says that the key is
    the problem; `message` is the server's own word."""

    status = 401

    def __str__(self) -> str:
        return (
            f"401: {self.message}: the API does not accept this API key (a typo, a revoked key, "
            "or a key of another deployment); check api_key or MI_API_KEY"
        )


class TokenLimit(Unauthorized):
    """401 with `error_code`: the daily or monthly token budget is spent. Not charged.

    `limit_type` is `daily` (wait for the next UTC day) or `monthly` (wait for the 1st, or buy a
    top-up at `upgrade_url`).
    """

    def __init__(self, message: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.error_code: str = str(self.body.get("error_code", ""))
        self.limit_type: str = str(self.body.get("limit_type", ""))
        self.upgrade_url: str = str(self.body.get("upgrade_url", ""))

    def __str__(self) -> str:  # the key is good: the server's message says which budget is spent
        return Exception.__str__(self)


class PaymentRequired(ApiError):
    """402: the plan does not include the market. Not charged."""

    status = 402


class NotFound(ApiError):
    """404: unknown symbol, article, market or path, or a route asked for a market it does not
    serve (the message says which it does). Charged at a reduced rate."""

    status = 404


class MarketNotAvailable(NotFound):
    """404 for a real market that has not launched yet; the message names the live markets."""


class InvalidParameter(ApiError):
    """422: a parameter that is not of its type or out of range; the message names it. Charged at a reduced rate."""

    status = 422


class RateLimited(ApiError):
    """429: more than the key's requests per minute, or too many at once. Not charged; the client
    retries after `retry_after` seconds on its own (see `retry_attempts`)."""

    status = 429


class Unavailable(ApiError):
    """503: a dependency of the service is temporarily unavailable. Credited back but for a token; the client
    retries after `retry_after` seconds on its own."""

    status = 503


class ServerError(ApiError):
    """Any other 5xx: a fault of the service (its body says no more than that)."""

    status = 500


RETRYABLE: tuple[type[ApiError], ...] = (RateLimited, Unavailable)
"""The failures the specification tells a client to retry after `Retry-After`."""

_BY_STATUS: dict[int, type[ApiError]] = {
    error.status: error
    for error in (
        BadRequest,
        Unauthorized,
        PaymentRequired,
        NotFound,
        InvalidParameter,
        RateLimited,
        Unavailable,
    )
}


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """`Retry-After` in seconds: delta-seconds, or an HTTP date (RFC 9110) counted from `now`.

    None when absent or unreadable; a date already past is 0.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:  # an HTTP date is always GMT; a parser may leave it naive
        return None
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


def error_for(
    status: int,
    body: Mapping[str, Any],
    balance: Balance | None,
    retry_after: float | None,
) -> ApiError:
    """The typed error of a failed response, from its status and its envelope's fields."""
    message = str(body.get("error") or body.get("message") or f"HTTP {status}")
    kind = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    if status == 401 and "error_code" in body:
        kind = TokenLimit
    elif status == 404 and "is not available yet" in message:
        kind = MarketNotAvailable
    return kind(message, status=status, body=body, balance=balance, retry_after=retry_after)
