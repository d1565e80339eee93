"""The api and metering sections: the real server vs a bare Litestar app, metering on vs off."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from itertools import zip_longest
from pathlib import Path
from typing import Any

import httpx
import msgspec

from api.metering.backends import open_store
from api.metering.config import load_config
from benchmarks import remote_redis, threads
from benchmarks.bare_app import PRICE_BODY_ENV
from benchmarks.figures import Figure, Goal
from benchmarks.load import LoadResult, run_load
from benchmarks.servers import (
    Server,
    bare_command,
    create_key,
    free_port,
    materialize,
    mi_serve_command,
    serving,
    waiting_store_command,
)

TA = "/api/v2/crypto/technical-analysis"
ROUTES: dict[str, list[str]] = {
    "list-symbols": ["/api/v2/crypto/instruments/list-symbols"],
    "get-current-action": [
        f"/api/v2/crypto/trades/get-current-action/BTC/{s}" for s in ("aggressive", "conservative")
    ],
    "get-indicators": [f"{TA}/get-indicators/BTC?period={p}" for p in range(2, 366)],
    "get-price-history": [f"{TA}/get-price-history/BTC"],
    "get-recent-briefs": ["/api/v2/crypto/newsroom/get-recent-briefs/BTC"],
    "get-sentiment-history": ["/api/v2/crypto/sentiment/get-sentiment-history/BTC"],
    "get-trend-segments": ["/api/v2/forex/trades/get-trend-segments/EURUSD"],
    "legacy trends": ["/api/v2/market/trends/BTC"],
}
"""Each route's paths; a load run requests a random one per request (every indicator period)."""

CHEAP = ("list-symbols", "get-current-action", "get-indicators")
FAMILIES = ("get-recent-briefs", "get-sentiment-history", "get-trend-segments", "legacy trends")
"""The other route families: measured against the same anchor; the rate goal is the cheap routes'."""
RATE_GOAL = Goal("ratio", ">=", 0.70)
P99_GOAL = Goal("project", "<", 10.0)
REDIS_URL = "redis://127.0.0.1:6379/15"
CEILING = "a waiting-only store (ceiling)"
"""benchmarks.waiting_store_app: the metering middleware over a store that only waits (no work)."""
REDIS_CEILING = "a Redis round trip only (Redis ceiling)"
"""benchmarks.waiting_store_app on Redis: the real Redis store's round trip per group, no work."""
REMOTE_REDIS = "redis on another host"
"""The Redis store against a redis-server in a network namespace behind a delaying relay
(benchmarks.remote_redis): the round trip a deployment's Redis on another host costs."""
METERING_CONNECTIONS = (10, 50)
METERING_WORKERS = (1, 2)


@dataclass(frozen=True)
class LoadPlan:
    """How every route is loaded: same tool, connections and duration for project and anchor."""

    connections: int = 10
    seconds: float = 8.0
    warmup_seconds: float = 2.0
    rounds: int = 2
    workers: int = 1
    server: str = "granian"
    tool: str = "auto"
    api_metering: str = "sqlite"
    """The api section's server: `sqlite` (metered, the production default) or `off`."""
    metering_connections: tuple[int, ...] = METERING_CONNECTIONS
    metering_workers: tuple[int, ...] = METERING_WORKERS
    """The metering section's loads: every connection count on every worker count."""


@dataclass
class Workspace:
    """A scratch dir (`root`) and a data dir whose embedded market is materialized once per run."""

    root: Path
    data_dir: Path
    materialized: bool = False

    def ready(self) -> Path:
        if not self.materialized and not (self.data_dir / "warehouse" / "_manifest.json").exists():
            print(f"  materializing the embedded market into {self.data_dir} ...", flush=True)
            materialize(self.data_dir, os.environ)
        self.materialized = True
        return self.data_dir

    def env(self, metering_url: str) -> dict[str, str]:
        return {**os.environ, "MI_DATA_DIR": str(self.ready()), "MI_METERING_URL": metering_url}

    @property
    def sqlite_url(self) -> str:
        return f"sqlite://{(self.root / 'metering.sqlite3').resolve()}"


