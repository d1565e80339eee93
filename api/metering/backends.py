"""`open_store`: the metering store a URL names, SQLite or Redis.

Apart from `store.py` because it imports both backends, which import the interface from there.
Each backend is imported when its URL is opened: the Redis client's import is a cost a SQLite
deployment (and every `mi keys` command) need not pay.
"""

from __future__ import annotations

from pathlib import Path

from api.metering.config import MeteringConfig
from api.metering.store import Clock, MeteringStore


def open_store(url: str, config: MeteringConfig, clock: Clock | None = None) -> MeteringStore:
    """A store for `sqlite:///absolute/path` or `redis://host:port/db[?prefix=...]` (connects lazily)."""
    if url.startswith("sqlite:///"):
        from api.metering.sqlite_store import SqliteMeteringStore

        return SqliteMeteringStore(Path(url.removeprefix("sqlite://")), config, clock)
    if url.startswith(("redis://", "rediss://", "unix://")):
        from api.metering.redis_store import RedisMeteringStore

        return RedisMeteringStore(url, config, clock)
    raise ValueError(f"unsupported metering store URL {url!r} (sqlite:///path or redis://...)")
