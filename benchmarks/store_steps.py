"""In-process cost of the metering store's hot path: µs of wall and CPU time per metered request.

`python -m benchmarks.store_steps sqlite|redis [--pairs N] [--concurrent C] [--plan P] [--path X]
[--keys K]`

C tasks (default 10, the spec's connection limit) each meter N/C requests in a loop, so the
store's groups hold up to C steps; the requests rotate over K keys of the plan (default 1; a
limited plan's key takes 300 requests a minute at most, so give it N/250 keys or more).
`--path admit-settle` (default) times the two steps of a plan with limits (admit before the route,
settle after it); `--path admit-release` the steps of a customer's request served with nothing to
credit (admit, then the settle queued behind its response, as the middleware does for a 200);
`--path record` the one step of a plan without limits (the `internal` key: `record` after the
route). On Redis it also reports Redis's own time per request (its `EVALSHA` calls' time, from
`INFO commandstats`): the script's work, on the server's one thread.
No server is involved: this isolates the store (and its grouping) from the middleware and the
ASGI server, which the `metering` section of `make bench` measures whole. The SQLite file is a
scratch one; Redis uses database 15 under a random prefix, removed afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from api.metering.backends import open_store
from api.metering.config import load_config
from api.metering.store import MeteringStore
from benchmarks.serving import REDIS_URL, redis_cleanup

ROUTE = "list-symbols"


PATHS = ("admit-settle", "admit-release", "record")


@dataclass(frozen=True)
class Cost:
    """µs per metered request."""

    wall: float
    cpu: float
    """This process's CPU (the client's side)."""
    server: float | None = None
    """Redis's own time in the store's scripts; None for SQLite (it runs in this process)."""


async def measure(
    store: MeteringStore,
    plan: str,
    pairs: int,
    concurrent: int,
    path: str = "admit-settle",
    keys: int = 1,
    server_time: Callable[[], int] | None = None,
) -> Cost:
    """µs per metered request, after a warm-up of 100 requests per task; `server_time` reads the
    server's µs spent on the store so far (Redis's scripts)."""
    accounts = []
    for n in range(keys):
        account = await store.authenticate(await store.create_key(plan, f"store-steps {n}"))
        assert account is not None
        accounts.append(account)
    turn = 0

    async def loop(count: int) -> None:
        nonlocal turn
        for _ in range(count):
            account, turn = accounts[turn % keys], turn + 1
            if path == "record":
                assert await store.record(account, ROUTE, 200, 1) is not None
                continue
            admission = await store.admit(account, ROUTE, 1)
            assert admission.charge is not None, admission.outcome
            if path == "admit-release":
                store.release(admission.charge, 200)
                await asyncio.sleep(0)  # as a response going out: the released settle joins a group
            else:
                await store.settle(admission.charge, 200)

    await asyncio.gather(*(loop(100) for _ in range(concurrent)))
    await asyncio.sleep(0.05)  # the warm-up's last released settles go out
    served = server_time() if server_time else 0
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(loop(pairs // concurrent) for _ in range(concurrent)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await asyncio.sleep(0.05)
    done = pairs // concurrent * concurrent
    server = (server_time() - served) / done if server_time else None
    return Cost(wall / done * 1e6, cpu / done * 1e6, server)


def redis_script_time() -> int:
    """µs Redis has spent running scripts (`EVALSHA`) since it started or its stats were reset."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        stats: dict[str, Any] = client.info("commandstats")
    finally:
        client.close()
    return int(stats.get("cmdstat_evalsha", {}).get("usec", 0))


async def run(
    backend: str,
    plan: str,
    pairs: int,
    concurrent: int,
    path: str = "admit-settle",
    keys: int = 1,
) -> Cost:
    with tempfile.TemporaryDirectory() as scratch:
        prefix = f"mi:store-steps:{uuid.uuid4().hex[:8]}:"
        url = (
            f"sqlite://{Path(scratch) / 'metering.sqlite3'}"
            if backend == "sqlite"
            else f"{REDIS_URL}?prefix={prefix}"
        )
        store = open_store(url, load_config())
        server_time = redis_script_time if backend == "redis" else None
        try:
            return await measure(store, plan, pairs, concurrent, path, keys, server_time)
        finally:
            await store.close()
            if backend == "redis":
                redis_cleanup(prefix)


def _at_least_one(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"needs a whole number of at least 1, not {text!r}")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", choices=["sqlite", "redis"])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--concurrent", type=int, default=10)
    parser.add_argument("--plan", default="internal", help="unlimited by default (no rate limit)")
    parser.add_argument("--path", choices=PATHS, default="admit-settle")
    parser.add_argument("--keys", type=_at_least_one, default=1)
    args = parser.parse_args()
    cost = asyncio.run(
        run(args.backend, args.plan, args.pairs, args.concurrent, args.path, args.keys)
    )
    server = "" if cost.server is None else f", Redis {cost.server:.1f} µs in its scripts"
    print(
        f"{args.backend}: {cost.wall:.1f} µs wall, {cost.cpu:.1f} µs CPU{server} per {args.path} "
        f"({args.pairs:,} requests over {args.keys:,} keys, {args.concurrent} concurrent, "
        f"{args.plan} plan)"
    )


if __name__ == "__main__":
    main()