def _check_paths(server: Server, paths: list[str], headers: dict[str, str]) -> None:
    """Every path answers 200 once (fills the response caches; a broken route fails loudly)."""
    with httpx.Client(base_url=server.base, headers=headers, timeout=30) as client:
        for path in paths:
            response = client.get(path)
            if response.status_code != 200:
                raise RuntimeError(f"{path} answered {response.status_code}: {response.text[:200]}")


@dataclass(frozen=True)
class Target:
    """One thing to load: a server, the paths to pick from at random, the headers to send, and
    optionally a file of keys to rotate over (one a request) and its own connection count."""

    name: str
    server: Server
    paths: list[str]
    headers: dict[str, str]
    keys: Path | None = None
    connections: int | None = None
    """None: the plan's."""


def _once(target: Target, plan: LoadPlan) -> LoadResult:
    base, paths, headers, keys = target.server.base, target.paths, target.headers, target.keys
    connections = target.connections or plan.connections
    if plan.warmup_seconds > 0:  # warms every worker's caches and connections
        run_load(base, paths, headers, connections, plan.warmup_seconds, plan.tool, keys)
    pid = target.server.process.pid
    before = threads.thread_times(pid) if threads.available() else None
    result = run_load(base, paths, headers, connections, plan.seconds, plan.tool, keys)
    cpu = ""
    if before is not None:
        spent = threads.thread_times(pid).minus(before)
        busiest, total = threads.per_request_us(spent, result.requests)
        result = replace(result, busiest_thread_us=busiest, server_cpu_us=total)
        cpu = f", busiest thread {busiest:.1f} µs/req"
    print(
        f"    {target.name}: {result.rps:,.0f} req/s, p50 {result.p50_ms:.2f} ms, "
        f"p99 {result.p99_ms:.2f} ms{cpu}"
        + ("" if result.clean else f", NOT CLEAN: {result.non2xx} non-2xx"),
        flush=True,
    )
    return result


def measure(targets: list[Target], plan: LoadPlan) -> dict[str, list[LoadResult]]:
    """Every target once per round, interleaved, so project and anchor share the machine's
    moments of quiet and of contention (others' test runs); each target's results by round."""
    for target in targets:
        headers = target.headers
        if target.keys is not None:  # its first key (the others are made the same way)
            headers = {"Authorization": f"Bearer {target.keys.read_text().split()[0]}"}
        _check_paths(target.server, target.paths, headers)
    results: dict[str, list[LoadResult]] = {t.name: [] for t in targets}
    for number in range(plan.rounds):
        print(f"  round {number + 1} of {plan.rounds}", flush=True)
        for target in targets:
            results[target.name].append(_once(target, plan))
    return results


def best(results: list[LoadResult]) -> LoadResult:
    """The round with the highest clean rate: the least disturbed by other load on the machine."""
    clean = [r for r in results if r.clean] or results
    return max(clean, key=lambda r: r.rps)


def best_p99(results: list[LoadResult]) -> float:
    """The lowest p99 of the clean rounds: the same least-disturbed rule as `best`, per metric."""
    return min(r.p99_ms for r in ([r for r in results if r.clean] or results))


def _rate(result: LoadResult) -> float | None:
    return result.rps if result.clean else None


def _details(results: list[LoadResult]) -> list[dict[str, Any]]:
    return [r.as_json() for r in results]


@contextmanager
def _api_server(env: Mapping[str, str], plan: LoadPlan, log: Path) -> Iterator[Server]:
    port = free_port()
    command = mi_serve_command(port, plan.workers, plan.server)
    with serving(command, env, port, "/api/v1/ping", log) as server:
        yield server


def _route_figures(
    route: str,
    ours: list[LoadResult],
    bare: list[LoadResult],
    anchor_name: str,
    rate_goal: Goal | None = RATE_GOAL,
) -> list[Figure]:
    details = {"project_rounds": _details(ours), "anchor_rounds": _details(bare)}
    top, anchor = best(ours), best(bare)
    return [
        Figure(
            "api",
            f"{route} rate",
            "req/s",
            _rate(top),
            _rate(anchor),
            anchor_name,
            rate_goal,
            details,
        ),
        Figure("api", f"{route} p99", "ms", best_p99(ours), best_p99(bare), anchor_name, P99_GOAL),
    ]


