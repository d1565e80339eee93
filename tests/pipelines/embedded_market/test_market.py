"""write_embedded_market: layout, determinism, the universe, parameters and what they change."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from pipelines.catalog import MARKETS, WEEKDAY_MARKETS
from pipelines.embedded_market import (
    HISTORY_START,
    MarketManifest,
    read_manifest,
    write_embedded_market,
    write_embedded_news,
    write_embedded_prices,
)
from pipelines.embedded_market.files import DayFiles
from pipelines.embedded_market.model import CLOSE, HIGH, LOW, OPEN, VOLUME, SimState, Stepper
from pipelines.embedded_market.universe import (
    CAPACITY,
    DEFAULT_SIZES,
    build_universe,
    split_instruments,
)
from tests.pipelines.embedded_market.conftest import (
    AS_OF,
    day_files,
    files_of,
    read_clean_lines,
    stamps_of,
)

SMALL = {"seed": 7, "instruments": 6, "start": date(2026, 1, 20)}


@pytest.mark.parametrize("market", MARKETS)
def test_same_arguments_write_identical_bytes(tmp_path: Path, market: str) -> None:
    write_embedded_market(tmp_path / "a", market, as_of=AS_OF, **SMALL)
    write_embedded_market(tmp_path / "b", market, as_of=AS_OF, **SMALL)
    assert files_of(tmp_path / "a") == files_of(tmp_path / "b")


def test_repeat_call_writes_nothing_and_reports_the_same_files(tmp_path: Path) -> None:
    first = write_embedded_market(tmp_path, "forex", as_of=AS_OF, **SMALL)
    stamps = stamps_of(tmp_path)
    again = write_embedded_market(tmp_path, "forex", as_of=AS_OF, **SMALL)
    assert again.written == ()
    assert replace(again, written=first.written) == first
    assert set(first.written) == set(first.files) == set(stamps)
    assert stamps_of(tmp_path) == stamps
    assert read_manifest(tmp_path, "forex") == again


def test_instrument_and_day_files_follow_the_file_drop_layout(
    default_root: Path, manifests: dict[str, MarketManifest]
) -> None:
    for market, manifest in manifests.items():
        with (default_root / f"instruments/{market}.csv").open(encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert list(rows[0]) == ["symbol", "name", "logo"]
        assert len(rows) == DEFAULT_SIZES[market] == manifest.instruments
        assert all(re.fullmatch(r"[A-Z0-9]+", r["symbol"]) for r in rows)
        assert all(r["logo"].startswith("https://") and r["logo"].endswith(".svg") for r in rows)
        symbols = sorted(r["symbol"] for r in rows)
        for path in day_files(default_root, market)[::97]:
            header = path.read_text(encoding="utf-8").splitlines()[0]
            assert header == "symbol,date,open,high,low,close,volume"
            lines = read_clean_lines(default_root, manifest, path)
            assert [line.split(",")[0] for line in lines] == symbols  # one line each, in order
            assert {line.split(",")[1] for line in lines} == {path.stem}
        assert {p.name for p in (default_root / f"news/{market}").iterdir()} == {
            "wire.xml",
            "digest.xml",
            "wire",
            "digest",
        }
        market_files = [
            default_root / f"instruments/{market}.csv",
            *(default_root / "prices" / market).rglob("*"),
            *(default_root / "news" / market).rglob("*"),
        ]
        on_disk = {p.relative_to(default_root).as_posix() for p in market_files if p.is_file()}
        assert on_disk == set(manifest.files)


def test_default_universe_names_the_well_known_instruments(default_root: Path) -> None:
    names = {}
    for market in MARKETS:
        with (default_root / f"instruments/{market}.csv").open(encoding="utf-8") as handle:
            names |= {r["symbol"]: r["name"] for r in csv.DictReader(handle)}
    assert names["BTC"] == "Bitcoin"
    assert names["ETH"] == "Ethereum"
    assert names["EURUSD"] == "EUR/USD"
    assert "USDJPY" in names
    assert names["GOLD"] == "Gold"
    assert names["WTI"] == "WTI Crude Oil"
    assert names["AAPL"] == "Apple Inc."


@pytest.mark.parametrize("market", MARKETS)
def test_history_runs_from_history_start_every_day_for_crypto_weekdays_for_the_others(
    default_root: Path, manifests: dict[str, MarketManifest], market: str
) -> None:
    dates = [date.fromisoformat(p.stem) for p in day_files(default_root, market)]
    calendar = [
        HISTORY_START + timedelta(days=i) for i in range((AS_OF.date() - HISTORY_START).days + 1)
    ]
    if market in WEEKDAY_MARKETS:
        assert dates == [d for d in calendar if d.weekday() < 5]
        assert dates[-1] == date(2026, 2, 27)  # AS_OF is a Sunday
    else:
        assert dates == calendar
    assert (manifests[market].first_date, manifests[market].last_date) == (
        dates[0].isoformat(),
        dates[-1].isoformat(),
    )
    assert manifests[market].bars == len(dates) * DEFAULT_SIZES[market]


def test_forex_majors_are_quoted_to_5_decimals_and_jpy_pairs_to_3(
    default_root: Path, manifests: dict[str, MarketManifest]
) -> None:
    decimals: dict[str, set[int]] = {}
    for path in day_files(default_root, "forex")[::10]:
        for line in read_clean_lines(default_root, manifests["forex"], path):
            symbol, _, *prices = line.split(",")
            decimals.setdefault(symbol, set()).update(len(p.split(".")[1]) for p in prices[:4])
    for symbol in build_universe("forex").symbols:
        expected = (
            3 if symbol.endswith("JPY") else 4 if symbol in ("USDSEK", "USDNOK", "USDMXN") else 5
        )
        assert decimals[symbol] == {expected}, symbol


@pytest.mark.parametrize("count", [1, 7, 300])
def test_scaled_universe_has_the_requested_count_of_unique_symbols_defaults_first(
    count: int,
) -> None:
    for market in MARKETS:
        universe = build_universe(market, count)
        assert len(universe) == count == len(set(universe.symbols))
        assert all(re.fullmatch(r"[A-Z0-9]+", s) for s in universe.symbols)
        defaults = build_universe(market).symbols
        assert universe.symbols[: min(count, len(defaults))] == defaults[:count]


def test_scaled_market_writes_the_requested_number_of_instruments(tmp_path: Path) -> None:
    manifest = write_embedded_market(
        tmp_path, "stocks", seed=1, as_of=AS_OF, instruments=80, start=date(2026, 2, 1)
    )
    assert manifest.instruments == 80
    for path in day_files(tmp_path, "stocks"):
        assert len(read_clean_lines(tmp_path, manifest, path)) == 80


@pytest.mark.parametrize(
    ("total", "expected"), [(132, (50, 20, 12, 50)), (4, (1, 1, 1, 1)), (1000, (379, 151, 91, 379))]
)
def test_split_instruments_is_proportional_to_default_sizes_and_sums_to_total(
    total: int, expected: tuple[int, ...]
) -> None:
    parts = split_instruments(total)
    assert tuple(parts[m] for m in MARKETS) == expected
    assert sum(parts.values()) == total


def test_a_market_at_its_capacity_leaves_the_rest_to_the_others_in_proportion() -> None:
    parts = split_instruments(50_000)
    assert parts["forex"] == CAPACITY["forex"] == 52 * 51
    assert sum(parts.values()) == 50_000
    assert abs(parts["crypto"] - parts["stocks"]) <= 1
    assert parts["crypto"] / parts["commodities"] == pytest.approx(50 / 12, rel=1e-3)
    assert build_universe("forex", CAPACITY["forex"]).symbols[-1]


def test_naive_as_of_is_taken_as_utc(tmp_path: Path) -> None:
    aware = write_embedded_market(tmp_path / "a", "crypto", as_of=AS_OF, **SMALL)
    naive = write_embedded_market(
        tmp_path / "n", "crypto", as_of=AS_OF.replace(tzinfo=None), **SMALL
    )
    assert aware == naive
    assert aware.as_of == "2026-03-01T14:00:00+00:00"


def test_unknown_market_too_early_start_and_an_empty_history_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown market"):
        write_embedded_market(tmp_path, "bonds", seed=1, as_of=AS_OF)
    with pytest.raises(ValueError, match="history must start after"):
        write_embedded_market(tmp_path, "crypto", seed=1, as_of=AS_OF, start=date(2013, 6, 1))
    with pytest.raises(ValueError, match="no trading day"):  # a weekend, for a weekday market
        write_embedded_prices(
            tmp_path, "stocks", seed=1, through=date(2026, 2, 1), start=date(2026, 1, 31)
        )
    with pytest.raises(ValueError, match="before the history start"):
        write_embedded_news(
            tmp_path, "crypto", seed=1, now=datetime(2025, 1, 1, tzinfo=UTC), start=AS_OF.date()
        )


def test_other_parameters_leave_exactly_the_files_a_fresh_call_writes(tmp_path: Path) -> None:
    write_embedded_market(tmp_path / "kept", "stocks", as_of=AS_OF, **SMALL)
    other = {"seed": 8, "instruments": 4, "start": date(2026, 2, 3), "defects": False}
    earlier = AS_OF - timedelta(days=9)
    manifest = write_embedded_market(tmp_path / "kept", "stocks", as_of=earlier, **other)
    write_embedded_market(tmp_path / "fresh", "stocks", as_of=earlier, **other)
    assert files_of(tmp_path / "kept") == files_of(tmp_path / "fresh")
    assert set(manifest.files) == set(files_of(tmp_path / "fresh"))
    assert not list(tmp_path.rglob("*.tmp"))


def test_the_first_layouts_per_symbol_files_are_removed(tmp_path: Path) -> None:
    """A root written by the generator's first version (one CSV per symbol) is migrated."""
    old = ["prices/crypto/BTC.csv", "prices/crypto/ETH.csv", "news/crypto/wire.xml"]
    for path in old:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("old\n", encoding="utf-8")
    (tmp_path / ".manifest").mkdir()
    (tmp_path / ".manifest/crypto.json").write_text(json.dumps({"files": old}), encoding="utf-8")
    write_embedded_market(tmp_path, "crypto", as_of=AS_OF, **SMALL)
    assert not (tmp_path / "prices/crypto/BTC.csv").exists()
    assert not (tmp_path / "prices/crypto/ETH.csv").exists()
    assert not (tmp_path / ".manifest/crypto.json").exists()
    assert (tmp_path / "news/crypto/wire.xml").read_text(encoding="utf-8") != "old\n"


@pytest.mark.parametrize("market", MARKETS)
def test_day_file_prices_are_the_bars_rounded_to_the_instruments_decimals(market: str) -> None:
    universe = build_universe(market, 60)
    stepper = Stepper(universe, 3, MARKETS.index(market), SimState.initial(universe))
    days = list(stepper.days_through(date(2013, 1, 20)))
    for day in days[:-1]:
        stepper.step(day, keep_bar=False)
    bars = stepper.step(days[-1], keep_bar=True).bars
    lines = DayFiles(universe).render(days[-1], bars).decode().splitlines()
    assert lines[0] == "symbol,date,open,high,low,close,volume"
    rows = {line.split(",")[0]: line.split(",")[1:] for line in lines[1:]}
    assert list(rows) == sorted(universe.symbols)
    for i, symbol in enumerate(universe.symbols):
        decimals = int(universe.decimals[i])
        day, *prices, volume = rows[symbol]
        assert day == days[-1].isoformat()
        for text, value in zip(prices, bars[[OPEN, HIGH, LOW, CLOSE], i], strict=True):
            assert len(text.split(".")[1]) == decimals
            assert abs(float(text) - value) <= 0.5001 * 10.0**-decimals
        assert int(volume) == bars[VOLUME, i] >= 1
