"""write_embedded_market: layout, determinism, stable history, idempotence, scaling and defects."""

from __future__ import annotations

import csv
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from pipelines.catalog import MARKETS, WEEKDAY_MARKETS
from pipelines.embedded_market import MarketManifest, read_manifest, write_embedded_market
from pipelines.embedded_market.universe import DEFAULT_SIZES, build_universe, split_instruments
from tests.pipelines.embedded_market.conftest import AS_OF, read_clean_lines

SMALL = {"seed": 7, "instruments": 6, "days": 120}


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("market", MARKETS)
def test_same_arguments_write_identical_bytes(tmp_path: Path, market: str) -> None:
    write_embedded_market(tmp_path / "a", market, as_of=AS_OF, **SMALL)
    write_embedded_market(tmp_path / "b", market, as_of=AS_OF, **SMALL)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


@pytest.mark.parametrize("market", ["crypto", "stocks"])
def test_bars_of_a_day_do_not_change_when_as_of_advances(tmp_path: Path, market: str) -> None:
    days = {"seed": 7, "instruments": 4, "days": 200, "defects": False}
    later = AS_OF + timedelta(days=3)
    old = write_embedded_market(tmp_path / "old", market, as_of=AS_OF, **days)
    new = write_embedded_market(tmp_path / "new", market, as_of=later, **days)
    for symbol in build_universe(market, 4).symbols:
        before = read_clean_lines(tmp_path / "old", old, symbol)
        after = read_clean_lines(tmp_path / "new", new, symbol)
        shared = [line for line in before if line[:10] >= after[0][:10]]
        assert shared == after[: len(shared)]
        assert len(after) > len(shared)  # the new days were appended


def test_repeat_call_with_same_parameters_returns_without_rewriting(tmp_path: Path) -> None:
    first = write_embedded_market(tmp_path, "forex", as_of=AS_OF, **SMALL)
    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.csv")}
    again = write_embedded_market(tmp_path, "forex", as_of=AS_OF, **SMALL)
    assert again == first
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.csv")} == stamps
    assert read_manifest(tmp_path, "forex") == first


def test_a_smaller_universe_removes_the_price_files_it_no_longer_has(tmp_path: Path) -> None:
    write_embedded_market(tmp_path, "stocks", as_of=AS_OF, **SMALL)
    write_embedded_market(tmp_path, "stocks", as_of=AS_OF, **(SMALL | {"instruments": 4}))
    assert len(list((tmp_path / "prices/stocks").glob("*.csv"))) == 4
    assert not list(tmp_path.rglob("*.tmp"))


def test_instrument_files_follow_the_file_drop_layout(
    default_root: Path, manifests: dict[str, MarketManifest]
) -> None:
    for market, manifest in manifests.items():
        with (default_root / f"instruments/{market}.csv").open(encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert list(rows[0]) == ["symbol", "name", "logo"]
        assert len(rows) == DEFAULT_SIZES[market] == manifest.instruments
        assert all(re.fullmatch(r"[A-Z0-9]+", r["symbol"]) for r in rows)
        assert all(r["logo"].startswith("https://") and r["logo"].endswith(".svg") for r in rows)
        prices = sorted(p.stem for p in (default_root / f"prices/{market}").glob("*.csv"))
        assert prices == sorted(r["symbol"] for r in rows)
        assert {p.name for p in (default_root / f"news/{market}").iterdir()} == {
            "wire.xml",
            "digest.xml",
        }


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
def test_every_day_has_a_bar_weekday_markets_only_weekdays_ending_at_as_of(
    default_root: Path, manifests: dict[str, MarketManifest], market: str
) -> None:
    manifest = manifests[market]
    lines = read_clean_lines(default_root, manifest, build_universe(market).symbols[3])
    dates = [date.fromisoformat(line[:10]) for line in lines]
    start = AS_OF.date() - timedelta(days=1599)
    calendar = [start + timedelta(days=i) for i in range(1600)]
    if market in WEEKDAY_MARKETS:
        assert dates == [d for d in calendar if d.weekday() < 5]
        assert dates[-1] == date(2026, 2, 27)  # AS_OF is a Sunday
    else:
        assert dates == calendar
        assert len(dates) == 1600
    assert manifest.last_date == dates[-1].isoformat()


def test_forex_majors_are_quoted_to_5_decimals_and_jpy_pairs_to_3(
    default_root: Path, manifests: dict[str, MarketManifest]
) -> None:
    for symbol in build_universe("forex").symbols:
        lines = read_clean_lines(default_root, manifests["forex"], symbol)
        decimals = {len(field.split(".")[1]) for line in lines for field in line.split(",")[1:5]}
        expected = (
            3 if symbol.endswith("JPY") else 4 if symbol in ("USDSEK", "USDNOK", "USDMXN") else 5
        )
        assert decimals == {expected}, symbol


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
        tmp_path, "stocks", seed=1, as_of=AS_OF, instruments=80, days=60
    )
    assert manifest.instruments == 80
    assert len(list((tmp_path / "prices/stocks").glob("*.csv"))) == 80


@pytest.mark.parametrize(
    ("total", "expected"), [(132, (50, 20, 12, 50)), (4, (1, 1, 1, 1)), (1000, (379, 151, 91, 379))]
)
def test_split_instruments_is_proportional_to_default_sizes_and_sums_to_total(
    total: int, expected: tuple[int, ...]
) -> None:
    parts = split_instruments(total)
    assert tuple(parts[m] for m in MARKETS) == expected
    assert sum(parts.values()) == total


def test_naive_as_of_is_taken_as_utc(tmp_path: Path) -> None:
    aware = write_embedded_market(tmp_path / "a", "crypto", as_of=AS_OF, **SMALL)
    naive = write_embedded_market(
        tmp_path / "n", "crypto", as_of=AS_OF.replace(tzinfo=None), **SMALL
    )
    assert aware == naive
    assert aware.as_of == "2026-03-01T14:00:00+00:00"


def test_unknown_market_and_too_early_history_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown market"):
        write_embedded_market(tmp_path, "bonds", seed=1, as_of=AS_OF)
    with pytest.raises(ValueError, match="history must start after"):
        write_embedded_market(tmp_path, "crypto", seed=1, as_of=datetime(2014, 1, 1, tzinfo=UTC))
