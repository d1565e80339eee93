"""Per-data-version caches: encoded responses and derived indexes live exactly as long as a snapshot."""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

T = TypeVar("T")

MAX_RESPONSES = 4096
"""Encoded responses kept per data version (least recently used dropped first)."""
MAX_HITS = 16384
"""Raw requests remembered per data version (`hit`); all forgotten at once when full."""

RawHeaders = tuple[tuple[bytes, bytes], ...]


@dataclass(frozen=True, slots=True)
class Encoded:
    """A 200 body encoded once: its bytes, its ETag and (by-points routes) how many points it holds;
    also the raw ASGI headers of its 200 and of its 304, built once."""

    body: bytes
    etag: str
    points: int | None = None
    headers: RawHeaders = field(init=False, repr=False)
    not_modified_headers: RawHeaders = field(init=False, repr=False)

    def __post_init__(self) -> None:
        common = ((b"etag", self.etag.encode("latin-1")), (b"cache-control", b"no-cache"))
        length = str(len(self.body)).encode("latin-1")
        ok = (*common, (b"content-type", b"application/json"), (b"content-length", length))
        object.__setattr__(self, "not_modified_headers", common)
        object.__setattr__(self, "headers", ok)


class VersionCache:
    """What one data version has computed: an LRU of encoded responses and memoized indexes.

    The data only changes when a new manifest lands, and a new manifest is a new snapshot, so a
    cache keyed by the snapshot object can never serve a stale answer and needs no invalidation.
    """

    def __init__(self, max_responses: int = MAX_RESPONSES) -> None:
        self._responses: OrderedDict[Hashable, Encoded] = OrderedDict()
        self._memo: dict[Hashable, Any] = {}
        self._pending: dict[Hashable, asyncio.Future[Any]] = {}
        self._hits: dict[Hashable, Hashable] = {}
        self._max = max_responses
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Encoded | None:
        with self._lock:
            entry = self._responses.get(key)
            if entry is not None:
                self._responses.move_to_end(key)
            return entry

    def put(self, key: Hashable, entry: Encoded) -> None:
        with self._lock:
            self._responses[key] = entry
            self._responses.move_to_end(key)
            while len(self._responses) > self._max:
                self._responses.popitem(last=False)

    def hit(self, request_key: Hashable) -> Encoded | None:
        """The entry a request exactly like this one (same app, route, path, query) answered with,
        while the LRU still holds it (so bodies stay bounded by `MAX_RESPONSES`)."""
        key = self._hits.get(request_key)
        return None if key is None else self.get(key)

    def remember(self, request_key: Hashable, key: Hashable) -> None:
        """Remember that a request answered 200 with the entry of `key`. Bounded: raw requests are
        the client's choice (any query string), so the whole map is dropped when it is full."""
        hits = self._hits
        if request_key not in hits and len(hits) >= MAX_HITS:
            hits.clear()
        hits[request_key] = key

    async def memo(self, key: Hashable, compute: Callable[[], Awaitable[T]]) -> T:
        """`compute()` once per version: concurrent first misses wait for the one computation (a
        failure is not kept: each waiter gets it, and the next call computes again)."""
        try:
            return self._memo[key]
        except KeyError:
            pass
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = asyncio.ensure_future(compute())
            pending.add_done_callback(partial(self._settle, key))
        return await asyncio.shield(pending)

    def preset(self, key: Hashable, value: object) -> None:
        """Store what `memo(key, ...)` would compute (before the snapshot is served)."""
        self._memo[key] = value

    def _settle(self, key: Hashable, done: asyncio.Future[Any]) -> None:
        self._pending.pop(key, None)
        if not done.cancelled() and done.exception() is None:
            self._memo[key] = done.result()


_caches: WeakKeyDictionary[object, VersionCache] = WeakKeyDictionary()
_caches_lock = threading.Lock()


def cache_for(snapshot: object) -> VersionCache:
    """The cache of one snapshot; it goes away with the snapshot."""
    cache = _caches.get(snapshot)
    if cache is None:
        with _caches_lock:
            cache = _caches.setdefault(snapshot, VersionCache())
    return cache
