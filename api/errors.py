"""Domain exceptions and their one mapping to HTTP: every error leaves in the spec's JSON envelope."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any, ClassVar

import msgspec
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi import ResponseSpec
from litestar.types import ExceptionHandlersMap, Send

from api.schemas import ErrorBody, PipelineErrorBody, TokenLimitErrorBody, Wire

logger = logging.getLogger(__name__)

NOT_FOUND = "Not found"
INTERNAL = "internal server error"
PIPELINE_STATUSES = frozenset({401, 402, 429})
"""Statuses the spec answers with the pipeline envelope (`success`, `message`)."""


class ApiFailure(Exception):  # noqa: N818 (subclasses are named for the HTTP outcome)
    """A failure the API answers on purpose: status, message, headers and envelope are decided here."""

    status_code: ClassVar[int] = 500

    def __init__(self, message: str, *, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = dict(headers or {})

    def body(self) -> Wire:
        return ErrorBody(error=self.message)


class BadRequest(ApiFailure):
    """400: a malformed request, e.g. a strategy outside aggressive, conservative."""

    status_code = 400


class NotFound(ApiFailure):
    """404: instrument, resource, market or route absent."""

    status_code = 404

    def __init__(self, message: str = NOT_FOUND) -> None:
        super().__init__(message)


class MarketNotLive(NotFound):
    """404 for a real market that has not launched; the message names the live markets."""

    def __init__(self, market: str, live_markets: Sequence[str]) -> None:
        super().__init__(
            f"Market '{market}' is not available yet; live markets: {', '.join(live_markets)}"
        )


class InvalidParameter(ApiFailure):
    """422: a parameter that is not of its type or outside what the route accepts; names it."""

    status_code = 422

    def __init__(self, parameter: str, reason: str) -> None:
        super().__init__(f"Invalid parameter '{parameter}': {reason}")
        self.parameter = parameter


class DependencyUnavailable(ApiFailure):
    """503: a backing store is temporarily unavailable; the client retries after `Retry-After`."""

    status_code = 503

    def __init__(self, message: str, *, retry_after: int = 5) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after)})


class TableMissing(DependencyUnavailable):
    """503 while a table a route reads is not materialized yet; 404 on a past data version that
    `as_of` named (`AS_OF_VERSION_SCOPE`), where the table will never appear."""

    def __init__(self, table: str, *, retry_after: int) -> None:
        super().__init__(f"{table} data is not available yet; retry later", retry_after=retry_after)
        self.table = table


AS_OF_VERSION_SCOPE = "mi.as_of.version"
"""Scope key of the past data version a request reads (set when `as_of` names one)."""


class PipelineRejection(ApiFailure):
    """A request refused before any route ran (401, 402, 429): the `success`/`message` envelope."""

    def body(self) -> Wire:
        return PipelineErrorBody(message=self.message)


class Unauthorized(PipelineRejection):
    """401: a missing, malformed or unknown key."""

    status_code = 401

    def __init__(
        self, message: str = "unauthorized", *, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message, headers=headers)


class TokenLimitExceeded(Unauthorized):
    """401 for an exhausted daily or monthly budget, told apart by `error_code`."""

    def __init__(
        self,
        message: str,
        *,
        daily: bool,
        upgrade_url: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, headers=headers)
        self.daily = daily
        self.upgrade_url = upgrade_url

    def body(self) -> Wire:
        return TokenLimitErrorBody(
            message=self.message,
            error_code="DAILY_TOKEN_LIMIT" if self.daily else "MONTHLY_TOKEN_LIMIT",
            limit_type="daily" if self.daily else "monthly",
            upgrade_url=self.upgrade_url,
        )


class PaymentRequired(PipelineRejection):
    """402: the plan does not include the requested market."""

    status_code = 402


class RateLimited(PipelineRejection):
    """429: too many requests or connections; retry after `Retry-After` seconds."""

    status_code = 429

    def __init__(
        self, message: str, *, retry_after: int, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message, headers={**(headers or {}), "Retry-After": str(retry_after)})


_encode = msgspec.json.Encoder().encode


def encoded_body(failure: ApiFailure) -> bytes:
    """`failure`'s envelope as JSON bytes."""
    return _encode(failure.body())


async def send_failure(
    send: Send, failure: ApiFailure, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer `failure` at the ASGI layer, before any route runs (authentication, metering): the
    envelope, status and headers its exception handler gives, plus `headers`."""
    body = encoded_body(failure)
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((name.lower().encode(), value.encode()) for name, value in failure.headers.items()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": failure.status_code, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _respond(
    body: Wire, status_code: int, headers: Mapping[str, str] | None = None
) -> Response[Wire]:
    return Response(
        content=body,
        status_code=status_code,
        headers=dict(headers or {}),
        media_type=MediaType.JSON,
    )


def handle_api_error(_: Request[Any, Any, Any], exc: ApiFailure) -> Response[Wire]:
    return _respond(exc.body(), exc.status_code, exc.headers)


def handle_table_missing(request: Request[Any, Any, Any], exc: TableMissing) -> Response[Wire]:
    version = request.scope.get(AS_OF_VERSION_SCOPE)
    if version is None:
        return handle_api_error(request, exc)
    message = f"{exc.table} data was not recorded in data version {version}, the one as_of names"
    return handle_api_error(request, NotFound(message))


def handle_validation_error(_: Request[Any, Any, Any], exc: ValidationException) -> Response[Wire]:
    """Litestar's own parameter validation (ill-typed or missing query/path values) answers 422."""
    problems = exc.extra if isinstance(exc.extra, list) else []
    named = [
        f"Invalid parameter '{p['key']}': {p.get('message', 'invalid value')}"
        for p in problems
        if isinstance(p, dict) and p.get("key")
    ]
    return _respond(ErrorBody(error="; ".join(named) or exc.detail), 422)


def handle_http_exception(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Wire]:
    """Litestar's HTTP exceptions (unknown path, wrong method, ...) in the spec's envelopes."""
    if exc.status_code >= 500:
        return handle_unexpected(request, exc)
    phrase = HTTPStatus(exc.status_code).phrase
    detail = exc.detail if exc.detail != phrase else None
    if exc.status_code in PIPELINE_STATUSES:
        body: Wire = PipelineErrorBody(message=detail or phrase.lower())
    else:
        body = ErrorBody(
            error=detail or (NOT_FOUND if exc.status_code == 404 else phrase.capitalize())
        )
    return _respond(body, exc.status_code, exc.headers)


def handle_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[Wire]:
    """A server fault: logged with its traceback here, answered without one."""
    logger.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return _respond(ErrorBody(error=INTERNAL), 500)


def schema_not_found_as_json(response: Response[Any]) -> Response[Any]:
    """The OpenAPI router answers unknown /schema/* paths with an HTML page; send the envelope."""
    if response.status_code == 404:
        return _respond(ErrorBody(error=NOT_FOUND), 404)
    return response


def error_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI `responses=` for a route's documented failures, each in its envelope.

    Pass 400 explicitly on routes with parameters: it replaces the schema Litestar adds for its own
    validation errors (which this API answers as 422 in the `error` envelope).
    """
    return {
        status: ResponseSpec(
            data_container=PipelineErrorBody if status in PIPELINE_STATUSES else ErrorBody,
            description=HTTPStatus(status).phrase,
            generate_examples=False,
        )
        for status in statuses
    }


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    ApiFailure: handle_api_error,
    TableMissing: handle_table_missing,
    ValidationException: handle_validation_error,
    HTTPException: handle_http_exception,
    Exception: handle_unexpected,
}
"""The app-level map: the only place an exception becomes an HTTP response."""
