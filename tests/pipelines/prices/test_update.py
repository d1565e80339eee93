"""A market's prices brought up to a day: only new bars are fetched, revisions and new symbols reload a history."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.catalog import DAILY_PRICES, PRICE_REJECTS
from pipelines.catalog.state import PRICE_STATE
from pipelines.incremental.tables import scan
from pipelines.prices.sources.base import RAW_BARS_SCHEMA, PriceSource, RawBars, RawInstruments
from pipelines.prices.update import MarketPrices, Request, update_market
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.store import Warehouse

START = date(2025, 12, 1)


class Vendor(PriceSource):
    """An incremental source (as an HTTP API is) over bars held in memory; records every call."""

    name = "vendor"

    def __init__(self, closes: dict[str, list[float]]) -> None:
        self.closes = closes
        self.calls: list[tuple[tuple[str, ...], date | None]] = []

    @property
    def incremental(self) -> bool:
        return True

    def instruments(self, market: str) -> RawInstruments:
        raise NotImplementedError

    def daily_bars(self, market: str, symbols: Sequence[str], since: date | None) -> RawBars:
        self.calls.append((tuple(symbols), since))
        rows = [
            {"symbol": s, "date": (START + timedelta(days=i)).isoformat(), "open": str(c)}
            | {"high": str(c), "low": str(c), "close": str(c), "volume": "1"}
            | {"source": "mem", "location": f"{s} {i}", "record": "r"}
            for s in symbols
            for i, c in enumerate(self.closes.get(s, []))
            if since is None or START + timedelta(days=i) >= since
        ]
        return RawBars(pl.DataFrame(rows, schema=RAW_BARS_SCHEMA))


def run(
    warehouse: Warehouse,
    source: PriceSource,
    symbols: list[str],
    through: date,
    run_id: str,
    **options: object,
) -> tuple[pl.DataFrame, pl.DataFrame, MarketPrices]:
    tx = RunTransaction(warehouse, run_id, "prices")
    request = Request("crypto", symbols, through, **options)  # type: ignore[arg-type]
    result = update_market(tx, source, request)
    RunTransaction(warehouse, run_id, "publish").commit()
    manifest = warehouse.manifest()
    assert manifest is not None
    prices = scan(
        warehouse.storage, manifest.partitions("daily_prices", "crypto").values(), DAILY_PRICES
    )
    state = scan(
        warehouse.storage, manifest.partitions("price_state", "crypto").values(), PRICE_STATE
    )
    return prices.collect().sort("symbol", "date"), state.collect().sort("symbol"), result


def day(n: int) -> date:
    return START + timedelta(days=n)


@pytest.fixture
def warehouse(tmp_path: Path) -> Warehouse:
    return Warehouse(tmp_path / "warehouse")


def test_a_first_run_loads_every_history_and_stops_at_the_day(warehouse: Warehouse) -> None:
    source = Vendor({"BTC": [1.0, 2.0, 3.0, 4.0], "ETH": [5.0, 6.0]})
    prices, state, result = run(warehouse, source, ["BTC", "ETH"], day(2), "r1")
    assert prices.group_by("symbol").len().sort("symbol").rows() == [("BTC", 3), ("ETH", 2)]
    assert state.select("symbol", "first_date", "last_date", "bars").rows() == [
        ("BTC", day(0), day(2), 3),
        ("ETH", day(0), day(1), 2),
    ]
    assert sorted(result.reloaded) == ["BTC", "ETH"]


def test_a_new_day_fetches_from_the_newest_stored_bar_and_keeps_the_history_id(
    warehouse: Warehouse,
) -> None:
    source = Vendor({"BTC": [1.0, 2.0, 3.0, 4.0]})
    _, before, _ = run(warehouse, source, ["BTC"], day(2), "r1")
    prices, after, result = run(warehouse, source, ["BTC"], day(3), "r2")
    assert source.calls[-1] == (("BTC",), day(2))
    assert prices["close"].to_list() == [1.0, 2.0, 3.0, 4.0]
    assert after["history_id"].to_list() == before["history_id"].to_list()
    assert after["bars"].to_list() == [4]
    assert result.appended == ["BTC"]


def test_a_revised_bar_reloads_that_symbol_with_a_new_history_id_only(warehouse: Warehouse) -> None:
    source = Vendor({"BTC": [1.0, 2.0, 3.0], "ETH": [5.0, 6.0, 7.0]})
    _, before, _ = run(warehouse, source, ["BTC", "ETH"], day(2), "r1")
    source.closes = {"BTC": [1.0, 2.0, 30.0, 4.0], "ETH": [5.0, 6.0, 7.0, 8.0]}
    prices, after, result = run(warehouse, source, ["BTC", "ETH"], day(3), "r2")
    assert prices.filter(pl.col("symbol") == "BTC")["close"].to_list() == [1.0, 2.0, 30.0, 4.0]
    ids = dict(zip(before["symbol"], before["history_id"], strict=True))
    new_ids = dict(zip(after["symbol"], after["history_id"], strict=True))
    assert new_ids["BTC"] != ids["BTC"]
    assert new_ids["ETH"] == ids["ETH"]
    assert result.reloaded == ["BTC"]
    assert result.appended == ["ETH"]


def test_a_symbol_no_longer_listed_is_removed_and_a_new_one_loaded_whole(
    warehouse: Warehouse,
) -> None:
    source = Vendor({"BTC": [1.0, 2.0], "LUNA": [9.0, 8.0], "SOL": [3.0, 4.0, 5.0]})
    run(warehouse, source, ["BTC", "LUNA"], day(1), "r1")
    prices, state, result = run(warehouse, source, ["BTC", "SOL"], day(2), "r2")
    assert sorted(state["symbol"]) == ["BTC", "SOL"]
    assert prices.filter(pl.col("symbol") == "SOL").height == 3
    assert "LUNA" not in prices["symbol"].to_list()
    assert result.removed == ["LUNA"]
    assert (("SOL",), None) in source.calls


def test_a_re_fetched_bar_equal_to_the_stored_one_changes_nothing(warehouse: Warehouse) -> None:
    source = Vendor({"BTC": [1.0, 2.0]})
    run(warehouse, source, ["BTC"], day(1), "r1")
    before = warehouse.manifest()
    _, _, result = run(warehouse, source, ["BTC"], day(1), "r2")
    after = warehouse.manifest()
    assert before is not None
    assert after is not None
    assert after.partitions("daily_prices", "crypto") == before.partitions("daily_prices", "crypto")
    assert result.appended == result.reloaded == []


def test_a_backfill_re_fetches_from_its_first_day_and_finds_older_revisions(
    warehouse: Warehouse,
) -> None:
    source = Vendor({"BTC": [1.0, 2.0, 3.0, 4.0]})
    run(warehouse, source, ["BTC"], day(3), "r1")
    source.closes["BTC"][1] = 20.0
    prices, _, result = run(warehouse, source, ["BTC"], day(3), "r2", since=day(1))
    assert source.calls[-1] == (("BTC",), day(1))
    assert prices["close"].to_list() == [1.0, 20.0, 3.0, 4.0]
    assert result.reloaded == ["BTC"]


def test_a_change_of_shard_count_rebuilds_the_market_in_the_new_layout(
    warehouse: Warehouse,
) -> None:
    closes = {f"S{i:02d}": [float(i + 1), float(i + 2)] for i in range(12)}
    source = Vendor(closes)
    run(warehouse, source, list(closes), day(1), "r1", shard_symbols=100)
    prices, state, _ = run(warehouse, source, list(closes), day(1), "r2", shard_symbols=4)
    manifest = warehouse.manifest()
    assert manifest is not None
    assert {k.split("/")[1] for k in manifest.partitions("price_state", "crypto")} == {
        "s0of4",
        "s1of4",
        "s2of4",
        "s3of4",
    }
    assert state.height == 12
    assert prices.height == 24


def test_incremental_days_store_exactly_what_one_full_run_of_the_last_day_does(
    tmp_path: Path,
) -> None:
    closes = {"BTC": [float(i) for i in range(1, 31)], "ETH": [float(i) for i in range(50, 70)]}
    daily = Warehouse(tmp_path / "daily")
    for n in (3, 4, 9, 10, 25, 29):
        run(daily, Vendor(closes), ["BTC", "ETH"], day(n), f"d{n}", shard_symbols=1)
    once = Warehouse(tmp_path / "once")
    full, _, _ = run(once, Vendor(closes), ["BTC", "ETH"], day(29), "f", shard_symbols=1)
    incremental, _, _ = run(daily, Vendor(closes), ["BTC", "ETH"], day(29), "last", shard_symbols=1)
    assert incremental.equals(full)


def test_rejects_are_kept_once_each_across_runs(warehouse: Warehouse) -> None:
    class Messy(Vendor):
        def daily_bars(self, market: str, symbols: Sequence[str], since: date | None) -> RawBars:
            good = super().daily_bars(market, symbols, since)
            bad = pl.DataFrame(
                [
                    {"symbol": "BTC", "date": "junk", "open": "1", "high": "1", "low": "1"}
                    | {
                        "close": "1",
                        "volume": "1",
                        "source": "mem",
                        "location": "x",
                        "record": "junk",
                    }
                ],
                schema=RAW_BARS_SCHEMA,
            )
            return RawBars(pl.concat([good.rows, bad]))

    source = Messy({"BTC": [1.0, 2.0]})
    for n, run_id in ((0, "r1"), (1, "r2")):
        run(warehouse, source, ["BTC"], day(n), run_id)
    rejects = warehouse.read(PRICE_REJECTS)
    assert rejects["record"].to_list() == ["junk"]
