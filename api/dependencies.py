"""What handlers read per request: the /api/v2 serving context (no DI) and the few Litestar dependencies.

The /api/v2 handlers take no Litestar dependencies: Litestar resolves each provider in its own
anyio task, which cost about a third of a cached request. They read a `Serving` built once in
`create_app` (kept in `app.state`) and the snapshot `take_snapshot` (their `before_request` hook)
took for the request. The dependencies below remain for `/api/v1/status` and for test routes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar, cast

import anyio.to_thread
from litestar import Request, Response
from litestar.di import Provide

from api.as_of import as_of_target, version_as_of
from api.errors import AS_OF_VERSION_SCOPE
from api.params import AS_OF, CRYPTO_ONLY, NON_CRYPTO, route_market
from api.request_values import RequestValues
from api.responses import cached_hit
from api.settings import ApiSettings
from api.warehouse import WarehouseReader, WarehouseSnapshot, WarehouseUnavailable
from pipelines.catalog import MARKETS

T = TypeVar("T")

SERVING_STATE = "mi_serving"
"""`app.state` key of the app's `Serving`."""
AS_OF_SCOPE = "mi.as_of"
"""Scope key of the instant a request's `as_of` names (absent: now, or a version id)."""
SNAPSHOT_SCOPE = "mi.snapshot"
"""Scope key of the snapshot a /api/v2 request reads (taken once, before its parameters are read)."""


def constant(value: T) -> Provide:
    """Provide one long-lived object (settings, the status checks) without a thread hop."""

    def provide() -> T:
        return value

    return Provide(provide, use_cache=True, sync_to_thread=False)


def current_snapshot(reader: WarehouseReader) -> WarehouseSnapshot:
    """The reader's current snapshot; 503 with Retry-After before the first materialization."""
    snapshot = reader.current()
    if snapshot is None:
        raise WarehouseUnavailable("the warehouse has not been materialized yet", retry_after=30)
    return snapshot


def snapshot_provider(reader: WarehouseReader) -> Callable[[], WarehouseSnapshot]:
    """The `snapshot` dependency: taken once per request, so a handler reads one data version."""

    def provide_snapshot() -> WarehouseSnapshot:
        return current_snapshot(reader)

    return provide_snapshot


class Serving:
    """One app's reader and settings, and its markets resolved ahead of time (per app: tests run
    apps with different live markets side by side)."""

    __slots__ = ("_markets", "reader", "settings")

    def __init__(self, reader: WarehouseReader, settings: ApiSettings) -> None:
        self.reader = reader
        self.settings = settings
        live = settings.live_markets
        self._markets: dict[tuple[str, tuple[str, ...]], str] = {
            (market, serves): market
            for serves in (MARKETS, CRYPTO_ONLY, NON_CRYPTO)
            for market in serves
            if market in live
        }

    def market(self, segment: str, serves: tuple[str, ...] = MARKETS) -> str:
        """`route_market(segment, live markets, serves)`; a dict hit for a canonical live segment."""
        found = self._markets.get((segment, serves))
        if found is not None:
            return found
        return route_market(segment, self.settings.live_markets, serves)


def serving_of(request: Request[Any, Any, Any]) -> Serving:
    return cast("Serving", request.app.state[SERVING_STATE])


async def take_snapshot(request: Request[Any, Any, Any]) -> Response[Any] | None:
    """`before_request` of every data controller: the request's one snapshot, taken before
    Litestar reads its parameters (503 before the first materialization, whatever the parameters;
    the retained version `as_of` names, if given), then the answer to this exact request if it
    already answered 200 on this data version (`api.responses.cached_hit`: the handler is
    skipped), else the 422 of a repeated or unknown query parameter (`RequestValues.check`; a
    request that answered 200 had none). Async: Litestar runs a sync hook in a worker thread."""
    reader = serving_of(request).reader
    snapshot = current_snapshot(reader)
    if b"as_of" in request.scope["query_string"]:
        snapshot = await snapshot_as_of(request, reader, snapshot)
    cast("dict[str, Any]", request.scope)[SNAPSHOT_SCOPE] = snapshot
    hit = cached_hit(request, snapshot)
    if hit is None:
        RequestValues.of(request.scope).check()
    return hit


async def snapshot_as_of(
    request: Request[Any, Any, Any], reader: WarehouseReader, current: WarehouseSnapshot
) -> WarehouseSnapshot:
    """The snapshot of the version `as_of` names (422 malformed, 404 before the oldest retained);
    a past version not open yet is opened in a worker thread."""
    raw = RequestValues.of(request.scope).text(AS_OF)
    if raw is None:
        return current
    target = as_of_target(raw)
    if isinstance(target, datetime):
        cast("dict[str, Any]", request.scope)[AS_OF_SCOPE] = target
    version = version_as_of(current, target).version
    if version == current.version:
        return current
    cast("dict[str, Any]", request.scope)[AS_OF_VERSION_SCOPE] = version
    opened = reader.past(version)
    if opened is None:
        opened = await anyio.to_thread.run_sync(reader.open_past, version)
    return opened


def request_instant_ms(request: Request[Any, Any, Any]) -> int:
    """The instant a request asks about, epoch ms: its `as_of` instant, else now (the clock of
    search-briefs' 24-hour window)."""
    instant = cast("dict[str, Any]", request.scope).get(AS_OF_SCOPE)
    now = time.time()
    return int(min(now, instant.timestamp()) * 1000) if instant is not None else int(now * 1000)


def request_snapshot(request: Request[Any, Any, Any]) -> WarehouseSnapshot:
    """The snapshot `take_snapshot` took for this request."""
    return cast("WarehouseSnapshot", cast("dict[str, Any]", request.scope)[SNAPSHOT_SCOPE])


def market_segment(request: Request[Any, Any, Any]) -> str:
    """The `{market}` segment, or `crypto` on routes mounted under the literal /api/v2/crypto/.

    Litestar's router does not fall back from a literal segment to a `{market}` parameter, so
    every /api/v2 group is mounted under both; handlers read the market from here.
    """
    return str(request.path_params.get("market", "crypto"))
