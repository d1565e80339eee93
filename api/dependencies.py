"""Request-scoped dependencies: the pieces a handler asks for by parameter name."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from litestar.di import Provide

from api.warehouse import WarehouseReader, WarehouseSnapshot, WarehouseUnavailable

T = TypeVar("T")


def constant(value: T) -> Provide:
    """Provide one long-lived object (settings, the status checks) without a thread hop."""

    def provide() -> T:
        return value

    return Provide(provide, use_cache=True, sync_to_thread=False)


def snapshot_provider(reader: WarehouseReader) -> Callable[[], WarehouseSnapshot]:
    """The `snapshot` dependency: taken once per request, so a handler reads one data version."""

    def provide_snapshot() -> WarehouseSnapshot:
        snapshot = reader.current()
        if snapshot is None:
            raise WarehouseUnavailable(
                "the warehouse has not been materialized yet", retry_after=30
            )
        return snapshot

    return provide_snapshot
