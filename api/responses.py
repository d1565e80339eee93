"""Serving a 200 as bytes built once per (data version, route, parameters), with ETag and 304."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from litestar import MediaType, Request, Response

from api.cache import Encoded, cache_for
from api.metering import report_points
from api.schemas import Wire
from api.warehouse import WarehouseSnapshot

_encode = msgspec.json.Encoder().encode

Build = Callable[[], Awaitable[Wire]]
Key = tuple[object, ...]


def etag_for(version: int, key: Key) -> str:
    """Strong ETag: the data version and a hash of the route and its normalized parameters."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).hexdigest()
    return f'"v{version}-{digest}"'


def _matches(if_none_match: str | None, etag: str) -> bool:
    if not if_none_match:
        return False
    tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return "*" in tags or etag in tags


async def serve(
    request: Request[Any, Any, Any],
    snapshot: WarehouseSnapshot,
    key: Key,
    build: Build,
    *,
    points: Callable[[Wire], int] | None = None,
) -> Response[Any]:
    """The cached bytes for `key` (built and encoded on the first miss of this data version).

    `points` (get-price-history) counts what the body holds; metering prices the request from it,
    on a 304 too: a revalidation costs what the 200 it stands for costs.
    """
    cache = cache_for(snapshot)
    entry = cache.get(key)
    if entry is None:
        body = await build()
        counted = points(body) if points is not None else None
        entry = Encoded(_encode(body), etag_for(snapshot.version, key), counted)
        cache.put(key, entry)
    if entry.points is not None:
        report_points(request, entry.points)
    headers = {"ETag": entry.etag, "Cache-Control": "no-cache"}
    if _matches(request.headers.get("if-none-match"), entry.etag):
        return Response(content=b"", status_code=304, headers=headers)
    return Response(content=entry.body, media_type=MediaType.JSON, headers=headers)
