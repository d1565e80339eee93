"""Every price connector's parser turns any input into rows and rejects, never an exception.

Arbitrary bytes (decoded as the HTTP client does, bad bytes replaced) and structured inputs close
to the wire formats (JSON arrays of arrays for Binance, CSV with random headers and fields for
Stooq, the ECB's SDMX CSV and the file drop), so that the odd cases are reached often.
"""

from __future__ import annotations

import json
import tempfile
from datetime import datetime
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pipelines.prices.sources.base import RAW_BARS_SCHEMA, UNREADABLE_SCHEMA, RawBars
from pipelines.prices.sources.binance import parse_klines
from pipelines.prices.sources.ecb import parse_exr_bars
from pipelines.prices.sources.file_drop import FileDropSource
from pipelines.prices.sources.stooq import QUOTA_EXCEEDED, parse_stooq_csv
from pipelines.prices.validate import validate_bars

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
URL = "http://127.0.0.1:9/fuzz"
PAIRS = {"EURUSD": ("EUR", "USD"), "USDJPY": ("USD", "JPY")}

wire_bytes = st.binary(max_size=2_000).map(lambda b: b.decode("utf-8", errors="replace"))
"""Any answer, decoded as httpx decodes a body without a charset (UTF-8, bad bytes replaced)."""
any_text = st.one_of(wire_bytes, st.text(max_size=500))

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.integers(min_value=-5, max_value=5).map(lambda k: 1704067200000 + k * 86_400_000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.decimals(allow_nan=False, allow_infinity=False, places=4).map(str),
)
klines = st.lists(
    st.one_of(
        st.lists(st.one_of(json_scalars, st.lists(json_scalars, max_size=2)), max_size=13),
        json_scalars,
    ),
    max_size=8,
)
"""JSON arrays of (mostly) arrays: kline-shaped, with random values and lengths."""

csv_field = st.one_of(
    st.sampled_from(["", " ", '"', "1", "-1", "0", "1.5", "NaN", "inf", "2024-01-02", "x"]),
    st.text(
        alphabet=st.characters(exclude_categories=["Cs"], exclude_characters=",\n"), max_size=8
    ),
)
price_header = st.lists(
    st.sampled_from(["Date", "Open", "High", "Low", "Close", "Volume", "OpenInt", "date", " x"]),
    min_size=0,
    max_size=8,
)


def csv_text(header: list[str], lines: list[list[str]], ending: str) -> str:
    return ending.join([",".join(header), *(",".join(fields) for fields in lines)]) + ending


csv_bodies = st.builds(
    csv_text,
    price_header,
    st.lists(st.lists(csv_field, max_size=9), max_size=10),
    st.sampled_from(["\n", "\r\n"]),
)
"""CSV with a random header (often a valid one) and lines of random width and fields."""


def assert_well_formed(raw: RawBars) -> None:
    assert raw.rows.schema == RAW_BARS_SCHEMA
    assert raw.unreadable.schema == UNREADABLE_SCHEMA
    assert raw.unreadable["reason"].is_not_null().all()


# Binance


@FUZZ
@given(any_text)
def test_binance_parser_never_raises_on_arbitrary_bytes(text: str) -> None:
    assert_well_formed(parse_klines(text, URL, "BTC").bars)


@FUZZ
@given(klines)
def test_binance_parser_turns_every_kline_into_a_row_or_a_reject(page: list[object]) -> None:
    parsed = parse_klines(json.dumps(page), URL, "BTC")
    assert_well_formed(parsed.bars)
    assert parsed.bars.rows.height + parsed.bars.unreadable.height == len(page)
    validate_bars(parsed.bars, "crypto", {"BTC"}, "binance")  # and validation takes them


# Stooq


@FUZZ
@given(any_text)
def test_stooq_parser_never_raises_on_arbitrary_bytes(text: str) -> None:
    # The quota message is the one deliberate error (retrying cannot help until tomorrow).
    assume(not text.removeprefix("\ufeff").startswith(QUOTA_EXCEEDED))
    assert_well_formed(parse_stooq_csv(text, URL, "AAPL"))


