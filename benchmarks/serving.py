"""The api and metering sections: the real server vs a bare Litestar app, metering on vs off."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec

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
)

TA = "/api/v2/crypto/technical-analysis"
ROUTES: dict[str, list[str]] = {
    "list-symbols": ["/api/v2/crypto/instruments/list-symbols"],
    "get-current-action": [
        f"/api/v2/crypto/trades/get-current-action/BTC/{s}" for s in ("aggressive", "conservative")
    ],
    "get-indicators": [f"{TA}/get-indicators/BTC?period={p}" for p in range(2, 366)],
    "get-price-history": [f"{TA}/get-price-history/BTC"],
}
"""Each route's paths; a load run requests a random one per request (every indicator period)."""

CHEAP = ("list-symbols", "get-current-action", "get-indicators")
RATE_GOAL = Goal("ratio", ">=", 0.70)
P99_GOAL = Goal("project", "<", 10.0)
REDIS_URL = "redis://127.0.0.1:6379/15"


@dataclass(frozen=True)
class LoadPlan:
    """How every route is loaded: same tool, connections and duration for project and anchor."""

    connections: int = 10
    seconds: float = 8.0
    warmup_seconds: float = 2.0
    workers: int = 1
    server: str = "granian"
    tool: str = "auto"


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


def _measure(
    server: Server, paths: list[str], headers: dict[str, str], plan: LoadPlan
) -> LoadResult:
    _check_paths(server, paths, headers)
    if plan.warmup_seconds > 0:  # warms every worker's caches and connections
        run_load(server.base, paths, headers, plan.connections, plan.warmup_seconds, plan.tool)
    result = run_load(server.base, paths, headers, plan.connections, plan.seconds, plan.tool)
    print(
        f"    {server.base}{paths[0]}{' (+more)' if len(paths) > 1 else ''}: "
        f"{result.rps:,.0f} req/s, p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms"
        + ("" if result.clean else f", NOT CLEAN: {result.non2xx} non-2xx"),
        flush=True,
    )
    return result


def _rate(result: LoadResult) -> float | None:
    return result.rps if result.clean else None


@contextmanager
def _api_server(env: Mapping[str, str], plan: LoadPlan, log: Path) -> Iterator[Server]:
    port = free_port()
    command = mi_serve_command(port, plan.workers, plan.server)
    with serving(command, env, port, "/api/v1/ping", log) as server:
        yield server


def _route_figures(
    route: str, ours: LoadResult, bare: LoadResult, anchor_name: str
) -> list[Figure]:
    details = {"project": ours.as_json(), "anchor": bare.as_json()}
    return [
        Figure(
            "api",
            f"{route} rate",
            "req/s",
            _rate(ours),
            _rate(bare),
            anchor_name,
            RATE_GOAL,
            details,
        ),
        Figure("api", f"{route} p99", "ms", ours.p99_ms, bare.p99_ms, anchor_name, P99_GOAL),
    ]


def api_section(workspace: Workspace, plan: LoadPlan, log: Path) -> list[Figure]:
    """Each route of the real server (auth and SQLite metering on) next to the bare app."""
    env = workspace.env(workspace.sqlite_url)
    headers = {"Authorization": f"Bearer {create_key(env)}"}
    figures: list[Figure] = []
    with ExitStack() as stack:
        api = stack.enter_context(_api_server(env, plan, log))
        body = httpx.get(api.base + ROUTES["get-price-history"][0], headers=headers, timeout=30)
        body.raise_for_status()
        body_path = workspace.root / "price-history.json"
        body_path.write_bytes(body.content)
        points = len(msgspec.json.decode(body.content)["price_history"])
        port = free_port()
        bare_env = {**env, PRICE_BODY_ENV: str(body_path)}
        bare = stack.enter_context(
            serving(bare_command(port, plan.workers, plan.server), bare_env, port, "/small", log)
        )
        small = _measure(bare, ["/small"], headers, plan)
        for route in CHEAP:
            ours = _measure(api, ROUTES[route], headers, plan)
            figures += _route_figures(route, ours, small, "bare small JSON")
        ours = _measure(api, ROUTES["get-price-history"], headers, plan)
        theirs = _measure(bare, ["/prices"], headers, plan)
        anchor = f"bare {points} points as bytes"
        figures += _route_figures(f"get-price-history ({points} points)", ours, theirs, anchor)
    return figures


def _redis_cleanup(prefix: str) -> None:
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


def metering_section(workspace: Workspace, plan: LoadPlan, log: Path) -> list[Figure]:
    """list-symbols metered on SQLite and on Redis vs the same app with metering off."""
    route = "list-symbols"
    paths = ROUTES[route]
    prefix = f"mi:bench:{uuid.uuid4().hex[:8]}:"
    backends = {"sqlite": workspace.sqlite_url}
    if _redis_up():
        backends["redis"] = f"{REDIS_URL}?prefix={prefix}"
    results: dict[str, LoadResult] = {}
    try:
        with _api_server(workspace.env("off"), plan, log) as off:
            results["off"] = _measure(off, paths, {}, plan)
        for name, url in backends.items():
            env = workspace.env(url)
            headers = {"Authorization": f"Bearer {create_key(env)}"}
            with _api_server(env, plan, log) as server:
                results[name] = _measure(server, paths, headers, plan)
    finally:
        if "redis" in backends:
            _redis_cleanup(prefix)
    baseline = results["off"]
    figures = [
        Figure(
            "metering",
            f"{route} on {name} rate",
            "req/s",
            _rate(results[name]) if name in results else None,
            _rate(baseline),
            "metering off",
            RATE_GOAL,
            {"project": results[name].as_json() if name in results else "redis unreachable"},
        )
        for name in ("sqlite", "redis")
    ]
    return figures


def run_info(plan: LoadPlan) -> dict[str, Any]:
    return {
        "load_tool": plan.tool,
        "connections": plan.connections,
        "seconds_per_route": plan.seconds,
        "workers": plan.workers,
        "server": plan.server,
        "loadavg_before": os.getloadavg(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
