"""The SDK's bulk export against the real server: files streamed to disk, typed errors, balance."""

from __future__ import annotations

import asyncio
from datetime import date
from pathlib import Path

import polars as pl
import pytest
from market_intelligence import AsyncClient, Client, NotFound, PaymentRequired

from pipelines.catalog import read_manifest
from tests.served import ServedApi

pytestmark = pytest.mark.slow


def test_an_export_into_a_directory_takes_the_servers_file_name_and_holds_the_series(
    client: Client, embedded_market: Path, tmp_path: Path
) -> None:
    """The file holds the warehouse's rows: BTC's closes from a day on are get-price-history's."""
    manifest = read_manifest(embedded_market / "warehouse")
    assert manifest is not None
    saved = client.bulk_export(
        "crypto", "daily-prices", tmp_path, symbols=["btc"], start=date(2025, 1, 1)
    )
    assert saved == tmp_path / f"crypto-daily-prices-{manifest.version}.parquet"
    frame = pl.read_parquet(saved)
    assert set(frame["symbol"]) == {"BTC"}
    assert frame["date"].min() == date(2025, 1, 1)
    series = client.get_price_history("crypto", "BTC", start=date(2025, 1, 1)).to_polars()
    assert frame.sort("date")["close"].to_list() == series["price"].to_list()
    assert list(tmp_path.iterdir()) == [saved]  # no .part left behind


def test_the_async_client_saves_a_csv_to_the_path_given_and_reads_the_balance(
    served_api: ServedApi, internal_key: str, tmp_path: Path
) -> None:
    async def export() -> tuple[Path, int | None]:
        async with AsyncClient(internal_key, base_url=served_api.base) as api:
            path = await api.bulk_export(
                "forex", "sentiment-daily", tmp_path / "s.csv", format="csv"
            )
            return path, None if api.balance is None else api.balance.cost

    path, cost = asyncio.run(export())
    assert path == tmp_path / "s.csv"
    frame = pl.read_csv(path)
    assert frame.columns[:3] == ["market", "symbol", "date"]
    assert set(frame["market"]) == {"forex"}
    assert cost == 10


def test_a_refused_export_raises_its_typed_error_and_writes_nothing(
    served_api: ServedApi, client: Client, tmp_path: Path
) -> None:
    with Client(served_api.new_key("sandbox"), base_url=served_api.base) as sandbox:
        with pytest.raises(PaymentRequired, match="bulk-export"):
            sandbox.bulk_export("crypto", "briefs", tmp_path)
        assert sandbox.balance is not None
        assert sandbox.balance.cost == 0
    with pytest.raises(NotFound, match="datasets"):
        client.bulk_export("crypto", "prices", tmp_path / "x.parquet")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
