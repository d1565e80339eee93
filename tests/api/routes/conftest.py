"""Fixtures for the /api/v2 routes: a warehouse written table by table into tmp_path, and a client."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from api.settings import ApiSettings
from pipelines.catalog import Manifest, PartitionFile, write_manifest

ClientFor = Callable[..., TestClient[Litestar]]
START = date(2024, 1, 1)


def ms(day: date) -> int:
    """00:00 UTC of `day` in unix epoch milliseconds."""
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


def instruments_frame() -> pl.DataFrame:
    rows = [
        ("crypto", "BTC", "Bitcoin"),
        ("crypto", "ETH", "Ethereum"),
        ("crypto", "BCH", "Bitcoin Cash"),
        ("crypto", "WBTC", "Wrapped Bitcoin"),
        ("crypto", "BTCB", "Binance Bitcoin"),
        ("crypto", "SOL", "Solana"),
        ("crypto", "XBT", "Old Bitcoin"),
        ("crypto", "ADA", "Cardano"),
        ("forex", "EURUSD", "Euro / US Dollar"),
        ("forex", "GBPUSD", "Pound / US Dollar"),
        ("stocks", "AAPL", "Apple"),
    ]
    return pl.DataFrame(
        {
            "market": [r[0] for r in rows],
            "symbol": [r[1] for r in rows],
            "name": [r[2] for r in rows],
            "logo": [f"https://logos.example/{r[1].lower()}.png" for r in rows],
            "source": "test",
        }
    )


def prices_frame(
    closes: list[float], *, market: str = "crypto", symbol: str = "BTC"
) -> pl.DataFrame:
    """One bar per calendar day from 2024-01-01; volume = 10 x close."""
    days = [START + timedelta(days=i) for i in range(len(closes))]
    return pl.DataFrame(
        {
            "market": market,
            "symbol": symbol,
            "date": days,
            "timestamp": [ms(d) for d in days],
            "open": closes,
            "high": closes,
            "low": closes,
            "close": closes,
            "volume": [10.0 * c for c in closes],
            "source": "test",
        },
        schema_overrides={"date": pl.Date()},
    )


@dataclass
class Warehouse:
    """Publishes tables as the pipeline does: new Parquet files per market, then a new manifest."""

    root: Path
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    version: int = 0

    def publish(
        self, tables: Mapping[str, pl.DataFrame] | None = None, **more: pl.DataFrame
    ) -> int:
        """Add or replace tables (keeping the others) and publish the next version."""
        self.tables.update(tables or {}, **more)
        self.version += 1
        entries: dict[str, dict[str, PartitionFile]] = {}
        stamp = datetime.now(UTC).isoformat()
        for name, frame in self.tables.items():
            (self.root / name).mkdir(parents=True, exist_ok=True)
            for (market,), part in frame.group_by(["market"]):
                relative = f"{name}/{market}-{self.version}.parquet"
                part.write_parquet(self.root / relative)
                entries.setdefault(name, {})[str(market)] = PartitionFile(
                    relative, part.height, stamp
                )
        write_manifest(self.root, Manifest(self.version, stamp, entries))
        return self.version


@pytest.fixture
def warehouse(settings: ApiSettings) -> Warehouse:
    """An empty warehouse in tmp_path; `publish(...)` before starting the client."""
    settings.warehouse_dir.mkdir(parents=True, exist_ok=True)
    return Warehouse(settings.warehouse_dir)


@pytest.fixture
def base_warehouse(warehouse: Warehouse) -> Warehouse:
    """Instruments of three markets and ten daily BTC bars (closes 100..109)."""
    warehouse.publish(
        instruments=instruments_frame(),
        daily_prices=prices_frame([100.0 + i for i in range(10)]),
    )
    return warehouse


@pytest.fixture
def api(base_warehouse: Warehouse, client_for: ClientFor) -> TestClient[Litestar]:
    """The app serving the base warehouse."""
    return client_for()
