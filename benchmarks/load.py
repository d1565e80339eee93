"""Load a loopback URL at a fixed connection count with wrk (or, without wrk, a small asyncio loader)."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import shutil
import statistics
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

LUA_SCRIPT = Path(__file__).with_name("report.lua")
MARKER = "BENCH_JSON "


@dataclass(frozen=True)
class LoadResult:
    """What one load run measured; latencies in milliseconds."""

    tool: str
    requests: int
    seconds: float
    non2xx: int
    socket_errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    bytes: int
    # CPU µs a request of the server's busiest thread (its event loop) and of all its threads,
    # from /proc over the run (None where /proc is not readable): `benchmarks.threads`.
    busiest_thread_us: float | None = None
    server_cpu_us: float | None = None

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def clean(self) -> bool:
        """Every response a 2xx and no socket error: otherwise the rate means nothing."""
        return self.requests > 0 and self.non2xx == 0 and self.socket_errors == 0

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "rps": self.rps}


def wrk_available() -> bool:
    return shutil.which("wrk") is not None


def parse_wrk(output: str) -> LoadResult:
    """The JSON line report.lua prints at the end of a wrk run."""
    line = next(line for line in output.splitlines() if line.startswith(MARKER))
    data = json.loads(line.removeprefix(MARKER))
    return LoadResult(
        tool="wrk",
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        non2xx=data["non2xx"],
        socket_errors=data["socket_errors"],
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        max_ms=data["max_us"] / 1000,
        bytes=data["bytes"],
    )


def run_wrk(
    base: str,
    paths: Sequence[str],
    headers: dict[str, str],
    connections: int,
    seconds: float,
    threads: int = 1,
    keys: Path | None = None,
) -> LoadResult:
    """wrk with `connections` connections for `seconds`, each request a random one of `paths`
    (with `keys`, a file of API keys: each request's bearer token the file's next key)."""
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s"]
    command += ["--timeout", "5s", "-s", str(LUA_SCRIPT)]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    command += [base, "--", *paths, *([f"keys={keys}"] if keys else [])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30, check=True)
    return parse_wrk(done.stdout)


async def _worker(
    client: httpx.AsyncClient,
    paths: Sequence[str],
    until: float,
    latencies: list[float],
    keys: Iterator[str] | None,
) -> tuple[int, int, int]:
    non2xx = errors = size = 0
    while time.perf_counter() < until:
        start = time.perf_counter()
        bearer = None if keys is None else {"Authorization": f"Bearer {next(keys)}"}
        try:
            response = await client.get(random.choice(paths), headers=bearer)
        except httpx.HTTPError:
            errors += 1
            continue
        latencies.append(time.perf_counter() - start)
        non2xx += not 200 <= response.status_code < 300
        size += len(response.content)
    return non2xx, errors, size


async def _run_python(
    base: str,
    paths: Sequence[str],
    headers: dict[str, str],
    connections: int,
    seconds: float,
    keys: Path | None = None,
) -> LoadResult:
    latencies: list[float] = []
    rotation = itertools.cycle(keys.read_text().split()) if keys else None
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits) as client:
        start = time.perf_counter()
        until = start + seconds
        counts = await asyncio.gather(
            *(_worker(client, paths, until, latencies, rotation) for _ in range(connections))
        )
        elapsed = time.perf_counter() - start
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return LoadResult(
        tool="python",
        requests=len(latencies),
        seconds=elapsed,
        non2xx=sum(c[0] for c in counts),
        socket_errors=sum(c[1] for c in counts),
        p50_ms=cuts[49] * 1000,
        p99_ms=cuts[98] * 1000,
        max_ms=max(latencies, default=0.0) * 1000,
        bytes=sum(c[2] for c in counts),
    )


def run_load(
    base: str,
    paths: Sequence[str],
    headers: dict[str, str],
    connections: int,
    seconds: float,
    tool: str = "auto",
    keys: Path | None = None,
) -> LoadResult:
    """wrk when installed (or `tool="wrk"`); `tool="python"` forces the asyncio/httpx fallback,
    which is itself the bottleneck (it measures far below the server's capacity).

    `keys`: a file of API keys, one a line; each request carries the next one, round robin.
    """
    if tool == "wrk" or (tool == "auto" and wrk_available()):
        return run_wrk(base, paths, headers, connections, seconds, keys=keys)
    return asyncio.run(_run_python(base, paths, headers, connections, seconds, keys))