@FUZZ
@given(csv_bodies)
def test_stooq_parser_turns_every_line_into_a_row_or_a_reject(body: str) -> None:
    raw = parse_stooq_csv(body, URL, "AAPL")
    assert_well_formed(raw)
    validate_bars(raw, "stocks", {"AAPL"}, "stooq")
    lines = [line for line in body.split("\n")[1:] if line.strip()]
    if raw.unreadable["location"].to_list() != ["body"]:
        assert raw.rows.height + raw.unreadable.height == len(lines)


# ECB

SDMX_COLUMNS = ["KEY", "FREQ", "CURRENCY", "CURRENCY_DENOM", "TIME_PERIOD", "OBS_VALUE", "TITLE"]
sdmx_field = st.one_of(
    csv_field,
    st.sampled_from(["USD", "JPY", "EUR", "usd", "1.0956", "155.46", "0", '"a,b"', '"unclosed']),
)
sdmx_bodies = st.builds(
    csv_text,
    st.lists(st.sampled_from(SDMX_COLUMNS), max_size=9),
    st.lists(st.lists(sdmx_field, max_size=9), max_size=10),
    st.sampled_from(["\n", "\r\n"]),
)


@FUZZ
@given(st.one_of(any_text, sdmx_bodies))
def test_ecb_parser_never_raises(text: str) -> None:
    raw = parse_exr_bars(text, URL, PAIRS)
    assert_well_formed(raw)
    validate_bars(raw, "forex", set(PAIRS), "ecb")


# File drop


def read_drop(name: str, body: bytes) -> RawBars:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "prices" / "stocks" / name
        path.parent.mkdir(parents=True)
        path.write_bytes(body)
        return FileDropSource(Path(folder)).daily_bars("stocks", ["AAPL"], None)


day_bodies = st.builds(
    csv_text,
    st.lists(
        st.sampled_from(["symbol", "date", "open", "high", "low", "close", "volume"]),
        max_size=8,
    ),
    st.lists(st.lists(csv_field, max_size=9), max_size=10),
    st.sampled_from(["\n", "\r\n"]),
)


@FUZZ
@given(st.binary(max_size=2_000), st.sampled_from(["AAPL.csv", "days/2024-01-02.csv", "x.parquet"]))
def test_file_drop_reader_never_raises_on_arbitrary_bytes(body: bytes, name: str) -> None:
    assert_well_formed(read_drop(name, body))


@FUZZ
@given(csv_bodies.map(lambda text: text.lower()))
def test_file_drop_reader_turns_every_line_of_a_symbol_file_into_a_row_or_a_reject(
    body: str,
) -> None:
    raw = read_drop("AAPL.csv", body.encode("utf-8", errors="surrogatepass"))
    assert_well_formed(raw)
    validate_bars(raw, "stocks", {"AAPL"}, "fd")
    whole = raw.unreadable["location"].is_in(["file", "line 1"]).any()
    if not whole:
        lines = [line for line in body.split("\n")[1:] if line.strip(' \r\t"')]
        assert raw.rows.height + raw.unreadable.height == len(lines)


@FUZZ
@given(day_bodies)
def test_file_drop_reader_never_raises_on_day_files(body: str) -> None:
    raw = read_drop("days/2024-01-02.csv", body.encode("utf-8", errors="surrogatepass"))
    assert_well_formed(raw)
    validate_bars(raw, "stocks", {"AAPL"}, "fd")


@FUZZ
@given(
    st.lists(
        st.one_of(st.none(), st.datetimes(datetime(1800, 1, 1), datetime(2200, 1, 1))),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from(["ms", "us", "ns"]),
)
def test_file_drop_parquet_dates_become_days_or_rejects(dates: list[object], unit: str) -> None:
    frame = pl.DataFrame(
        {
            "symbol": ["AAPL"] * len(dates),
            "date": pl.Series(dates, dtype=pl.Datetime("us")).cast(pl.Datetime(unit)),
            **{c: [1.0] * len(dates) for c in ("open", "high", "low", "close", "volume")},
        }
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "prices" / "stocks" / "v.parquet"
        path.parent.mkdir(parents=True)
        frame.write_parquet(path)
        raw = FileDropSource(Path(folder)).daily_bars("stocks", ["AAPL"], None)
    assert_well_formed(raw)
    assert raw.rows.height + raw.unreadable.height == len(dates)
    validate_bars(raw, "stocks", {"AAPL"}, "fd")
