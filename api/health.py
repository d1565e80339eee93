"""Status checks: one `HealthCheck` per backing datastore, combined into `SystemStatus`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

import anyio
import anyio.to_thread

from api.schemas import Check, CheckStatus, SystemStatus
from api.warehouse import WarehouseReader

logger = logging.getLogger(__name__)

_RANK: dict[CheckStatus, int] = {"ok": 0, "degraded": 1, "error": 2}


class HealthCheck(Protocol):
    """A backing datastore's check; `name` is its key in `SystemStatus.checks`.

    A `critical` store failing makes the whole service `error`; a non-critical one at worst makes it
    `degraded`. `run` must not raise for a failing store (answer `error`), and stays short: the
    status route gives every check the same timeout and counts a late one as `error`.
    """

    @property
    def name(self) -> str: ...

    @property
    def critical(self) -> bool: ...

    async def run(self) -> Check: ...


@dataclass(frozen=True)
class WarehouseCheck:
    """Can the current manifest's Parquet files be read? Latency of that read, in ms."""

    reader: WarehouseReader
    name: str = "warehouse"
    critical: bool = True

    async def run(self) -> Check:
        started = time.perf_counter()
        try:
            await anyio.to_thread.run_sync(self.reader.probe)
        except Exception as exc:
            logger.warning("warehouse check failed: %s", exc)
            return Check(status="error", latency_ms=None)
        return Check(status="ok", latency_ms=round((time.perf_counter() - started) * 1000, 3))


@dataclass(frozen=True)
class MaterializationCheck:
    """Is the newest materialization (the serving manifest's `updated_at`) recent enough?"""

    reader: WarehouseReader
    max_age: timedelta
    name: str = "materialization"
    critical: bool = False

    async def run(self) -> Check:
        snapshot = self.reader.current()
        if snapshot is None:
            return Check(status="degraded", latency_ms=None)
        updated = _parse_instant(snapshot.manifest.updated_at)
        fresh = updated is not None and datetime.now(UTC) - updated <= self.max_age
        return Check(status="ok" if fresh else "degraded", latency_ms=None)


@dataclass(frozen=True)
class PingCheck:
    """A store with an async `ping()` that returns its round-trip latency in ms and raises when down.

    Plugging a store into `/api/v1/status` is one line: `PingCheck("metering", store.ping)`.
    """

    name: str
    ping: Callable[[], Awaitable[float]]
    critical: bool = True

    async def run(self) -> Check:
        try:
            latency_ms = await self.ping()
        except Exception as exc:
            logger.warning("%s check failed: %s", self.name, exc)
            return Check(status="error", latency_ms=None)
        return Check(status="ok", latency_ms=round(latency_ms, 3))


def _parse_instant(text: str) -> datetime | None:
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        return None
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)


STATUS_MAX_AGE_SECONDS = 5.0
"""decisions.md, Operations: `/api/v1/status` answers from a result at most this old."""


@dataclass
class Health:
    """Every registered check, run concurrently with one timeout, combined into one status.

    The public status route answers from a result at most `max_age_seconds` old, computed by one
    caller while the others wait for it: its cost does not grow with calls.
    """

    checks: Sequence[HealthCheck]
    version: str
    timeout_seconds: float
    max_age_seconds: float = STATUS_MAX_AGE_SECONDS
    _latest: tuple[float, SystemStatus] | None = field(default=None, init=False, repr=False)
    _running: asyncio.Future[SystemStatus] | None = field(default=None, init=False, repr=False)

    async def status(self) -> SystemStatus:
        latest = self._latest
        if latest is not None and time.monotonic() - latest[0] <= self.max_age_seconds:
            return latest[1]
        running = self._running
        if running is None:
            running = self._running = asyncio.ensure_future(self._fresh())
            running.add_done_callback(self._finished)
        return await asyncio.shield(running)

    def _finished(self, done: asyncio.Future[SystemStatus]) -> None:
        self._running = None
        if not done.cancelled() and done.exception() is None:
            self._latest = (time.monotonic(), done.result())

    async def _fresh(self) -> SystemStatus:
        results: dict[str, Check] = {}
        async with anyio.create_task_group() as tasks:
            for check in self.checks:
                tasks.start_soon(self._run_one, check, results)
        ordered = {c.name: results[c.name] for c in self.checks}
        return SystemStatus(
            status=overall(self.checks, ordered),
            version=self.version,
            time=datetime.now(UTC),
            checks=ordered,
        )

    async def _run_one(self, check: HealthCheck, results: dict[str, Check]) -> None:
        result = Check(status="error", latency_ms=None)
        with anyio.move_on_after(self.timeout_seconds):
            try:
                result = await check.run()
            except Exception:
                logger.exception("status check %s raised", check.name)
        results[check.name] = result


def overall(checks: Sequence[HealthCheck], results: dict[str, Check]) -> CheckStatus:
    """The worst check decides; a non-critical check's failure only degrades."""
    worst: CheckStatus = "ok"
    for check in checks:
        status = results[check.name].status
        if status == "error" and not check.critical:
            status = "degraded"
        if _RANK[status] > _RANK[worst]:
            worst = status
    return worst
