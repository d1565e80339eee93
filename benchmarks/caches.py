"""The caches section: what each bounded cache on a request's path saves, in instructions.

Each cache is taken out in turn (`remove`, applied in the measured process before the app is
built: the cache forgets everything it is given) and list-symbols is counted under callgrind as
`benchmarks.request_instructions` counts it, with the customers' keys (900 keys rotated) and with
the operator's one key. A cache stays in the code while its row shows it saves a request's work;
its row is named beside it in the code.

Not here, since they do not change a request's instructions: the past versions a reader keeps
open and the host's disk cache of object-storage files (the versions section's rows, "as_of first
answer" and "bytes fetched"), and the refused-keys map (a bound on what a repeated bad key costs
the store, tested in tests/api/metering).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.figures import Figure

WITHOUT_ENV = "MI_BENCH_WITHOUT"
"""Comma-separated names of the caches `remove` takes out in the measured process."""


class _Forgetful(dict[Any, Any]):
    """A dict that keeps nothing: every lookup misses, as a cache of size 0 would."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def setdefault(self, key: Any, default: Any = None) -> Any:
        return default


def _responses() -> None:
    from api.cache import VersionCache

    VersionCache.get = lambda self, key: None  # type: ignore[method-assign]
    VersionCache.put = lambda self, key, entry: None  # type: ignore[method-assign]


def _request_hits() -> None:
    from api.cache import VersionCache

    VersionCache.hit = lambda self, request_key: None  # type: ignore[method-assign]


def _authorization() -> None:
    import api.auth

    api.auth._PARSED = _Forgetful()


def _verified_keys() -> None:
    from api.metering.store import MeteringStore

    MeteringStore.cached_account = lambda self, key: None  # type: ignore[method-assign]
    MeteringStore._remember = lambda self, key, account, expires: None  # type: ignore[method-assign]


def _key_accounts() -> None:
    from api.metering.store import MeteringStore

    init = MeteringStore.__init__

    def forgetful_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._auth_cache = _Forgetful()

    MeteringStore.__init__ = forgetful_init  # type: ignore[method-assign]


def _redis_packing() -> None:
    from api.metering.redis_store import RedisMeteringStore

    init = RedisMeteringStore.__init__

    def forgetful_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._packed_names, self._packed_args = _Forgetful(), _Forgetful()

    RedisMeteringStore.__init__ = forgetful_init  # type: ignore[method-assign]


def _balance_headers() -> None:
    import api.metering.middleware

    api.metering.middleware._HEADER_CACHE = _Forgetful()


@dataclass(frozen=True)
class Cache:
    name: str
    where: str
    remove: Callable[[], None]
    store: str = "sqlite"
    """The metering store the cache's rows are counted on."""


CACHES: tuple[Cache, ...] = (
    Cache("responses", "api/cache.py VersionCache (encoded responses)", _responses),
    Cache("request hits", "api/cache.py VersionCache.hit (a raw request's entry)", _request_hits),
    Cache("authorization", "api/auth.py _PARSED (a header's key)", _authorization),
    Cache("verified keys", "api/metering/store.py _verified (a key accepted)", _verified_keys),
    Cache("key accounts", "api/metering/store.py _auth_cache (30 s)", _key_accounts),
    Cache("balance headers", "api/metering/middleware.py _HEADER_CACHE", _balance_headers),
    Cache("packed names and arguments", "api/metering/redis_store.py _packed_names, _packed_args",
          _redis_packing, store="redis"),
)  # fmt: skip
BY_NAME = {cache.name: cache for cache in CACHES}


def remove_named() -> None:
    """In the measured process: take out the caches `WITHOUT_ENV` names."""
    for name in filter(None, os.environ.get(WITHOUT_ENV, "").split(",")):
        BY_NAME[name].remove()


def caches_section(data_dir: Path, requests: int = 2_000) -> list[Figure]:
    """Per cache and key set: instructions per list-symbols request with every cache (project)
    against the same without that one (anchor); the ratio is the share of a request's work the
    cache leaves (below 1: it saves work)."""
    from benchmarks.request_instructions import count

    figures: list[Figure] = []
    for store in sorted({cache.store for cache in CACHES}):
        for keys in ("customers", "internal"):
            whole = count(data_dir, store, keys, requests, 10)
            print(f"  {store}, {keys} keys, every cache: {whole:,.0f} a request", flush=True)
            for cache in (c for c in CACHES if c.store == store):
                without = count(data_dir, store, keys, requests, 10, without=(cache.name,))
                print(f"    without {cache.name}: {without:,.0f}", flush=True)
                figures.append(
                    Figure(
                        "caches",
                        f"list-symbols on {store}, {keys} keys: {cache.name} ({cache.where})",
                        "instructions",
                        whole,
                        without,
                        f"without {cache.name}",
                    )
                )
    return figures
