"""Every bar validation rule on tiny hand-written raw frames."""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest

from pipelines.catalog import DAILY_PRICES, PRICE_REJECTS
from pipelines.prices.sources.base import BAR_FIELDS, PROVENANCE, RAW_BARS_SCHEMA, RawBars
from pipelines.prices.validate import KEY, NUMBERS, _typed, check_bars, parse_bars, validate_bars

GOOD = ("2024-01-02", "10", "12", "9", "11", "100")  # a Tuesday


def raw(*bars: tuple[str | None, ...], symbol: str = "AAPL") -> RawBars:
    rows = [
        dict(zip(("date", "open", "high", "low", "close", "volume"), bar, strict=True))
        | {"symbol": symbol, "source": "s.csv", "location": f"line {i + 2}", "record": "r"}
        for i, bar in enumerate(bars)
    ]
    return RawBars(pl.DataFrame(rows, schema=RAW_BARS_SCHEMA))


def validate(bars: RawBars, market: str = "stocks") -> tuple[pl.DataFrame, pl.DataFrame]:
    return validate_bars(bars, market, {"AAPL"}, "file_drop")


def test_a_valid_bar_is_kept_with_timestamp_at_midnight_utc_in_ms() -> None:
    clean, rejects = validate(raw(GOOD))
    assert rejects.is_empty()
    assert clean.schema == DAILY_PRICES.schema
    row = clean.row(0, named=True)
    assert row["date"] == date(2024, 1, 2)
    assert row["timestamp"] == 1_704_153_600_000
    assert (row["open"], row["high"], row["low"], row["close"], row["volume"]) == (
        10,
        12,
        9,
        11,
        100,
    )
    assert row["source"] == "file_drop"


def test_symbols_are_canonicalised_to_upper_case() -> None:
    clean, _ = validate(raw(GOOD, symbol=" aapl "))
    assert clean["symbol"].to_list() == ["AAPL"]


def test_empty_volume_is_stored_as_zero() -> None:
    clean, _ = validate(raw((*GOOD[:5], "")))
    assert clean["volume"].to_list() == [0.0]


@pytest.mark.parametrize(
    ("bar", "reason"),
    [
        (("2024-01-02", "", "12", "9", "11", "1"), "open is missing"),
        (("2024-01-02", "10", None, "9", "11", "1"), "high is missing"),
        (("2024-01-02", "10", "12", "abc", "11", "1"), "low is missing or not a number"),
        (("2024-01-02", "10", "12", "9", "NaN", "1"), "close is missing or not a number"),
        (("2024-01-02", "0", "12", "9", "11", "1"), "open is not a positive finite number (0)"),
        (("2024-01-02", "10", "12", "-9", "11", "1"), "low is not a positive"),
        (("2024-01-02", "10", "inf", "9", "11", "1"), "high is not a positive finite"),
        (("2024-02-30", *GOOD[1:]), "unparseable date 2024-02-30"),
        (("02/01/2024", *GOOD[1:]), "unparseable date 02/01/2024"),
        (("2024-01-02", "10", "10.5", "9", "11", "1"), "high is below max(open, close)"),
        (("2024-01-02", "10", "12", "10.5", "11", "1"), "low is above min(open, close)"),
        (("2024-01-02", "10", "12", "9", "11", "-1"), "volume is negative"),
        (("2024-01-02", "10", "12", "9", "11", "many"), "volume is not a number (many)"),
        (("2024-01-06", *GOOD[1:]), "2024-01-06 is a weekend day"),
    ],
)
def test_invalid_bar_is_rejected_with_its_reason(bar: tuple[str | None, ...], reason: str) -> None:
    clean, rejects = validate(raw(bar))
    assert clean.is_empty()
    assert rejects.schema == PRICE_REJECTS.schema
    assert reason in rejects["reason"].item()
    assert rejects.select("market", "source", "location", "record").row(0) == (
        "stocks",
        "s.csv",
        "line 2",
        "r",
    )


def test_weekend_bars_are_kept_on_the_seven_day_crypto_market() -> None:
    clean, rejects = validate_bars(
        raw(("2024-01-06", *GOOD[1:]), symbol="BTC"), "crypto", {"BTC"}, "x"
    )
    assert clean.height == 1
    assert rejects.is_empty()


