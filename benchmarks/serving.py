"""The api and metering sections: the real server vs a bare Litestar app, metering on vs off."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import msgspec

from api.metering.config import DEFAULT_CONFIG_PATH
from benchmarks import threads
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
    """One thing to load: a server, the paths to pick from at random, the headers to send."""

    name: str
    server: Server
    paths: list[str]
    headers: dict[str, str]


def _once(target: Target, plan: LoadPlan) -> LoadResult:
    base, paths, headers = target.server.base, target.paths, target.headers
    if plan.warmup_seconds > 0:  # warms every worker's caches and connections
        run_load(base, paths, headers, plan.connections, plan.warmup_seconds, plan.tool)
    pid = target.server.process.pid
    before = threads.thread_times(pid) if threads.available() else None
    result = run_load(base, paths, headers, plan.connections, plan.seconds, plan.tool)
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
        _check_paths(target.server, target.paths, target.headers)
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
        Figure("api", f"{route} rate", "req/s", _rate(top), _rate(anchor), anchor_name, rate_goal, details),
        Figure("api", f"{route} p99", "ms", best_p99(ours), best_p99(bare), anchor_name, P99_GOAL),
    ]  # fmt: skip


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


BUDGETED_PLAN = """
[plans.budgeted]
limited = false
monthly_budget = 1_000_000_000_000
daily_cap = 1_000_000_000_000
"""
"""A plan with a budget (never reached) and no rate or connection limit: its requests take the
two-step path (admit before the route, settle after it) without being throttled at 300 a minute."""
TWO_STEPS = "admit + settle"


def with_budgeted_plan(workspace: Workspace, env: dict[str, str]) -> dict[str, str]:
    path = workspace.root / "metering-budgeted.toml"
    path.write_text(DEFAULT_CONFIG_PATH.read_text() + BUDGETED_PLAN)
    return {**env, "MI_METERING_CONFIG": str(path)}


def metering_section(workspace: Workspace, plan: LoadPlan, log: Path) -> list[Figure]:
    """list-symbols metered on SQLite and on Redis vs the same app with metering off.

    Each store is loaded with an `internal` key (no limits: one record step after the route) and
    with a `budgeted` one (the admit + settle path every plan with a limit takes).
    """
    route = "list-symbols"
    prefix = f"mi:bench:{uuid.uuid4().hex[:8]}:"
    urls = {"off": "off", "sqlite": workspace.sqlite_url}
    if _redis_up():
        urls["redis"] = f"{REDIS_URL}?prefix={prefix}"
    try:
        with ExitStack() as stack:
            targets = []
            for name, url in urls.items():
                env = with_budgeted_plan(workspace, workspace.env(url))
                headers = {} if url == "off" else {"Authorization": f"Bearer {create_key(env)}"}
                server = stack.enter_context(_api_server(env, plan, log))
                targets.append(Target(f"{route} metering {name}", server, ROUTES[route], headers))
                if url != "off":
                    budgeted = {"Authorization": f"Bearer {create_key(env, 'budgeted')}"}
                    name = f"{route} metering {name}, {TWO_STEPS}"
                    targets.append(Target(name, server, ROUTES[route], budgeted))
            env = workspace.env(workspace.sqlite_url)
            headers = {"Authorization": f"Bearer {create_key(env)}"}
            port = free_port()
            command = waiting_store_command(port, plan.workers, plan.server)
            waiting = stack.enter_context(serving(command, env, port, "/api/v1/ping", log))
            targets.append(Target(f"{route} metering {CEILING}", waiting, ROUTES[route], headers))
            if "redis" in urls:
                env = workspace.env(urls["redis"])
                headers = {"Authorization": f"Bearer {create_key(env)}"}
                port = free_port()
                command = waiting_store_command(port, plan.workers, plan.server)
                trip = stack.enter_context(serving(command, env, port, "/api/v1/ping", log))
                name = f"{route} metering {REDIS_CEILING}"
                targets.append(Target(name, trip, ROUTES[route], headers))
            results = measure(targets, plan)
    finally:
        if "redis" in urls:
            redis_cleanup(prefix)
    off = results[f"{route} metering off"]
    figures = []
    stores = ("sqlite", f"sqlite, {TWO_STEPS}", "redis", f"redis, {TWO_STEPS}")
    for name in (*stores, CEILING, REDIS_CEILING):
        ours = results.get(f"{route} metering {name}")
        details: dict[str, Any] = {
            "project_rounds": _details(ours) if ours else "redis unreachable"
        }
        details["anchor_rounds"] = _details(off)
        rate = _rate(best(ours)) if ours else None
        figures.append(
            Figure("metering", f"{route} on {name} rate", "req/s", rate, _rate(best(off)),
                   "metering off", RATE_GOAL, details)
        )  # fmt: skip
    return figures
