"""Instrument validation rules on tiny hand-written raw frames."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.catalog import INSTRUMENT_REJECTS, INSTRUMENTS
from pipelines.instruments.validate import validate_instruments
from pipelines.prices.sources.base import RAW_INSTRUMENTS_SCHEMA, RawInstruments


def raw(*rows: tuple[str | None, str | None, str | None]) -> RawInstruments:
    frame = pl.DataFrame(
        [
            {"symbol": s, "name": n, "logo": lg, "source": "i.csv", "location": f"line {i + 2}"}
            | {"record": f"{s},{n},{lg}"}
            for i, (s, n, lg) in enumerate(rows)
        ],
        schema=RAW_INSTRUMENTS_SCHEMA,
    )
    return RawInstruments(frame)


def test_valid_instruments_conform_and_are_sorted_by_symbol() -> None:
    clean, rejects = validate_instruments(
        raw(("MSFT", "Microsoft", "https://l/m.png"), ("AAPL", "Apple Inc.", "https://l/a.png")),
        "stocks",
        "file_drop",
    )
    assert rejects.is_empty()
    assert clean.schema == INSTRUMENTS.schema
    assert clean["symbol"].to_list() == ["AAPL", "MSFT"]
    assert clean.row(0) == ("stocks", "AAPL", "Apple Inc.", "https://l/a.png", "file_drop")


def test_symbols_are_canonicalised_to_upper_case() -> None:
    clean, _ = validate_instruments(raw((" btc ", "Bitcoin", "")), "crypto", "x")
    assert clean["symbol"].to_list() == ["BTC"]


def test_missing_logo_is_stored_as_empty_text() -> None:
    clean, _ = validate_instruments(raw(("BTC", "Bitcoin", None)), "crypto", "x")
    assert clean["logo"].to_list() == [""]


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (("", "Nameless", ""), "symbol is empty"),
        ((None, "Nameless", ""), "symbol is empty"),
        (("BRK.B", "Berkshire", ""), "symbol BRK.B is not upper-case letters and digits"),
        (("EUR/USD", "EUR/USD", ""), "symbol EUR/USD is not upper-case letters and digits"),
        (("GOLD", "", ""), "name is missing"),
        (("GOLD", None, ""), "name is missing"),
    ],
)
def test_invalid_instrument_is_rejected_with_its_reason(
    row: tuple[str | None, str | None, str | None], reason: str
) -> None:
    clean, rejects = validate_instruments(raw(row), "commodities", "x")
    assert clean.is_empty()
    assert rejects.schema == INSTRUMENT_REJECTS.schema
    assert rejects["reason"].item() == reason


def test_duplicate_symbol_keeps_the_first_and_rejects_the_rest() -> None:
    clean, rejects = validate_instruments(
        raw(("BTC", "Bitcoin", ""), ("btc", "Bitcoin again", "")), "crypto", "x"
    )
    assert clean["name"].to_list() == ["Bitcoin"]
    assert rejects.select("location", "reason").row(0) == (
        "line 3",
        "duplicate symbol: kept the row at line 2",
    )
