"""Fixtures for the API tests: settings over tmp_path, a published warehouse, and a test client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from litestar import Litestar
from litestar.handlers import HTTPRouteHandler
from litestar.testing import TestClient

from api.app import create_app
from api.settings import ApiSettings
from pipelines.catalog import DAILY_PRICES, Manifest, PartitionFile, write_manifest

Publish = Callable[..., Manifest]
"""publish(version, closes=[...], *, updated_at=None, corrupt=False) -> the manifest it wrote."""


def price_frame(closes: list[float]) -> pl.DataFrame:
    """Daily crypto bars of BTC from 2024-01-01, one per close, in the catalog schema."""
    days = [date(2024, 1, 1) + timedelta(days=i) for i in range(len(closes))]
    return DAILY_PRICES.conform(
        pl.DataFrame(
            {
                "market": "crypto",
                "symbol": "BTC",
                "date": days,
                "timestamp": [
                    int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() * 1000)
                    for d in days
                ],
                "open": closes,
                "high": closes,
                "low": closes,
                "close": closes,
                "volume": [1.0] * len(closes),
                "source": "test",
            }
        )
    )


@pytest.fixture
def settings(tmp_path: Path) -> ApiSettings:
    """Settings over an empty data dir in tmp_path, polling the manifest every 50 ms."""
    return ApiSettings(data_dir=tmp_path / "data", manifest_poll_seconds=0.05)


@pytest.fixture
def publish(settings: ApiSettings) -> Publish:
    """Write a new daily_prices/crypto file and a manifest naming it, as the pipeline does."""

    def write(
        version: int,
        closes: list[float],
        *,
        updated_at: datetime | None = None,
        corrupt: bool = False,
    ) -> Manifest:
        root = settings.warehouse_dir
        relative = f"daily_prices/crypto-{version}.parquet"
        (root / "daily_prices").mkdir(parents=True, exist_ok=True)
        if corrupt:
            (root / relative).write_bytes(b"PAR1 this is not a parquet file")
        else:
            price_frame(closes).write_parquet(root / relative)
        stamp = (updated_at or datetime.now(UTC)).isoformat()
        entry = PartitionFile(path=relative, rows=len(closes), written_at=stamp)
        manifest = Manifest(
            version=version, updated_at=stamp, tables={"daily_prices": {"crypto": entry}}
        )
        write_manifest(root, manifest)
        return manifest

    return write


@pytest.fixture
def client_for(settings: ApiSettings) -> Iterator[Callable[..., TestClient[Litestar]]]:
    """Start the app (lifespan included) with extra test-only route handlers and settings overrides."""
    clients: list[TestClient[Litestar]] = []

    def start(*handlers: HTTPRouteHandler, **overrides: object) -> TestClient[Litestar]:
        health_checks = overrides.pop("health_checks", ())
        plugins = overrides.pop("plugins", ())
        metering = overrides.pop("metering", None)
        app = create_app(
            replace(settings, **overrides),  # type: ignore[arg-type]
            health_checks=health_checks,  # type: ignore[arg-type]
            plugins=plugins,  # type: ignore[arg-type]
            metering=metering,  # type: ignore[arg-type]
        )
        for handler in handlers:
            app.register(handler)
        client = TestClient(app)
        clients.append(client)
        return client.__enter__()

    yield start
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(client_for: Callable[..., TestClient[Litestar]]) -> TestClient[Litestar]:
    """The app as served, started."""
    return client_for()
