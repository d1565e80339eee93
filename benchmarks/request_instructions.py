"""Instructions per metered request: the whole app in-process, counted by callgrind.

`python -m benchmarks.request_instructions --data-dir DIR [--store S] [--keys internal|customers]
[--requests N] [--concurrent C] [--profile FILE]`

The API app (the production one, or a metering ceiling of `benchmarks.waiting_store_app`) is
called as an ASGI callable on uvloop by C tasks (default 10), each sending list-symbols requests in
a loop with the next key of the rotation (`customers`: 300 keys of each limited plan, as the
metering section loads them; `internal`: the operator's one key). The process runs under
`valgrind --tool=callgrind` with collection switched on only around N requests (default 2,000)
after a warm-up of as many, and prints the instructions it executed per request. `--profile FILE`
also keeps callgrind's profile of the counted requests, by function (`callgrind_annotate FILE`).

Why instructions: served rates and CPU seconds on this project's two-core machines move by a third
from one minute to the next (docs/benchmarks.md, "Run-to-run noise"), so a change of 5 to 15% to a
request's own work cannot be read from them; an instruction count is the same to 0.1% from run to
run for the same code and inputs, whatever else the machine is doing. It counts this process only:
Redis's own work and the server's (granian) are not in it, and an instruction is not a fixed time.

Stores (`--store`): `sqlite` and `redis`, the production app on that metering store; `ceiling`,
the metering middleware over a store that only waits; `redis-ceiling`, the real Redis store with a
script that does no work; `off`, the app without metering. Redis uses database 15 under a random
prefix, removed afterwards; SQLite a scratch file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.caches import WITHOUT_ENV, remove_named
from benchmarks.serving import CUSTOMER_PLANS, REDIS_URL, ROUTES, create_keys, redis_cleanup

STORES = ("sqlite", "redis", "ceiling", "redis-ceiling", "off")
KEYS = ("internal", "customers")
CUSTOMER_KEYS_PER_PLAN = 300
"""Keys of each limited plan in the rotation: at 2 x 2,000 requests none nears its limits."""
_MEASURING = "MI_REQUEST_INSTRUCTIONS_CHILD"
"""Set in the process that valgrind runs (the parent only starts it and reads its count)."""
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
ASGIApp = Callable[[dict[str, Any], Receive, Send], Awaitable[None]]


def metering_url(store: str, scratch: Path, prefix: str) -> str:
    if store in ("redis", "redis-ceiling"):
        return f"{REDIS_URL}?prefix={prefix}"
    if store == "off":
        return "off"
    return f"sqlite://{scratch / 'metering.sqlite3'}"


def make_app(store: str) -> ASGIApp:
    """The app the requests go to, configured from the environment (`MI_METERING_URL`)."""
    if store in ("ceiling", "redis-ceiling"):
        from benchmarks import waiting_store_app

        app: ASGIApp = waiting_store_app.create_app()  # type: ignore[assignment]
        return app
    from api.app import asgi_app

    served: ASGIApp = asgi_app()  # type: ignore[assignment]
    return served


class _Lifespan:
    """The app's ASGI lifespan, driven as a server drives it (startup, then shutdown)."""

    def __init__(self, app: ASGIApp) -> None:
        self._inbox: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self._task = asyncio.ensure_future(app(scope, self._inbox.get, self._outbox.put))

    async def start(self) -> None:
        await self._inbox.put({"type": "lifespan.startup"})
        message = await self._outbox.get()
        if message["type"] != "lifespan.startup.complete":
            raise RuntimeError(f"the app did not start: {message}")

    async def stop(self) -> None:
        await self._inbox.put({"type": "lifespan.shutdown"})
        await self._task


def _requester(
    app: ASGIApp, keys: list[str], statuses: dict[int, int]
) -> Callable[[int], Awaitable[None]]:
    """A loop of `count` list-symbols requests, each with the rotation's next key."""
    path = ROUTES["list-symbols"][0]
    headers = [[(b"authorization", f"Bearer {key}".encode()), (b"host", b"bench")] for key in keys]
    turn = 0

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses[message["status"]] = statuses.get(message["status"], 0) + 1

    async def loop(count: int) -> None:
        nonlocal turn
        for _ in range(count):
            key_headers, turn = headers[turn % len(headers)], turn + 1
            scope = {
                "type": "http",
                "asgi": {"version": "3.0"},
                "http_version": "1.1",
                "method": "GET",
                "scheme": "http",
                "path": path,
                "raw_path": path.encode(),
                "query_string": b"",
                "root_path": "",
                "headers": key_headers,
                "client": ("127.0.0.1", 50000),
                "server": ("127.0.0.1", 8000),
                "state": {},
            }
            await app(scope, receive, send)

    return loop