def _price_body(api: Server, headers: dict[str, str], path: Path) -> int:
    """Saves the real full price history for the bare app; its number of points."""
    body = httpx.get(api.base + ROUTES["get-price-history"][0], headers=headers, timeout=30)
    body.raise_for_status()
    path.write_bytes(body.content)
    return len(msgspec.json.decode(body.content)["price_history"])


def api_section(workspace: Workspace, plan: LoadPlan, log: Path) -> list[Figure]:
    """Each route of the real server (auth and SQLite metering on, or off with
    `--api-metering off`) next to the bare app."""
    if plan.api_metering == "off":
        env = workspace.env("off")
        headers = {"Authorization": "Bearer unused"}  # same request bytes; nothing reads it
    else:
        env = workspace.env(workspace.sqlite_url)
        headers = {"Authorization": f"Bearer {create_key(env)}"}
    with ExitStack() as stack:
        api = stack.enter_context(_api_server(env, plan, log))
        body_path = workspace.root / "price-history.json"
        points = _price_body(api, headers, body_path)
        port = free_port()
        command = bare_command(port, plan.workers, plan.server)
        bare_env = {**env, PRICE_BODY_ENV: str(body_path)}
        bare = stack.enter_context(serving(command, bare_env, port, "/small", log))
        targets = [
            Target("bare /small", bare, ["/small"], headers),
            *(Target(route, api, ROUTES[route], headers) for route in CHEAP),
            Target("get-price-history", api, ROUTES["get-price-history"], headers),
            Target("bare /prices", bare, ["/prices"], headers),
            *(Target(route, api, ROUTES[route], headers) for route in FAMILIES),
        ]
        results = measure(targets, plan)
    figures: list[Figure] = []
    for route in CHEAP:
        figures += _route_figures(route, results[route], results["bare /small"], "bare small JSON")
    history = f"get-price-history ({points} points)"
    anchor = f"bare {points} points as bytes"
    figures += _route_figures(
        history, results["get-price-history"], results["bare /prices"], anchor
    )
    for route in FAMILIES:
        figures += _route_figures(
            route, results[route], results["bare /small"], "bare small JSON", rate_goal=None
        )
    return figures


def redis_cleanup(prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        names = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if names:
            client.delete(*names)
    finally:
        client.close()


def _redis_up() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_timeout=1).ping())
    except redis.RedisError:
        return False


CUSTOMER_PLANS = ("sandbox", "quant", "pro")
"""The plans customers hold: every one has a budget, a rate and a connection limit."""
KEYS_PER_PLAN = 1_000
"""Customer keys of each plan per store. A load rotates over all of them (round robin), so each
key sees 1/3,000 of it: at 15,000 req/s, one round of both connection counts (20 s of load on a
store) is about 100 requests a key, against the limit of 300 in any 60 s and a sandbox key's
1,000 tokens a day. No request of the section is refused by a limit."""
INTERNAL_CONNECTIONS = 10
"""The operator's `internal` key (one `record` step after the route) is loaded at 10 connections
on one worker only: its figure stays the operator's, the customers' figures are the section's."""
CUSTOMERS = "customer keys"
SQLITE_GOAL = (1, 50)
"""(workers, connections) of the SQLite goals: a rate of at least 0.6 of metering off and a p99
under 10 ms."""
SQLITE_RATE_GOAL = Goal("ratio", ">=", 0.6)
MORE_WORKERS_GOAL = Goal("ratio", ">", 1.0)
REDIS_GOAL = Goal("ratio", ">=", 0.85)
"""Redis customers against the Redis ceiling app at the same load (one round trip per group, no
work in the script): no Redis store can beat that ceiling on this machine."""


async def create_keys(url: str, plans: Sequence[str], count: int) -> list[str]:
    """`count` new keys of each plan in the store at `url`, interleaved (sandbox, quant, pro,
    sandbox, ...): a rotation over them loads every plan alike. Made through the store API in one
    process (`mi keys create` starts a process a key)."""
    store = open_store(url, load_config())
    try:
        return [await store.create_key(plan, "bench") for _ in range(count) for plan in plans]
    finally:
        await store.close()


