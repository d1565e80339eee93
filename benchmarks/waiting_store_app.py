"""The metering ceilings: the real app and metering middleware over a store that only waits.

Every durable store makes a metered request wait for each of its steps to commit: a limited
plan's admit before the route runs and its settle before the response leaves; a plan without
limits (the benchmark's `internal` key) its one record step before the response leaves.
`WaitingStore` keeps those waits (each resolved on the next event-loop iteration, grouped per
iteration as the real stores group their commits) and drops the store's own work, so this app's rate is the best any store
can reach under this server: the metering figures are read against it as well as against
metering off. Keys are authenticated through the real SQLite file (`MI_METERING_URL`).

With a Redis `MI_METERING_URL` (`redis://`, `rediss://`, `unix://`), `RoundTripStore` is the Redis ceiling: the real Redis store's
grouping, packing, connection and reply handling, one real BATCH call per group, with a script
that does no work (each step answered as if admitted, freed, settled or recorded). Its rate is the
best any store with one Redis round trip per group can reach under this server and machine,
whatever its script does: with the `internal` key (one record step a request) the section's Redis
ceiling, with customer keys (an admit before the route, a free step behind the response) the same
bound for their path. Keys are authenticated through the real Redis store.

Served by `python -m benchmarks.waiting_store_app --port P --workers N`, through `mi serve`'s
server functions like the bare app.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from litestar import Litestar

from api.app import create_app as create_api
from api.metering.config import load_config
from api.metering.model import (
    UNLIMITED_BALANCE,
    Account,
    Admission,
    Balance,
    Charge,
    Outcome,
    net_cost,
)
from api.metering.plugin import MeteringPlugin
from api.metering.redis_store import RedisMeteringStore, _Script
from api.metering.sqlite_store import SqliteMeteringStore
from api.metering.store import store_url_from_env
from api.settings import load_settings
from benchmarks.bare_app import serve_factory

FACTORY = "benchmarks.waiting_store_app:create_app"


class _Iteration:
    """Futures resolved together on the next event-loop iteration (one callback per group)."""

    def __init__(self) -> None:
        self._waiting: list[tuple[asyncio.Future[Any], Any]] = []

    def next(self, value: Any = None) -> asyncio.Future[Any]:
        """A future of `value`, resolved on the next iteration."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        if not self._waiting:
            loop.call_soon(self._release)
        self._waiting.append((future, value))
        return future

    def _release(self) -> None:
        waiting, self._waiting = self._waiting, []
        for future, value in waiting:
            if not future.done():
                future.set_result(value)


class WaitingStore(SqliteMeteringStore):
    """Admits and settles every request for free, each after waiting one loop iteration."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, load_config())
        self._iteration = _Iteration()

    def admit(self, account: Account, route: str, cost: int) -> asyncio.Future[Admission]:
        # As the SQLite store does: the group's future itself, no coroutine around it.
        charge = Charge(account.key_id, route, "", cost, cost, 0, 0.0)
        return self._iteration.next(Admission(Outcome.ADMITTED, UNLIMITED_BALANCE, charge))

    async def settle(
        self, charge: Charge, status: int, final: int | None = None
    ) -> tuple[int, Balance]:
        await self._iteration.next()
        return net_cost(status, charge.tokens, final), UNLIMITED_BALANCE

    def release(self, charge: Charge, status: int) -> None:
        pass  # nobody waits for it: nothing to wait for

    def record(
        self, account: Account, route: str, status: int, tokens: int
    ) -> asyncio.Future[Balance | None]:
        # As the SQLite store does: the group's future itself, no coroutine around it.
        return self._iteration.next(UNLIMITED_BALANCE)


# Each step answered as the real script would answer it admitted (a budget of -1: none), freed,
# settled or recorded, with no read or write: the arguments from the 7th are the steps, each its
# kind, its key's index and its own arguments (an admit 6, a settle 8, a free or a record 3).
NO_WORK_BATCH = """
local replies = {}
local i = 7
while i <= #ARGV do
  local kind = ARGV[i]
  if kind == 'a' then
    replies[#replies + 1] = 'admitted 0 -1 -1 -1 -1 ' .. ARGV[i + 2] .. ' 0 0'
    i = i + 8
  elseif kind == 's' then
    replies[#replies + 1] = '-1 -1 -1 -1'
    i = i + 10
  elseif kind == 'f' then
    replies[#replies + 1] = 'freed'
    i = i + 5
  else
    replies[#replies + 1] = 'recorded'
    i = i + 5
  end
end
return table.concat(replies, '\\n')
"""


class RoundTripStore(RedisMeteringStore):
    """Meters every request for free, after one real round trip per group to Redis: the real
    store's steps, packing and replies, with a script that does no work."""

    def __init__(self, url: str) -> None:
        super().__init__(url, load_config())
        self._batch_script = _Script.of(NO_WORK_BATCH)


def create_app() -> Litestar:
    settings = load_settings(os.environ)
    url = store_url_from_env(os.environ, settings.data_dir)
    store: SqliteMeteringStore | RedisMeteringStore
    if url.startswith(("redis://", "rediss://", "unix://")):  # as open_store reads them
        store = RoundTripStore(url)
    else:
        store = WaitingStore(Path(url.removeprefix("sqlite://")))
    return create_api(settings, plugins=[MeteringPlugin(store, store.config)])


if __name__ == "__main__":
    serve_factory(FACTORY)
