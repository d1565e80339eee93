"""In-process cost of the metering store's hot path: µs of wall and CPU time per metered request.

`python -m benchmarks.store_steps sqlite|redis [--pairs N] [--concurrent C] [--plan P] [--path X]`

C tasks (default 10, the spec's connection limit) each meter N/C requests on one key in a loop,
so the store's groups hold up to C steps. `--path admit-settle` (default) times the two steps of a
plan with limits (admit before the route, settle after it); `--path record` the one step of a
plan without limits (the `internal` key the benchmarks load with: `record` after the route).
No server is involved: this isolates the store (and its grouping) from the middleware and the
ASGI server, which the `metering` section of `make bench` measures whole. The SQLite file is a scratch one; Redis uses database 15 under a random prefix,
removed afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from api.metering.config import load_config
from api.metering.store import MeteringStore, open_store
from benchmarks.serving import REDIS_URL, redis_cleanup

ROUTE = "list-symbols"


PATHS = ("admit-settle", "record")


async def measure(
    store: MeteringStore, plan: str, pairs: int, concurrent: int, path: str = "admit-settle"
) -> tuple[float, float]:
    """(µs wall, µs CPU) per metered request, after a warm-up of 100 requests per task."""
    account = await store.authenticate(await store.create_key(plan, "store-steps bench"))
    assert account is not None

    async def loop(count: int) -> None:
        for _ in range(count):
            if path == "record":
                assert await store.record(account, ROUTE, 200, 1) is not None
                continue
            admission = await store.admit(account, ROUTE, 1)
            assert admission.charge is not None, admission.outcome
            await store.settle(admission.charge, 200)

    await asyncio.gather(*(loop(100) for _ in range(concurrent)))
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(loop(pairs // concurrent) for _ in range(concurrent)))
    done = pairs // concurrent * concurrent
    return (time.perf_counter() - wall) / done * 1e6, (time.process_time() - cpu) / done * 1e6


async def run(
    backend: str, plan: str, pairs: int, concurrent: int, path: str = "admit-settle"
) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as scratch:
        prefix = f"mi:store-steps:{uuid.uuid4().hex[:8]}:"
        url = (
            f"sqlite://{Path(scratch) / 'metering.sqlite3'}"
            if backend == "sqlite"
            else f"{REDIS_URL}?prefix={prefix}"
        )
        store = open_store(url, load_config())
        try:
            return await measure(store, plan, pairs, concurrent, path)
        finally:
            await store.close()
            if backend == "redis":
                redis_cleanup(prefix)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", choices=["sqlite", "redis"])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--concurrent", type=int, default=10)
    parser.add_argument("--plan", default="internal", help="unlimited by default (no rate limit)")
    parser.add_argument("--path", choices=PATHS, default="admit-settle")
    args = parser.parse_args()
    wall, cpu = asyncio.run(run(args.backend, args.plan, args.pairs, args.concurrent, args.path))
    print(f"{args.backend}: {wall:.1f} µs wall, {cpu:.1f} µs CPU per {args.path} "
          f"({args.pairs:,} requests, {args.concurrent} concurrent, {args.plan} plan)")  # fmt: skip


if __name__ == "__main__":
    main()