def keys_file(path: Path, keys: list[str]) -> Path:
    path.write_text("\n".join(keys) + "\n")
    return path


def _name(store: str, keys: str, workers: int, connections: int) -> str:
    return f"list-symbols on {store}, {keys}, {workers} worker(s), {connections} connections"


def _metering_targets(
    workspace: Workspace,
    plan: LoadPlan,
    workers: int,
    stack: ExitStack,
    log: Path,
    prefix: str,
    remote: str | None,
) -> list[Target]:
    """Start the phase's servers (metering off, SQLite, Redis here and on another host, the
    ceilings) with its keys."""
    route = ROUTES["list-symbols"]
    sqlite_url = f"sqlite://{(workspace.root / f'metering-{workers}.sqlite3').resolve()}"
    urls = {"sqlite": sqlite_url}
    if _redis_up():
        urls["redis"] = f"{REDIS_URL}?prefix={prefix}{workers}:"
    if remote is not None:
        urls[REMOTE_REDIS] = f"{remote}?prefix={prefix}{workers}:"
    customers: dict[str, Path] = {}
    internal: dict[str, dict[str, str]] = {}
    for store, url in urls.items():
        keys = asyncio.run(create_keys(url, CUSTOMER_PLANS, KEYS_PER_PLAN))
        customers[store] = keys_file(workspace.root / f"keys-{store}-{workers}", keys)
        (key,) = asyncio.run(create_keys(url, ["internal"], 1))
        internal[store] = {"Authorization": f"Bearer {key}"}
    served = replace(plan, workers=workers)
    servers = {
        store: stack.enter_context(_api_server(workspace.env(url), served, log))
        for store, url in {"off": "off", **urls}.items()
    }
    ceilings = {"sqlite": CEILING, "redis": REDIS_CEILING}
    for store, url in urls.items():
        if store not in ceilings:
            continue
        port = free_port()
        command = waiting_store_command(port, workers, plan.server)
        env = workspace.env(url)
        servers[ceilings[store]] = stack.enter_context(
            serving(command, env, port, "/api/v1/ping", log)
        )
    targets = []
    for connections in plan.metering_connections:
        # Metering off is sent the same requests (the customers' keys, unread).
        name = _name("metering off", CUSTOMERS, workers, connections)
        targets.append(Target(name, servers["off"], route, {}, customers["sqlite"], connections))
        for store in urls:
            name = _name(store, CUSTOMERS, workers, connections)
            targets.append(Target(name, servers[store], route, {}, customers[store], connections))
        name = _name(CEILING, CUSTOMERS, workers, connections)
        targets.append(Target(name, servers[CEILING], route, {}, customers["sqlite"], connections))
        if "redis" in urls:  # the internal key's (the goal's) and the customers' path
            redis_ceiling = servers[REDIS_CEILING]
            name = _name(REDIS_CEILING, "internal key", workers, connections)
            targets.append(Target(name, redis_ceiling, route, internal["redis"], None, connections))
            name = _name(REDIS_CEILING, CUSTOMERS, workers, connections)
            rotated = customers["redis"]
            targets.append(Target(name, redis_ceiling, route, {}, rotated, connections))
    if workers == 1 and INTERNAL_CONNECTIONS in plan.metering_connections:
        for store in [*urls, CEILING]:
            server = servers[store]
            headers = internal["sqlite" if store == CEILING else store]
            name = _name(store, "internal key", workers, INTERNAL_CONNECTIONS)
            targets.append(Target(name, server, route, headers, None, INTERNAL_CONNECTIONS))
    return targets