def test_unknown_symbol_is_rejected() -> None:
    clean, rejects = validate(raw(GOOD, symbol="MSFT"))
    assert clean.is_empty()
    assert rejects["reason"].item() == "unknown symbol MSFT (not in the stocks instrument list)"


def test_duplicate_symbol_date_keeps_the_first_and_rejects_the_rest() -> None:
    clean, rejects = validate(raw(GOOD, ("2024-01-02", "10", "13", "9", "11", "5"), GOOD))
    assert clean["high"].to_list() == [12.0]
    assert rejects["location"].to_list() == ["line 3", "line 4"]
    assert (
        rejects["reason"].to_list()
        == ["duplicate (symbol, date): kept the row at s.csv line 2"] * 2
    )


def test_a_duplicate_of_an_invalid_row_is_not_a_duplicate() -> None:
    clean, rejects = validate(raw(("2024-01-02", "-1", "12", "9", "11", "1"), GOOD))
    assert clean["high"].to_list() == [12.0]
    assert rejects.height == 1


def test_several_failures_are_all_named_in_one_reason() -> None:
    _, rejects = validate(raw(("2024-13-01", "-1", "12", "9", "11", "-5")))
    reason = rejects["reason"].item()
    assert "unparseable date" in reason
    assert "open is not a positive" in reason
    assert "volume is negative" in reason


def test_clean_rows_are_sorted_by_symbol_then_date() -> None:
    bars = raw(("2024-01-03", *GOOD[1:]), GOOD)
    clean, _ = validate(bars)
    assert clean["date"].to_list() == [date(2024, 1, 2), date(2024, 1, 3)]


def test_unreadable_records_from_the_connector_become_rejects() -> None:
    unreadable = pl.DataFrame(
        {"source": ["f.csv"], "location": ["line 9"], "record": ["xx"], "reason": ["garbage"]}
    )
    _, rejects = validate(RawBars(raw(GOOD).rows, unreadable))
    assert rejects.select("location", "reason").row(0) == ("line 9", "garbage")


TEXTS = ["10", " 10", "10 ", "\t1e1", "\u00a010", "", " ", "-1", "0", "NaN", " inf", "abc", None]
DATES = ["2024-01-02", " 2024-01-02", "2024-01-02 ", "2024-1-2", "", "junk", None]


def test_parsing_as_is_then_trimmed_equals_parsing_trimmed_text() -> None:
    """Text that parses as it is skips trimming and upper-casing; the values are the same."""
    rows = pl.DataFrame(
        [
            {"symbol": symbol, "date": day, **dict.fromkeys(NUMBERS, number)}
            for symbol in ("AAPL", " aapl", "aapl", "MSFT", None)
            for day in DATES
            for number in TEXTS
        ],
        schema=dict.fromkeys(BAR_FIELDS, pl.String),
    )
    known = pl.Series(["AAPL", "IBM"])
    fast = _typed(rows, known)
    exact = parse_bars(rows).with_columns(pl.col("symbol").cast(pl.Enum(known), strict=False))
    assert fast.equals(exact.select(BAR_FIELDS))


def test_rejects_and_the_rows_they_name_are_the_only_rows_asked_where_they_come_from() -> None:
    asked: list[list[str]] = []

    def provenance(rows: pl.DataFrame) -> pl.DataFrame:
        asked.append(rows["location"].to_list())
        return rows.select(PROVENANCE)

    bars = raw(GOOD, ("2024-01-03", *GOOD[1:]), ("2024-01-04", "-1", *GOOD[2:]), GOOD)
    rows = bars.rows.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(KEY))
    checked = check_bars(rows, "stocks", {"AAPL"}, provenance)
    assert checked.clean.height == 2
    assert sorted(asked) == [["line 2", "line 5"], ["line 4"], ["line 5"]]
    assert checked.duplicates["reason"].item() == (
        "duplicate (symbol, date): kept the row at s.csv line 2"
    )


def test_an_instrument_list_that_is_not_canonical_matches_canonical_symbols_only() -> None:
    clean, rejects = validate_bars(raw(GOOD, symbol="aapl"), "stocks", {"aapl"}, "fd")
    assert clean.is_empty()
    assert rejects["reason"].item() == "unknown symbol AAPL (not in the stocks instrument list)"
