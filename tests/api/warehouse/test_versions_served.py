"""A served worker across many data versions: its memory stays flat (warehouse on object storage).

Rule: after 100 version swaps in a row, each rewriting a table, a worker's RSS is within 10% of
its RSS after the first ten; every version is served once its manifest lands, and the worker's
disk cache stays within its bound.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import httpx
import polars as pl
import pytest

from pipelines.catalog import DAILY_PRICES, INSTRUMENTS, S3Location
from pipelines.warehouse.object_store import ObjectWarehouse
from tests.api.metering.conftest import mi_serve
from tests.s3 import CREDENTIALS, moto_endpoint, new_bucket
from tests.served import clean_env

SYMBOLS = [f"C{i:03d}" for i in range(40)]
DAYS = 1000
SWAPS = 100
VERSION = re.compile(r'"v(\d+)-')


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_endpoint() as url:
        yield url


def instruments() -> pl.DataFrame:
    return INSTRUMENTS.conform(
        pl.DataFrame(
            {
                "market": "crypto",
                "symbol": SYMBOLS,
                "name": SYMBOLS,
                "logo": "",
                "source": "test",
            }
        )
    )


def prices(version: int) -> pl.DataFrame:
    """Every symbol's bars, their closes shifted by `version` so each rewrite differs."""
    days = [date(2023, 1, 1) + timedelta(days=i) for i in range(DAYS)]
    stamps = [int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() * 1000) for d in days]
    closes = [100.0 + version + i % 17 for i in range(DAYS)]
    frame = pl.DataFrame({"date": days, "timestamp": stamps, "close": closes})
    bars = pl.concat(frame.with_columns(symbol=pl.lit(s)) for s in SYMBOLS).with_columns(
        market=pl.lit("crypto"),
        open=pl.col("close"),
        high=pl.col("close"),
        low=pl.col("close"),
        volume=pl.lit(1.0),
        source=pl.lit("test"),
    )
    return DAILY_PRICES.conform(bars)


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def served_version(client: httpx.Client, path: str) -> int:
    reply = client.get(path)
    assert reply.status_code == 200, reply.text
    found = VERSION.match(reply.headers["etag"])
    assert found is not None
    return int(found.group(1))


def test_a_worker_s_memory_stays_flat_across_100_version_swaps(
    endpoint: str, tmp_path: Path
) -> None:
    location = S3Location.parse(f"s3://{new_bucket(endpoint)}/wh", endpoint_url=endpoint)
    store = ObjectWarehouse(location)
    store.write(INSTRUMENTS, "crypto", instruments())
    store.write(DAILY_PRICES, "crypto", prices(0))
    env = clean_env(
        tmp_path,
        **CREDENTIALS,
        MI_WAREHOUSE_URL=location.url,
        MI_S3_ENDPOINT_URL=endpoint,
        MI_MANIFEST_POLL_SECONDS="0.02",
        MI_METERING_URL="off",
        MI_WAREHOUSE_CACHE_MB="2",
    )
    history = "/api/v2/crypto/technical-analysis/get-price-history/{}?limit=500"
    with mi_serve(env, tmp_path / "serve.log", workers=1) as server:
        [worker] = server.workers
        rss: dict[int, int] = {}
        with httpx.Client(base_url=server.base, timeout=10) as client:
            for swap in range(1, SWAPS + 1):
                version = store.write(DAILY_PRICES, "crypto", prices(swap)).version
                deadline = time.monotonic() + 10
                while served_version(client, "/api/v2/crypto/instruments/list-symbols") != version:
                    assert time.monotonic() < deadline, f"version {version} never served"
                    time.sleep(0.01)
                for symbol in SYMBOLS[:10]:  # fill the version's caches as traffic would
                    body = client.get(history.format(symbol)).json()
                    assert body["price_history"][-1]["price"] == 100.0 + swap + (DAYS - 1) % 17
                rss[swap] = rss_bytes(worker)
    assert rss[SWAPS] <= rss[10] * 1.10, f"RSS {rss[10]} after 10 swaps, {rss[SWAPS]} after {SWAPS}"
    cached = list((tmp_path / "cache" / "warehouse" / "objects").rglob("*.parquet"))
    assert sum(p.stat().st_size for p in cached) <= 2 << 20  # old versions' files were evicted