def _collect(on: bool) -> None:
    """Switch callgrind's counting of this process on or off."""
    command = ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())]
    subprocess.run(command, check=True, capture_output=True)


async def measured_requests(
    store: str, keys: str, requests: int, concurrent: int
) -> dict[int, int]:
    """In the process valgrind runs: the warm-up, then `requests` counted; the statuses seen."""
    url = os.environ["MI_METERING_URL"]
    if store == "off":  # no store to make keys in: the key sent is never read
        presented = ["none"]
    elif keys == "internal":
        presented = await create_keys(url, ["internal"], 1)
    else:
        presented = await create_keys(url, CUSTOMER_PLANS, CUSTOMER_KEYS_PER_PLAN)
    remove_named()
    app = make_app(store)
    lifespan = _Lifespan(app)
    await lifespan.start()
    statuses: dict[int, int] = {}
    loop = _requester(app, presented, statuses)
    each = requests // concurrent
    await asyncio.gather(*(loop(each) for _ in range(concurrent)))
    await asyncio.sleep(0.1)  # released settles of the warm-up go out
    _collect(True)
    await asyncio.gather(*(loop(each) for _ in range(concurrent)))
    _collect(False)
    await lifespan.stop()
    return statuses


def _child(args: argparse.Namespace) -> None:
    import uvloop

    statuses = uvloop.run(measured_requests(args.store, args.keys, args.requests, args.concurrent))
    print(f"statuses {sorted(statuses.items())}", flush=True)


def count(
    data_dir: Path,
    store: str,
    keys: str,
    requests: int,
    concurrent: int,
    profile: Path | None = None,
    without: tuple[str, ...] = (),
) -> float:
    """Instructions per request of `store` with `keys` (the parent's side: runs the child);
    callgrind's profile of the counted requests written to `profile` when given; the caches named
    in `without` (`benchmarks.caches`) taken out."""
    prefix = f"mi:instructions:{uuid.uuid4().hex[:8]}:"
    with tempfile.TemporaryDirectory() as scratch:
        env = {
            **os.environ,
            _MEASURING: "1",
            "MI_DATA_DIR": str(data_dir),
            "MI_METERING_URL": metering_url(store, Path(scratch), prefix),
            WITHOUT_ENV: ",".join(without),
        }
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={profile.resolve() if profile else os.devnull}",
            sys.executable,
            "-m",
            "benchmarks.request_instructions",
            *("--store", store, "--keys", keys),
            *("--requests", str(requests), "--concurrent", str(concurrent)),
        ]
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        finally:
            if store in ("redis", "redis-ceiling"):
                redis_cleanup(prefix)
    collected = re.search(r"Collected : (\d+)", done.stderr)
    statuses = re.search(r"statuses \[(.*)\]", done.stdout)
    if done.returncode != 0 or collected is None or statuses is None:
        raise RuntimeError(f"the measured process failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    served = sum(int(n) for n in re.findall(r"\(\d+, (\d+)\)", statuses.group(1)))
    if re.search(r"\((?!200,)\d+, \d+\)", statuses.group(1)):
        raise RuntimeError(f"requests answered other than 200: {statuses.group(1)}")
    # the counted half: the same number of requests as the warm-up
    return int(collected.group(1)) / (served / 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="a materialized MI_DATA_DIR")
    parser.add_argument("--store", choices=STORES, default="sqlite")
    parser.add_argument("--keys", choices=KEYS, default="customers")
    parser.add_argument("--requests", type=int, default=2_000)
    parser.add_argument("--concurrent", type=int, default=10)
    parser.add_argument(
        "--profile", type=Path, help="also write callgrind's profile of the counted requests here"
    )
    parser.add_argument(
        "--without", default="", help="caches to take out, comma-separated (benchmarks.caches)"
    )
    args = parser.parse_args()
    if os.environ.get(_MEASURING):
        _child(args)
        return
    if args.concurrent < 1 or args.requests < args.concurrent:
        parser.error("needs at least one task and at least one request a task (--requests)")
    if args.data_dir is None:
        parser.error("--data-dir is required (a materialized warehouse: `mi materialize`)")
    without = tuple(filter(None, args.without.split(",")))
    per_request = count(
        args.data_dir, args.store, args.keys, args.requests, args.concurrent, args.profile, without
    )
    print(
        f"{args.store}, {args.keys} keys: {per_request:,.0f} instructions a request "
        f"({args.requests:,} requests, {args.concurrent} concurrent, in process)"
    )


if __name__ == "__main__":
    main()