def metering_section(workspace: Workspace, plan: LoadPlan, log: Path) -> list[Figure]:
    """list-symbols metered on SQLite and on Redis vs the same app with metering off, loaded with
    many customer keys (sandbox, quant, pro, rotated) at each connection count and worker count,
    and with the operator's `internal` key at 10 connections on one worker."""
    prefix = f"mi:bench:{uuid.uuid4().hex[:8]}:"
    why_not = remote_redis.unavailable()
    if why_not is not None:
        print(f"  no {REMOTE_REDIS} rows: {why_not}", flush=True)
    rtt_ms = None
    try:
        with ExitStack() as stack:
            remote = None if why_not else stack.enter_context(remote_redis.remote_redis())
            if remote is not None:
                rtt_ms = remote_redis.measured_rtt_ms(remote, 1000)
                print(f"  {REMOTE_REDIS}: PING round trip {rtt_ms:.3f} ms (idle)", flush=True)
            by_workers = [
                _metering_targets(workspace, plan, workers, stack, log, prefix, remote)
                for workers in plan.metering_workers
            ]
            # Every worker count's servers run side by side and each target is loaded next to
            # the same target on the other worker counts, so that one worker and two are compared
            # in the same minutes of the machine (whose other load moves their rates by a third).
            targets = [t for same in zip_longest(*by_workers) for t in same if t is not None]
            results = measure(targets, plan)
    finally:
        if _redis_up():
            redis_cleanup(prefix)
    return _metering_figures(results, plan, rtt_ms)


def _figure(
    results: dict[str, list[LoadResult]],
    name: str,
    anchor: str,
    anchor_name: str,
    goal: Goal | None = None,
    p99_goal: Goal | None = None,
    **more: Any,
) -> list[Figure]:
    """A rate figure (and a p99 one when `p99_goal` is given), or none when a server is missing;
    `more` goes into its details."""
    ours, theirs = results.get(name), results.get(anchor)
    if not ours or not theirs:
        return []
    details = {"project_rounds": _details(ours), "anchor_rounds": _details(theirs), **more}
    figures = [
        Figure(
            "metering",
            f"{name} rate",
            "req/s",
            _rate(best(ours)),
            _rate(best(theirs)),
            anchor_name,
            goal,
            details,
        )
    ]
    if p99_goal is not None:
        figures.append(
            Figure(
                "metering",
                f"{name} p99",
                "ms",
                best_p99(ours),
                best_p99(theirs),
                anchor_name,
                p99_goal,
            )
        )
    return figures


def _metering_figures(
    results: dict[str, list[LoadResult]], plan: LoadPlan, rtt_ms: float | None
) -> list[Figure]:
    figures: list[Figure] = []
    for workers in plan.metering_workers:
        for connections in plan.metering_connections:

            def at(store: str, keys: str = CUSTOMERS) -> str:
                return _name(store, keys, workers, connections)  # noqa: B023

            off, goal = at("metering off"), (workers, connections) == SQLITE_GOAL
            figures += _figure(
                results,
                at("sqlite"),
                off,
                "metering off",
                SQLITE_RATE_GOAL if goal else None,
                P99_GOAL if goal else None,
            )
            if workers > 1 and 1 in plan.metering_workers:
                figures += _figure(
                    results,
                    at("sqlite"),
                    _name("sqlite", CUSTOMERS, 1, connections),
                    "one worker",
                    MORE_WORKERS_GOAL,
                )
            figures += _figure(
                results, at("redis"), at(REDIS_CEILING, "internal key"), "Redis ceiling", REDIS_GOAL
            )
            figures += _figure(
                results, at("redis"), at(REDIS_CEILING), "Redis ceiling, customer keys"
            )
            figures += _figure(results, at("redis"), off, "metering off")
            figures += _figure(results, at(REMOTE_REDIS), off, "metering off", rtt_ms=rtt_ms)
            figures += _figure(results, at(CEILING), off, "metering off")
            figures += _figure(results, at(REDIS_CEILING, "internal key"), off, "metering off")
            figures += _figure(results, at(REDIS_CEILING), off, "metering off")
    off = _name("metering off", CUSTOMERS, 1, INTERNAL_CONNECTIONS)
    for store in ("sqlite", "redis", REMOTE_REDIS, CEILING):
        figures += _figure(
            results, _name(store, "internal key", 1, INTERNAL_CONNECTIONS), off, "metering off"
        )
    return figures
