"""Every error is JSON in the spec's envelope: never a framework default body, HTML or a traceback."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from litestar import Litestar, get
from litestar.config.app import AppConfig
from litestar.exceptions import NotAuthorizedException
from litestar.middleware import ASGIMiddleware
from litestar.params import FromPath, FromQuery
from litestar.plugins import InitPluginProtocol
from litestar.testing import TestClient
from litestar.types import ASGIApp, Receive, Scope, Send

from api.errors import (
    ApiFailure,
    BadRequest,
    DependencyUnavailable,
    InvalidParameter,
    MarketNotLive,
    NotFound,
    PaymentRequired,
    RateLimited,
    TokenLimitExceeded,
    Unauthorized,
)

ClientFor = Callable[..., TestClient[Litestar]]


@get("/test/typed/{market:str}", sync_to_thread=False)
def typed_route(
    market: FromPath[str], limit: FromQuery[int] = 10, since: FromQuery[int | None] = None
) -> dict[str, object]:
    return {"market": market, "limit": limit}


@get("/test/fault", sync_to_thread=False)
def faulty_route() -> dict[str, str]:
    raise RuntimeError("secret detail at /srv/internal/path.py")


@pytest.mark.parametrize("path", ["/nope", "/api/v2/crypto/unknown/route", "/schema/nope"])
def test_an_unknown_path_is_a_404_error_envelope(client: TestClient[Litestar], path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": "Not found"}


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_a_wrong_method_is_a_405_error_envelope(client: TestClient[Litestar], method: str) -> None:
    response = client.request(method, "/api/v1/ping")
    assert response.status_code == 405
    assert response.json() == {"error": "Method not allowed"}
    assert "GET" in response.headers["allow"]


@pytest.mark.parametrize(
    ("query", "parameter"), [("limit=abc", "limit"), ("since=1.5", "since"), ("limit=", "limit")]
)
def test_an_ill_typed_parameter_is_a_422_naming_it(
    client_for: ClientFor, query: str, parameter: str
) -> None:
    response = client_for(typed_route).get(f"/test/typed/crypto?{query}")
    assert response.status_code == 422
    body = response.json()
    assert set(body) == {"error"}
    assert f"'{parameter}'" in body["error"]


def test_a_server_fault_is_a_500_without_traceback_and_is_logged(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="api.errors"):
        response = client_for(faulty_route).get("/test/fault")
    assert response.status_code == 500
    assert response.json() == {"error": "internal server error"}
    for leak in ("Traceback", "secret", "/srv/", "RuntimeError", ".py"):
        assert leak not in response.text
    assert any(r.exc_info and "secret detail" in str(r.exc_info[1]) for r in caplog.records)


@pytest.mark.parametrize(
    ("failure", "status", "body", "headers"),
    [
        (BadRequest("Invalid strategy 'x'"), 400, {"error": "Invalid strategy 'x'"}, {}),
        (NotFound(), 404, {"error": "Not found"}, {}),
        (
            InvalidParameter("limit", "must be at least 1"),
            422,
            {"error": "Invalid parameter 'limit': must be at least 1"},
            {},
        ),
        (
            DependencyUnavailable("trend store unavailable", retry_after=7),
            503,
            {"error": "trend store unavailable"},
            {"retry-after": "7"},
        ),
        (Unauthorized(), 401, {"success": False, "message": "unauthorized"}, {}),
        (
            PaymentRequired("plan excludes stocks"),
            402,
            {"success": False, "message": "plan excludes stocks"},
            {},
        ),
        (
            RateLimited("rate limit exceeded", retry_after=3),
            429,
            {"success": False, "message": "rate limit exceeded"},
            {"retry-after": "3"},
        ),
        (
            TokenLimitExceeded(
                "daily limit reached",
                daily=True,
                upgrade_url="https://x/up",
                headers={"x-tokens-cost": "0"},
            ),
            401,
            {
                "success": False,
                "message": "daily limit reached",
                "error_code": "DAILY_TOKEN_LIMIT",
                "limit_type": "daily",
                "upgrade_url": "https://x/up",
            },
            {"x-tokens-cost": "0"},
        ),
    ],
)
def test_each_domain_failure_maps_to_its_status_and_envelope(
    client_for: ClientFor,
    failure: ApiFailure,
    status: int,
    body: dict[str, object],
    headers: dict[str, str],
) -> None:
    @get("/test/fails", sync_to_thread=False)
    def fails() -> None:
        raise failure

    response = client_for(fails).get("/test/fails")
    assert response.status_code == status
    assert response.json() == body
    for name, value in headers.items():
        assert response.headers[name] == value


def test_market_not_live_says_not_available_yet_and_names_the_live_markets() -> None:
    failure = MarketNotLive("stocks", ["crypto", "forex"])
    assert failure.status_code == 404
    assert "is not available yet" in failure.message
    assert "crypto, forex" in failure.message


def test_litestar_auth_failures_use_the_pipeline_envelope(client_for: ClientFor) -> None:
    @get("/test/auth", sync_to_thread=False)
    def auth() -> None:
        raise NotAuthorizedException()

    response = client_for(auth).get("/test/auth")
    assert response.status_code == 401
    assert response.json() == {"success": False, "message": "unauthorized"}


class RefusingMiddleware(ASGIMiddleware):
    """Refuses every /api/v1/ping the way an authentication middleware would."""

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        if scope["path"] == "/api/v1/ping":
            raise RateLimited("rate limit exceeded", retry_after=2)
        await next_app(scope, receive, send)


class RefusingPlugin(InitPluginProtocol):
    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.middleware.append(RefusingMiddleware())
        return app_config


def test_failures_raised_in_a_plugin_middleware_use_the_envelope(client_for: ClientFor) -> None:
    response = client_for(plugins=[RefusingPlugin()]).get("/api/v1/ping")
    assert response.status_code == 429
    assert response.json() == {"success": False, "message": "rate limit exceeded"}
    assert response.headers["retry-after"] == "2"
