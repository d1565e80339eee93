"""Serving a 200 as bytes built once per (data version, route, parameters), with ETag and 304.

Two lookups answer a repeated request without re-deriving anything:

- `serve(request, snapshot, key, build)`: the handler's normalized key (market, upper-case symbol,
  clamped parameters) -> the encoded body, built and encoded on the first miss of a data version.
- `cached_hit(request)`, run by the /api/v2 `before_request` hook: the request as it arrived (app,
  route handler, path, query string) -> the same entry, remembered by `serve` once that exact
  request has answered 200. A hit answers before Litestar parses a parameter or calls the handler;
  the outcome of the same bytes on the same data version and app cannot differ, so nothing is lost.
  Errors are never remembered (they take the full path every time).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import msgspec
from litestar import MediaType, Request, Response
from litestar.datastructures import Cookie, MutableScopeHeaders
from litestar.response.base import ASGIResponse

from api.cache import Encoded, RawHeaders, cache_for, source_headers
from api.metering import report_points
from api.schemas import Wire
from api.warehouse import WarehouseSnapshot

_encode = msgspec.json.Encoder().encode

Build = Callable[[], Awaitable[Wire]]
Key = tuple[object, ...]
HitKey = tuple[object, ...]

NOT_MODIFIED = 304
_OWN_HEADERS = frozenset({b"content-type", b"content-length"})
"""Headers Litestar's own path sets from the response itself."""


def etag_for(version: int, key: Key) -> str:
    """Strong ETag: the data version and a hash of the route and its normalized parameters."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).hexdigest()
    return f'"v{version}-{digest}"'


def source_of(snapshot: WarehouseSnapshot) -> RawHeaders:
    """`x-data-version` and `x-data-published` of the snapshot (built with each cache entry)."""
    return source_headers(snapshot.version, snapshot.published)


def _matches(if_none_match: str | None, etag: str) -> bool:
    if not if_none_match:
        return False
    tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return "*" in tags or etag in tags


def not_modified(request: Request[Any, Any, Any], etag: str) -> bool:
    """Whether the request's If-None-Match holds `etag`: the client's copy is current (304)."""
    return _matches(_if_none_match(request), etag)


def _if_none_match(request: Request[Any, Any, Any]) -> str | None:
    """The first If-None-Match header (as Litestar's `request.headers.get`), read from the raw
    scope headers without building Litestar's header multidict."""
    for name, value in request.scope["headers"]:
        if name.lower() == b"if-none-match":
            return value.decode("latin-1")
    return None


class _BytesASGIResponse(ASGIResponse):
    """Litestar's ASGI response with its header list taken as built once per cache entry."""

    def __init__(self, body: bytes, status_code: int, headers: RawHeaders) -> None:
        # What ASGIResponse.__init__ sets, without re-adding and re-encoding each header.
        self.headers = MutableScopeHeaders()
        self.headers.headers = list(headers)
        self.background = None
        self.body = body
        self.content_length = len(body)
        self._encoded_cookies = ()
        self.encoding = "utf-8"
        self.is_head_response = False
        self.status_code = status_code


class BytesResponse(Response[bytes]):
    """A 200 (or 304) of an `Encoded` entry: the same status, headers and body as
    `Response(content=body, media_type=JSON, headers={"ETag": ..., "Cache-Control": "no-cache"})`,
    with the raw headers precomputed. Anything a layer adds (headers, cookies, a background task)
    takes Litestar's own path."""

    __slots__ = ("_raw_headers",)

    def __init__(self, body: bytes, status_code: int, headers: RawHeaders) -> None:
        # What Response.__init__ sets for these arguments (its Mapping checks cost a microsecond).
        self.content = body
        self.background = None
        self.cookies = []
        self.encoding = "utf-8"
        self.headers = {}
        self.media_type = MediaType.JSON
        self.status_code = status_code
        self.response_type_encoders = {}
        self._raw_headers = headers

    def to_asgi_response(
        self,
        app: Any,
        request: Request[Any, Any, Any],
        *,
        background: Any = None,
        cookies: Iterable[Cookie] | None = None,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> ASGIResponse:
        plain = not (background or cookies or headers or kwargs.get("encoded_headers"))
        if app is None and plain and not kwargs.get("is_head_response"):
            return _BytesASGIResponse(self.content, self.status_code or 200, self._raw_headers)
        for name, value in self._raw_headers:  # ETag, Cache-Control, the data version's
            if name not in _OWN_HEADERS:
                self.headers[name.decode("latin-1")] = value.decode("latin-1")
        return super().to_asgi_response(
            app, request, background=background, cookies=cookies, headers=headers, **kwargs
        )


def respond(request: Request[Any, Any, Any], entry: Encoded) -> Response[Any]:
    """The 200 of `entry`, or a 304 when If-None-Match holds its ETag; reports the points."""
    if entry.points is not None:
        report_points(request, entry.points)
    if _matches(_if_none_match(request), entry.etag):
        return BytesResponse(b"", NOT_MODIFIED, entry.not_modified_headers)
    return BytesResponse(entry.body, 200, entry.headers)


def hit_key(request: Request[Any, Any, Any]) -> HitKey:
    """The request as it arrived: the app's route handler, the path and the raw query string."""
    scope = request.scope
    return (scope["route_handler"], scope["path"], scope["query_string"])


def cached_hit(
    request: Request[Any, Any, Any], snapshot: WarehouseSnapshot
) -> Response[Any] | None:
    """The response to a request that already answered 200 on this data version, else None."""
    entry = cache_for(snapshot).hit(hit_key(request))
    return None if entry is None else respond(request, entry)


async def serve(
    request: Request[Any, Any, Any],
    snapshot: WarehouseSnapshot,
    key: Key,
    build: Build,
    *,
    points: Callable[[Wire], int] | None = None,
    remember: bool = True,
    headers: RawHeaders = (),
) -> Response[Any]:
    """The cached bytes for `key` (built and encoded on the first miss of this data version).

    `points` (get-price-history) counts what the body holds; metering prices the request from it,
    on a 304 too: a revalidation costs what the 200 it stands for costs. `remember=False` for a
    route whose answer also depends on something other than the request and the data version
    (search-briefs' clock): its raw request is not remembered for `cached_hit`. `headers` are the
    route's own, on its 200 and 304 (the backtests' `x-fill`).
    """
    cache = cache_for(snapshot)
    entry = cache.get(key)
    if entry is None:
        body = await build()
        counted = points(body) if points is not None else None
        etag = etag_for(snapshot.version, key)
        entry = Encoded(_encode(body), etag, counted, (*source_of(snapshot), *headers))
        cache.put(key, entry)
    if remember:
        cache.remember(hit_key(request), key)
    return respond(request, entry)
