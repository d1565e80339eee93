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

RESPONSE_BYTES = 64 << 20
"""Bytes of encoded responses (and their keys) kept per data version, least recently used dropped
first: a bound in bytes, since one body is 50 bytes and another half a megabyte."""
HIT_BYTES = 4 << 20
"""Bytes of raw requests remembered per data version (`hit`); all forgotten at once when full."""
HIT_KEY_LIMIT = 2048
"""A raw request longer than this (path and query string) is never remembered: no route's valid
request is that long, and a client's choice of junk must not fill the map."""
ENTRY_OVERHEAD = 256
"""What an entry costs beyond its bytes (the objects holding them), counted with each."""

RawHeaders = tuple[tuple[bytes, bytes], ...]


@dataclass(frozen=True, slots=True)
class Encoded:
    """A 200 body encoded once: its bytes, its ETag and (by-points routes) how many points it holds;
    also the raw ASGI headers of its 200 and of its 304, built once."""

    body: bytes
    etag: str
    points: int | None = None
    source: RawHeaders = ()
    """Where the body comes from: `x-data-version` and `x-data-published` (`source_headers`), and
    any header of the route's own (`serve`'s `headers`)."""
    headers: RawHeaders = field(init=False, repr=False)
    not_modified_headers: RawHeaders = field(init=False, repr=False)

    def __post_init__(self) -> None:
        etag = (b"etag", self.etag.encode("latin-1"))
        common = (etag, (b"cache-control", b"no-cache"), *self.source)
        length = str(len(self.body)).encode("latin-1")
        ok = (*common, (b"content-type", b"application/json"), (b"content-length", length))
        object.__setattr__(self, "not_modified_headers", common)
        object.__setattr__(self, "headers", ok)


def source_headers(version: int, published: str) -> RawHeaders:
    """The headers every 200 and 304 of a data route carries: which version answered, and when it
    was published (decisions.md, "Point in time")."""
    return ((b"x-data-version", str(version).encode()), (b"x-data-published", published.encode()))


def size_of(key: object) -> int:
    """About how many bytes a cache key holds: its strings and bytes, 8 for anything else."""
    if isinstance(key, str | bytes):
        return len(key)
    if isinstance(key, tuple):
        return sum(size_of(part) for part in key) + 8 * len(key)
    return 8


class VersionCache:
    """What one data version has computed: an LRU of encoded responses and memoized indexes.

    The data only changes when a new manifest lands, and a new manifest is a new snapshot, so a
    cache keyed by the snapshot object can never serve a stale answer and needs no invalidation.
    Both maps a client's requests fill are bounded in bytes (`RESPONSE_BYTES`, `HIT_BYTES`); what
    each saves is the caches section's rows "responses" and "request hits".
    """

    def __init__(self, response_bytes: int = RESPONSE_BYTES, hit_bytes: int = HIT_BYTES) -> None:
        self._responses: OrderedDict[Hashable, tuple[Encoded, int]] = OrderedDict()
        self._response_bytes = 0
        self._memo: dict[Hashable, Any] = {}
        self._pending: dict[Hashable, asyncio.Future[Any]] = {}
        self._hits: dict[Hashable, Hashable] = {}
        self._hit_bytes = 0
        self._max_response_bytes = response_bytes
        self._max_hit_bytes = hit_bytes
        self._lock = threading.Lock()

    @property
    def held_bytes(self) -> int:
        """Bytes the two bounded maps hold now (as counted against their bounds)."""
        return self._response_bytes + self._hit_bytes

    def get(self, key: Hashable) -> Encoded | None:
        with self._lock:
            held = self._responses.get(key)
            if held is None:
                return None
            self._responses.move_to_end(key)
            return held[0]

    def put(self, key: Hashable, entry: Encoded) -> None:
        size = len(entry.body) + size_of(key) + ENTRY_OVERHEAD
        if size > self._max_response_bytes:
            return  # larger than the whole cache: built again on each request
        with self._lock:
            previous = self._responses.pop(key, None)
            if previous is not None:
                self._response_bytes -= previous[1]
            self._responses[key] = (entry, size)
            self._response_bytes += size
            while self._response_bytes > self._max_response_bytes:
                _, (_, dropped) = self._responses.popitem(last=False)
                self._response_bytes -= dropped

    def hit(self, request_key: Hashable) -> Encoded | None:
        """The entry a request exactly like this one (same app, route, path, query) answered with,
        while the LRU still holds it (so bodies stay bounded by `RESPONSE_BYTES`)."""
        key = self._hits.get(request_key)
        return None if key is None else self.get(key)

    def remember(self, request_key: Hashable, key: Hashable) -> None:
        """Remember that a request answered 200 with the entry of `key`. Bounded in bytes: raw
        requests are the client's choice, so a long one is not remembered and the whole map is
        dropped when it is full."""
        hits = self._hits
        if request_key in hits:
            return
        raw = size_of(request_key)
        if raw > HIT_KEY_LIMIT:
            return
        size = raw + size_of(key) + ENTRY_OVERHEAD
        if self._hit_bytes + size > self._max_hit_bytes:
            hits.clear()
            self._hit_bytes = 0
        hits[request_key] = key
        self._hit_bytes += size

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
