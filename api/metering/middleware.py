"""The ASGI layer that limits, charges and settles every metered route, for the account
`api.auth` authenticated."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, NamedTuple, cast

from litestar.connection import ASGIConnection
from litestar.types import ASGIApp, HTTPResponseStartEvent, Message, Receive, Scope, Send

from api.auth import UNAVAILABLE, account_of
from api.errors import (
    ApiFailure,
    DependencyUnavailable,
    InvalidParameter,
    PaymentRequired,
    RateLimited,
    TokenLimitExceeded,
    Unauthorized,
    send_failure,
)
from api.metering.config import (
    MeteringConfig,
    MeteringConfigError,
    RowsCost,
    ScaledCost,
    points_cost,
    request_cost,
)
from api.metering.model import (
    UNLIMITED_BALANCE,
    Account,
    Admission,
    Balance,
    Charge,
    MeteringUnavailableError,
    Outcome,
    net_cost,
)
from api.metering.store import MeteringStore
from api.params import SCALED_BY
from api.request_values import RequestValues
from pipelines.catalog import MARKETS

logger = logging.getLogger(__name__)

POINTS_SCOPE_KEY = "mi.metering.points"
"""Where a by-points handler leaves the number of points it returned (see `report_points`)."""
ROWS_SCOPE_KEY = "mi.metering.rows"
"""Where a row-priced handler leaves the number of rows it returns (see `charge_rows`)."""
CHARGE_ROWS_SCOPE_KEY = "mi.metering.charge-rows"
"""The middleware's step that charges a row-priced request's rest (see `charge_rows`)."""

_NO_PARAMS: Mapping[str, Any] = {}  # a route without path parameters (no dict made per request)
_LIMIT_MESSAGES = {
    Outcome.DAILY_LIMIT: "daily token limit reached",
    Outcome.MONTHLY_LIMIT: "monthly token budget exhausted",
}


def report_points(connection: ASGIConnection[Any, Any, Any, Any], points: int) -> None:
    """Called by a by-points handler (get-price-history) with the number of points it returns."""
    cast("dict[str, Any]", connection.scope)[POINTS_SCOPE_KEY] = points


async def charge_rows(connection: ASGIConnection[Any, Any, Any, Any], rows: int) -> None:
    """Called by a row-priced handler (bulk export) once it has counted the rows it will return,
    before it answers: the rest of the request's cost is charged now, so the body is sent paid.

    Raises the token-limit 401 (`TokenLimitExceeded`) when the whole cost does not fit today's or
    this month's balance; nothing is charged then. Without metering (no account, metering off) it
    only records the count.
    """
    scope = cast("dict[str, Any]", connection.scope)
    scope[ROWS_SCOPE_KEY] = rows
    charge_rest: Callable[[], Awaitable[None]] | None = scope.get(CHARGE_ROWS_SCOPE_KEY)
    if charge_rest is not None:
        await charge_rest()


_HEADER_CACHE: dict[tuple[int, Balance], list[tuple[bytes, bytes]]] = {}
"""(cost, balance) -> its encoded headers (the caches section's row "balance headers")."""
_HEADER_CACHE_SIZE = 4096


def balance_headers(cost: int, balance: Balance) -> list[tuple[bytes, bytes]]:
    """The five x-tokens-* headers (a fresh list; encoded values are reused across requests)."""
    cached = _HEADER_CACHE.get((cost, balance))
    if cached is not None:
        return list(cached)
    headers = _balance_headers(cost, balance)
    if len(_HEADER_CACHE) >= _HEADER_CACHE_SIZE:
        _HEADER_CACHE.clear()
    _HEADER_CACHE[cost, balance] = headers
    return list(headers)


def _balance_headers(cost: int, balance: Balance) -> list[tuple[bytes, bytes]]:
    values = (
        (b"x-tokens-cost", cost),
        (b"x-tokens-limit", balance.limit),
        (b"x-tokens-limit-today", balance.limit_today),
        (b"x-tokens-remaining", balance.remaining),
        (b"x-tokens-remaining-today", balance.remaining_today),
    )
    return [(name, str(value).encode()) for name, value in values]


def unpriced(plan: str) -> str:
    """The 503's message for a key whose plan the metering config does not have."""
    return f"token accounting is unavailable for your plan ({plan}); contact support"


class _Route(NamedTuple):
    """How a route handler's requests are metered (from its `opt` and the configured costs)."""

    operation: str
    fixed_cost: int | None  # None: the up-front cost scales with the request (`request_cost`)
    by_points: bool  # the final cost follows the points returned (`report_points`)
    by_rows: RowsCost | None  # the final cost follows the rows returned (`charge_rows`)
    unlimited_headers: list[tuple[bytes, bytes]] | None
    """The balance headers of a fixed-cost answer charged in full to a plan without a budget."""


class MeteringMiddleware:
    """Meters every route whose handler declares `opt={"operation": "<name in costs>"}`, for the
    account `api.auth.AuthenticationMiddleware` put in the scope before it.

    Order (decisions.md): authentication (the layer before), then limits (rate, concurrency,
    budget, in one atomic admit that charges the up-front cost), then the market entitlement
    (402), then the route. A plan without limits has nothing to check before the route: it is
    charged in one `record` step after it (`_serve_then_record`).
    A request without an account (ping without a key) is free; routes without an operation
    (status, docs) pass through untouched.
    """

    def __init__(self, app: ASGIApp, store: MeteringStore, config: MeteringConfig) -> None:
        self.app = app
        self.store = store
        self.config = config
        # Plans with nothing to check before the work: their requests take the one-step path.
        self._one_step_plans = {name for name, plan in config.plans.items() if not plan.has_limits}
        self._excluded = {
            name: frozenset(plan.excluded_operations) for name, plan in config.plans.items()
        }
        self._routes: dict[object, _Route | None] = {}  # route handler -> how it is metered
        limits = config.limits
        self._too_many = {
            Outcome.RATE_LIMITED: (
                f"rate limit exceeded: at most {limits.requests_per_window} requests per "
                f"{limits.window_seconds:g} seconds"
            ),
            Outcome.TOO_MANY_IN_FLIGHT: (
                f"too many simultaneous requests: at most {limits.concurrent} in flight"
            ),
            Outcome.TOO_MANY_EXPORTS: (
                f"too many simultaneous exports: at most {limits.concurrent_exports} in flight "
                "(an export holds its slot until its file is sent)"
            ),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self._route(scope.get("route_handler")) if scope["type"] == "http" else None
        account = account_of(scope) if route is not None else None
        if route is None or account is None:
            await self.app(scope, receive, send)
            return
        operation = route.operation
        cost = route.fixed_cost if route.fixed_cost is not None else self._cost(operation, scope)
        if account.plan in self._one_step_plans:
            await self._serve_then_record(scope, receive, send, route, account, cost)
            return
        try:
            admission = await self.store.admit(account, operation, cost)
        except MeteringUnavailableError:
            await send_failure(send, DependencyUnavailable(UNAVAILABLE))
            return
        except MeteringConfigError as error:
            # A key whose plan the config no longer has (a deploy removed it while keys hold it):
            # the service cannot price the request, so it is not served and nothing is charged.
            logger.error("key %s cannot be metered: %s", account.key_id, error)
            await send_failure(send, DependencyUnavailable(unpriced(account.plan)))
            return
        if admission.charge is None:
            await self._refuse(send, admission)
            return
        if not self._entitled(account.plan, scope, operation):
            await self._payment_required(send, admission, account, scope, operation)
            return
        await self._serve(scope, receive, send, route, account, admission)

    def _route(self, handler: Any) -> _Route | None:
        """How `handler`'s requests are metered (None: not metered), worked out once per handler."""
        try:
            return self._routes[handler]
        except KeyError:
            pass
        opt: Mapping[str, Any] = handler.opt if handler is not None else {}
        operation = opt.get("operation")
        route = None
        if operation is not None:
            rule = self.config.cost_rule(operation)
            by_rows = rule if isinstance(rule, RowsCost) else None
            # A row-priced route's up-front charge is its minimum, whatever the request.
            fixed = rule if isinstance(rule, int) else by_rows.minimum if by_rows else None
            by_points = isinstance(rule, ScaledCost) and rule.by_points
            headers = None if fixed is None else _balance_headers(fixed, UNLIMITED_BALANCE)
            route = _Route(operation, fixed, by_points, by_rows, headers)
        self._routes[handler] = route
        return route

    def _cost(self, operation: str, scope: Scope) -> int:
        """The up-front cost of a scaled route, from the value its handler will serve (the
        request's one `RequestValues`). A value the handler will refuse (422, 1 token net) is
        priced as if it were absent: the admit only needs a cost that the answer cannot exceed."""
        bounds = SCALED_BY[operation]
        try:
            value = RequestValues.of(scope).integer(bounds)
        except InvalidParameter:
            value = bounds.default
        return request_cost(self.config, operation, value)

    def _entitled(self, plan: str, scope: Scope, operation: str) -> bool:
        if operation in self._excluded[plan]:
            return False
        market = (scope.get("path_params") or _NO_PARAMS).get("market")
        if not isinstance(market, str):
            return True
        market = market.lower()  # an unknown market is the route's 404, not the plan's 402
        return market not in MARKETS or market in self.config.plan(plan).markets

    async def _refuse(self, send: Send, admission: Admission) -> None:
        if admission.balance is None:  # revoked between authentication and admit
            await send_failure(send, Unauthorized())
            return
        headers = balance_headers(0, admission.balance)
        failure: ApiFailure
        if admission.outcome in _LIMIT_MESSAGES:
            failure = self._token_limit(admission.outcome)
        else:
            retry_after = max(1, admission.retry_after)
            failure = RateLimited(self._too_many[admission.outcome], retry_after=retry_after)
        await send_failure(send, failure, headers)

    def _token_limit(self, outcome: Outcome) -> TokenLimitExceeded:
        return TokenLimitExceeded(
            _LIMIT_MESSAGES[outcome],
            daily=outcome is Outcome.DAILY_LIMIT,
            upgrade_url=self.config.upgrade_url,
        )

    async def _payment_required(
        self, send: Send, admission: Admission, account: Account, scope: Scope, operation: str
    ) -> None:
        assert admission.charge is not None
        net, balance = await self._settle(admission.charge, 402, None, admission.balance)
        failure = self._payment_failure(account.plan, scope, operation)
        await send_failure(send, failure, balance_headers(net, balance))

    def _payment_failure(self, plan: str, scope: Scope, operation: str) -> PaymentRequired:
        """The 402 of a plan that excludes the operation, else of one without the market."""
        if operation in self._excluded[plan]:
            return PaymentRequired(f"your plan ({plan}) does not include {operation}")
        market = str(scope.get("path_params", _NO_PARAMS).get("market", "")).lower()
        return PaymentRequired(f"your plan does not include the {market} market")

    async def _settle(
        self, charge: Charge, status: int, final: int | None, fallback: Balance | None
    ) -> tuple[int, Balance]:
        try:
            return await self.store.settle(charge, status, final)
        except MeteringUnavailableError:
            # The response is already computed; it goes out charged in full (no credit recorded,
            # the in-flight slot expires after the request timeout).
            assert fallback is not None
            return charge.tokens, fallback

    async def _serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        route: _Route,
        account: Account,
        admission: Admission,
    ) -> None:
        """Run the route with its response held back, settle by its status, then send it.

        Holding the (single-message) response lets the settle run here, outside the route's
        call chain, and puts the net cost and balance on it. A streamed response (`more_body`,
        a bulk export) gets its headers on its first chunk and keeps its in-flight slot until
        its last chunk is sent or the client has gone (decisions.md, Bulk export): it is
        released when the route returns or raises. A row-priced route's charge grows while it
        runs (`charge_rows`), so the settle reads it, and the balance it left, from `request`.
        """
        assert admission.charge is not None
        request = _Settlement(self, scope, route, admission.charge, admission.balance)
        if route.by_rows is not None:
            charge_rest = partial(self._charge_rows, scope, route, account, request)
            cast("dict[str, Any]", scope)[CHARGE_ROWS_SCOPE_KEY] = charge_rest
        response = _HeldResponse(send, request.stream_headers)
        try:
            await self.app(scope, receive, response)
        except BaseException:
            if not response.streaming:  # nothing was sent: the server answers 500, billed so
                await self._settle(request.charge, 500, None, request.balance)
            raise
        finally:
            if request.held is not None:  # a streamed answer sent whole, or cut short
                self.store.release(request.charge, request.held)
        start = response.start
        if start is None:  # the route returned without answering: a server failure
            await self._settle(request.charge, 500, None, request.balance)
        elif not response.streaming:
            status = start["status"]
            await response.release(request.released(status) or await request.settle(status))

    async def _charge_rows(
        self, scope: Scope, route: _Route, account: Account, request: _Settlement
    ) -> None:
        """The rest of a row-priced request's cost, drawn while its route runs, before it answers
        (`charge_rows`): the whole cost fits or the route's answer is the token-limit 401, whose
        settle then credits the up-front minimum back (nothing is charged)."""
        final = self._final_cost(scope, route)
        extra = 0 if final is None else final - request.charge.tokens
        if extra <= 0:
            return
        try:
            admission = await self.store.extend(account, request.charge, extra)
        except MeteringUnavailableError:
            raise DependencyUnavailable(UNAVAILABLE) from None
        if admission.charge is not None:
            request.charge, request.balance = admission.charge, admission.balance
        elif admission.outcome in _LIMIT_MESSAGES:
            raise self._token_limit(admission.outcome)
        else:  # revoked since the admit
            raise Unauthorized()

    async def _serve_then_record(
        self, scope: Scope, receive: Receive, send: Send, route: _Route, account: Account, cost: int
    ) -> None:
        """A plan without limits: nothing to check before the work, so the route runs first with
        its response held, and ONE store step (revocation, the net charge) runs before it is sent.

        A revoked key still gets its 401 and the store being down its 503 (the held response is
        dropped: nothing is served unrecorded); a killed worker has sent nothing it did not record.
        Every answer is recorded by `_recorded_headers` (a streamed one on its first chunk).
        """
        if not self._entitled(account.plan, scope, route.operation):
            await self._record_payment_required(send, scope, route, account, cost)
            return
        response = _HeldResponse(send, partial(self._recorded_headers, scope, route, account, cost))
        try:
            await self.app(scope, receive, response)
        except BaseException:
            if not response.streaming:  # nothing was sent: the server answers 500, billed so
                await self._record_failure(scope, route, account, cost)
            raise
        start = response.start
        if start is None:  # the route returned without answering: a server failure
            await self._record_failure(scope, route, account, cost)
            return
        if response.streaming:  # recorded on its first chunk
            return
        try:
            headers = await self._recorded_headers(scope, route, account, cost, start["status"])
        except _Replacement as replaced:
            await replaced.respond(send)
            return
        await response.release(headers)

    async def _recorded_headers(
        self, scope: Scope, route: _Route, account: Account, cost: int, status: int
    ) -> list[tuple[bytes, bytes]]:
        """Record an answer of a plan without limits: its balance headers, or `_Replacement`
        when it must not go out (503: the store is down; 401: the key was revoked).

        A row-priced route's final cost may exceed its up-front minimum: with no budget to check
        on this path, the whole of it is charged here.
        """
        final = self._final_cost(scope, route)
        net = net_cost(status, cost if final is None else max(cost, final), final)
        try:
            balance = await self.store.record(account, route.operation, status, net)
        except MeteringUnavailableError:
            raise _Replacement(DependencyUnavailable(UNAVAILABLE)) from None
        if balance is None:  # revoked since the key was cached
            raise _Replacement(Unauthorized())
        if balance is UNLIMITED_BALANCE and net == route.fixed_cost and route.unlimited_headers:
            return route.unlimited_headers  # the common answer: encoded once per route
        return balance_headers(net, balance)

    async def _record_payment_required(
        self, send: Send, scope: Scope, route: _Route, account: Account, cost: int
    ) -> None:
        try:
            headers = await self._recorded_headers(scope, route, account, cost, 402)
        except _Replacement as replaced:
            await replaced.respond(send)
            return
        await send_failure(
            send, self._payment_failure(account.plan, scope, route.operation), headers
        )

    async def _record_failure(
        self, scope: Scope, route: _Route, account: Account, cost: int
    ) -> None:
        """A route that raised or returned without answering: billed as a 500, nothing sent."""
        with contextlib.suppress(_Replacement):
            await self._recorded_headers(scope, route, account, cost, 500)

    def _final_cost(self, scope: Scope, route: _Route) -> int | None:
        """A by-points or row-priced route's cost for what it reported returning (None: neither,
        or nothing reported)."""
        found = cast("dict[str, Any]", scope)
        if route.by_rows is not None:
            rows = found.get(ROWS_SCOPE_KEY)
            return None if rows is None else route.by_rows.for_rows(rows)
        if not route.by_points:
            return None
        points = found.get(POINTS_SCOPE_KEY)
        return None if points is None else points_cost(self.config, route.operation, points)


class _Settlement:
    """One admitted request of a limited plan, from its admit to its settle: its charge (which a
    row-priced route's `charge_rows` grows), the balance that charge left, and the status of a
    streamed answer while it holds its in-flight slot."""

    __slots__ = ("balance", "charge", "held", "meter", "route", "scope")

    def __init__(
        self,
        meter: MeteringMiddleware,
        scope: Scope,
        route: _Route,
        charge: Charge,
        balance: Balance | None,
    ) -> None:
        self.meter = meter
        self.scope = scope
        self.route = route
        self.charge = charge
        self.balance = balance
        self.held: int | None = None

    def uncredited(self, status: int) -> list[tuple[bytes, bytes]] | None:
        """The answer's headers when nothing is to be credited (the charge is the net cost and
        the balance it left the answer's); None: the settle must be awaited."""
        charge, balance = self.charge, self.balance
        if balance is None:
            return None
        final = self.meter._final_cost(self.scope, self.route)
        if net_cost(status, charge.tokens, final) != charge.tokens:
            return None
        return balance_headers(charge.tokens, balance)

    def released(self, status: int) -> list[tuple[bytes, bytes]] | None:
        """`uncredited`, with the settle (the slot, its ledger row) going behind the response
        (`MeteringStore.release`)."""
        headers = self.uncredited(status)
        if headers is not None:
            self.meter.store.release(self.charge, status)
        return headers

    async def settle(self, status: int) -> list[tuple[bytes, bytes]]:
        final = self.meter._final_cost(self.scope, self.route)
        net, balance = await self.meter._settle(self.charge, status, final, self.balance)
        return balance_headers(net, balance)

    async def stream_headers(self, status: int) -> list[tuple[bytes, bytes]]:
        """A streamed answer's headers at its first chunk: its slot stays held (`held`) unless a
        credit must be settled now."""
        headers = self.uncredited(status)
        if headers is None:  # a credit to settle now (frees the slot with it)
            return await self.settle(status)
        self.held = status
        return headers


class _Replacement(Exception):  # noqa: N818 - a control-flow signal, not an error report
    """Raised by a settle: the held response must not go out; this failure goes instead."""

    def __init__(self, failure: ApiFailure) -> None:
        super().__init__(failure.status_code)
        self.failure = failure

    async def respond(self, send: Send) -> None:
        await send_failure(send, self.failure)


class _HeldResponse:
    """The `send` a metered route answers through: holds its start and body until settled.

    A streamed response (`more_body`) is settled on its first chunk by `settle` and then passed
    through; a single-message one is sent by `release` once the middleware has settled it.
    """

    __slots__ = ("body", "replaced", "send", "settle", "start", "streaming")

    def __init__(
        self, send: Send, settle: Callable[[int], Awaitable[list[tuple[bytes, bytes]]]]
    ) -> None:
        self.send = send
        self.settle = settle
        self.start: HTTPResponseStartEvent | None = None
        self.body: Message | None = None
        self.streaming = False
        self.replaced = False  # the settle sent another answer instead: the route's is dropped

    async def __call__(self, message: Message) -> None:
        if self.streaming:
            if not self.replaced:
                await self.send(message)
        elif message["type"] == "http.response.start":
            self.start = message
        elif message.get("more_body", False):
            self.streaming = True
            await self._stream(message)
        else:
            self.body = message

    async def _stream(self, chunk: Message) -> None:
        """The first chunk of a streamed response: settle, send the start, pass the chunk on."""
        start = self.start
        if start is not None:  # a body without a start is the server's protocol error to report
            try:
                balance = await self.settle(start["status"])
            except _Replacement as replacement:
                self.replaced = True
                await replacement.respond(self.send)
                return
            await self.send({**start, "headers": [*start.get("headers", ()), *balance]})
        await self.send(chunk)

    async def release(self, balance: list[tuple[bytes, bytes]]) -> None:
        """Send the held single-message response with the balance headers added."""
        start = self.start
        assert start is not None
        await self.send({**start, "headers": [*start.get("headers", ()), *balance]})
        if self.body is not None:
            await self.send(self.body)
