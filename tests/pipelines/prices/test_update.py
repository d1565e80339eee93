"""A market's prices brought up to a day: only new bars are fetched, revisions and new symbols reload a history."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path

import polars as pl
import pytest

from pipelines.catalog import DAILY_PRICES, PRICE_REJECTS
from pipelines.catalog.state import PRICE_STATE
from pipelines.prices.sources.base import RAW_BARS_SCHEMA, PriceSource, RawBars, RawInstruments
from pipelines.prices.sources.file_drop import FileDropSource
from pipelines.prices.update import MarketPrices, Request, update_market
from pipelines.prices.validate import validate_bars
from pipelines.warehouse.staging import RunTransaction
from pipelines.warehouse.store import Warehouse
from pipelines.warehouse.tables import scan

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


# --- the file drop: read, validated and stored a batch of files at a time ------------------------

DAY_HEADER = "symbol,date,open,high,low,close,volume\n"


def file_drop(root: Path, layout: str) -> FileDropSource:
    """Day files of five symbols with defects (bad lines, a duplicate, another day's line, quotes,
    bad bytes, a broken file); `mixed` adds a per-symbol file and a Parquet file that repeat bars
    of the day files."""
    days = root / "prices/crypto/days"
    days.mkdir(parents=True)
    for n in range(12):
        stamp = day(n).isoformat()
        lines = [
            f"{s},{stamp},{n + 1},{n + 3},{n + 0.5},{n + 2},{k}" for k, s in enumerate(SYMBOLS)
        ]
        if n == 2:
            lines.insert(1, lines[0])  # a duplicate: the second is rejected
        if n == 3:
            lines.insert(2, "ETH,2025-12-01,1,2,0.5,1.5,1,9")
        if n == 4:
            lines.insert(0, f"BTC,{day(5).isoformat()},1,2,0.5,1.5,1")  # another day's line
        if n == 5:
            lines[1] = f'"BTC", {stamp} ,1,2,0.5,1.5,'  # quoted and padded: read line by line
        if n == 6:
            lines.append(f"DOGE,{stamp},1,2,0.5,1.5,1")  # not an instrument
        if n == 7:
            lines[2] = f"SOL,{stamp},1,0.5,0.5,1.5,1"  # high below close
        body = (DAY_HEADER + "\n".join(lines) + "\n").encode()
        if n == 8:
            body = body.replace(b"ADA", b"AD\xff")
        (days / f"{stamp}.csv").write_bytes(body)
    (days / f"{day(12).isoformat()}.csv").write_text("not a header\n")
    if layout == "mixed":
        (root / "prices/crypto/BTC.csv").write_text(
            f"date,open,high,low,close,volume\n{day(1).isoformat()},7,8,6,7,1\n"
        )
        pl.DataFrame(
            {"symbol": ["ETH"], "date": [day(4)], "open": [1.0], "high": [9.0], "low": [0.5]}
            | {"close": [1.0], "volume": [1.0]}
        ).write_parquet(root / "prices/crypto/late.parquet")
    return FileDropSource(root)


SYMBOLS = ["ADA", "BTC", "ETH", "SOL", "XRP"]


@pytest.mark.parametrize("layout", ["days", "mixed"])
def test_a_file_drop_read_in_batches_stores_what_one_reading_validates(
    tmp_path: Path, layout: str
) -> None:
    """One file per batch and every batch spilled to disk: the stored bars, rejects and state are
    those of validating every file at once."""
    source = file_drop(tmp_path / "drop", layout)
    raw = source.read_bars("crypto", [f.path for f in source.listing("crypto")])
    clean, rejects = validate_bars(raw, "crypto", SYMBOLS, source.name)
    warehouse = Warehouse(tmp_path / "warehouse")
    tx = RunTransaction(warehouse, "r1", "prices")
    request = Request("crypto", SYMBOLS, day(10), full=True, shard_symbols=2)
    result = update_market(tx, source, request, batch_bytes=1, held_bytes=0)
    RunTransaction(warehouse, "r1", "publish").commit()
    stored = warehouse.read(DAILY_PRICES).sort("symbol", "date")
    assert stored.equals(clean.filter(pl.col("date") <= day(10)))
    assert result.bars().sort("symbol", "date").equals(stored)
    assert warehouse.read(PRICE_REJECTS).equals(rejects)
    assert result.rejects.equals(rejects)
    state = warehouse.read(PRICE_STATE).sort("symbol")
    assert (
        state.select("symbol", "bars").rows()
        == stored.group_by("symbol").len().sort("symbol").rows()
    )
    reasons = set(rejects["reason"])
    assert any(r.startswith("duplicate (symbol, date): kept the row at ") for r in reasons)
    assert f"date {day(5)} is not the file's day {day(4)}" in reasons
    if layout == "mixed":  # the later of two files holding a bar is rejected, naming the first
        btc = tmp_path / "drop/prices/crypto/BTC.csv"
        eth = tmp_path / f"drop/prices/crypto/days/{day(4)}.csv"
        assert f"duplicate (symbol, date): kept the row at {btc} line 2" in reasons
        assert f"duplicate (symbol, date): kept the row at {eth} line 5" in reasons


def test_a_new_day_file_is_the_only_file_read_and_appends_a_day(tmp_path: Path) -> None:
    source = file_drop(tmp_path / "drop", "days")
    warehouse = Warehouse(tmp_path / "warehouse")
    for n, run_id in ((10, "r1"), (11, "r2")):
        tx = RunTransaction(warehouse, run_id, "prices")
        result = update_market(tx, source, Request("crypto", SYMBOLS, day(n)))
        RunTransaction(warehouse, run_id, "publish").commit()
    assert result.fetched == {"new or changed files": "1 of 13 files"}
    assert sorted(result.appended) == SYMBOLS
    assert result.bars()["date"].unique().to_list() == [day(11)]
    stored = warehouse.read(DAILY_PRICES)
    assert stored.filter(pl.col("date") == day(11)).height == len(SYMBOLS)


def test_a_file_drop_moved_elsewhere_is_not_read_again_whole(tmp_path: Path) -> None:
    """Files are remembered by their path under the drop's root: a data directory restored or
    moved (times kept, as `cp -a` keeps them) reads only what is new."""
    file_drop(tmp_path / "drop", "days")
    warehouse = Warehouse(tmp_path / "warehouse")
    tx = RunTransaction(warehouse, "r1", "prices")
    update_market(tx, FileDropSource(tmp_path / "drop"), Request("crypto", SYMBOLS, day(10)))
    RunTransaction(warehouse, "r1", "publish").commit()
    shutil.copytree(tmp_path / "drop", tmp_path / "moved")  # copy2: modification times kept
    tx = RunTransaction(warehouse, "r2", "prices")
    moved = FileDropSource(tmp_path / "moved")
    result = update_market(tx, moved, Request("crypto", SYMBOLS, day(11)))
    assert result.fetched == {"new or changed files": "1 of 13 files"}
    assert result.bars()["date"].unique().to_list() == [day(11)]
