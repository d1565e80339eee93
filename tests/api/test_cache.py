"""Per-version caches: an index is computed once per data version, ideally before it is served.

Rules: concurrent first misses of a memoized value wait for one computation; a failed computation
is not kept (every waiter sees the failure, the next call computes again); the reader prepares a
new snapshot (the instrument index) in its own thread before swapping it in, so the version's
first requests find it built.
"""

from __future__ import annotations

import asyncio

import polars as pl
import pytest

from api.cache import Encoded, VersionCache, cache_for
from api.errors import DependencyUnavailable
from api.routes.common import INSTRUMENT_INDEX, instrument_index, prepare_snapshot
from api.settings import ApiSettings
from api.warehouse import DuckDBWarehouseReader, WarehouseSnapshot
from pipelines.catalog import DAILY_PRICES, INSTRUMENTS
from pipelines.warehouse.store import Warehouse
from tests.api.conftest import price_frame


def test_concurrent_first_misses_compute_once() -> None:
    cache = VersionCache()
    calls = 0

    async def compute() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        return 42

    async def many() -> list[int]:
        return await asyncio.gather(*(cache.memo("k", compute) for _ in range(20)))

    assert asyncio.run(many()) == [42] * 20
    assert calls == 1
    assert asyncio.run(cache.memo("k", compute)) == 42
    assert calls == 1


def test_a_failed_computation_reaches_every_waiter_and_is_not_kept() -> None:
    cache = VersionCache()
    attempts = 0

    async def flaky() -> str:
        nonlocal attempts
        attempts += 1
        await asyncio.sleep(0.01)
        if attempts == 1:
            raise RuntimeError("first attempt fails")
        return "ok"

    async def both() -> list[object]:
        return await asyncio.gather(
            cache.memo("k", flaky), cache.memo("k", flaky), return_exceptions=True
        )

    outcomes = asyncio.run(both())
    assert [type(o) for o in outcomes] == [RuntimeError, RuntimeError]
    assert asyncio.run(cache.memo("k", flaky)) == "ok"
    assert attempts == 2


def instruments() -> pl.DataFrame:
    return INSTRUMENTS.conform(
        pl.DataFrame(
            {
                "market": ["crypto", "crypto", "forex"],
                "symbol": ["btc", "ETH", "EURUSD"],
                "name": ["Bitcoin", "Ethereum", "Euro / US Dollar"],
                "logo": "",
                "source": "test",
            }
        )
    )


def test_the_reader_prepares_the_instrument_index_before_the_version_is_served(
    settings: ApiSettings,
) -> None:
    warehouse = Warehouse(settings.data_dir / "warehouse")
    warehouse.write(INSTRUMENTS, "crypto", instruments().filter(pl.col("market") == "crypto"))
    warehouse.write(INSTRUMENTS, "forex", instruments().filter(pl.col("market") == "forex"))
    seen: list[WarehouseSnapshot | None] = []
    reader: DuckDBWarehouseReader

    def prepare(snapshot: WarehouseSnapshot) -> None:
        seen.append(reader.current())  # not yet swapped in
        prepare_snapshot(snapshot)

    reader = DuckDBWarehouseReader(settings.data_dir / "warehouse", prepare=prepare)
    reader.refresh()
    snapshot = reader.current()
    assert snapshot is not None
    assert seen == [None]

    async def never() -> object:
        raise AssertionError("the index should have been prepared")

    prepared = asyncio.run(cache_for(snapshot).memo(INSTRUMENT_INDEX, never))
    assert sorted(prepared["crypto"]) == ["BTC", "ETH"]  # type: ignore[index]
    assert asyncio.run(instrument_index(snapshot))["forex"]["EURUSD"].name == "Euro / US Dollar"
    reader.close()


def test_a_version_without_instruments_is_served_and_its_routes_say_so(
    settings: ApiSettings,
) -> None:
    Warehouse(settings.data_dir / "warehouse").write(DAILY_PRICES, "crypto", price_frame([1.0]))
    reader = DuckDBWarehouseReader(settings.data_dir / "warehouse", prepare=prepare_snapshot)
    reader.refresh()
    snapshot = reader.current()
    assert snapshot is not None
    with pytest.raises(DependencyUnavailable, match="instruments data is not available yet"):
        asyncio.run(instrument_index(snapshot))
    reader.close()


def test_encoded_responses_are_bounded_in_bytes_least_recently_used_first() -> None:
    """decisions.md via issue 48: a version's cache is bounded in bytes (a count let 4,096 bodies
    of half a megabyte, or keys of 64 KB, take a worker's memory)."""
    cache = VersionCache(response_bytes=10_000, hit_bytes=1_000)
    body = b"x" * 3_000
    for n in range(5):
        cache.put(("route", n), Encoded(body, f'"v1-{n}"'))
        cache.get(("route", 0))  # kept in use: the others are dropped first
    assert cache.held_bytes <= 10_000 + 1_000
    assert cache.get(("route", 0)) is not None
    assert cache.get(("route", 1)) is None
    assert cache.get(("route", 4)) is not None
    cache.put(("huge",), Encoded(b"y" * 20_000, '"v1-h"'))  # larger than the whole cache
    assert cache.get(("huge",)) is None


def test_raw_requests_are_remembered_within_their_bytes_and_long_ones_never() -> None:
    cache = VersionCache(response_bytes=100_000, hit_bytes=2_000)
    cache.put(("k",), Encoded(b"{}", '"v1-k"'))
    long = ("handler", "/api/v2/x", b"q" * 5_000)
    cache.remember(long, ("k",))
    assert cache.hit(long) is None
    for n in range(100):
        cache.remember(("handler", f"/p/{n}", b""), ("k",))
    assert cache.held_bytes <= 100_000 + 2_000
    assert cache.hit(("handler", "/p/99", b"")) is not None
