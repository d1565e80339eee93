"""Incremental runs: HTTP sources fetch from the newest stored bar; the file drop re-reads."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg
import polars as pl

from pipelines.catalog import DAILY_PRICES, Manifest, PartitionFile, write_manifest
from pipelines.prices.definitions import build_defs
from pipelines.prices.incremental import collect_prices, fetch_plan, stored_partition
from pipelines.prices.sources.base import (
    RAW_BARS_SCHEMA,
    RAW_INSTRUMENTS_SCHEMA,
    PriceSource,
    RawBars,
    RawInstruments,
)
from pipelines.prices.sources.binance import BinanceSource
from pipelines.prices.sources.config import SourceRegistry
from pipelines.prices.sources.file_drop import FileDropSource
from pipelines.prices.sources.http import HttpFetcher, HttpPolicy, ListedInstrument
from pipelines.settings import PipelineSettings
from tests.pipelines.prices.loopback import Reply, route, serve


def bars(
    symbol: str, days: Sequence[int], close: float = 11.0, source: str = "old"
) -> pl.DataFrame:
    frame = pl.DataFrame(
        {
            "market": "crypto",
            "symbol": symbol,
            "date": [date(2024, 1, d) for d in days],
            "open": 10.0,
            "high": 12.0,
            "low": 9.0,
            "close": close,
            "volume": 1.0,
            "source": source,
        }
    )
    return DAILY_PRICES.conform(
        frame.with_columns(timestamp=pl.col("date").cast(pl.Int64) * 86_400_000)
    )


def store(warehouse: Path, frame: pl.DataFrame) -> None:
    warehouse.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(warehouse / "daily_prices-crypto-1.parquet")
    entry = PartitionFile("daily_prices-crypto-1.parquet", frame.height, "2024-01-03T00:00:00Z")
    write_manifest(
        warehouse, Manifest(1, "2024-01-03T00:00:00Z", {"daily_prices": {"crypto": entry}})
    )


class Recording(PriceSource):
    """An incremental source answering one bar a day from `since` to Jan 5 and noting each call."""

    name = "recording"

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[str, ...], date | None]] = []

    @property
    def incremental(self) -> bool:
        return True

    def instruments(self, market: str) -> RawInstruments:
        raise NotImplementedError

    def daily_bars(self, market: str, symbols: Sequence[str], since: date | None) -> RawBars:
        self.calls.append((tuple(symbols), since))
        first = since.day if since else 1
        rows = [
            {"symbol": s, "date": f"2024-01-0{d}", "open": "10", "high": "13", "low": "9"}
            | {"close": "12", "volume": "2", "source": "u", "location": f"{s}{d}", "record": "r"}
            for s in symbols
            for d in range(first, 6)
        ]
        return RawBars(pl.DataFrame(rows, schema=RAW_BARS_SCHEMA))


class RecordingWithBitcoin(Recording):
    def instruments(self, market: str) -> RawInstruments:
        row = {"symbol": "BTC", "name": "Bitcoin", "logo": "", "source": "t", "location": "1"}
        return RawInstruments(pl.DataFrame([row | {"record": "r"}], schema=RAW_INSTRUMENTS_SCHEMA))


def assets_of(defs: dg.Definitions) -> list[dg.AssetsDefinition]:
    return [a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition)]


def test_stored_partition_is_read_through_the_warehouse_manifest(tmp_path: Path) -> None:
    assert stored_partition(tmp_path, "daily_prices", "crypto") is None
    store(tmp_path, bars("BTC", [1, 2]))
    stored = stored_partition(tmp_path, "daily_prices", "crypto")
    assert stored is not None
    assert stored.height == 2


def test_fetch_plan_starts_each_symbol_at_its_newest_stored_bar() -> None:
    previous = pl.concat([bars("BTC", [1, 2, 3]), bars("ETH", [1])])
    assert fetch_plan(previous, ["BTC", "ETH", "SOL"]) == {
        date(2024, 1, 3): ["BTC"],
        date(2024, 1, 1): ["ETH"],
        None: ["SOL"],
    }


def test_http_source_fetches_only_from_the_newest_stored_bar_and_merges() -> None:
    source = Recording()
    prices, rejects, fetched = collect_prices(source, "crypto", ["BTC"], bars("BTC", [1, 2, 3]))
    assert source.calls == [(("BTC",), date(2024, 1, 3))]
    assert rejects.is_empty()
    assert prices["date"].to_list() == [date(2024, 1, d) for d in (1, 2, 3, 4, 5)]
    # The re-fetched newest bar replaces the stored one (it may have been revised).
    assert prices["source"].to_list() == ["old", "old", "recording", "recording", "recording"]
    assert fetched == {"2024-01-03": "1 symbols"}


def test_stored_bars_of_delisted_symbols_are_not_carried_forward() -> None:
    previous = pl.concat([bars("BTC", [1, 2, 3, 4, 5]), bars("LUNA", [1, 2])])
    prices, _, _ = collect_prices(Recording(), "crypto", ["BTC"], previous)
    assert set(prices["symbol"]) == {"BTC"}


def test_file_drop_is_re_read_in_full(tmp_path: Path) -> None:
    (tmp_path / "prices/crypto").mkdir(parents=True)
    (tmp_path / "prices/crypto/BTC.csv").write_text(
        "date,open,high,low,close,volume\n2024-01-01,1,2,1,1,1\n"
    )
    prices, _, fetched = collect_prices(
        FileDropSource(tmp_path), "crypto", ["BTC"], bars("BTC", [5])
    )
    assert prices["date"].to_list() == [date(2024, 1, 1)]
    assert fetched == {"full history": "1 symbols"}


def test_daily_prices_asset_fetches_binance_incrementally_over_http(tmp_path: Path) -> None:
    settings = PipelineSettings(tmp_path, tmp_path / "sources.toml", 1, date(2024, 1, 4))
    store(settings.warehouse_dir, bars("BTC", [1, 2, 3]))
    http = HttpFetcher(HttpPolicy(max_retries=0))
    page = Reply(fixture="binance/klines_BTCUSDT_2024-01-04.json")
    since_jan_3 = str(int(datetime(2024, 1, 3, tzinfo=UTC).timestamp() * 1000))
    with serve([(route("/api/v3/klines", startTime=since_jan_3), [page])]) as server:
        crypto = BinanceSource(
            [ListedInstrument("BTC", "Bitcoin")], "t", server.base_url, http=http
        )
        registry = SourceRegistry(
            dict.fromkeys(("crypto", "forex", "commodities", "stocks"), crypto)
        )
        defs = build_defs(settings, sources=registry)
        resources = dict(defs.resources or {}) | {"io_manager": dg.mem_io_manager}
        result = dg.materialize(assets_of(defs), partition_key="crypto", resources=resources)
    assert [r.query["symbol"] for r in server.requests] == ["BTCUSDT"]
    prices = result.output_for_node("raw_daily_prices", "daily_prices")
    assert prices["date"].to_list() == [date(2024, 1, d) for d in (1, 2, 3, 4)]
    assert prices["source"].to_list() == ["old", "old", "old", "binance"]
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["fresh"]
    assert checks["no_missing_trading_days"]


def test_second_run_through_the_warehouse_io_manager_fetches_only_new_bars(tmp_path: Path) -> None:
    from pipelines.warehouse.definitions import build_defs as warehouse_defs

    settings = PipelineSettings(tmp_path, tmp_path / "sources.toml", 1, date(2024, 1, 5))
    source = RecordingWithBitcoin()
    registry = SourceRegistry(dict.fromkeys(("crypto", "forex", "commodities", "stocks"), source))
    defs = dg.Definitions.merge(build_defs(settings, sources=registry), warehouse_defs(settings))
    for _ in range(2):
        dg.materialize(
            assets_of(defs), partition_key="crypto", resources=dict(defs.resources or {})
        )
    assert source.calls == [(("BTC",), None), (("BTC",), date(2024, 1, 5))]
    stored = stored_partition(settings.warehouse_dir, "daily_prices", "crypto")
    assert stored is not None
    assert stored["date"].to_list() == [date(2024, 1, d) for d in range(1, 6)]
